"""Query features a routing rule can test, computed from the query and its frozen candidates only (no model call).

* ``identifiers``: the exact identifiers in the query text (a configurable pattern; the default finds codes such as
  ``PAY-1042`` or ``ORN-E305`` also when a Korean particle follows them).
* ``identifier_in_lexical_top1``: the first identifier written in BM25's top-1 passage is one of the query's, the
  exact string (``PAY-1041`` is not ``PAY-1042``).
* ``first_stage_agree``: BM25's and the dense retriever's top-1 are the same document.
* ``margin(column)``: top-1 minus top-2 of a first-stage score among the candidates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..base import QueryCandidates

DEFAULT_IDENTIFIER_PATTERN = r"(?<![A-Za-z0-9])[A-Z]{2,5}-[A-Z]?[0-9]{2,6}(?![A-Za-z0-9])"


@dataclass
class QueryFeatures:
    query: QueryCandidates
    pattern: re.Pattern

    @cached_property
    def identifiers(self) -> list[str]:
        return list(dict.fromkeys(self.pattern.findall(self.query.query_text)))

    def _top1(self, rank_column: str) -> int | None:
        ranks = self.query.frame[rank_column].to_numpy()
        hits = np.flatnonzero(ranks == 1)
        return int(hits[0]) if len(hits) else None

    @cached_property
    def identifier_in_lexical_top1(self) -> bool:
        top = self._top1("bm25_rank")
        if top is None or not self.identifiers:
            return False
        found = self.pattern.search(str(self.query.frame["passage"].iloc[top]))
        return found is not None and found.group(0) in self.identifiers

    @cached_property
    def first_stage_agree(self) -> bool:
        lexical, dense = self._top1("bm25_rank"), self._top1("dense_rank")
        return lexical is not None and lexical == dense

    def margin(self, column: str, relative: bool) -> float:
        values = np.sort(self.query.frame[column].to_numpy(dtype=np.float64))[::-1]
        if len(values) < 2:
            return float("inf")
        gap = float(values[0] - values[1])
        return gap / abs(values[0]) if relative and values[0] != 0 else gap
