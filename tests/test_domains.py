"""Paired inference over measure domains, and a release rule whose primary metric is an answer measure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rerankeval.stats.comparison import compare
from rerankeval.stats.config import CompareConfig, ReleaseRule
from rerankeval.stats.deltas import Comparison
from rerankeval.stats.domains import (PairedFamily, family_intervals, family_significance, family_slices,
                                      mean_intervals, swap_pvalues)
from rerankeval.stats.resampling import bootstrap_ci, slice_ci

BOOT = dict(n_samples=2000, seed=5, confidence=0.95)


def family(base, challenger) -> PairedFamily:
    base, challenger = np.asarray(base, float).reshape(len(base), -1), np.asarray(challenger, float).reshape(
        len(challenger), -1)
    return PairedFamily(tuple(Comparison("c", f"m{j}") for j in range(base.shape[1])), base, challenger)


def test_complete_columns_are_exactly_the_existing_bootstrap():
    rng = np.random.default_rng(1)
    base, challenger = rng.random((40, 2)), rng.random((40, 2))
    found = family_intervals(family(base, challenger), **BOOT)
    expected = bootstrap_ci(challenger - base, **BOOT)
    assert np.array_equal(found.low, expected.low) and np.array_equal(found.high, expected.high)


def test_a_query_only_domain_is_the_slice_of_defined_queries():
    rng = np.random.default_rng(2)
    base, challenger = rng.random(50), rng.random(50)
    undefined = np.arange(50) % 5 == 0
    base[undefined] = challenger[undefined] = np.nan
    found = family_intervals(family(base, challenger), **BOOT)
    labels = np.where(undefined, "undefined", "defined")
    as_slice = slice_ci(np.nan_to_num(challenger - base), labels, **BOOT)
    row = as_slice.values.index("defined")
    assert found.mean[0] == pytest.approx(np.nanmean(challenger - base))
    assert found.low[0] == pytest.approx(as_slice.low[row, 0], abs=1e-12)
    assert found.high[0] == pytest.approx(as_slice.high[row, 0], abs=1e-12)


def test_system_dependent_domains_compare_the_two_means():
    # Citation precision: defined where each system answered; the challenger answers fewer queries, all right.
    base = np.array([1, 0, 1, 0, 1, 0, np.nan, np.nan] * 5, float)
    challenger = np.array([1, np.nan, 1, np.nan, 1, np.nan, np.nan, np.nan] * 5, float)
    paired = family(base, challenger)
    intervals = family_intervals(paired, **BOOT)
    assert intervals.mean[0] == pytest.approx(1.0 - 0.5)
    assert 0 < intervals.low[0] <= 0.5 <= intervals.high[0]
    tests = family_significance(paired, n_permutations=2000, seed=3)
    assert tests.p_randomisation[0] < 0.01
    assert swap_pvalues(base[:, None], base[:, None], n_permutations=500)[0] == 1.0
    means = mean_intervals(np.column_stack([base, challenger]), **BOOT)
    assert means.mean.tolist() == [0.5, 1.0] and means.low[1] == means.high[1] == 1.0


def test_domain_slices_restrict_to_slice_and_domain():
    base = np.array([0.0, 0.0, np.nan, 1.0] * 10)
    challenger = np.array([1.0, 1.0, np.nan, 1.0] * 10)
    labels = np.array(["a", "b"] * 20)
    result = family_slices(family(base, challenger), labels, min_slice_size=5, **BOOT)
    assert result.values == ("a", "b") and result.sizes.tolist() == [[10], [20]]  # the queries the delta is defined on
    # slice a holds positions 0 and 2 (defined delta 1, undefined); slice b positions 1 and 3 (deltas 1 and 0).
    assert result.mean[:, 0].tolist() == [1.0, 0.5]


def per_query(deltas: dict[str, np.ndarray], n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    base_f1 = rng.uniform(0.2, 0.8, n)
    ndcg = rng.uniform(0.3, 0.9, n)
    ndcg[:6] = np.nan  # unanswerable queries: ranking measures undefined
    rows = [pd.DataFrame({"system": "fusion", "query_id": [f"q{i:03d}" for i in range(n)], "AnswerF1": base_f1,
                          "nDCG@10": ndcg, "Judged@10": 1.0})]
    for name, delta in deltas.items():
        rows.append(pd.DataFrame({"system": name, "query_id": [f"q{i:03d}" for i in range(n)],
                                  "AnswerF1": base_f1 + delta, "nDCG@10": ndcg, "Judged@10": 1.0}))
    return pd.concat(rows, ignore_index=True)


def test_the_release_rule_can_name_an_answer_measure_with_the_reopen_threshold():
    """The reference ablation's re-open rule: answer F1 up by >= 3 points with a 95% CI that excludes 0."""
    rng = np.random.default_rng(9)
    frame = per_query({"better": 0.06 + rng.normal(0, 0.02, 60), "same": rng.normal(0, 0.02, 60)})
    settings = CompareConfig.parse({"baseline": "fusion", "metrics": ["nDCG@10", "AnswerF1"], "samples": 2000,
                                    "permutations": 2000, "min_slice_size": 5, "unjudged": {"measure": "Judged@10"},
                                    "release": {"primary_metric": "AnswerF1", "min_delta": 0.03}}, "compare")
    result, verdicts = compare(frame, pd.DataFrame(index=frame["query_id"].unique()), settings, settings.release)
    assert verdicts["verdicts"]["better"]["decision"] == "ACCEPT"
    assert verdicts["verdicts"]["same"]["decision"] != "ACCEPT"
    ndcg = next(c for c in result["comparisons"] if c["metric"] == "nDCG@10" and c["challenger"] == "better")
    assert ndcg["delta"] == 0.0 and result["method"]["undefined_on_some_queries"]["metrics"] == ["nDCG@10"]
    assert ReleaseRule.parse({"primary_metric": "CitationPrecision[rel=2]", "min_delta": 0.03}, "r").primary_metric \
        == "CitationPrecision[rel=2]"


