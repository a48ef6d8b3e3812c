"""The ``llm_listwise`` system kind: RankGPT-style sliding windows over the top ``depth`` candidates.

Each pass slides a window of ``window`` passages from the bottom of the current order to the top, ``stride`` at a
time, and reorders each window, so a relevant passage can rise from the last window to the first in one pass
(``direction: bottom_up``, RankGPT's). ``direction: top_down`` slides from the top down instead: the first window's
order is settled first, and a passage rises at most ``window - 1`` places per window it is in, so a relevant passage
deep in the list needs more passes to reach the top (cheaper per pass when only the head matters). The
system's score is the final position (the first passage scores ``depth``, the last 1). A window is reordered by:

- ``ordering: generated`` (RankGPT): the permutation the model writes ("[2] > [1] > [3]");
- ``ordering: first_token`` (FIRST, Reddy et al. 2024): one decoding step. The passages are labelled A, B, C...
  (single tokens), and the window is ordered by the log probability of each label as the first token of the reply
  (the endpoint's ``top_logprobs``, or the in-process model's logits); labels outside the ``top_logprobs`` most
  likely tokens follow in their input order.

A reply that is not a clean permutation is repaired by one deterministic rule and counted (``systems.llm``): the valid
labels in the order written, each at its first mention, then the window's missing passages in their input order.
Counted reasons: ``no_labels`` (no identifier at all: a refusal, or prose), ``unknown_label`` (outside 1..window),
``repeated_label``, ``missing_labels`` (the reply skipped some), ``reply_cut_off`` (it left some out because
``max_tokens`` cut it: the endpoint's ``finish_reason`` is ``length``). A reply to a prompt the endpoint cut
(``prompt_truncated``, ``LLMSystem.prompt_cut``: some passages never reached the model) is not read: its window keeps
its input order. With ``first_token``:
``no_logprobs`` (the endpoint gave none: the label the reply starts with goes first, the rest keep their order) and
``no_labels`` (no label among the most likely first tokens: the input order is kept). A call that fails outright
(a timeout, an HTTP error, after the endpoint's retries) leaves its window in its input order and is counted as
``window_failed:<reason>``; the other windows still reorder. A query whose every window failed falls back to the
fused order with the first failure's reason, as any scorer's failed query does.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from ...core.errors import ScoringFailure
from ..base import QueryCandidates, Scores
from ..registry import BuildContext, register_system
from . import LLMRerankConfig, LLMSystem, clipped, pins

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
"""``first_token``'s passage labels: one token each in every common vocabulary."""
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
    """Full sweeps over the top ``depth``."""
    direction: Literal["bottom_up", "top_down"] = "bottom_up"
    """Where each sweep starts: at the bottom, moving up (RankGPT), or at the top, moving down."""
    ordering: Literal["generated", "first_token"] = "generated"
    """How a window is reordered: by the permutation the model writes, or by its first token's log probabilities
    over the passages' letter labels (one decoding step; see the module)."""
    top_logprobs: int = Field(20, ge=2, le=20)
    """``first_token``: how many of the first token's most likely alternatives to ask for (at most 20, as OpenAI's
    API and vLLM allow)."""

    @model_validator(mode="after")
    def _overlapping(self) -> "LLMListwiseConfig":
        if self.stride > self.window:
            raise ValueError(f"stride {self.stride} is larger than window {self.window}: passages between windows "
                             "would never be compared. Fix: stride <= window (RankGPT: window 20, stride 10)")
        if self.ordering == "first_token" and self.window > len(LETTERS):
            raise ValueError(f"window {self.window} has more passages than the {len(LETTERS)} letter labels "
                             "ordering: first_token reads. Fix: window <= 26")
        if self.ordering == "generated" and "top_logprobs" in self.model_fields_set:
            raise ValueError("top_logprobs is read only with ordering: first_token. Fix: remove it, or set "
                             "ordering: first_token")
        return self

    @property
    def chat(self):
        """One decoding step is all ``first_token`` reads: the reply is cut to one token."""
        found = super().chat
        return found.model_copy(update={"max_tokens": 1}) if self.ordering == "first_token" else found


def as_label(token: str, labels: list[str]) -> str | None:
    """The label a token (or a reply's first word) is: one of ``labels``, alone but for spaces, an opening bracket
    and what may follow a label (``B``, `` B``, ``[B``, ``B]``, ``B >``); "The" or "I'm" is none."""
    found = re.fullmatch(r"\s*[\[(]?([A-Z])[\])>,.:]*\s*", token)
    return found[1] if found and found[1] in labels else None


def first_token_order(alternatives: tuple[tuple[str, float], ...] | None, text: str,
                      size: int) -> tuple[list[int], list[str]]:
    """(0-based order of a window of ``size`` letter-labelled passages, the invalid-output reasons) from the first
    token's alternatives (token, log probability): labels by log probability (a label's best spelling: ``B``, `` B``,
    ``[B``), ties and absent labels in input order; see the module for the rest."""
    labels = list(LETTERS[:size])  # a list: a token is a label only when equal to one, never as a substring
    if alternatives is None:
        first = as_label(text.split(maxsplit=1)[0] if text.split() else "", labels)
        rest = [k for k in range(size) if labels[k] != first]
        return ([labels.index(first)] if first else []) + rest, ["no_logprobs"]
    best: dict[str, float] = {}
    for token, logprob in alternatives:
        label = as_label(token, labels)
        if label is not None and logprob > best.get(label, -np.inf):
            best[label] = logprob
    if not best:
        return list(range(size)), ["no_labels"]
    ranked = sorted(best, key=lambda label: (-best[label], labels.index(label)))
    return [labels.index(label) for label in ranked] + [k for k in range(size) if labels[k] not in best], []


