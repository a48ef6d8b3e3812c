"""A run's ranks by the one tie-break rule, without the measure engine: what reading or writing a run needs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .matrix import JudgedRun
from .measures.base import TREC_EVAL_VERSIONS

_NO_QRELS = pd.DataFrame({"query_id": pd.Series([], dtype="str"), "doc_id": pd.Series([], dtype="str"),
                          "relevance": pd.Series([], dtype=np.int64)})


def assign_ranks(run: pd.DataFrame) -> pd.DataFrame:
    """The run with its ``rank`` column (1 = top), derived by TIE_BREAK_RULE when it has none."""
    rows = JudgedRun(run, _NO_QRELS)
    order = rows.order("rank" if "rank" in run.columns else "score")
    return run.assign(rank=positions(rows, order) + 1)


def positions(rows: JudgedRun, order: np.ndarray) -> np.ndarray:
    """Each run row's 0-based place in its query's order (a row-wise argsort's inverse)."""
    place = np.empty_like(order)
    np.put_along_axis(place, order, np.arange(order.shape[1]), axis=1)
    return place.ravel()[rows.layout.flat]


def trec_eval_ranks(run: pd.DataFrame, version: str) -> pd.DataFrame:
    """The run with the ``rank`` column trec_eval ``version`` orders it by (``TREC_EVAL_VERSIONS``; any rank column
    of the file ignored, as trec_eval ignores it)."""
    if version == "9.0.8":
        return assign_ranks(run.drop(columns="rank", errors="ignore"))
    if version != "10.0":
        raise ValueError(f"trec_eval version {version!r}: known are {', '.join(TREC_EVAL_VERSIONS)}")
    ordered = run.drop(columns="rank", errors="ignore").astype({"score": np.float64}).sort_values(
        ["query_id", "score", "doc_id"], ascending=[True, False, False], kind="stable")
    return ordered.assign(rank=ordered.groupby("query_id", sort=False).cumcount() + 1).sort_index()
