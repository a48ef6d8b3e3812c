"""trec_eval's counts per query: documents retrieved, relevant and both (``num_ret``, ``num_rel``, ``num_rel_ret``),
which trec_eval sums over the queries rather than averages, so they are no measure family (whose values are means);
and its geometric means (``gm_map``, ``gm_bpref``), whose per-query value is a logarithm and whose summary is not a
mean either."""

from __future__ import annotations

import numpy as np
import pandas as pd


def trec_eval_counts(run: pd.DataFrame, qrels: pd.DataFrame, queries: list[str], level: int,
                     judged_only: bool) -> pd.DataFrame:
    """Per query (rows in ``queries``' order) trec_eval's num_ret, num_rel and num_rel_ret: documents retrieved
    (with ``judged_only`` those graded 0 or more: a negative grade is pooled but unjudged, as trec_eval's -J drops it),
    graded ``level`` or more, and both."""
    grades = {(str(q), str(d)): int(g) for q, d, g in zip(qrels["query_id"], qrels["doc_id"], qrels["relevance"])}
    retrieved = run[["query_id", "doc_id"]].astype(str)
    if judged_only:
        retrieved = retrieved[[grades.get(key, -1) >= 0 for key in zip(retrieved["query_id"], retrieved["doc_id"])]]
    relevant = [grades.get(key, 0) >= level for key in zip(retrieved["query_id"], retrieved["doc_id"])]
    judged = qrels.assign(query_id=qrels["query_id"].astype(str))
    counts = pd.DataFrame({"num_ret": retrieved.groupby("query_id").size(),
                           "num_rel": judged[judged["relevance"] >= level].groupby("query_id").size(),
                           "num_rel_ret": retrieved[relevant].groupby("query_id").size()})
    return counts.reindex(queries).fillna(0).astype(int)


GEOMETRIC = {"gm_map": "AP", "gm_bpref": "Bpref"}
"""trec_eval's geometric means and the measure each is the geometric mean of."""
MIN_GEO_MEAN = 0.00001
"""trec_eval's floor under a value before its logarithm (MIN_GEO_MEAN in trec_eval.h): a 0 would take the mean to 0."""


def geometric_terms(values: pd.Series) -> pd.Series:
    """What trec_eval prints per query for a geometric mean: log(max(value, MIN_GEO_MEAN))."""
    return np.log(np.maximum(values.astype(np.float64), MIN_GEO_MEAN))


def geometric_summary(terms: pd.Series) -> float:
    """trec_eval's summary of a geometric mean: exp of the mean of the per-query logarithms."""
    return float(np.exp(terms.mean()))
