import numpy as np
import pandas as pd
import pytest

from rerankeval.policies.frontier import latency_resolution, pareto_front
from rerankeval.rerank.cost import cost_per_query, latency_at_depth, token_summary
from rerankeval.rerank.latency import summarise_latency


def run_and_latency():
    run = pd.DataFrame({
        "query_id": ["a"] * 4 + ["b"] * 4,
        "fused_rank": [1, 2, 3, 4] * 2,
        "score": [0.1, 0.2, 0.3, np.nan] * 2,
        "mode": ["RERANKED"] * 3 + ["FUSED_TAIL"] + ["RERANKED"] * 3 + ["FUSED_TAIL"],
        "query_tokens": pd.array([2, 2, 2, None] * 2, dtype="Int32"),
        "passage_tokens": pd.array([8, 18, 28, None, 8, 8, 8, None], dtype="Int32"),
        "truncated": pd.array([False, False, True, None, False, False, False, None], dtype="boolean"),
    })
    latency = pd.DataFrame({"query_id": ["a", "b"], "position": [0, 1], "mode": ["RERANKED"] * 2, "reason": [None] * 2,
                            "wall_s": [0.7, 0.4], "compute_s": [0.6, 0.3], "replayed_s": [0.0, 0.0]})
    return run, latency


def test_token_summary_counts_scored_pairs_only():
    summary = token_summary(run_and_latency()[0])
    assert summary["pairs"] == 6 and summary["truncation_rate"] == pytest.approx(1 / 6)
    assert summary["pair_tokens_p50"] == pytest.approx(10.0)


def test_latency_at_depth_scales_model_time_by_token_share():
    run, latency = run_and_latency()
    at_one = latency_at_depth(run, latency, 1, warmup_queries=0)
    # a: tokens 10, 20, 30 -> top-1 share 1/6 of 0.6 s model time + 0.1 s overhead; b: 1/3 of 0.3 s + 0.1 s.
    assert at_one["a"] == pytest.approx(0.1 + 0.6 / 6)
    assert at_one["b"] == pytest.approx(0.1 + 0.3 / 3)
    assert latency_at_depth(run, latency, 3, warmup_queries=0).tolist() == pytest.approx([0.7, 0.4])
    assert cost_per_query(pd.Series([3.6, 7.2]), hourly_price=1.0) == pytest.approx(0.0015)


def test_rows_without_token_counts_take_no_model_time_where_their_query_has_counts():
    # A cascade: the model rescored fused ranks 2 and 3 (10 and 30 tokens); ranks 1 and 4 came from a column.
    run, latency = run_and_latency()
    run = run[run["query_id"] == "a"].assign(score=[0.1, 0.2, 0.3, 0.4],
                                             query_tokens=pd.array([None, 2, 2, None], dtype="Int32"),
                                             passage_tokens=pd.array([None, 8, 28, None], dtype="Int32"))
    at_depth = {depth: latency_at_depth(run, latency.iloc[:1], depth, warmup_queries=0)["a"] for depth in (1, 2, 4)}
    assert at_depth[1] == pytest.approx(0.1)  # no model time in the top 1
    assert at_depth[2] == pytest.approx(0.1 + 0.6 * 10 / 40)
    assert at_depth[4] == pytest.approx(0.7)


def test_cache_hits_cost_their_replayed_compute_time():
    run, latency = run_and_latency()
    # b served entirely from the cache: 0.02 s measured, 0.3 s of model time replayed from when it was scored.
    cached = latency.assign(wall_s=[0.7, 0.02], compute_s=[0.6, 0.0], replayed_s=[0.0, 0.3])
    assert latency_at_depth(run, cached, 3, warmup_queries=0)["b"] == pytest.approx(0.32)
    assert latency_at_depth(run, cached, 1, warmup_queries=0)["b"] == pytest.approx(0.02 + 0.3 / 3)
    summary = summarise_latency(cached.assign(cache_hits=[0, 3], n_pairs=[3, 3]), warmup_queries=0)
    assert summary["p50_ms"] == pytest.approx(510.0) and summary["measured_p95_ms"] == pytest.approx(666.0)
    assert summarise_latency(cached.assign(cache_hits=[0, 3], n_pairs=[3, 3]), warmup_queries=1)["p50_ms"] == \
        pytest.approx(320.0)  # the first query processed is warm-up


def test_pareto_front_marks_dominated_points():
    points = pd.DataFrame({"quality": [0.6, 0.7, 0.65, 0.7, 0.5], "p95_ms": [1.0, 50.0, 60.0, 40.0, 1.0]})
    assert pareto_front(points).tolist() == [True, False, False, True, False]


def test_latencies_within_the_measurements_noise_are_one_latency_on_the_frontier():
    # Three settings that score the same pairs: 945.6, 945.7 and 945.9 ms differ by timer noise, not by cost.
    points = pd.DataFrame({"quality": [0.70, 0.7162, 0.7226, 0.7219], "p95_ms": [1.9, 945.6, 945.7, 945.9]})
    assert pareto_front(points).tolist() == [True, True, True, False]  # noise picks two of the three
    assert pareto_front(points, resolution=0.01).tolist() == [True, False, True, False]  # the best at that latency
    # Two points at one quality and one latency (within the resolution): one of them, the faster, stands for both.
    twins = pd.DataFrame({"quality": [0.7, 0.7], "p95_ms": [100.5, 100.0]})
    assert pareto_front(twins, resolution=0.01).tolist() == [False, True]
    # A chain of small steps (0.8% slower, a little better, each): the frontier keeps points a resolution apart, so
    # no point is dropped for one far slower (dominance within the resolution does not chain).
    chain = pd.DataFrame({"quality": 0.6 + 0.01 * np.arange(12), "p95_ms": 100.0 * 1.008 ** np.arange(12)})
    kept = chain[pareto_front(chain, resolution=0.01)]
    assert len(kept) == 6 and kept["p95_ms"].iloc[0] < 101.0 and kept["p95_ms"].iloc[-1] == chain["p95_ms"].max()
    dropped = chain[~pareto_front(chain, resolution=0.01)]
    assert all((kept["p95_ms"] <= ms * 1.01).any() for ms in dropped["p95_ms"])  # each within 1% of a better one
    # 10% apart is a real difference at a 1% resolution
    apart = pd.DataFrame({"quality": [0.7, 0.7], "p95_ms": [100.0, 110.0]})
    assert pareto_front(apart, resolution=0.01).tolist() == [True, False]


def test_the_resolution_is_the_median_spread_of_the_measured_rounds():
    rounds = {"ce": [281.6, 278.6, 275.2], "int8": [201.2, 190.0, 174.9], "blend": [383.0, 382.8, 382.9],
              "fusion": [0.02, 0.05, 0.03]}  # sub-millisecond: timer noise, left out
    spreads = sorted([(281.6 - 275.2) / 275.2, (201.2 - 174.9) / 174.9, (383.0 - 382.8) / 382.8])
    assert latency_resolution(rounds) == pytest.approx(spreads[1])
    assert latency_resolution({}) == 0.0 and latency_resolution({"one": [5.0]}) == 0.0
    assert latency_resolution({"loaded": [100.0, 180.0]}) == 0.05  # at most MAX_RESOLUTION
