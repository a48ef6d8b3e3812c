"""Claims of an answer and whether the passages it cites support them.

A claim is one sentence of the answer (citation markers removed). The default judge is a declared lexical rule: a
claim is supported when one cited passage contains at least ``support_threshold`` of the claim's distinct content
tokens (``rerankeval.retrieval.text.tokenize``: latin words, Hangul bigrams); a claim without content tokens is
supported. ``judge: llm`` asks the generator's endpoint instead (prompt ``CLAIM_PROMPT``, answer yes/no, cached like
every request); a judge request that fails counts the claim as unsupported.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..retrieval.text import tokenize

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
CLAIM_PROMPT_VERSION = "claim-judge/v1"
CLAIM_PROMPT = ("Passages:\n{passages}\n\nClaim: {claim}\n\nIs the claim fully supported by the passages above? "
                "Answer with one word: yes or no.")


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


def lexically_supported(claim: str, passages: Sequence[str], threshold: float) -> bool:
    wanted = set(tokenize(claim))
    if not wanted:
        return True
    return any(len(wanted & set(tokenize(passage))) / len(wanted) >= threshold for passage in passages)


def count_supported(claims: Sequence[str], cited: Sequence[str], threshold: float, chat=None) -> int:
    """Claims supported by the cited passages: the lexical rule, or the LLM judge when ``chat`` is given."""
    if chat is None:
        return sum(lexically_supported(claim, cited, threshold) for claim in claims)
    supported = 0
    numbered = "\n".join(f"[{i}] {passage}" for i, passage in enumerate(cited, start=1))
    for claim in claims:
        if not cited:
            continue
        reply = chat.complete([{"role": "user", "content": CLAIM_PROMPT.format(passages=numbered, claim=claim)}])
        supported += bool(reply.text) and reply.text.strip().lower().startswith("yes")
    return supported
