"""The rerank driver: head ordering, modes, failure classification, deadlines on cold time, permutations."""

import time

import numpy as np
import pandas as pd
import pytest

from rerankeval.core.errors import InfrastructureError, ScoringFailure
from rerankeval.rerank.assemble import PermutationError, check_permutation, run_table
from rerankeval.rerank.driver import RerankSettings, rerank
from rerankeval.systems.base import FUSED_TAIL, FUSION_FALLBACK, RERANKED, SKIPPED, Query, Scores, System
from rerankeval.systems.registry import BuildContext, build_system
from rerankeval.systems.baselines import ColumnSystem


def candidates(n_queries=2, n_docs=5):
    rows = [{"query_id": f"q{q}", "doc_id": f"d{d}", "parent_id": f"p{d // 2}", "passage": f"text {d}",
             "passage_sha256": "x", "fused_rank": d + 1, "fused_score": 1.0 / (d + 1), "bm25_rank": n_docs - d,
             "dense_rank": d + 1} for q in range(n_queries) for d in range(n_docs)]
    return pd.DataFrame(rows)


QUERIES = {"q0": Query("q0", "first", {"language": "en"}), "q1": Query("q1", "second", {"language": "ko"})}


class Fixed(System):
    def __init__(self, scores=None, error=None, sleep=0.0, mode=RERANKED):
        self.scores, self.error, self.sleep, self.mode = scores, error, sleep, mode
        self.seen = []

    def score(self, query):
        self.seen.append(query.query)
        time.sleep(self.sleep)
        if self.error and query.query_id == "q1":
            raise self.error
        return Scores(np.asarray(self.scores[: len(query.frame)], dtype=float), mode=self.mode)


def test_head_is_reranked_tail_keeps_fused_order_and_parents_travel():
    run, latency = rerank(candidates(), QUERIES, Fixed([0.1, 0.9, 0.5, 9, 9]), RerankSettings(depth=3))
    q0 = run[run["query_id"] == "q0"]
    assert q0["doc_id"].tolist() == ["d1", "d2", "d0", "d3", "d4"]
    assert q0["parent_id"].tolist() == ["p0", "p1", "p0", "p1", "p2"]
    assert q0["rank"].tolist() == [1, 2, 3, 4, 5]
    assert q0["mode"].tolist() == [RERANKED] * 3 + [FUSED_TAIL] * 2
    assert q0["score"].iloc[:3].tolist() == [0.9, 0.5, 0.1] and q0["score"].iloc[3:].isna().all()
    assert latency["n_pairs"].tolist() == [3, 3] and latency["position"].tolist() == [0, 1]


def test_systems_see_the_query_labels():
    system = Fixed([1, 2, 3, 4, 5])
    rerank(candidates(), QUERIES, system, RerankSettings(depth=5))
    assert [query.labels["language"] for query in system.seen] == ["en", "ko"]


def test_ties_break_by_fused_rank_then_doc_id():
    run, _ = rerank(candidates(n_queries=1), QUERIES, Fixed([1, 2, 2, 1, 2]), RerankSettings(depth=5))
    assert run["doc_id"].tolist() == ["d1", "d2", "d4", "d0", "d3"]


@pytest.mark.parametrize("system, reason", [
    (Fixed([1, 2, 3, 4, 5], error=RuntimeError("model exploded")), "error: RuntimeError: model exploded"),
    (Fixed([1, 2, 3, 4, 5], error=ScoringFailure("http_429", "rate limited")), "http_429: rate limited"),
    (Fixed([1, np.nan, 3, 4, 5]), "bad_response: system returned NaN scores"),
    (Fixed([1, 2]), "bad_response: system returned 2 scores for 5 candidates"),
])
def test_a_systems_failure_degrades_the_query_to_the_fused_order(system, reason):
    run, latency = rerank(candidates(), QUERIES, system, RerankSettings(depth=5))
    failed = run[run["mode"] == FUSION_FALLBACK]
    assert len(failed) and (failed["degraded_reason"] == reason).all()
    for _, frame in failed.groupby("query_id"):
        assert frame["doc_id"].tolist() == ["d0", "d1", "d2", "d3", "d4"]
    assert FUSION_FALLBACK in set(latency["mode"]) and reason in set(latency["reason"])


