"""The ``llm_pointwise`` system kind: each of the top ``depth`` passages judged alone, scored by the model's
probability of "yes".

Where the endpoint returns log probabilities (``top_logprobs`` > 0; vLLM and llama.cpp's server do), the score is
P(yes) / (P(yes) + P(no)) over the first generated token's alternatives (tokens compared lower-cased and stripped, so
" Yes" counts as yes). Where it returns none, or neither word is among the alternatives, the score is the parsed
label of the reply's first word: yes 1, no 0. Which one decided is counted per run (``describe()['score_from']``).
A reply whose first word is neither is an invalid output (``unreadable_label``): it scores 0.5, between no and yes,
and is counted. So is a reply to a prompt the endpoint cut (``prompt_truncated``, ``LLMSystem.prompt_cut``): it is
not read. A call that fails outright fails the query (fused order, with the reason).

With ``grades`` (e.g. ``{"0": 0, "1": 1, "2": 2, "3": 3}`` and ``conf/prompts/llm_pointwise_graded_v1.txt``) the
model answers a graded label instead: the score is the expected grade over the labels among the first token's
alternatives (sum of grade x P(label), over the sum of P(label)), else the parsed label's grade; an unreadable reply
scores the middle of the grades' range. Labels are read as words of letters or digits.
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from ..base import QueryCandidates, Scores
from ..registry import BuildContext, register_system
from . import LLMRerankConfig, LLMSystem, clipped, pins

class LLMPointwiseConfig(LLMRerankConfig):
    kind: Literal["llm_pointwise"] = "llm_pointwise"
    template: str = "conf/prompts/llm_pointwise_v1.txt"
    top_logprobs: int = Field(5, ge=0, le=20)
    """Alternatives of the first token asked for (0: never ask; the parsed label decides)."""
    yes_words: list[str] = ["yes"]
    """The replies that mean relevant (compared lower-cased, stripped); YAML reads a bare yes or no as a boolean, so
    quote them."""
    no_words: list[str] = ["no"]
    grades: dict[str, float] | None = None
    """A graded label instead of yes/no: each reply word (compared lower-cased) and its grade; at least two distinct
    grades. None: yes/no (``yes_words`` 1, ``no_words`` 0)."""

    @model_validator(mode="after")
    def _one_scale(self) -> "LLMPointwiseConfig":
        if self.grades is not None:
            if {"yes_words", "no_words"} & self.model_fields_set:
                raise ValueError("grades replaces yes_words and no_words. Fix: set one scale, not both")
            if len(set(self.grades.values())) < 2 or not all(math.isfinite(g) for g in self.grades.values()):
                raise ValueError(f"grades {self.grades} need at least two distinct finite grades")
        return self

    def scale(self) -> dict[str, float]:
        """Each reply word (lower-cased) and the score it stands for."""
        if self.grades is not None:
            return {word.strip().lower(): float(grade) for word, grade in self.grades.items()}
        return {**{word.lower(): 0.0 for word in self.no_words}, **{word.lower(): 1.0 for word in self.yes_words}}


def first_word(text: str, digits: bool = False) -> str:
    """The reply's first word in any script: a letter (or, with ``digits``, a digit too), then letters and combining
    marks (and digits), lower-cased: Hindi "हाँ", Thai "ใช่", Arabic "نَعَم" whole. A model that answers in another
    language is read by that word (set ``yes_words``/``no_words`` in that language), never by an English word further
    on; in a script written without spaces the word runs to the first punctuation or space ("是的")."""
    kinds = "LN" if digits else "L"
    start = next((i for i, char in enumerate(text) if unicodedata.category(char)[0] in kinds), len(text))
    end = start
    while end < len(text) and unicodedata.category(text[end])[0] in kinds + "M":
        end += 1
    return text[start:end].lower()


def label_score(text: str, scale: dict[str, float], digits: bool = False) -> float | None:
    return scale.get(first_word(text, digits))


def probability_score(alternatives: tuple[tuple[str, float], ...], scale: dict[str, float]) -> float | None:
    """The expected score over the scale's labels among the first token's alternatives (for yes/no: P(yes) / (P(yes)
    + P(no))); None when none of them is there."""
    weights: dict[str, float] = {}
    for token, logprob in alternatives:
        label = token.strip().lower()
        if label in scale:
            weights[label] = weights.get(label, 0.0) + math.exp(logprob)
    total = sum(weights.values())
    return sum(scale[label] * weight for label, weight in weights.items()) / total if total > 0 else None


class LLMPointwise(LLMSystem):
    placeholders = ("passage", "query")

    def __init__(self, config: LLMPointwiseConfig, context: BuildContext):
        super().__init__(config, context, 1)
        self.scale, self.digits = config.scale(), config.grades is not None
        self.unreadable = (min(self.scale.values()) + max(self.scale.values())) / 2
        self.score_from: Counter = Counter()

    def score(self, query: QueryCandidates) -> Scores:
        values, invalid, compute_s, replayed_s = [], 0, 0.0, 0.0
        tokens = {"prompt_tokens": 0.0, "completion_tokens": 0.0}
        for passage in query.passages:
            prompt = self.template.fill(query=query.query_text,
                                        passage=clipped(passage, self.config.max_passage_words))
            reply = self.ask(prompt, self.config.top_logprobs or None)
            if self.prompt_cut(prompt, reply):  # a judgment of a passage the model may not have seen: not read
                score, source, reasons = None, "prompt truncated", ["prompt_truncated"]
            else:
                score = probability_score(reply.top_logprobs, self.scale) if reply.top_logprobs else None
                source = "logprobs"
                if score is None:
                    score, source = label_score(reply.text, self.scale, self.digits), "parsed label"
                reasons = [] if score is not None else ["unreadable_label"]
                source = source if score is not None else "unreadable"
            self.score_from[source] += 1
            self.tally.add(reply, reasons)
            invalid += bool(reasons)
            tokens["prompt_tokens"] += reply.prompt_tokens
            tokens["completion_tokens"] += reply.completion_tokens
            values.append(self.unreadable if score is None else score)
            if reply.cache_hit:
                replayed_s += reply.seconds
            else:
                compute_s += reply.seconds
        return Scores(values=np.array(values, dtype=np.float64), compute_s=compute_s, replayed_s=replayed_s,
                      timings={"llm_calls": float(len(values)), "invalid_outputs": float(invalid), **tokens})

    def describe(self) -> dict[str, Any]:
        config = self.config
        return {"kind": config.kind, **pins(config, self.template, self.tally),
                "top_logprobs": config.top_logprobs,
                **({"grades": config.grades,
                    "score": f"the expected grade over the labels among the first token's logprobs, else the parsed "
                             f"label's grade; unreadable {self.unreadable:g}"} if config.grades is not None else
                   {"yes_words": config.yes_words, "no_words": config.no_words,
                    "score": "P(yes) / (P(yes) + P(no)) from the first token's logprobs, else the parsed label (yes "
                             "1, no 0); unreadable 0.5"}),
                "score_from": dict(sorted(self.score_from.items())), "invalid_outputs": self.tally.record()}


@register_system("llm_pointwise", LLMPointwiseConfig)
def _llm_pointwise(config: LLMPointwiseConfig, context: BuildContext) -> LLMPointwise:
    return LLMPointwise(config, context)