def test_rerankeval_diff_compares_answer_measures_over_their_domains():
    from rerankeval.stats.revisions import Revision, diff_revisions

    ids = [f"q{i:02d}" for i in range(40)]
    rng = np.random.default_rng(8)
    before = rng.uniform(0.2, 0.6, 40)
    ndcg = rng.uniform(0.2, 0.8, 40)
    ndcg[:5] = np.nan  # unanswerable: no relevant document
    precision_before = np.where(np.arange(40) % 4 == 0, np.nan, 0.5)  # undefined where the system abstained
    precision_after = np.where(np.arange(40) % 2 == 0, np.nan, 1.0)

    def revision(label, f1, precision):
        frame = pd.DataFrame({"system": "ce", "query_id": ids, "AnswerF1": f1, "nDCG@10": ndcg,
                              "CitationPrecision": precision})
        return Revision(label, frame, pd.DataFrame({"query_type": ["abstention"] * 5 + ["single"] * 35},
                                                   index=pd.Index(ids, name="query_id")), {"qrels": "a"}, {})

    settings = CompareConfig.parse({"baseline": "ce", "metrics": ["nDCG@10", "AnswerF1", "CitationPrecision"],
                                    "samples": 1000, "permutations": 1000, "min_slice_size": 5,
                                    "release": {"primary_metric": "AnswerF1", "min_delta": 0.03}}, "compare")
    result = diff_revisions(revision("base", before, precision_before),
                            revision("head", before + 0.1, precision_after), settings, "AnswerF1").model_dump()
    rows = {row["metric"]: row for row in result["comparisons"]}
    assert rows["nDCG@10"]["delta"] == 0.0 and rows["AnswerF1"]["delta"] == pytest.approx(0.1)
    assert rows["CitationPrecision"]["delta"] == pytest.approx(0.5) and rows["CitationPrecision"]["low"] > 0
    assert {(s["column"], s["value"]) for s in result["slices"]} == {("query_type", "abstention"),
                                                                    ("query_type", "single")}


def test_a_slice_where_the_primary_metric_is_undefined_is_no_evidence():
    frame = per_query({"better": np.full(60, 0.05)})
    slices = pd.DataFrame({"query_type": ["abstention"] * 6 + ["single"] * 54},
                          index=pd.Index([f"q{i:03d}" for i in range(60)], name="query_id"))
    settings = CompareConfig.parse({"baseline": "fusion", "metrics": ["nDCG@10"], "samples": 500,
                                    "permutations": 500, "min_slice_size": 5, "unjudged": {"measure": "Judged@10"},
                                    "release": {"primary_metric": "nDCG@10", "min_delta": 0.03}}, "compare")
    rule = ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.03,
                              "critical_slices": [{"column": "query_type", "budget": 0.05}]}, "rule")
    # Before: the undefined abstention slice reached the verdict as NaN evidence and compare() raised.
    result, verdicts = compare(frame, slices, settings, rule)
    abstention = next(row for row in result["slices"]["query_type"] if row["value"] == "abstention")
    assert abstention["comparisons"][0]["delta"] is None
    # nDCG@10 is the same for both systems: the verdict is decided by the primary delta, not by the empty slice.
    assert verdicts["verdicts"]["better"]["decision"] == "INCONCLUSIVE"
    assert not any("abstention" in reason for reason in verdicts["verdicts"]["better"]["reasons"])
