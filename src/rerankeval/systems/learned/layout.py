"""How a (query, passage) pair is laid out for a cross-encoder: special tokens, truncation and the query window.

The scorer lays pairs out itself, so it knows each pair's token counts and whether the passage was cut.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def kept_lengths(query_len: int, passage_len: int, budget: int) -> tuple[int, int]:
    """Tokens kept of query and passage under transformers' ``longest_first`` truncation (tokenizers' rule)."""
    if query_len + passage_len <= budget:
        return query_len, passage_len
    short, long_ = sorted((query_len, passage_len))
    long_ = short if short > budget else max(short, budget - short)
    if short + long_ > budget:
        short, long_ = budget // 2, budget // 2 + budget % 2
    return (long_, short) if query_len > passage_len else (short, long_)


def best_window(passage_ids: list[int], query_ids: set[int], width: int) -> int:
    """Start of the ``width``-token passage window holding most query tokens; ties go to the earliest window."""
    hits = np.fromiter((token in query_ids for token in passage_ids), dtype=np.int64, count=len(passage_ids))
    window_hits = np.convolve(hits, np.ones(width, dtype=np.int64), mode="valid")
    return int(np.argmax(window_hits))  # argmax returns the first maximum


@dataclass(frozen=True)
class PairLayout:
    """Where the tokenizer puts its special tokens around a (query, passage) pair, learnt by probing it once."""

    prefix: tuple[int, ...]
    middle: tuple[int, ...]
    suffix: tuple[int, ...]
    type_ids: tuple[tuple[int, ...], int, tuple[int, ...], int, tuple[int, ...]]
    """Token type ids of prefix, query, middle, passage and suffix."""

    @classmethod
    def probe(cls, tokenizer) -> "PairLayout":
        first = tokenizer("a", add_special_tokens=False)["input_ids"]
        second = tokenizer("b", add_special_tokens=False)["input_ids"]
        pair = tokenizer("a", "b", return_special_tokens_mask=True, return_token_type_ids=True)
        content = [i for i, special in enumerate(pair["special_tokens_mask"]) if not special]
        if len(content) != len(first) + len(second):
            raise ValueError(f"cannot infer the pair layout of tokenizer {type(tokenizer).__name__}")
        query_end, passage_start = content[len(first) - 1] + 1, content[len(first)]
        ids, types = pair["input_ids"], pair["token_type_ids"]
        spans = (slice(0, content[0]), slice(query_end, passage_start), slice(content[-1] + 1, len(ids)))
        return cls(prefix=tuple(ids[spans[0]]), middle=tuple(ids[spans[1]]), suffix=tuple(ids[spans[2]]),
                   type_ids=(tuple(types[spans[0]]), types[content[0]], tuple(types[spans[1]]), types[passage_start],
                             tuple(types[spans[2]])))

    @property
    def special_count(self) -> int:
        return len(self.prefix) + len(self.middle) + len(self.suffix)

    def build(self, query_ids: list[int], passage_ids: list[int]) -> tuple[list[int], list[int]]:
        prefix_t, query_t, middle_t, passage_t, suffix_t = self.type_ids
        ids = [*self.prefix, *query_ids, *self.middle, *passage_ids, *self.suffix]
        types = [*prefix_t, *[query_t] * len(query_ids), *middle_t, *[passage_t] * len(passage_ids), *suffix_t]
        return ids, types


def word_like_ids(tokenizer, ids: list[int]) -> set[int]:
    """Query token ids that carry content: special tokens and punctuation do not locate a relevant window."""
    special = set(tokenizer.all_special_ids)
    return {token for token, text in zip(ids, tokenizer.convert_ids_to_tokens(ids))
            if token not in special and any(ch.isalnum() for ch in text)}
