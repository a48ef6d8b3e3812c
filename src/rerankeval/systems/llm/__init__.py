"""LLM rerankers over an OpenAI-compatible chat endpoint (vLLM, llama.cpp's server, Ollama, a hosted API), one kind
per file: ``llm_pointwise`` (each passage judged alone: the probability of "yes", from logprobs where the endpoint
gives them, else the parsed label) and ``llm_listwise`` (RankGPT-style sliding windows ordered by the generated
permutation).

What they share lives here: the settings (the endpoint is ``models.chat``'s, nested under ``endpoint``: its retries,
response cache and secrets are the generator's), the prompt template (a file under conf/prompts/, versioned; its
sha256 is a pin of the run and part of every cache key through the prompt text), the counting of invalid outputs, and
the pins every run records (``describe``): the model asked and the model the endpoint says answered, the template's
path and sha256, the decoding settings and the kind's own settings.

An invalid output is never hidden: each kind repairs it by a stated deterministic rule, counts it per query (the run's
latency table, ``timings``: ``invalid_outputs`` of ``llm_calls``) and in total (``describe()['invalid_outputs']``),
and the verdict cannot ACCEPT a system whose invalid share exceeds ``compare.release.max_invalid_rate``. A call that
fails outright (timeout, HTTP error) fails the query, which falls back to the fused order with its reason; the
listwise kind fails only that window (``listwise``), unless every window of the query failed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from ...core.errors import ConfigError, ScoringFailure
from ...core.hashing import sha256_text
from ...models.chat import ChatClient, ChatConfig, Reply
from ...models.local_chat import LocalChatConfig
from ..base import System
from ..registry import BuildContext, SystemConfig

PLACEHOLDER = re.compile(r"\{(\w+)\}")
WORDS_PER_TOKEN = 0.75
"""English words per token of common LLM vocabularies: a window's prompt is estimated from its words (conservative
for other languages, which the model's own count then shows)."""
CUT_BELOW_TOKENS_PER_WORD = 0.75
"""A prompt the endpoint reports fewer tokens for than this many per whitespace-separated word of it was cut before
the model read it: the tokenizers of common LLMs split text at spaces before merging pieces, so every word is at
least one token (more in most languages), and a whole prompt is never this short."""


class LLMRerankConfig(SystemConfig):
    """Settings every LLM reranker has. The model answers at an ``endpoint`` (``models.chat.ChatConfig``: base_url,
    model, api_key_env, temperature, seed, max_tokens, retries, cache_dir, prices) or, with ``local`` instead
    (``models.local_chat.LocalChatConfig``: the GGUF model, its pinned runtime, threads, context, max_tokens), in this
    process."""

    endpoint: ChatConfig | None = None
    local: LocalChatConfig | None = None
    template: str
    """The prompt template, a file (conf/prompts/...); its placeholders are the kind's (``placeholders``)."""
    max_passage_words: int = Field(120, ge=1)
    """Each passage is cut to its first this many words (said in ``describe``)."""
    context_tokens: int | None = Field(None, ge=64)
    """The model's context window (for Ollama, its ``num_ctx``): a prompt that cannot fit is refused at build time
    with the numbers, and a reply whose reported prompt tokens fill it is counted as ``prompt_truncated``."""

    @model_validator(mode="after")
    def _one_model(self) -> "LLMRerankConfig":
        if (self.endpoint is None) == (self.local is None):
            raise ValueError("give the model either at an endpoint (endpoint: {base_url: ..., model: ...}) or in this "
                             "process (local: {} for the pinned local model), not both and not neither; to swap a "
                             "composed endpoint for local, set endpoint: null (Hydra: ~systems.<name>.endpoint)")
        return self

    @property
    def chat(self) -> ChatConfig:
        """The chat settings the model answers under, at the endpoint or in this process."""
        return self.endpoint if self.endpoint is not None else self.local.chat_config()

    @field_validator("template")
    @classmethod
    def _a_file(cls, value: str) -> str:
        if not Path(value).is_file():
            raise ValueError(f"{value!r} is not a file. Fix: name a prompt template, e.g. conf/prompts/"
                             "llm_listwise_v1.txt")
        return value


@dataclass(frozen=True)
class Template:
    """A prompt template read once: its text, path and sha256 (a pin of every run)."""

    path: str
    text: str
    sha256: str

    @classmethod
    def load(cls, path: str, placeholders: tuple[str, ...], where: str) -> Template:
        text = Path(path).read_text(encoding="utf-8")
        found = set(PLACEHOLDER.findall(text))
        missing, unknown = [p for p in placeholders if p not in found], sorted(found - set(placeholders))
        if missing or unknown:
            raise ConfigError(f"{where}.template: {path} has placeholders {sorted(found)}; this kind fills "
                              f"{list(placeholders)} (missing: {missing or 'none'}, unknown: {unknown or 'none'}). "
                              "Fix: write each placeholder once in braces, e.g. {query}.")
        return cls(path, text, sha256_text(text))

    def fill(self, **values: str) -> str:
        return PLACEHOLDER.sub(lambda match: values[match.group(1)], self.text)


def clipped(passage: str, words: int) -> str:
    parts = passage.split()
    return passage if len(parts) <= words else " ".join(parts[:words]) + " ..."


