import time

import numpy as np
import pandas as pd
import pytest

from rerankeval.rerank import (FUSED_TAIL, FUSION_FALLBACK, RERANKED, PermutationError, RerankSettings,
                               check_permutation, rerank)
from rerankeval.systems import BuildContext, ColumnSystem, Scored, build_system


def candidates(n_queries=2, n_docs=5):
    rows = [{"query_id": f"q{q}", "doc_id": f"d{d}", "passage": f"text {d}", "passage_sha256": "x",
             "fused_rank": d + 1, "fused_score": 1.0 / (d + 1), "bm25_rank": n_docs - d, "dense_rank": d + 1}
            for q in range(n_queries) for d in range(n_docs)]
    return pd.DataFrame(rows)


TEXTS = {"q0": "first", "q1": "second"}


class Fixed:
    def __init__(self, scores=None, error=None, sleep=0.0):
        self.scores, self.error, self.sleep = scores, error, sleep

    def score(self, query, deadline):
        time.sleep(self.sleep)
        if self.error and query.query_id == "q1":
            raise self.error
        return Scored(scores=np.asarray(self.scores[: len(query.frame)], dtype=float), tokenize_s=0.01)

    def describe(self):
        return {}


def test_head_is_reranked_tail_keeps_fused_order():
    run, latency = rerank(candidates(), TEXTS, Fixed([0.1, 0.9, 0.5, 9, 9]), RerankSettings(depth=3))
    q0 = run[run["query_id"] == "q0"]
    assert q0["doc_id"].tolist() == ["d1", "d2", "d0", "d3", "d4"]
    assert q0["rank"].tolist() == [1, 2, 3, 4, 5]
    assert q0["mode"].tolist() == [RERANKED] * 3 + [FUSED_TAIL] * 2
    assert q0["score"].iloc[:3].tolist() == [0.9, 0.5, 0.1] and q0["score"].iloc[3:].isna().all()
    assert latency["n_pairs"].tolist() == [3, 3] and latency["warmup"].tolist() == [True, True]


def test_ties_break_by_fused_rank_then_doc_id():
    run, _ = rerank(candidates(n_queries=1), TEXTS, Fixed([1, 2, 2, 1, 2]), RerankSettings(depth=5))
    assert run["doc_id"].tolist() == ["d1", "d2", "d4", "d0", "d3"]


@pytest.mark.parametrize("system, reason", [
    (Fixed([1, 2, 3, 4, 5], error=RuntimeError("model exploded")), "RuntimeError: model exploded"),
    (Fixed([1, np.nan, 3, 4, 5]), "NaN scores"),
    (Fixed([1, 2]), "returned 2 scores for 5 candidates"),
])
def test_failures_fall_back_to_fused_order(system, reason):
    run, latency = rerank(candidates(), TEXTS, system, RerankSettings(depth=5))
    failed = run[run["mode"] == FUSION_FALLBACK]
    assert len(failed) and (failed["degraded_reason"].str.contains(reason, regex=False)).all()
    for _, frame in failed.groupby("query_id"):
        assert frame["doc_id"].tolist() == ["d0", "d1", "d2", "d3", "d4"]
    assert FUSION_FALLBACK in set(latency["mode"])


def test_deadline_turns_a_slow_query_into_fallback():
    run, _ = rerank(candidates(n_queries=1), TEXTS, Fixed([5, 4, 3, 2, 1], sleep=0.05),
                    RerankSettings(depth=5, deadline_s=0.01))
    assert set(run["mode"]) == {FUSION_FALLBACK}
    assert run["degraded_reason"].iloc[0].startswith("deadline 0.01s exceeded")


def test_permutation_check_catches_dropped_duplicated_and_gapped_ranks():
    cands = candidates(n_queries=1)
    good, _ = rerank(cands, TEXTS, ColumnSystem("fused_score"), RerankSettings(depth=5))
    check_permutation(cands, good)
    with pytest.raises(PermutationError):
        check_permutation(cands, good.iloc[:-1])
    duplicated = good.copy()
    duplicated.loc[4, "doc_id"] = "d0"
    with pytest.raises(PermutationError):
        check_permutation(cands, duplicated)
    gapped = good.copy()
    gapped.loc[4, "rank"] = 9
    with pytest.raises(PermutationError, match="not 1..n"):
        check_permutation(cands, gapped)


def test_simple_system_kinds():
    cands = candidates(n_queries=1)
    qrels = pd.DataFrame({"query_id": ["q0", "q0"], "doc_id": ["d3", "d4"], "relevance": [1, 3]})
    context = BuildContext(qrels=qrels)
    order = {}
    for kind in ("fusion", "bm25", "dense", "oracle", "random"):
        system = build_system(kind, {"kind": kind, "seed": 3}, context)
        run, _ = rerank(cands, TEXTS, system, RerankSettings(depth=5))
        order[kind] = run["doc_id"].tolist()
    assert order["fusion"] == order["dense"] == ["d0", "d1", "d2", "d3", "d4"]
    assert order["bm25"] == ["d4", "d3", "d2", "d1", "d0"]
    assert order["oracle"][:2] == ["d4", "d3"]
    again, _ = rerank(cands, TEXTS, build_system("random", {"kind": "random", "seed": 3}, context), RerankSettings(5))
    assert again["doc_id"].tolist() == order["random"]
    with pytest.raises(ValueError, match="unknown kind 'nope'"):
        build_system("x", {"kind": "nope"}, context)
