"""Hand-checked cases for every rule of rerankeval.verdict.decide."""

from dataclasses import replace

import numpy as np
import pytest

from rerankeval import stats
from rerankeval.core.errors import ConfigError
from rerankeval.stats.verdict import (
    Decision,
    DeltaEvidence,
    Evidence,
    LatencyEvidence,
    ReleaseRule,
    SliceEvidence,
    decide,
)

CONFIG = {
    "primary_metric": "nDCG@10",
    "min_delta": 0.03,
    "critical_slices": [
        {"column": "lang", "value": "de", "budget": 0.02},
        {"column": "intent", "budget": 0.05},  # every intent value
    ],
    "max_unjudged_increase": 0.05,
    "latency_p95_max_ms": 150,
    "latency_p95_max_ratio": 1.5,
}
RULE = ReleaseRule.parse(CONFIG, "compare.release")


def slice_(column, value, mean, low, high, n=200, too_small=False):
    return SliceEvidence(column, value, n, mean, low, high, too_small)


GOOD = Evidence(
    primary=DeltaEvidence("nDCG@10", mean=0.045, ci_low=0.02, ci_high=0.07),
    slices=(
        slice_("lang", "de", -0.01, -0.04, 0.02),
        slice_("lang", "en", 0.06, 0.03, 0.09),
        slice_("intent", "nav", -0.03, -0.06, 0.0),
        slice_("intent", "info", 0.05, 0.02, 0.08),
    ),
    baseline_unjudged_rate=0.10,
    challenger_unjudged_rate=0.12,
    latency=LatencyEvidence(challenger_p95_ms=120.0, baseline_p95_ms=100.0),
)


def with_slice(evidence, replacement):
    """``evidence`` with the slice of the same column/value swapped for ``replacement``."""
    slices = tuple(
        replacement if (s.column, s.value) == (replacement.column, replacement.value) else s
        for s in evidence.slices
    )
    return replace(evidence, slices=slices)


def the_reason(verdict, fragment):
    """The single reason containing ``fragment``."""
    matches = [r for r in verdict.reasons if fragment in r]
    assert len(matches) == 1, (fragment, verdict.reasons)
    return matches[0]


def test_rule_from_config():
    assert RULE.primary_metric == "nDCG@10" and RULE.min_delta == 0.03
    assert [(s.column, s.value, s.budget) for s in RULE.critical_slices] == [
        ("lang", "de", 0.02),
        ("intent", None, 0.05),
    ]
    assert RULE.slice_regression_needs_ci is False
    assert (RULE.max_unjudged_increase, RULE.latency_p95_max_ms) == (0.05, 150.0)
    assert ReleaseRule.parse({"primary_metric": "MRR@10", "min_delta": 0}, "r").critical_slices == []
    assert ReleaseRule.parse({"primary_metric": "MRR@10", "min_delta": 0}, "r").primary_metric == "RR@10"


def test_accept_lists_every_passed_check_with_its_numbers():
    verdict = decide(RULE, GOOD)
    assert verdict.decision is Decision.ACCEPT and verdict.decision == "ACCEPT"
    assert all(check.passed for check in verdict.checks)
    # primary not worse, 3 critical slices (de, nav, info), unjudged, 2 latency, CI, min_delta
    assert len(verdict.reasons) == len(verdict.checks) == 9
    assert "+0.0450" in the_reason(verdict, "meets min_delta +0.0300")
    assert "[+0.0200, +0.0700] excludes 0" in the_reason(verdict, "excludes 0")
    german = the_reason(verdict, "lang=de")
    assert "-0.0100" in german and "within budget -0.0200" in german
    assert "-0.0300" in the_reason(verdict, "intent=nav")
    assert "budget -0.0500" in the_reason(verdict, "intent=info")
    assert "+0.0200, within margin 0.0500" in the_reason(verdict, "unjudged")
    assert "120.0 ms within budget 150.0 ms" in the_reason(verdict, "budget 150.0")
    assert "= 150.0 ms" in the_reason(verdict, "x 1.5")
    assert not any("lang=en" in r for r in verdict.reasons)  # not a critical slice
    assert verdict.notes == ()


def test_reject_when_primary_is_significantly_worse():
    worse = replace(GOOD, primary=DeltaEvidence("nDCG@10", -0.04, -0.06, -0.02))
    verdict = decide(RULE, worse)
    assert verdict.decision is Decision.REJECT
    assert verdict.reasons == (
        "primary nDCG@10 is significantly worse: mean delta -0.0400, "
        "95% CI [-0.0600, -0.0200] lies below 0",
    )


def test_reject_when_a_named_critical_slice_is_over_budget():
    verdict = decide(RULE, with_slice(GOOD, slice_("lang", "de", -0.03, -0.07, 0.01)))
    assert verdict.decision is Decision.REJECT
    reason = the_reason(verdict, "lang=de")
    assert "mean delta -0.0300" in reason and "regresses beyond budget -0.0200" in reason
    assert len(verdict.reasons) == 1


