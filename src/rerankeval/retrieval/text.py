"""Tokenisation for lexical retrieval that works for English, Korean and code-switched text.

Latin letters and digits form word tokens (lower-cased, NFKC-normalised). Hangul runs become overlapping character
bigrams: Korean attaches particles to nouns ("결제를", "결제는"), so whole-word matching misses most matches, while
bigrams recover them without a morphological analyser. A one-syllable run is kept as a unigram.
"""

from __future__ import annotations

import re
import unicodedata

_TOKEN_RE = re.compile(r"[0-9a-z]+|[\uac00-\ud7a3]+")
_HANGUL_START = "\uac00"

ENGLISH_STOPWORDS = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their then there these they
    this to was will with""".split()
)


def tokenize(text: str, *, stopwords: frozenset[str] = ENGLISH_STOPWORDS) -> list[str]:
    """Tokens of ``text``: latin/digit words and Hangul character bigrams, in order of appearance."""
    tokens: list[str] = []
    for run in _TOKEN_RE.findall(unicodedata.normalize("NFKC", text).lower()):
        if run[0] >= _HANGUL_START:
            if len(run) == 1:
                tokens.append(run)
            else:
                tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
        elif run not in stopwords:
            tokens.append(run)
    return tokens


PASSAGE_TEMPLATE_VERSION = "title-space-text/v1"
"""Part of every score-cache key: bump it when ``passage_text`` changes."""


def passage_text(title: str, text: str) -> str:
    """The exact string every system sees for a document (BEIR's reranking convention: title, space, text)."""
    return f"{title} {text}" if title else text
