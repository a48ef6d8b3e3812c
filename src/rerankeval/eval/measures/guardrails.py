"""Guardrail measures: what a ranking shows that it must not, one value per query.

Their input kind is ``guardrails``: per query (aligned on the GradeMatrix's query ids), three boolean flags per rank
in the run's order, handed to ``evaluate`` as ``sources={"guardrails": frame}`` (``GUARDRAIL_COLUMNS``; built from the
collection's access and validity labels by ``data.access.guardrail_flags``):

- ``forbidden``: the asking user may not see the document (its ``acl`` grants none of the user's groups);
- ``stale``: the document is outdated at the query's as-of date;
- ``stale_first``: a stale document no later version of which is ranked above it.

A query the run does not rank has no flags and scores 0. They are defined on every query (``defines_no_relevant``):
a violation does not need a relevant document.
"""

from __future__ import annotations

import numpy as np

from .base import Measure

GUARDRAIL_COLUMNS = ("forbidden", "stale", "stale_first")


def guardrail_input(matrix) -> list[dict[str, np.ndarray]]:
    frame = matrix.sources.get("guardrails")
    if frame is None:
        raise ValueError("guardrail measures (ACLViolation, Stale, StaleFirst) need sources={'guardrails': frame}: "
                         "the per-rank flags of data.access.guardrail_flags")
    empty = {column: np.zeros(0, dtype=bool) for column in GUARDRAIL_COLUMNS}
    by_query = frame.to_dict("index")
    return [{column: np.asarray(by_query[query_id][column], dtype=bool) for column in GUARDRAIL_COLUMNS}
            if query_id in by_query else empty for query_id in matrix.query_ids]


def _head(flags: np.ndarray, cutoff: int | None) -> np.ndarray:
    return flags if cutoff is None else flags[:cutoff]


def acl_violation(m: Measure, rows: list[dict[str, np.ndarray]]) -> np.ndarray:
    return np.array([float(_head(row["forbidden"], m.cutoff).any()) for row in rows], dtype=np.float64)


def stale(m: Measure, rows: list[dict[str, np.ndarray]]) -> np.ndarray:
    values = []
    for row in rows:
        head = _head(row["stale"], m.cutoff)
        values.append(float(head.mean()) if len(head) else 0.0)
    return np.array(values, dtype=np.float64)


def stale_first(m: Measure, rows: list[dict[str, np.ndarray]]) -> np.ndarray:
    return np.array([float(_head(row["stale_first"], m.cutoff).any()) for row in rows], dtype=np.float64)