def test_reject_when_any_value_of_a_critical_column_is_over_budget():
    verdict = decide(RULE, with_slice(GOOD, slice_("intent", "nav", -0.06, -0.09, -0.03)))
    assert verdict.decision is Decision.REJECT
    assert "mean delta -0.0600" in the_reason(verdict, "intent=nav")


def test_non_critical_slices_do_not_decide():
    verdict = decide(RULE, with_slice(GOOD, slice_("lang", "en", -0.2, -0.3, -0.1)))
    assert verdict.decision is Decision.ACCEPT


def test_slice_budget_can_require_the_ci_to_exclude_zero():
    needs_ci = ReleaseRule.parse({**CONFIG, "slice_regression_needs_ci": True}, "r")
    noisy = with_slice(GOOD, slice_("lang", "de", -0.03, -0.07, 0.01))
    assert decide(RULE, noisy).decision is Decision.REJECT
    verdict = decide(needs_ci, noisy)
    assert verdict.decision is Decision.ACCEPT
    assert "within budget" in the_reason(verdict, "lang=de")
    assert "with CI excluding 0" in the_reason(verdict, "lang=de")
    clear = with_slice(GOOD, slice_("lang", "de", -0.03, -0.05, -0.01))
    assert decide(needs_ci, clear).decision is Decision.REJECT


def test_reject_when_the_unjudged_margin_is_exceeded():
    verdict = decide(RULE, replace(GOOD, challenger_unjudged_rate=0.16))
    assert verdict.decision is Decision.REJECT
    assert verdict.reasons == (
        "unjudged rate: challenger 0.1600 - baseline 0.1000 = +0.0600, exceeds margin 0.0500",
    )


def test_reject_when_the_absolute_latency_budget_is_exceeded():
    slow = replace(GOOD, latency=LatencyEvidence(challenger_p95_ms=180.0))
    verdict = decide(RULE, slow)
    assert verdict.decision is Decision.REJECT
    assert verdict.reasons == ("latency p95: challenger 180.0 ms exceeds budget 150.0 ms",)
    assert verdict.notes == ("baseline latency not measured; latency ratio budget skipped",)


def test_reject_when_the_latency_ratio_is_exceeded():
    slower = replace(GOOD, latency=LatencyEvidence(challenger_p95_ms=140.0, baseline_p95_ms=90.0))
    verdict = decide(RULE, slower)
    assert verdict.decision is Decision.REJECT
    assert verdict.reasons == (
        "latency p95: challenger 140.0 ms exceeds baseline 90.0 ms x 1.5 = 135.0 ms",
    )


def test_latency_is_skipped_when_not_measured():
    verdict = decide(RULE, replace(GOOD, latency=None))
    assert verdict.decision is Decision.ACCEPT
    assert verdict.notes == ("latency not measured; latency budget skipped",)
    assert not any(check.name.startswith("latency") for check in verdict.checks)


def test_reject_lists_every_violation():
    bad = replace(
        with_slice(GOOD, slice_("intent", "nav", -0.06, -0.09, -0.03)),
        challenger_unjudged_rate=0.2,
        latency=LatencyEvidence(challenger_p95_ms=400.0, baseline_p95_ms=100.0),
    )
    verdict = decide(RULE, bad)
    assert verdict.decision is Decision.REJECT
    assert len(verdict.reasons) == 4
    for fragment in ("intent=nav", "unjudged", "budget 150.0 ms", "x 1.5"):
        the_reason(verdict, fragment)


def test_inconclusive_when_the_ci_includes_zero():
    unsure = replace(GOOD, primary=DeltaEvidence("nDCG@10", 0.035, -0.005, 0.075))
    verdict = decide(RULE, unsure)
    assert verdict.decision is Decision.INCONCLUSIVE
    assert verdict.reasons == ("primary nDCG@10: 95% CI [-0.0050, +0.0750] includes 0",)


def test_inconclusive_when_the_improvement_is_real_but_small():
    small = replace(GOOD, primary=DeltaEvidence("nDCG@10", 0.012, 0.004, 0.02))
    verdict = decide(RULE, small)
    assert verdict.decision is Decision.INCONCLUSIVE
    assert verdict.reasons == (
        "primary nDCG@10: mean delta +0.0120 is below min_delta +0.0300",
    )


def test_inconclusive_lists_both_unmet_acceptance_criteria():
    flat = replace(GOOD, primary=DeltaEvidence("nDCG@10", 0.001, -0.01, 0.012, confidence=0.9))
    verdict = decide(RULE, flat)
    assert verdict.decision is Decision.INCONCLUSIVE
    assert len(verdict.reasons) == 2
    assert "90% CI [-0.0100, +0.0120] includes 0" in the_reason(verdict, "includes 0")
    the_reason(verdict, "below min_delta")