def parse_permutation(text: str, size: int, finish_reason: str | None = None) -> tuple[list[int], list[str]]:
    """(0-based order of a window of ``size`` passages, the invalid-output reasons) from a reply that ended for
    ``finish_reason``; see the module's repair rule."""
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
    if missing and finish_reason == "length":  # the reply was cut before it named them
        reasons = [reason for reason in reasons if reason != "no_labels"] + ["reply_cut_off"]
    elif missing and labels:
        reasons.append("missing_labels")
    return order + missing, sorted(set(reasons))


class LLMListwise(LLMSystem):
    placeholders = ("count", "passages", "query")

    def score(self, query: QueryCandidates) -> Scores:
        passages = [clipped(text, self.config.max_passage_words) for text in query.passages]
        order = list(range(len(passages)))
        calls = invalid = prompt_tokens = completion_tokens = 0
        compute_s = replayed_s = slowest_window_s = failed_s = 0.0
        failures: list[ScoringFailure] = []
        for _ in range(self.config.passes):
            for start, end in self.windows(len(order)):
                window = order[start:end]
                first_token = self.config.ordering == "first_token"
                listed = "\n".join(f"[{LETTERS[k] if first_token else k + 1}] {passages[index]}"
                                   for k, index in enumerate(window))
                prompt = self.template.fill(count=str(len(window)), passages=listed, query=query.query_text)
                try:
                    reply = self.ask(prompt, self.config.top_logprobs if first_token else None)
                except ScoringFailure as failure:  # the window keeps its order; the others still reorder
                    failures.append(failure)
                    calls, invalid, failed_s = calls + 1, invalid + 1, failed_s + failure.compute_s
                    slowest_window_s = max(slowest_window_s, failure.compute_s)
                    continue
                if self.prompt_cut(prompt, reply):  # an order of passages the model may not have seen: not read
                    permutation, reasons = list(range(len(window))), ["prompt_truncated"]
                elif first_token:
                    permutation, reasons = first_token_order(reply.top_logprobs, reply.text, len(window))
                else:
                    permutation, reasons = parse_permutation(reply.text, len(window), reply.finish_reason)
                self.tally.add(reply, reasons)
                calls, invalid = calls + 1, invalid + bool(reasons)
                prompt_tokens += reply.prompt_tokens
                completion_tokens += reply.completion_tokens
                if reply.cache_hit:
                    replayed_s += reply.seconds
                else:
                    compute_s += reply.seconds
                slowest_window_s = max(slowest_window_s, reply.seconds)  # a cache hit replays the window's own time
                order[start:end] = [window[k] for k in permutation]
        if failures and len(failures) == calls:  # a fallback, counted as one: its windows are no invalid outputs
            raise failures[0]
        for failure in failures:
            self.tally.add_failure(f"window_failed:{failure.reason}")
        values = np.empty(len(order), dtype=np.float64)
        values[order] = np.arange(len(order), 0, -1, dtype=np.float64)
        return Scores(values=values, compute_s=compute_s + failed_s, replayed_s=replayed_s,  # failed attempts count
                      timings={"llm_calls": float(calls), "invalid_outputs": float(invalid),
                               "prompt_tokens": float(prompt_tokens), "completion_tokens": float(completion_tokens),
                               "slowest_window_s": slowest_window_s, "failed_windows": float(len(failures)),
                               "mean_window_s": (compute_s + replayed_s) / (calls - len(failures))
                               if calls > len(failures) else 0.0})

    def windows(self, size: int) -> list[tuple[int, int]]:
        """The (start, end) of each window of one sweep over ``size`` passages, in the order they are asked."""
        window, stride = self.config.window, self.config.stride
        if self.config.direction == "top_down":
            starts = range(0, max(size - window, 0) + stride, stride)
            return [(start, min(start + window, size)) for start in starts if start < size]
        found, end = [], size
        while end > 0:
            found.append((max(0, end - window), end))
            if end <= window:
                break
            end -= stride
        return found

    def describe(self) -> dict[str, Any]:
        config = self.config
        return {"kind": config.kind, **pins(config, self.template, self.tally),
                "window": {"window": config.window, "stride": config.stride, "passes": config.passes,
                           "direction": "bottom to top" if config.direction == "bottom_up" else "top to bottom",
                           "ordering": config.ordering,
                           **({"top_logprobs": config.top_logprobs} if config.ordering == "first_token" else {})},
                "score": "final position (the first passage scores depth)",
                "invalid_outputs": self.tally.record()}


@register_system("llm_listwise", LLMListwiseConfig)
def _llm_listwise(config: LLMListwiseConfig, context: BuildContext) -> LLMListwise:
    return LLMListwise(config, context, min(config.window, config.depth))
