"""The ``llm_listwise`` system kind: RankGPT-style sliding windows over the top ``depth`` candidates.

Each pass slides a window of ``window`` passages from the bottom of the current order to the top, ``stride`` at a
time, and reorders each window by the permutation the model writes ("[2] > [1] > [3]"), so a relevant passage can rise
from the last window to the first in one pass. The system's score is the final position (the first passage scores
``depth``, the last 1).

A reply that is not a clean permutation is repaired by one deterministic rule and counted (``systems.llm``): the valid
labels in the order written, each at its first mention, then the window's missing passages in their input order.
Counted reasons: ``no_labels`` (no identifier at all: a refusal, or prose), ``unknown_label`` (outside 1..window),
``repeated_label``, ``missing_labels`` (the reply left some out: cut off, or skipped). A call that fails outright
fails the query (fused order, with the reason).
"""

from __future__ import annotations

import re
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from ..base import QueryCandidates, Scores
from ..registry import BuildContext, register_system
from . import LLMRerankConfig, LLMSystem, clipped, pins

BRACKETED = re.compile(r"\[(\d+)\]")
BARE = re.compile(r"(?<![\w.])(\d+)(?![\w.])")


class LLMListwiseConfig(LLMRerankConfig):
    kind: Literal["llm_listwise"] = "llm_listwise"
    template: str = "conf/prompts/llm_listwise_v1.txt"
    window: int = Field(10, ge=2)
    """Passages per prompt."""
    stride: int = Field(5, ge=1)
    """How far the window moves up after each prompt (window - stride passages overlap)."""
    passes: int = Field(1, ge=1)
    """Full bottom-to-top sweeps."""

    @model_validator(mode="after")
    def _overlapping(self) -> "LLMListwiseConfig":
        if self.stride > self.window:
            raise ValueError(f"stride {self.stride} is larger than window {self.window}: passages between windows "
                             "would never be compared. Fix: stride <= window (RankGPT: window 20, stride 10)")
        return self


def parse_permutation(text: str, size: int) -> tuple[list[int], list[str]]:
    """(0-based order of a window of ``size`` passages, the invalid-output reasons) from a reply; see the module's
    repair rule."""
    labels = [int(found) for found in BRACKETED.findall(text)] or [int(found) for found in BARE.findall(text)]
    reasons = [] if labels else ["no_labels"]
    order, seen = [], set()
    for label in labels:
        if not 1 <= label <= size:
            reasons.append("unknown_label")
        elif label in seen:
            reasons.append("repeated_label")
        else:
            seen.add(label)
            order.append(label - 1)
    missing = [position for position in range(size) if position + 1 not in seen]
    if missing and labels:
        reasons.append("missing_labels")
    return order + missing, sorted(set(reasons))


class LLMListwise(LLMSystem):
    placeholders = ("count", "passages", "query")

    def score(self, query: QueryCandidates) -> Scores:
        passages = [clipped(text, self.config.max_passage_words) for text in query.passages]
        order = list(range(len(passages)))
        calls = invalid = prompt_tokens = completion_tokens = 0
        compute_s = replayed_s = 0.0
        for _ in range(self.config.passes):
            end = len(order)
            while end > 0:
                start = max(0, end - self.config.window)
                window = order[start:end]
                listed = "\n".join(f"[{k + 1}] {passages[index]}" for k, index in enumerate(window))
                prompt = self.template.fill(count=str(len(window)), passages=listed, query=query.query_text)
                reply = self.ask(prompt)
                permutation, reasons = parse_permutation(reply.text, len(window))
                self.tally.add(reply, reasons)
                calls, invalid = calls + 1, invalid + bool(reasons)
                prompt_tokens += reply.prompt_tokens
                completion_tokens += reply.completion_tokens
                if reply.cache_hit:
                    replayed_s += reply.seconds
                else:
                    compute_s += reply.seconds
                order[start:end] = [window[k] for k in permutation]
                if start == 0:
                    break
                end -= self.config.stride
        values = np.empty(len(order), dtype=np.float64)
        values[order] = np.arange(len(order), 0, -1, dtype=np.float64)
        return Scores(values=values, compute_s=compute_s, replayed_s=replayed_s,
                      timings={"llm_calls": float(calls), "invalid_outputs": float(invalid),
                               "prompt_tokens": float(prompt_tokens), "completion_tokens": float(completion_tokens)})

    def describe(self) -> dict[str, Any]:
        config = self.config
        return {"kind": config.kind, **pins(config, self.template, self.tally),
                "window": {"window": config.window, "stride": config.stride, "passes": config.passes,
                           "direction": "bottom to top"},
                "score": "final position (the first passage scores depth)",
                "invalid_outputs": self.tally.record()}


@register_system("llm_listwise", LLMListwiseConfig)
def _llm_listwise(config: LLMListwiseConfig, context: BuildContext) -> LLMListwise:
    return LLMListwise(config, context, min(config.window, config.depth))