@dataclass
class Tally:
    """Invalid outputs by reason, calls, tokens, and the models, fingerprints and backends the endpoint said
    answered, over a run."""

    invalid: Counter = field(default_factory=Counter)
    calls: int = 0
    invalid_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    served: Counter = field(default_factory=Counter)
    fingerprints: Counter = field(default_factory=Counter)
    backends: Counter = field(default_factory=Counter)

    def add(self, reply: Reply, reasons: list[str]) -> None:
        self.calls += 1
        self.invalid_calls += bool(reasons)
        self.invalid.update(reasons)
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        for counter, said in ((self.served, reply.model), (self.fingerprints, reply.fingerprint),
                              (self.backends, reply.backend)):
            if said:
                counter[said] += 1

    def add_failure(self, reason: str) -> None:
        """A call that got no reply at all, in a query that was still scored (``listwise``: its window kept its
        order), counted as an invalid output. A query that falls back counts as a fallback instead."""
        self.calls += 1
        self.invalid_calls += 1
        self.invalid[reason] += 1

    def record(self) -> dict[str, Any]:
        return {"calls": self.calls, "invalid_calls": self.invalid_calls,
                "rate": round(self.invalid_calls / self.calls, 6) if self.calls else None,
                "by_reason": dict(sorted(self.invalid.items())), "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens}


def chat_client(config: LLMRerankConfig, where: str) -> ChatClient:
    if config.local is not None:
        return config.local.client(f"{where}.local", config.chat)
    return ChatClient(config.chat, where=f"{where}.endpoint", ask_backend=True)


def pins(config: LLMRerankConfig, template: Template, tally: Tally) -> dict[str, Any]:
    """What decides this run's scores, recorded in the run (two runs differing in any of these are not the same
    system): the model asked and answering, the server's backend and fingerprints (``models.chat.ChatClient.backend``:
    its name, version or build, and model file, as far as it says), the template, the decoding and the endpoint.
    Each is counted over the run's replies; a server swapped mid-run shows in the fingerprints and served models
    (the backend is asked once per run)."""
    endpoint = config.chat
    return {"model": endpoint.model, "served_models": dict(sorted(tally.served.items())),
            "backends": dict(sorted(tally.backends.items())),
            "system_fingerprints": dict(sorted(tally.fingerprints.items())),
            "base_url": endpoint.base_url, "template": template.path, "template_sha256": template.sha256,
            "decoding": {"temperature": endpoint.temperature, "seed": endpoint.seed,
                         "max_tokens": endpoint.max_tokens},
            "max_passage_words": config.max_passage_words}


class LLMSystem(System):
    """What both kinds hold: their settings, the template, the tally of their calls and the endpoint's client."""

    placeholders: tuple[str, ...] = ()
    """The template's placeholders this kind fills."""

    def __init__(self, config: LLMRerankConfig, context: BuildContext, passages_per_prompt: int):
        where = f"systems.{context.name}" if context.name else config.kind
        self.config, self.tally = config, Tally()
        self.template = Template.load(config.template, self.placeholders, where)
        check_fits(config, self.template, passages_per_prompt, where)
        self.client = chat_client(config, where)

    def ask(self, prompt: str, top_logprobs: int | None = None) -> Reply:
        """The model's reply to one prompt (the response cache's when asked before); a call that fails outright
        fails the query with its reason (``<code>: <detail>``)."""
        reply = self.client.complete([{"role": "user", "content": prompt}], top_logprobs)
        if reply.text is None:
            failure = ScoringFailure(*(reply.reason or "error: no reply").split(": ", 1))
            failure.compute_s = reply.seconds  # the attempts and their waits: latency and the deadline count them
            raise failure
        return reply

    def prompt_cut(self, prompt: str, reply: Reply) -> bool:
        """Whether the endpoint read less than the whole prompt, by the prompt tokens it reports (an endpoint that
        reports none cannot be checked): fewer than ``CUT_BELOW_TOKENS_PER_WORD`` per word of the prompt, or as
        many as the model's context window holds (``context_tokens``). Some servers cut an over-long prompt to
        their window without an error (Ollama keeps the tokens that fit its ``num_ctx`` and reports those), so the
        model answered about passages it never saw; the kinds count such a reply as ``prompt_truncated`` and do not
        read it."""
        if reply.prompt_tokens <= 0:
            return False
        limit = context_limit(self.config)
        return (reply.prompt_tokens < CUT_BELOW_TOKENS_PER_WORD * len(prompt.split())
                or (limit is not None and reply.prompt_tokens >= limit))

    def close(self) -> None:
        self.client.close()


def context_limit(config: LLMRerankConfig) -> int | None:
    """The model's context window as far as the settings know it: the smaller of ``context_tokens`` and a local
    model's own (it is loaded with its own, whatever the reranker says); None when neither is set."""
    known = [found for found in (config.context_tokens, config.local and config.local.context_tokens) if found]
    return min(known) if known else None


def check_fits(config: LLMRerankConfig, template: Template, passages: int, where: str) -> None:
    """Refuse, at build time, a prompt of ``passages`` passages that cannot fit the model's context window."""
    limit = context_limit(config)
    if limit is None:
        return
    words = len(template.text.split()) + passages * (config.max_passage_words + 2) + 64  # 64: a long query
    needed = int(words / WORDS_PER_TOKEN) + config.chat.max_tokens
    if needed > limit:
        raise ConfigError(f"{where}: a prompt of {passages} passages of up to {config.max_passage_words} words needs "
                          f"about {needed} tokens with max_tokens {config.chat.max_tokens}, more than "
                          f"context_tokens {limit}. Fix: a smaller window or max_passage_words.")