def test_a_violation_beats_a_real_improvement():
    verdict = decide(RULE, with_slice(GOOD, slice_("lang", "de", -0.05, -0.08, -0.02)))
    assert verdict.decision is Decision.REJECT


def test_missing_critical_slice_evidence_blocks_accept():
    no_german = replace(GOOD, slices=tuple(s for s in GOOD.slices if s.value != "de"))
    verdict = decide(RULE, no_german)
    assert verdict.decision is Decision.INCONCLUSIVE
    assert verdict.reasons == (
        "critical slice lang=de: no slice evidence, budget cannot be checked",
    )


def test_thresholds_are_inclusive():
    exact = ReleaseRule.parse(
        {
            "primary_metric": "nDCG@10",
            "min_delta": 0.25,
            "critical_slices": [{"column": "lang", "value": "de", "budget": 0.125}],
            "max_unjudged_increase": 0.125,
            "latency_p95_max_ms": 120,
        }, "r"
    )
    evidence = replace(
        with_slice(GOOD, slice_("lang", "de", -0.125, -0.25, -0.0625)),
        primary=DeltaEvidence("nDCG@10", 0.25, 0.125, 0.375),
        baseline_unjudged_rate=0.125,
        challenger_unjudged_rate=0.25,
    )
    assert decide(exact, evidence).decision is Decision.ACCEPT
    nudged = replace(evidence, challenger_unjudged_rate=0.2500001)
    assert decide(exact, nudged).decision is Decision.REJECT


def test_small_critical_slices_are_noted():
    tiny = with_slice(GOOD, slice_("lang", "de", -0.01, -0.2, 0.2, n=7, too_small=True))
    verdict = decide(RULE, tiny)
    assert verdict.decision is Decision.ACCEPT
    assert verdict.notes == ("critical slice lang=de has only 7 queries; its CI is unreliable",)


def test_unconfigured_unjudged_margin_is_noted():
    rule = ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.03}, "r")
    verdict = decide(rule, replace(GOOD, challenger_unjudged_rate=0.9))
    assert verdict.decision is Decision.ACCEPT
    assert verdict.notes == ("unjudged-rate margin not configured; check skipped",)


def test_invalid_rules_and_evidence_are_refused():
    with pytest.raises(ConfigError, match=r"compare.release.min_detla: unknown setting"):
        ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.1, "min_detla": 0.2}, "compare.release")
    with pytest.raises(ConfigError, match=r"critical_slices.0.budgte: unknown setting"):
        ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.1, "critical_slices": [{"budgte": 1}]}, "r")
    with pytest.raises(ConfigError, match="min_delta: Input should be greater than or equal to 0"):
        ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": -0.1}, "r")
    with pytest.raises(ConfigError, match="unknown measure 'm'"):
        ReleaseRule.parse({"primary_metric": "m", "min_delta": 0.1}, "r")
    with pytest.raises(ConfigError, match="slice_regression_needs_ci: expected true or false"):
        ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.1, "slice_regression_needs_ci": "false"}, "r")
    with pytest.raises(ValueError, match="'recall@100'.*'nDCG@10'"):
        decide(RULE, replace(GOOD, primary=DeltaEvidence("recall@100", 0.1, 0.05, 0.15)))
    with pytest.raises(ValueError, match="slice lang=de ci_low is not finite"):
        decide(RULE, with_slice(GOOD, slice_("lang", "de", 0.0, np.nan, 0.1)))


def test_evidence_from_stats_results():
    rng = np.random.default_rng(1)
    deltas = np.column_stack([rng.normal(0.05, 0.1, 400), rng.normal(0.0, 0.1, 400)])
    langs = np.where(np.arange(400) % 4 == 0, "de", "en")
    overall = stats.bootstrap_ci(deltas, n_samples=2000)
    by_lang = stats.slice_ci(deltas, langs, n_samples=2000)
    primary = DeltaEvidence.from_intervals("nDCG@10", overall, comparison=0)
    slices = SliceEvidence.from_intervals("lang", by_lang, comparison=0)
    assert primary.mean == pytest.approx(deltas[:, 0].mean())
    assert (primary.ci_low, primary.ci_high) == (overall.low[0], overall.high[0])
    assert [(s.value, s.n_queries) for s in slices] == [("de", 100), ("en", 300)]
    assert slices[0].mean == pytest.approx(deltas[langs == "de", 0].mean())
    rule = ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.03,
                              "critical_slices": [{"column": "lang", "budget": 0.02}]}, "r")
    assert decide(rule, Evidence(primary, slices, 0.1, 0.1)).decision is Decision.ACCEPT
    flat = DeltaEvidence.from_intervals("nDCG@10", overall, comparison=1)
    assert decide(rule, Evidence(flat, slices, 0.1, 0.1)).decision is Decision.INCONCLUSIVE
