import json

import numpy as np
import pandas as pd
import pytest

from rerankeval.rerank.latency import summarise_latency
from rerankeval.stats.comparison import RunFacts, compare, regression_details, relevant_doc_type
from rerankeval.stats.config import CompareConfig, ReleaseRule

QUERIES = [f"q{i:02d}" for i in range(40)]


def per_query(deltas, judged_base=1.0, judged_new=1.0):
    base = np.linspace(0.2, 0.6, len(QUERIES))
    rows = []
    for system, values, judged in (("fusion", base, judged_base), ("model", base + deltas, judged_new)):
        for query_id, value in zip(QUERIES, values):
            rows.append({"system": system, "query_id": query_id, "nDCG@10": value, "RR@10": value / 2,
                         "Judged@10": judged, "nDCG@10[judged_only=true]": value})
    return pd.DataFrame(rows)


SLICES = pd.DataFrame({"language": ["ko"] * 20 + ["en"] * 20}, index=QUERIES)
RELEASE = {"primary_metric": "nDCG@10", "min_delta": 0.03, "unjudged_margin": 0.1,
           "critical_slices": [{"column": "language", "budget": 0.05}]}
SETTINGS = CompareConfig.parse({"baseline": "fusion", "metrics": ["nDCG@10", "MRR@10"], "samples": 2000,
                                "permutations": 2000, "unjudged": {"judged_only_measure": "nDCG@10[judged_only=true]"},
                                "simulation": {"trials": 100, "samples": 500}, "release": RELEASE}, "compare")


def rule(**overrides):
    return ReleaseRule.parse({**RELEASE, **overrides}, "compare.release")


def test_clear_improvement_is_accepted_with_counts_and_slices():
    deltas = np.full(40, 0.1)
    deltas[:3] = 0.0
    result, verdicts = compare(per_query(deltas), SLICES, SETTINGS, rule(),
                               RunFacts(latency_p95_ms={"fusion": 1.0, "model": 50.0}))
    ndcg = next(c for c in result["comparisons"] if c["metric"] == "nDCG@10")
    assert (ndcg["improved"], ndcg["tied"], ndcg["regressed"]) == (37, 3, 0)
    assert ndcg["delta"] == pytest.approx(0.0925) and ndcg["low"] > 0
    assert ndcg["percentiles"]["50"] == pytest.approx(0.1)
    assert result["systems"]["model"]["nDCG@10"]["mean"] == pytest.approx(0.4 + 0.0925)
    assert [row["value"] for row in result["slices"]["language"]] == ["en", "ko"]
    assert verdicts["verdicts"]["model"]["decision"] == "ACCEPT"
    json.dumps(result, allow_nan=False)  # strict JSON: no NaN or Infinity (a constant shift has infinite d_z)


def test_slice_regression_rejects_and_names_the_slice():
    deltas = np.concatenate([np.full(20, -0.08), np.full(20, 0.2)])
    _, verdicts = compare(per_query(deltas), SLICES, SETTINGS, rule())
    verdict = verdicts["verdicts"]["model"]
    assert verdict["decision"] == "REJECT"
    assert verdict["decided_by"].startswith("critical slice language=ko (n=20) regresses beyond its budget")
    assert "97.5% CI" in verdict["decided_by"] and "adjusted for 2 slice tests" in verdict["decided_by"]
    assert verdicts["rule"]["slices_that_can_reject"] == 2 and verdicts["rule"]["slice_confidence"] == 0.975


def test_noise_is_inconclusive_with_its_simulated_error_rates():
    rng = np.random.default_rng(3)
    result, verdicts = compare(per_query(rng.normal(0, 0.05, 40)), SLICES, SETTINGS, rule())
    verdict = verdicts["verdicts"]["model"]
    assert verdict["decision"] == "INCONCLUSIVE" and verdict["decided_by"].endswith("includes 0")
    assert verdict["ci"][0] < 0 < verdict["ci"][1] and verdict["confidence"] == 0.95
    at_zero, at_min_delta = (verdict["operating_characteristics"][key] for key in ("at_zero", "at_min_delta"))
    assert (at_zero["effect"], at_min_delta["effect"], at_zero["trials"]) == (0.0, 0.03, 100)
    assert at_zero["reject"] <= 0.1 and at_zero["accept"] <= 0.05
    assert at_min_delta["accept"] > at_zero["accept"]
    assert at_zero["accept"] + at_zero["reject"] + at_zero["inconclusive"] == pytest.approx(1.0)
    assert result["unjudged"]["warnings"] == [] and result["unjudged"]["applicable"]


