"""Answers from any OpenAI-compatible chat endpoint (see ``rerankeval.models.chat`` for retries, cache and secrets).

The prompt is versioned (``PROMPTS``): its text is part of every cache key, so a changed prompt is a new version. It
numbers the context passages, asks for ``[n]`` citations and allows "cannot answer". A reply starting with "cannot
answer" is an abstention; ``[n]`` markers naming a context passage are its citations (others are ignored) and are
removed from the answer text that EM/F1 read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator

from ...core.hashing import canonical_json, sha256_text
from ...models.chat import ChatClient, ChatConfig
from . import register_generator
from .base import BuildContext, Generated, Generator

PROMPTS = {
    "rag-cite/v1": (
        "Answer the question using only the numbered passages. Cite each passage you use as [n], e.g. [2]. Answer "
        "as briefly as possible: the answer itself, not a sentence about it. If the passages do not contain the "
        "answer, reply exactly: cannot answer",
        "Passages:\n{passages}\n\nQuestion: {question}\nAnswer:",
    ),
}
_CITATION = re.compile(r"\[(\d+)\]")
_ABSTAIN = re.compile(r"^\W*cannot answer", re.IGNORECASE)


def _known_prompt(value: str) -> str:
    if value not in PROMPTS:
        raise ValueError(f"unknown prompt version {value!r}; known: {', '.join(PROMPTS)}")
    return value


PromptVersion = Annotated[str, AfterValidator(_known_prompt)]
"""A key of ``PROMPTS``."""


class OpenAICompatibleConfig(ChatConfig):
    kind: Literal["openai_compatible"] = "openai_compatible"
    prompt: PromptVersion = "rag-cite/v1"


def messages(prompt: str, question: str, passages: Sequence[str]) -> list[dict]:
    system, user = PROMPTS[prompt]
    numbered = "\n".join(f"[{i}] {passage}" for i, passage in enumerate(passages, start=1))
    return [{"role": "system", "content": system},
            {"role": "user", "content": user.format(passages=numbered, question=question)}]


def parse_reply(text: str, n_passages: int) -> tuple[str, bool, tuple[int, ...]]:
    """(answer text, abstained, 0-based citations) of a reply."""
    if _ABSTAIN.match(text):
        return "cannot answer", True, ()
    cited = []
    for number in _CITATION.findall(text):
        index = int(number) - 1
        if 0 <= index < n_passages and index not in cited:
            cited.append(index)
    return " ".join(_CITATION.sub(" ", text).split()), False, tuple(cited)


@register_generator("openai_compatible", OpenAICompatibleConfig)
class OpenAICompatibleGenerator(Generator):
    def __init__(self, config: OpenAICompatibleConfig, context: BuildContext):
        self.config = config
        self.chat = ChatClient(config)

    def describe(self) -> dict[str, Any]:
        system, user = PROMPTS[self.config.prompt]
        return {**self.config.to_dict(), "prompt_sha256": sha256_text(canonical_json([system, user]))}

    def generate(self, question: str, passages: Sequence[str]) -> Generated:
        request = messages(self.config.prompt, question, passages)
        reply = self.chat.complete(request)
        prompt_sha256 = sha256_text(canonical_json(request))
        timing = dict(seconds=reply.seconds, cache_hit=reply.cache_hit, attempts=reply.attempts)
        if reply.text is None:
            return Generated("", False, (), None, True, reply.reason, prompt_sha256=prompt_sha256, **timing)
        answer, abstained, cited = parse_reply(reply.text, len(passages))
        return Generated(answer, abstained, cited, None, False, None, reply.prompt_tokens, reply.completion_tokens,
                         self.chat.cost(reply.prompt_tokens, reply.completion_tokens), prompt_sha256, **timing)
