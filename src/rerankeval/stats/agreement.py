"""How much two runs of the same candidates agree, per query: rank-biased overlap, Kendall's tau and overlap at k, and
score parity. What tells an int8 model from its float32 twin, a served system from the one loaded in-process, or a
repeated run from itself, where a mean Δ of 0 can hide many queries reordered both ways.

Per query, ``reference`` and ``other`` rank one candidate set (ties by rank, as each run stores it):

- ``rbo``: extrapolated rank-biased overlap at depth k with persistence p (Webber, Moffat and Zobel 2010, eq. 32):
  X_k/k p^k + (1-p)/p sum_{d=1..k} X_d/d p^d, X_d the shared documents of the two top-d lists; 1 for the same
  order, p states how much the top weighs (p = 0.9: the first 10 ranks hold about 86% of the weight). The ``rbo``
  package (0.1.3) computes the same but requires numpy < 2, which this project cannot install beside pandas 3.
- ``tau``: Kendall's tau-b between the two runs' ranks of the reference's top k.
- ``overlap``: the share of the reference's top k in the other's top k.
- ``changed``: 1 when the two top-k lists differ in order or content.
- ``max_score_diff``: the largest absolute difference of the two stored scores of one document (score parity:
  meaningful between two runs of one model, e.g. int8 vs float32, whose scores share a scale).

Pure: DataFrames in, per-query arrays out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from .variants import mean_interval

AGREEMENT_COLUMNS = ("rbo", "tau", "overlap", "changed", "max_score_diff")
DEPTH, PERSISTENCE = 10, 0.9
"""The top 10, as the primary metric reads it; RBO's p = 0.9 gives those 10 ranks about 86% of its weight."""
RESAMPLING = {"n_samples": 2000, "seed": 17, "confidence": 0.95, "method": "percentile"}
"""The CIs' bootstrap where no comparison's settings apply (`rerankeval agreement`, the load test's served parity):
the compare stage's defaults (compare.samples, seed, confidence, ci_method)."""


def rbo_ext(reference: list, other: list, p: float) -> float:
    """Extrapolated RBO of two rankings evaluated to the same depth k (the shorter list's length)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"rbo's persistence p must lie strictly between 0 and 1, got {p}")
    k = min(len(reference), len(other))
    if k == 0:
        return float("nan")
    seen_a, seen_b, shared = set(), set(), 0
    total = 0.0
    for depth in range(1, k + 1):
        a, b = reference[depth - 1], other[depth - 1]
        if a == b:
            shared += 1
        else:
            shared += (a in seen_b) + (b in seen_a)
        seen_a.add(a)
        seen_b.add(b)
        total += shared / depth * p ** depth
    return shared / k * p ** k + (1 - p) / p * total


def _in_rank_order(frame: pd.DataFrame) -> tuple[list, np.ndarray, np.ndarray]:
    """A query's doc ids, ranks and scores, ordered by rank (ties by doc id)."""
    doc_ids, ranks = frame["doc_id"].to_numpy(), frame["rank"].to_numpy()
    order = np.lexsort((doc_ids, ranks))
    return doc_ids[order].tolist(), ranks[order], frame["score"].to_numpy(dtype=np.float64)[order]


def query_agreement(reference: pd.DataFrame, other: pd.DataFrame, k: int, p: float) -> dict[str, float]:
    """One query's agreement (``AGREEMENT_COLUMNS``); each frame: doc_id, rank, score. Read as arrays and
    dictionaries, not with pandas operations per query: with those (and a blend's fit ranking a frame per query,
    ``composite.components.Rankings``) the demo's shadow stage took 9.9-10.5 s against 5.7-5.9 s (Intel Xeon, 2 cores,
    `python -m rerankeval.pipeline shadow demo_traffic`, twice each; its report identical)."""
    a, _, scores_a = _in_rank_order(reference)
    b, ranks_b_sorted, scores_b = _in_rank_order(other)
    top_a, top_b = a[:k], b[:k]
    ranks_b = dict(zip(b, ranks_b_sorted.tolist()))
    in_both = [doc for doc in top_a if doc in ranks_b]
    tau = float("nan")
    if len(in_both) >= 2:
        tau = float(scipy_stats.kendalltau([a.index(doc) for doc in in_both],
                                           [ranks_b[doc] for doc in in_both]).statistic)
    score_b = dict(zip(b, scores_b.tolist()))
    differences = np.abs(np.array([score - score_b[doc] for doc, score in zip(a, scores_a.tolist())
                                   if doc in score_b], dtype=np.float64))
    defined = differences[~np.isnan(differences)]
    return {"rbo": rbo_ext(a[:k], b[:k], p), "tau": tau,
            "overlap": len(set(top_a) & set(top_b)) / len(top_a) if top_a else float("nan"),
            "changed": float(top_a != top_b),
            "max_score_diff": float(defined.max()) if len(defined) else float("nan")}


