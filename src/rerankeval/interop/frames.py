"""The frozen candidates and runs as PyTerrier's data model writes them, and back; no PyTerrier import needed.

PyTerrier's ranked frame (type R) has ``qid``, ``query``, ``docno``, ``score`` and a 0-based ``rank``, and a reranker's
input also ``text``; rerankeval's runs have ``query_id``, ``doc_id``, ``score`` and a 1-based ``rank``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..core.errors import ContractError
from ..eval.ranks import assign_ranks


FIRST_STAGE = ("parent_id", "bm25_score", "bm25_rank", "dense_score", "dense_rank", "fused_score")
"""The frozen candidates' own columns a frame carries along, for the systems that read them (a blend's fused score,
a routing rule's BM25 rank); a frame from another retriever has none of them."""


def candidates_frame(candidates: pd.DataFrame, queries: Mapping[str, str]) -> pd.DataFrame:
    """The frozen candidates (``retrieval.candidates.load_candidates``, with their passage text) as a ranked PyTerrier
    frame in fused order: the score is minus the fused rank, so that PyTerrier's order is the frozen one; the
    first stage's columns (``FIRST_STAGE``) ride along."""
    ordered = candidates.sort_values(["query_id", "fused_rank"], kind="stable")
    return pd.DataFrame({"qid": ordered["query_id"].astype(str).to_numpy(),
                         "query": ordered["query_id"].map(queries).to_numpy(),
                         "docno": ordered["doc_id"].astype(str).to_numpy(),
                         "text": ordered["passage"].to_numpy(),
                         "score": -ordered["fused_rank"].astype(float).to_numpy(),
                         "rank": ordered["fused_rank"].astype(int).to_numpy() - 1,
                         **{column: ordered[column].to_numpy() for column in FIRST_STAGE if column in ordered}})


def ordered_scores(run: pd.DataFrame) -> pd.Series:
    """A run's scores, and below its reranked head (no score: the fused tail, or a fallback's every row) scores that
    keep the run's order under it: each query's lowest score minus the distance in ranks. PyTerrier orders by score."""
    floor = run.groupby("query_id")["score"].transform("min").fillna(0.0)
    head = run.groupby("query_id")["score"].transform("count")
    return run["score"].where(run["score"].notna(), floor - (run["rank"] - head))


def untied_scores(run: pd.DataFrame, resolution: type = np.float64) -> pd.Series:
    """The run's scores (index aligned with ``run``) in its own order with no two equal within a query at
    ``resolution``: a score not below the one ranked above it, once both are rounded to ``resolution``, becomes the
    next ``resolution`` value below that one; every other score is kept as it is. ``np.float32`` for trec_eval and
    what runs on it (pytrec_eval, so PyTerrier's evaluation), which hold a score as a C float."""
    ranked = run if "rank" in run.columns else assign_ranks(run)
    ordered = ranked.assign(score=ordered_scores(ranked)).sort_values(["query_id", "rank"], kind="stable")
    scores = ordered["score"].to_numpy(dtype=np.float64).copy()
    first = np.r_[True, ordered["query_id"].to_numpy()[1:] != ordered["query_id"].to_numpy()[:-1]]
    for i in np.flatnonzero(~first):
        above = resolution(scores[i - 1])
        if resolution(scores[i]) >= above:
            scores[i] = float(np.nextafter(above, resolution(-np.inf)))
    return pd.Series(scores, index=ordered.index).reindex(run.index)


def run_frame(run: pd.DataFrame, queries: Mapping[str, str]) -> pd.DataFrame:
    """A run (``query_id``, ``doc_id``, ``score``, ``rank``) as a ranked PyTerrier frame whose scores keep its order
    (``untied_scores``): PyTerrier's evaluation (pytrec_eval, as trec_eval) breaks tied scores by document id, not by
    the run's rank."""
    ordered = run.assign(score=untied_scores(run, np.float32)).sort_values(["query_id", "rank"], kind="stable")
    return pd.DataFrame({"qid": ordered["query_id"].astype(str).to_numpy(),
                         "query": ordered["query_id"].map(queries).to_numpy(),
                         "docno": ordered["doc_id"].astype(str).to_numpy(),
                         "score": ordered["score"].astype(float).to_numpy(),
                         "rank": ordered["rank"].astype(int).to_numpy() - 1})


def from_ranked_frame(frame: pd.DataFrame, where: str = "the PyTerrier frame") -> pd.DataFrame:
    """A ranked PyTerrier frame as a run: ``query_id``, ``doc_id``, ``score``, ``rank`` (1-based, by score within each
    query as PyTerrier orders it, its own ``rank`` column when it has one)."""
    missing = [column for column in ("qid", "docno", "score") if column not in frame.columns]
    if missing:
        raise ContractError(f"{where}: no column {', '.join(missing)} (a ranked frame has qid, docno, score, rank)")
    run = pd.DataFrame({"query_id": frame["qid"].astype(str), "doc_id": frame["docno"].astype(str),
                        "score": frame["score"].astype(float)})
    if "rank" in frame.columns:
        run["rank"] = frame["rank"].astype(int).to_numpy() + 1
    else:
        run = run.sort_values(["query_id", "score"], ascending=[True, False], kind="stable")
        run["rank"] = run.groupby("query_id").cumcount() + 1
    return run.sort_values(["query_id", "rank"], kind="stable").reset_index(drop=True)
