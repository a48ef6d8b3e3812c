"""trec_eval's counts per query: documents retrieved, relevant and both (``num_ret``, ``num_rel``, ``num_rel_ret``),
which trec_eval sums over the queries rather than averages, so they are no measure family (whose values are means)."""

from __future__ import annotations

import pandas as pd


def trec_eval_counts(run: pd.DataFrame, qrels: pd.DataFrame, queries: list[str], level: int,
                     judged_only: bool) -> pd.DataFrame:
    """Per query (rows in ``queries``' order) trec_eval's num_ret, num_rel and num_rel_ret: documents retrieved
    (judged ones only with ``judged_only``), graded ``level`` or more, and both."""
    grades = {(str(q), str(d)): int(g) for q, d, g in zip(qrels["query_id"], qrels["doc_id"], qrels["relevance"])}
    retrieved = run[["query_id", "doc_id"]].astype(str)
    if judged_only:
        retrieved = retrieved[[key in grades for key in zip(retrieved["query_id"], retrieved["doc_id"])]]
    relevant = [grades.get(key, 0) >= level for key in zip(retrieved["query_id"], retrieved["doc_id"])]
    judged = qrels.assign(query_id=qrels["query_id"].astype(str))
    counts = pd.DataFrame({"num_ret": retrieved.groupby("query_id").size(),
                           "num_rel": judged[judged["relevance"] >= level].groupby("query_id").size(),
                           "num_rel_ret": retrieved[relevant].groupby("query_id").size()})
    return counts.reindex(queries).fillna(0).astype(int)