def run_agreement(reference: pd.DataFrame, other: pd.DataFrame, *, k: int = DEPTH,
                  p: float = PERSISTENCE) -> pd.DataFrame:
    """Per query (index query_id, in order) the agreement of ``other`` with ``reference`` on the queries both rank;
    each run: query_id, doc_id, rank, score."""
    if k < 1:
        raise ValueError(f"the agreement depth k must be >= 1, got {k}")
    theirs = {query: frame for query, frame in other.groupby("query_id", sort=False)}
    rows = {query: query_agreement(frame, theirs[query], k, p)
            for query, frame in reference.groupby("query_id", sort=True) if query in theirs}
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(AGREEMENT_COLUMNS)).rename_axis("query_id")


def agreement_summary(reference: pd.DataFrame, other: pd.DataFrame, boot: dict, *, k: int = DEPTH,
                      p: float = PERSISTENCE) -> dict:
    """``run_agreement`` at depth ``k`` and persistence ``p``: each measure's mean over queries with its bootstrap CI
    (``boot``: the comparison's resampling settings), and the largest score difference."""
    return summarize_agreement(run_agreement(reference, other, k=k, p=p), boot, k=k, p=p)


def summarize_agreement(per_query: pd.DataFrame, boot: dict, *, k: int = DEPTH, p: float = PERSISTENCE) -> dict:
    """``run_agreement``'s per-query table (at ``k`` and ``p``) summarised as ``agreement_summary`` states it."""
    return {"k": k, "p": p, "queries": int(len(per_query)),
            **{name: mean_interval(per_query[name].to_numpy(dtype=np.float64), boot)
               for name in ("rbo", "tau", "overlap", "changed")},
            "max_score_diff": float(per_query["max_score_diff"].max()) if len(per_query) else None}


SCORE_TRANSFORMS = ("none", "sigmoid")
"""What to apply to the reference's scores before score parity: a served endpoint may return sigmoid(logit) where
the in-process system stores the logit (``normalization``)."""


def ranking_of(scores: np.ndarray, query_id: str) -> pd.DataFrame:
    """One query's documents (numbered by position) ranked by ``scores``, descending, ties by position: a run's rows
    for ``run_agreement``."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(1, len(order) + 1)
    return pd.DataFrame({"query_id": query_id, "doc_id": [f"{i}" for i in range(len(order))], "rank": rank,
                         "score": np.asarray(scores, dtype=np.float64)})


def score_parity(reference: pd.DataFrame, other: pd.DataFrame, tolerance: float,
                 transform: str = "none") -> dict[str, Any]:
    """Whether ``other`` scores every document both runs scored as ``reference`` does, within ``tolerance``: the
    largest absolute difference (reference scores through ``transform``), where it is, and how many pairs were
    compared. Rows without a score (a fused tail) are left out; no pair in common fails the check."""
    if transform not in SCORE_TRANSFORMS:
        raise ValueError(f"score transform {transform!r}: known are {', '.join(SCORE_TRANSFORMS)}")
    if not tolerance >= 0:
        raise ValueError(f"the score tolerance must be 0 or more, got {tolerance}")
    keys = ["query_id", "doc_id"]
    mine = reference.dropna(subset=["score"]).set_index(keys)["score"].astype(np.float64)
    if transform == "sigmoid":
        mine = 1.0 / (1.0 + np.exp(-mine))
    pairs = mine.to_frame("reference").join(other.dropna(subset=["score"]).set_index(keys)["score"].rename("other"),
                                            how="inner")
    if pairs.empty:
        return {"pairs": 0, "tolerance": tolerance, "transform": transform, "max_diff": None, "at": None,
                "passed": False}
    diff = (pairs["reference"] - pairs["other"]).abs()
    where = diff.idxmax()
    return {"pairs": int(len(pairs)), "tolerance": tolerance, "transform": transform, "max_diff": float(diff.max()),
            "at": {"query_id": str(where[0]), "doc_id": str(where[1])}, "passed": bool(diff.max() <= tolerance)}
