import json

import numpy as np
import pandas as pd
import pytest

from rerankeval.stats.comparison import CompareConfig, compare, regression_details, relevant_doc_type
from rerankeval.stats.verdict import ReleaseRule

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
RELEASE = {"primary_metric": "nDCG@10", "min_delta": 0.03, "max_unjudged_increase": 0.1,
           "critical_slices": [{"column": "language", "budget": 0.05}]}
SETTINGS = CompareConfig.parse({"baseline": "fusion", "metrics": ["nDCG@10", "MRR@10"], "samples": 2000,
                                "permutations": 2000, "unjudged": {"judged_only_measure": "nDCG@10[judged_only=true]"},
                                "release": RELEASE}, "compare")


def rule(**overrides):
    return ReleaseRule.parse({**RELEASE, **overrides}, "compare.release")


def test_clear_improvement_is_accepted_with_counts_and_slices():
    deltas = np.full(40, 0.1)
    deltas[:3] = 0.0
    result, verdicts = compare(per_query(deltas), SLICES, SETTINGS, rule(), {"fusion": 1.0, "model": 50.0})
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
    _, verdicts = compare(per_query(deltas), SLICES, SETTINGS, rule(), {})
    verdict = verdicts["verdicts"]["model"]
    assert verdict["decision"] == "REJECT"
    assert any("language=ko" in reason for reason in verdict["reasons"])


def test_noise_is_inconclusive_and_unjudged_shift_warns():
    rng = np.random.default_rng(3)
    result, verdicts = compare(per_query(rng.normal(0, 0.05, 40), judged_new=0.8), SLICES, SETTINGS,
                               rule(max_unjudged_increase=0.5), {})
    assert verdicts["verdicts"]["model"]["decision"] == "INCONCLUSIVE"
    assert len(result["unjudged"]["warnings"]) == 1
    assert "judged-only nDCG@10[judged_only=true]" in result["unjudged"]["warnings"][0]
    assert result["unjudged"]["rate"] == {"fusion": 0.0, "model": pytest.approx(0.2)}


def test_unknown_compare_metric_is_refused():
    settings = SETTINGS.model_copy(update={"metrics": ["AP@100"]})
    with pytest.raises(ValueError, match=r"compare.metrics \['AP@100'\] are not evaluated"):
        compare(per_query(np.zeros(40)), SLICES, settings, rule(), {})


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
