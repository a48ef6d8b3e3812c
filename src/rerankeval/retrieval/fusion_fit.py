"""RRF weights fitted on the train split: equal weights unless a weighting is significantly better there.

Weighted RRF scores a document ``sum_r w_r / (k + rank_r)``. With ``retrieval.fusion.weights: fit`` the freeze
stage ranks the ``fit_split`` queries under every BM25 share ``s`` of ``grid`` (weights ``2s`` and ``2(1 - s)``, so
``s = 0.5`` is plain RRF, bit for bit) and keeps equal weights unless the share with the best mean ``measure`` beats
them with a paired bootstrap CI above 0, at ``confidence`` Bonferroni-adjusted for the shares tried. Why: one
retriever can be much weaker on a collection (an embedder on a language it reads poorly, korquad-a: equal-weight
RRF 0.023 nDCG@10 below BM25 alone), and equal weights then drag the baseline down; a fit that moves only on
evidence leaves collections where the retrievers are balanced on plain RRF (measured: the demo, SciFact and
squad-sb50 keep equal weights; korquad-a moves to a BM25 share of 0.8). The evaluated split is never used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .config import EQUAL_SHARE, FusionConfig


def share_weights(share: float) -> tuple[float, float]:
    """(BM25, dense) weights of a BM25 share, rounded so that a share of the grid gives its decimal weights."""
    return round(2.0 * share, 12), round(2.0 * (1.0 - share), 12)


def fit_share(config: FusionConfig, fused_run: Callable[[float], pd.DataFrame], qrels: pd.DataFrame,
              query_ids: Sequence[str]) -> tuple[float, dict[str, Any]]:
    """The BM25 share to fuse with, and the record of the fit. ``fused_run(share)``: the fit queries' fused top-N
    (query_id, doc_id, rank) under that share."""
    from ..eval.engine import evaluate
    from ..stats.resampling import bootstrap_ci

    judged = qrels[qrels["query_id"].isin(set(query_ids))]
    values = {share: evaluate(fused_run(share), judged, [config.measure], queries=query_ids,
                              no_relevant="drop")[config.measure] for share in config.grid}
    equal = values[EQUAL_SHARE]
    others = [share for share in config.grid if share != EQUAL_SHARE]
    record: dict[str, Any] = {"split": config.fit_split, "measure": config.measure, "queries": int(len(equal)),
                              "curve": [{"bm25_share": share, "mean": round(float(values[share].mean()), 6)}
                                        for share in config.grid]}
    if len(equal) < 2:
        return EQUAL_SHARE, {**record, "share": EQUAL_SHARE, "reason": "fewer than 2 judged fit queries"}
    best = max(others, key=lambda share: (float(values[share].mean()), -abs(share - EQUAL_SHARE)))
    confidence = 1.0 - (1.0 - config.confidence) / len(others)
    deltas = (values[best] - equal).to_numpy()
    interval = bootstrap_ci(deltas[:, None], n_samples=config.samples, seed=config.seed, confidence=confidence)
    low, high = float(interval.low[0]), float(interval.high[0])
    chosen = best if low > 0 else EQUAL_SHARE
    reason = (f"best BM25 share {best}, {config.measure} {float(deltas.mean()):+.4f} [{low:+.4f}, {high:+.4f}] vs "
              f"equal weights on {len(equal)} queries ({confidence:.2%} CI, Bonferroni over {len(others)} shares)")
    return chosen, {**record, "share": chosen, "best": best, "delta": round(float(deltas.mean()), 6),
                    "ci": [round(low, 6), round(high, 6)], "confidence": round(confidence, 6),
                    "reason": reason + ("" if chosen == best else "; not significant: equal weights kept")}


def ranked_rows(query_ids: Sequence[str], doc_ids: Sequence[str], rows_per_query: Sequence[int]) -> pd.DataFrame:
    """A run frame (query_id, doc_id, rank) from per-query lists already in rank order."""
    ranks = np.concatenate([np.arange(1, n + 1) for n in rows_per_query]) if rows_per_query else np.array([], int)
    return pd.DataFrame({"query_id": np.repeat(np.array(query_ids, dtype=object), rows_per_query),
                         "doc_id": doc_ids, "rank": ranks})
