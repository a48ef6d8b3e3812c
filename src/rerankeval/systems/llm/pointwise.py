"""The ``llm_pointwise`` system kind: each of the top ``depth`` passages judged alone, scored by the model's
probability of "yes".

Where the endpoint returns log probabilities (``top_logprobs`` > 0; vLLM and llama.cpp's server do), the score is
P(yes) / (P(yes) + P(no)) over the first generated token's alternatives (tokens compared lower-cased and stripped, so
" Yes" counts as yes). Where it returns none, or neither word is among the alternatives, the score is the parsed
label of the reply's first word: yes 1, no 0. Which one decided is counted per run (``describe()['score_from']``).
A reply whose first word is neither is an invalid output (``unreadable_label``): it scores 0.5, between no and yes,
and is counted. A call that fails outright fails the query (fused order, with the reason).
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter
from typing import Any, Literal

import numpy as np
from pydantic import Field

from ..base import QueryCandidates, Scores
from ..registry import BuildContext, register_system
from . import LLMRerankConfig, LLMSystem, clipped, pins

UNREADABLE = 0.5


class LLMPointwiseConfig(LLMRerankConfig):
    kind: Literal["llm_pointwise"] = "llm_pointwise"
    template: str = "conf/prompts/llm_pointwise_v1.txt"
    top_logprobs: int = Field(5, ge=0, le=20)
    """Alternatives of the first token asked for (0: never ask; the parsed label decides)."""
    yes_words: list[str] = ["yes"]
    """The replies that mean relevant (compared lower-cased, stripped); YAML reads a bare yes or no as a boolean, so
    quote them."""
    no_words: list[str] = ["no"]


def first_word(text: str) -> str:
    """The reply's first word in any script: a letter, then letters and combining marks (Hindi "हाँ", Thai "ใช่",
    Arabic "نَعَم" whole), lower-cased. A model that answers in another language is read by that word (set
    ``yes_words``/``no_words`` in that language), never by an English word further on; in a script written without
    spaces the word runs to the first punctuation or space ("是的")."""
    start = next((i for i, char in enumerate(text) if unicodedata.category(char).startswith("L")), len(text))
    end = start
    while end < len(text) and unicodedata.category(text[end])[0] in "LM":
        end += 1
    return text[start:end].lower()


def label_score(text: str, yes: set[str], no: set[str]) -> float | None:
    found = first_word(text)
    return 1.0 if found in yes else 0.0 if found in no else None


def probability_score(alternatives: tuple[tuple[str, float], ...], yes: set[str], no: set[str]) -> float | None:
    p_yes = sum(math.exp(logprob) for token, logprob in alternatives if token.strip().lower() in yes)
    p_no = sum(math.exp(logprob) for token, logprob in alternatives if token.strip().lower() in no)
    return p_yes / (p_yes + p_no) if p_yes + p_no > 0 else None


class LLMPointwise(LLMSystem):
    placeholders = ("passage", "query")

    def __init__(self, config: LLMPointwiseConfig, context: BuildContext):
        super().__init__(config, context, 1)
        self.yes, self.no = {w.lower() for w in config.yes_words}, {w.lower() for w in config.no_words}
        self.score_from: Counter = Counter()

    def score(self, query: QueryCandidates) -> Scores:
        values, invalid, compute_s, replayed_s = [], 0, 0.0, 0.0
        tokens = {"prompt_tokens": 0.0, "completion_tokens": 0.0}
        for passage in query.passages:
            prompt = self.template.fill(query=query.query_text,
                                        passage=clipped(passage, self.config.max_passage_words))
            reply = self.ask(prompt, self.config.top_logprobs or None)
            score = probability_score(reply.top_logprobs, self.yes, self.no) if reply.top_logprobs else None
            source = "logprobs"
            if score is None:
                score, source = label_score(reply.text, self.yes, self.no), "parsed label"
            reasons = [] if score is not None else ["unreadable_label"]
            self.score_from[source if score is not None else "unreadable"] += 1
            self.tally.add(reply, reasons)
            invalid += bool(reasons)
            tokens["prompt_tokens"] += reply.prompt_tokens
            tokens["completion_tokens"] += reply.completion_tokens
            values.append(UNREADABLE if score is None else score)
            if reply.cache_hit:
                replayed_s += reply.seconds
            else:
                compute_s += reply.seconds
        return Scores(values=np.array(values, dtype=np.float64), compute_s=compute_s, replayed_s=replayed_s,
                      timings={"llm_calls": float(len(values)), "invalid_outputs": float(invalid), **tokens})

    def describe(self) -> dict[str, Any]:
        config = self.config
        return {"kind": config.kind, **pins(config, self.template, self.tally),
                "top_logprobs": config.top_logprobs, "yes_words": config.yes_words, "no_words": config.no_words,
                "score": "P(yes) / (P(yes) + P(no)) from the first token's logprobs, else the parsed label (yes 1, "
                         "no 0); unreadable 0.5",
                "score_from": dict(sorted(self.score_from.items())), "invalid_outputs": self.tally.record()}


@register_system("llm_pointwise", LLMPointwiseConfig)
def _llm_pointwise(config: LLMPointwiseConfig, context: BuildContext) -> LLMPointwise:
    return LLMPointwise(config, context)