@pytest.mark.parametrize("error", [InfrastructureError("disk full"), NameError("undefined_name")])
def test_infrastructure_errors_and_bugs_fail_the_stage(error):
    with pytest.raises(type(error)):
        rerank(candidates(), QUERIES, Fixed([1, 2, 3, 4, 5], error=error), RerankSettings(depth=5))


def test_a_skipped_query_keeps_the_fused_order_and_is_not_a_failure():
    run, latency = rerank(candidates(n_queries=1), QUERIES, Fixed([5, 4, 3, 2, 1], mode=SKIPPED),
                          RerankSettings(depth=5))
    assert run["doc_id"].tolist() == ["d0", "d1", "d2", "d3", "d4"] and set(run["mode"]) == {SKIPPED}
    assert run["degraded_reason"].isna().all() and latency["mode"].tolist() == [SKIPPED]


class WithTokens(System):
    """Scores each document by its number (d3 > d2 > ...), with per-pair token counts that name the document."""

    def score(self, query):
        numbers = np.array([int(doc[1:]) for doc in query.frame["doc_id"]])
        return Scores(numbers.astype(float), pair_stats={"query_tokens": np.full(len(numbers), 7, dtype=np.int32),
                                                          "passage_tokens": (100 + numbers).astype(np.int32),
                                                          "truncated": numbers % 2 == 1})


def test_pair_stats_travel_with_their_documents_through_the_order_and_demotion():
    stale = lambda query_id, doc_ids: np.array([doc == "d2" for doc in doc_ids])  # noqa: E731
    run, _ = rerank(candidates(n_queries=1), QUERIES, WithTokens(), RerankSettings(depth=3, demote=stale))
    assert run["doc_id"].tolist() == ["d1", "d0", "d3", "d4", "d2"]  # head d2 d1 d0, tail d3 d4, then stale d2
    assert run["rank"].tolist() == [1, 2, 3, 4, 5]
    assert run["mode"].tolist() == [RERANKED, RERANKED, FUSED_TAIL, FUSED_TAIL, RERANKED]
    assert run["passage_tokens"].tolist() == [101, 100, None, None, 102]  # None past the head, not NaN
    assert run["truncated"].tolist() == [True, False, None, None, False]
    assert run["degraded_reason"].tolist() == [None] * 5
    stored = run_table(run)
    assert stored.column("passage_tokens").to_pylist() == [101, 100, None, None, 102]
    assert stored.column("degraded_reason").null_count == 5


def test_deadline_turns_a_slow_query_into_fallback_and_its_time_still_counts():
    run, latency = rerank(candidates(n_queries=1), QUERIES, Fixed([5, 4, 3, 2, 1], sleep=0.05),
                          RerankSettings(depth=5, deadline_s=0.01))
    assert set(run["mode"]) == {FUSION_FALLBACK}
    assert run["degraded_reason"].iloc[0].startswith("deadline: ")
    assert latency["wall_s"].iloc[0] >= 0.05 and latency["compute_s"].iloc[0] >= 0.05


def test_permutation_check_catches_dropped_duplicated_and_gapped_ranks():
    cands = candidates(n_queries=1)
    good, _ = rerank(cands, QUERIES, ColumnSystem("fused_score"), RerankSettings(depth=5))
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


def test_reference_system_kinds():
    cands = candidates(n_queries=1)
    qrels = pd.DataFrame({"query_id": ["q0", "q0"], "doc_id": ["d3", "d4"], "relevance": [1, 3]})
    context = BuildContext(qrels=qrels)
    order = {}
    for kind in ("fusion", "bm25", "dense", "oracle", "random"):
        config = {"kind": kind, "depth": 5, **({"seed": 3} if kind == "random" else {})}
        run, _ = rerank(cands, QUERIES, build_system(kind, config, context), RerankSettings(depth=5))
        order[kind] = run["doc_id"].tolist()
    assert order["fusion"] == order["dense"] == ["d0", "d1", "d2", "d3", "d4"]
    assert order["bm25"] == ["d4", "d3", "d2", "d1", "d0"]
    assert order["oracle"][:2] == ["d4", "d3"]
    again, _ = rerank(cands, QUERIES, build_system("r", {"kind": "random", "depth": 5, "seed": 3}, context),
                      RerankSettings(5))
    assert again["doc_id"].tolist() == order["random"]
