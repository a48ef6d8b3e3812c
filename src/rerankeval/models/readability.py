"""Can a model read a collection's text? The share of its characters the model's tokenizer cannot represent.

A character is unreadable to a model when its tokenizer maps it to the unknown token (WordPiece's ``[UNK]``), to a
byte-fallback piece (sentencepiece's ``<0xEA>``), or splits it over several pieces: the English MiniLM's WordPiece
decomposes a Hangul syllable into jamo (NFD) and byte-level BPE splits a character it has no merge for into its
UTF-8 bytes. Either way the model sees no unit it learnt a meaning for. Counted from a fast tokenizer's character
offsets (``tokenizers.Tokenizer``, a Hugging Face fast tokenizer's ``backend_tokenizer``); whitespace is not counted.
Pure: a tokenizer and texts in, counts out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

BYTE_PIECE = re.compile(r"^<0x[0-9A-Fa-f]{2}>$")
# Word-boundary markers that cover no character of their own (sentencepiece's ▁, byte-level BPE's Ġ).
MARKERS = frozenset("▁Ġ")


@dataclass(frozen=True)
class Unreadable:
    """Non-whitespace characters of some texts, and how many of them the tokenizer maps to the unknown token
    (``unknown``) or to byte pieces or several pieces (``split``); a character is counted once."""

    characters: int
    unknown: int
    split: int

    @property
    def share(self) -> float:
        return (self.unknown + self.split) / self.characters if self.characters else 0.0

    def __add__(self, other: Unreadable) -> Unreadable:
        return Unreadable(self.characters + other.characters, self.unknown + other.unknown, self.split + other.split)


def unreadable(tokenizer, texts: Sequence[str], unk_id: int | None) -> Unreadable:
    """``tokenizer``: a ``tokenizers.Tokenizer`` without truncation (a truncated text's tail would count as read);
    ``unk_id``: its unknown token's id (None when it has none)."""
    characters = unknown = split = 0
    for text, encoding in zip(texts, tokenizer.encode_batch(list(texts), add_special_tokens=False)):
        visible = np.fromiter((not ch.isspace() for ch in text), dtype=bool, count=len(text))
        covers = np.zeros(len(text), dtype=np.int32)
        is_unknown = np.zeros(len(text), dtype=bool)
        is_byte = np.zeros(len(text), dtype=bool)
        for token_id, token, (start, end) in zip(encoding.ids, encoding.tokens, encoding.offsets):
            if end <= start or (token and set(token) <= MARKERS):
                continue
            covers[start:end] += 1
            if token_id == unk_id:
                is_unknown[start:end] = True
            elif BYTE_PIECE.match(token):
                is_byte[start:end] = True
        unknown_here = is_unknown & visible
        characters += int(visible.sum())
        unknown += int(unknown_here.sum())
        split += int(((is_byte | (covers > 1)) & visible & ~unknown_here).sum())
    return Unreadable(characters, unknown, split)


def readability_by_slice(tokenizer, unk_id: int | None,
                         texts: Mapping[str, tuple[Sequence[str], Sequence[str]]]) -> dict[str, dict[str, Any]]:
    """Per slice value: ``texts[value]`` is (query texts, passage texts); the counts and the unreadable share of
    the queries, of the passages and of both together."""
    tokenizer = type(tokenizer).from_str(tokenizer.to_str())  # a copy: counting needs whole texts
    tokenizer.no_truncation()
    tokenizer.no_padding()
    result = {}
    for value, (queries, passages) in texts.items():
        of_queries, of_passages = unreadable(tokenizer, queries, unk_id), unreadable(tokenizer, passages, unk_id)
        total = of_queries + of_passages
        result[value] = {"queries": len(queries), "passages": len(passages), "characters": total.characters,
                         "unknown_characters": total.unknown, "split_characters": total.split,
                         "query_share": round(of_queries.share, 6), "passage_share": round(of_passages.share, 6),
                         "share": round(total.share, 6)}
    return result