def test_one_unjudged_margin_warns_and_rejects():
    result, verdicts = compare(per_query(np.full(40, 0.1), judged_new=0.8), SLICES, SETTINGS, rule())
    assert result["unjudged"]["rate"] == {"fusion": 0.0, "model": pytest.approx(0.2)}
    assert result["unjudged"]["margin"] == 0.1
    assert len(result["unjudged"]["warnings"]) == 1
    assert "exceeds the margin 0.1" in result["unjudged"]["warnings"][0]
    assert "judged-only nDCG@10[judged_only=true]" in result["unjudged"]["warnings"][0]
    verdict = verdicts["verdicts"]["model"]
    assert verdict["decision"] == "REJECT" and verdict["decided_by"].startswith("unjudged rate")


def test_positive_only_qrels_turn_the_unjudged_watch_and_check_off():
    why = "the qrels judge no document non-relevant"
    result, verdicts = compare(per_query(np.full(40, 0.1), judged_new=0.8), SLICES, SETTINGS, rule(),
                               RunFacts(positive_only=why))
    assert result["unjudged"]["applicable"] is False and result["unjudged"]["not_applicable"] == why
    assert result["unjudged"]["warnings"] == []
    verdict = verdicts["verdicts"]["model"]
    assert verdict["decision"] == "ACCEPT"
    assert not any("unjudged" in reason for reason in verdict["reasons"])
    assert verdict["notes"] == [f"unjudged check not applicable: {why}"]


def test_fallbacks_identical_runs_and_a_broken_baseline_reach_the_verdict():
    improvement = per_query(np.full(40, 0.1))
    _, degraded = compare(improvement, SLICES, SETTINGS, rule(max_fallback_rate=0.05),
                          RunFacts(fallbacks={"model": (38, 40)}))
    assert degraded["verdicts"]["model"]["decision"] == "REJECT"
    assert degraded["verdicts"]["model"]["decided_by"].startswith("38/40 queries (95.0%) fell back")
    assert degraded["fallbacks"] == {"model": {"fallbacks": 38, "timeouts": 0, "queries": 40}}

    _, same = compare(per_query(np.zeros(40)), SLICES, SETTINGS, rule(), RunFacts(identical_to_baseline={"model": 40}))
    assert same["verdicts"]["model"]["decided_by"].startswith("run identical to the baseline's on all 40 queries")

    flag = "the comparison baseline is broken on this collection: fusion (fused) is 0.550 below bm25"
    _, flagged = compare(improvement, SLICES, SETTINGS, rule(), RunFacts(baseline_flag=flag))
    assert flagged["baseline_flag"] == flag
    assert flagged["verdicts"]["model"]["decision"] == "INCONCLUSIVE"
    assert flagged["verdicts"]["model"]["decided_by"].startswith(flag)


def test_latency_budget_without_a_measurement_blocks_accept():
    _, verdicts = compare(per_query(np.full(40, 0.1)), SLICES, SETTINGS, rule(latency_p95_max_ms=100),
                          RunFacts(latency_p95_ms={"fusion": 1.0, "model": None}))
    assert verdicts["verdicts"]["model"]["decision"] == "INCONCLUSIVE"
    assert "latency p95 not measured" in verdicts["verdicts"]["model"]["decided_by"]


def test_unknown_compare_metric_is_refused():
    settings = SETTINGS.model_copy(update={"metrics": ["AP@100"]})
    with pytest.raises(ValueError, match=r"compare.metrics \['AP@100'\] are not evaluated"):
        compare(per_query(np.zeros(40)), SLICES, settings, rule())


def test_relevant_doc_type_and_regression_details():
    qrels = pd.DataFrame({"query_id": ["a", "a", "b"], "doc_id": ["d1", "d2", "d3"], "relevance": [1, 3, 2]})
    metadata = pd.Series({"d1": '{"doc_type": "faq"}', "d2": '{"doc_type": "manual"}', "d3": "{}"})
    assert relevant_doc_type(qrels, metadata).to_dict() == {"a": "manual", "b": "(none)"}
    runs = {"fusion": pd.DataFrame({"query_id": ["a", "a"], "doc_id": ["d2", "d9"], "rank": [1, 2]}),
            "model": pd.DataFrame({"query_id": ["a", "a"], "doc_id": ["d9", "d2"], "rank": [1, 2]})}
    comparisons = [{"challenger": "model", "metric": "nDCG@10", "worst_regressions": ["a"]}]
    details = regression_details(comparisons, runs, qrels, {"a": "query a"}, "fusion", "nDCG@10", top_k=2)
    assert details["model"] == [{"query_id": "a", "query": "query a", "before": ["d2 (3)", "d9 (unjudged)"],
                                 "after": ["d9 (unjudged)", "d2 (3)"]}]


def test_when_every_query_falls_back_its_latency_is_still_checked():
    # Timed-out queries count in p95 with the time they took (rerank.latency); the verdict REJECTs on the fallbacks
    # and still checks that latency.
    latency = pd.DataFrame({"query_id": QUERIES, "position": range(40), "mode": "FUSION_FALLBACK",
                            "reason": "timeout", "n_pairs": 30, "cache_hits": 0, "wall_s": 2.0, "compute_s": 2.0,
                            "replayed_s": 0.0, "sort_s": 0.0, "timings": [{}] * 40})
    summary = summarise_latency(latency, warmup_queries=2)
    assert (summary["fallbacks"], summary["queries"], summary["p95_ms"]) == (40, 40, pytest.approx(2000.0))
    assert summary["timeouts"] == 40  # every fallback's reason is a timeout
    _, verdicts = compare(per_query(np.full(40, 0.1)), SLICES, SETTINGS,
                          rule(max_fallback_rate=0.05, latency_p95_max_ms=1000),
                          RunFacts(latency_p95_ms={"fusion": 1.0, "model": summary["p95_ms"]},
                                   fallbacks={"model": (summary["fallbacks"], summary["queries"])},
                                   timeouts={"model": summary["timeouts"]}))
    assert verdicts["fallbacks"]["model"] == {"fallbacks": 40, "timeouts": 40, "queries": 40}
    verdict = verdicts["verdicts"]["model"]
    assert verdict["decision"] == "REJECT"
    assert verdict["decided_by"] == "40/40 queries (100.0%) fell back to the fused order, above the limit 5.0%"
    assert "latency p95: challenger 2000.0 ms exceeds budget 1000.0 ms" in verdict["reasons"]


def test_an_external_run_that_ranks_too_few_queries_is_never_accepted_on_either_side():
    deltas = np.full(40, 0.1)
    facts = {"latency_p95_ms": {"fusion": 1.0, "model": 50.0}}
    _, covered = compare(per_query(deltas), SLICES, SETTINGS, rule(), RunFacts(**facts, coverage={"model": (40, 40)}))
    assert covered["verdicts"]["model"]["decision"] == "ACCEPT"
    assert covered["rule"]["min_run_coverage"] == 0.5
    _, sparse = compare(per_query(deltas), SLICES, SETTINGS, rule(), RunFacts(**facts, coverage={"model": (12, 40)}))
    verdict = sparse["verdicts"]["model"]
    assert verdict["decision"] == "INCONCLUSIVE"
    assert verdict["decided_by"].startswith("the challenger's run ranks 12 of the 40 reranked queries (30.0%), below "
                                            "min_run_coverage 50%") and verdict["decided_by"].endswith("blocks ACCEPT")
    _, baseline = compare(per_query(deltas), SLICES, SETTINGS, rule(), RunFacts(**facts, coverage={"fusion": (5, 40)}))
    assert baseline["verdicts"]["model"]["decision"] == "INCONCLUSIVE"
    assert baseline["verdicts"]["model"]["decided_by"].startswith("the compared system's run ranks 5 of the 40")
    # a looser rule accepts the same sparse run: the threshold is the rule's, not a constant
    _, loose = compare(per_query(deltas), SLICES, SETTINGS, rule(min_run_coverage=0.25),
                       RunFacts(**facts, coverage={"model": (12, 40)}))
    assert loose["verdicts"]["model"]["decision"] == "ACCEPT"
