"""Hand-checked cases for every rule of rerankeval.verdict.decide."""

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

from rerankeval.core.errors import ConfigError
from rerankeval.stats.config import ReleaseRule
from rerankeval.stats.resampling import bootstrap_ci, slice_ci
from rerankeval.stats.verdict import (
    Decision,
    DeltaEvidence,
    Evidence,
    FallbackEvidence,
    LatencyEvidence,
    SliceEvidence,
    UnjudgedEvidence,
    ci_label,
    decide,
)

CONFIG = {
    "primary_metric": "nDCG@10",
    "min_delta": 0.03,
    "critical_slices": [
        {"column": "lang", "value": "de", "budget": 0.02},
        {"column": "intent", "budget": 0.05},  # every intent value
    ],
    "unjudged_margin": 0.05,
    "max_fallback_rate": 0.05,
    "latency_p95_max_ms": 150,
    "latency_p95_max_ratio": 1.5,
}
RULE = ReleaseRule.parse(CONFIG, "compare.release")


def slice_(column, value, mean, low, high, n=200, too_small=False):
    return SliceEvidence(column, value, n, mean, low, high, too_small, confidence=0.99, adjusted_for=5)


GOOD = Evidence(
    primary=DeltaEvidence("nDCG@10", mean=0.045, ci_low=0.02, ci_high=0.07),
    slices=(
        slice_("lang", "de", -0.01, -0.04, 0.02),
        slice_("lang", "en", 0.06, 0.03, 0.09),
        slice_("intent", "nav", -0.03, -0.06, 0.0),
        slice_("intent", "info", 0.05, 0.02, 0.08),
    ),
    unjudged=UnjudgedEvidence(baseline_rate=0.10, challenger_rate=0.12),
    latency=LatencyEvidence(challenger_p95_ms=120.0, baseline_p95_ms=100.0),
    fallbacks=FallbackEvidence(fallbacks=2, queries=100),
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


def unjudged(challenger_rate, baseline_rate=0.10, not_applicable=None):
    return UnjudgedEvidence(baseline_rate, challenger_rate, not_applicable)


def test_rule_from_config():
    assert RULE.primary_metric == "nDCG@10" and RULE.min_delta == 0.03
    assert [(s.column, s.value, s.budget) for s in RULE.critical_slices] == [
        ("lang", "de", 0.02),
        ("intent", None, 0.05),
    ]
    assert (RULE.unjudged_margin, RULE.max_fallback_rate, RULE.latency_p95_max_ms) == (0.05, 0.05, 150.0)
    assert ReleaseRule.parse({"primary_metric": "MRR@10", "min_delta": 0}, "r").critical_slices == []
    assert ReleaseRule.parse({"primary_metric": "MRR@10", "min_delta": 0}, "r").primary_metric == "RR@10"
    statistical = RULE.statistical_part()
    assert statistical.critical_slices == RULE.critical_slices and statistical.min_delta == RULE.min_delta
    assert (statistical.unjudged_margin, statistical.max_fallback_rate, statistical.latency_p95_max_ms,
            statistical.latency_p95_max_ratio) == (None, None, None, None)


def test_accept_lists_every_passed_check_with_its_numbers():
    verdict = decide(RULE, GOOD)
    assert verdict.decision is Decision.ACCEPT and verdict.decision == "ACCEPT"
    assert all(check.passed for check in verdict.checks)
    # fallbacks, primary not worse, CI, min_delta, 3 critical slices (de, nav, info), unjudged, 2 latency
    assert len(verdict.reasons) == len(verdict.checks) == 10
    assert verdict.decided_by == ("nDCG@10 +0.0450, 95% CI [+0.0200, +0.0700] above 0 and at least min_delta "
                                  "+0.0300; every check passed")
    assert "+0.0450" in the_reason(verdict, "meets min_delta +0.0300")
    assert "[+0.0200, +0.0700] excludes 0" in the_reason(verdict, "excludes 0")
    german = the_reason(verdict, "lang=de")
    assert "-0.0100" in german and "within budget -0.0200" in german
    assert "99% CI [-0.0400, +0.0200] (adjusted for 5 slice tests)" in german
    assert "-0.0300" in the_reason(verdict, "intent=nav")
    assert "budget -0.0500" in the_reason(verdict, "intent=info")
    assert "+0.0200, within margin 0.0500" in the_reason(verdict, "unjudged")
    assert "2/100 queries (2.0%) fell back to the fused order, within the limit 5.0%" in verdict.reasons
    assert "120.0 ms within budget 150.0 ms" in the_reason(verdict, "budget 150.0")
    assert "= 150.0 ms" in the_reason(verdict, "x 1.5")
    assert not any("lang=en" in r for r in verdict.reasons)  # not a critical slice
    assert verdict.notes == ()


def test_reject_when_primary_is_significantly_worse():
    worse = replace(GOOD, primary=DeltaEvidence("nDCG@10", -0.04, -0.06, -0.02))
    verdict = decide(RULE, worse)
    assert verdict.decision is Decision.REJECT
    assert verdict.reasons == (  # the soft reasons stay listed under the REJECT
        "nDCG@10 significantly worse: mean delta -0.0400, 95% CI [-0.0600, -0.0200] lies below 0",
        "nDCG@10: 95% CI [-0.0600, -0.0200] lies below 0", "nDCG@10: mean delta -0.0400 is below min_delta +0.0300")
    assert verdict.decided_by == verdict.reasons[0]


def test_a_slice_rejects_only_when_its_adjusted_ci_lies_beyond_the_budget():
    # The CI lies entirely below -budget: evidence of a regression beyond it.
    verdict = decide(RULE, with_slice(GOOD, slice_("lang", "de", -0.06, -0.09, -0.03)))
    assert verdict.decision is Decision.REJECT
    assert verdict.decided_by == ("critical slice lang=de (n=200) regresses beyond its budget: mean delta -0.0600, "
                                  "99% CI [-0.0900, -0.0300] (adjusted for 5 slice tests) lies below -0.0200")
    # The mean is beyond the budget and the CI excludes 0, but it reaches above -budget: not established.
    unsure = decide(RULE, with_slice(GOOD, slice_("lang", "de", -0.03, -0.05, -0.01)))
    assert unsure.decision is Decision.INCONCLUSIVE
    assert unsure.decided_by == ("critical slice lang=de (n=200): mean delta -0.0300 below budget -0.0200 but not "
                                 "established (99% CI [-0.0500, -0.0100] (adjusted for 5 slice tests) reaches above "
                                 "it); blocks ACCEPT")


def test_reject_when_any_value_of_a_critical_column_is_over_budget():
    verdict = decide(RULE, with_slice(GOOD, slice_("intent", "nav", -0.09, -0.12, -0.06)))
    assert verdict.decision is Decision.REJECT
    assert "mean delta -0.0900" in the_reason(verdict, "intent=nav")


def test_non_critical_slices_do_not_decide():
    verdict = decide(RULE, with_slice(GOOD, slice_("lang", "en", -0.2, -0.3, -0.1)))
    assert verdict.decision is Decision.ACCEPT


def test_a_too_small_slice_never_rejects_and_blocks_accept_when_its_mean_is_beyond_the_budget():
    # Even a CI far below the budget does not REJECT: the CI of a slice this small is not trusted.
    tiny = with_slice(GOOD, slice_("lang", "de", -0.3, -0.5, -0.1, n=7, too_small=True))
    verdict = decide(RULE, tiny)
    assert verdict.decision is Decision.INCONCLUSIVE
    assert verdict.decided_by == ("critical slice lang=de (n=7, too small to REJECT): mean delta -0.3000 below "
                                  "budget -0.0200 blocks ACCEPT")
    # Exactly at -budget does not block (the budget is inclusive); NaN CIs of a tiny slice are not needed.
    at_budget = with_slice(GOOD, slice_("lang", "de", -0.02, np.nan, np.nan, n=3, too_small=True))
    verdict = decide(RULE, at_budget)
    assert verdict.decision is Decision.ACCEPT
    assert "(n=3, too small to REJECT): mean delta -0.0200 within budget" in the_reason(verdict, "lang=de")


def test_reject_when_the_unjudged_margin_is_exceeded():
    verdict = decide(RULE, replace(GOOD, unjudged=unjudged(0.16)))
    assert verdict.decision is Decision.REJECT
    assert verdict.reasons == (
        "unjudged rate: challenger 0.1600 - baseline 0.1000 = +0.0600, exceeds margin 0.0500",
    )


def test_positive_only_qrels_make_the_unjudged_check_not_applicable():
    why = "the qrels judge no document non-relevant"
    verdict = decide(RULE, replace(GOOD, unjudged=unjudged(0.9, not_applicable=why)))
    assert verdict.decision is Decision.ACCEPT
    assert not any("unjudged" in reason for reason in verdict.reasons)
    assert verdict.notes == (f"unjudged check not applicable: {why}",)


def test_a_fallback_rate_above_the_limit_rejects_first():
    degraded = replace(GOOD, fallbacks=FallbackEvidence(91, 94), unjudged=unjudged(0.5))
    verdict = decide(RULE, degraded)
    assert verdict.decision is Decision.REJECT
    assert verdict.decided_by == "91/94 queries (96.8%) fell back to the fused order, above the limit 5.0%"
    assert len(verdict.reasons) == 2  # the unjudged violation is listed too
    unknown = decide(RULE, replace(GOOD, fallbacks=None))
    assert unknown.decision is Decision.ACCEPT and unknown.notes == ("fallbacks not recorded; fallback limit skipped",)


def test_a_run_identical_to_the_baseline_is_flagged_as_a_configuration_that_never_arrived():
    same = replace(GOOD, primary=DeltaEvidence("nDCG@10", 0.0, 0.0, 0.0), identical_queries=94,
                   slices=tuple(replace(s, mean=0.0, ci_low=0.0, ci_high=0.0) for s in GOOD.slices))
    verdict = decide(RULE, same)
    assert verdict.decision is Decision.INCONCLUSIVE
    assert verdict.decided_by.startswith("run identical to the baseline's on all 94 queries: probably a "
                                         "configuration that never reached the system")


def test_a_run_its_own_settings_make_the_baseline_s_says_so_instead_of_suspecting_a_lost_setting(tmp_path):
    from rerankeval.core.io import write_table
    from rerankeval.pipeline.compare import identical_because
    from tests.stage_fixtures import tiny_paths

    paths = tiny_paths(tmp_path)
    why = "its weight fitted on the train split (30 queries, rule one_se) is 0, so it ranks by fusion alone"
    for system, describe in (("blend", {"reduces_to": {"system": "fusion", "why": why}}),
                             ("other_blend", {"reduces_to": {"system": "bm25", "why": "..."}}), ("lost", {})):
        paths.run(system).parent.mkdir(parents=True, exist_ok=True)
        write_table(paths.run(system), pa.table({"query_id": ["q1"]}), {"describe": describe})
    found = identical_because(paths, {"blend": 94, "other_blend": 94, "lost": 94}, "fusion")
    assert found == {"blend": why}  # a blend reduced to another system than the baseline explains nothing here
    same = replace(GOOD, primary=DeltaEvidence("nDCG@10", 0.0, 0.0, 0.0), identical_queries=94,
                   identical_because=found["blend"],
                   slices=tuple(replace(s, mean=0.0, ci_low=0.0, ci_high=0.0) for s in GOOD.slices))
    verdict = decide(RULE, same)
    assert verdict.decision is Decision.INCONCLUSIVE
    assert verdict.decided_by == f"run identical to the baseline's on all 94 queries: {why}"


def test_a_flagged_baseline_is_never_a_bare_accept():
    flag = "the comparison baseline is broken on this collection: fusion (fused) is 0.550 below bm25"
    verdict = decide(RULE, replace(GOOD, baseline_flag=flag))
    assert verdict.decision is Decision.INCONCLUSIVE
    assert verdict.decided_by == f"{flag}; beating it proves little"
    worse = decide(RULE, replace(GOOD, baseline_flag=flag, primary=DeltaEvidence("nDCG@10", -0.1, -0.2, -0.05)))
    assert worse.decision is Decision.REJECT  # worse than a broken baseline is still worse


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


def test_an_unmeasured_latency_with_a_budget_blocks_accept_instead_of_being_skipped():
    for latency in (None, LatencyEvidence(challenger_p95_ms=None, baseline_p95_ms=1.0)):
        verdict = decide(RULE, replace(GOOD, latency=latency))
        assert verdict.decision is Decision.INCONCLUSIVE
        assert verdict.decided_by == "latency p95 not measured (no timed query), the latency budget cannot be checked"
    no_budget = ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.03}, "r")
    assert decide(no_budget, replace(GOOD, latency=None)).decision is Decision.ACCEPT


def test_reject_lists_every_violation():
    bad = replace(
        with_slice(GOOD, slice_("intent", "nav", -0.09, -0.12, -0.06)),
        unjudged=unjudged(0.2),
        latency=LatencyEvidence(challenger_p95_ms=400.0, baseline_p95_ms=100.0),
    )
    verdict = decide(RULE, bad)
    assert verdict.decision is Decision.REJECT
    assert len(verdict.reasons) == 4
    for fragment in ("intent=nav", "unjudged", "budget 150.0 ms", "x 1.5"):
        the_reason(verdict, fragment)
    assert "intent=nav" in verdict.decided_by


def test_inconclusive_when_the_ci_includes_zero():
    unsure = replace(GOOD, primary=DeltaEvidence("nDCG@10", 0.035, -0.005, 0.075))
    verdict = decide(RULE, unsure)
    assert verdict.decision is Decision.INCONCLUSIVE
    assert verdict.reasons == ("nDCG@10: 95% CI [-0.0050, +0.0750] includes 0",)


def test_inconclusive_when_the_improvement_is_real_but_small():
    small = replace(GOOD, primary=DeltaEvidence("nDCG@10", 0.012, 0.004, 0.02))
    verdict = decide(RULE, small)
    assert verdict.decision is Decision.INCONCLUSIVE
    assert verdict.reasons == ("nDCG@10: mean delta +0.0120 is below min_delta +0.0300",)


def test_inconclusive_lists_both_unmet_acceptance_criteria_and_the_ci_decides():
    flat = replace(GOOD, primary=DeltaEvidence("nDCG@10", 0.001, -0.01, 0.012, confidence=0.9),
                   slices=(*GOOD.slices[:2], slice_("intent", "nav", -0.06, -0.2, 0.1, n=10, too_small=True),
                           GOOD.slices[3]))
    verdict = decide(RULE, flat)
    assert verdict.decision is Decision.INCONCLUSIVE
    assert len(verdict.reasons) == 3
    assert verdict.decided_by == "nDCG@10: 90% CI [-0.0100, +0.0120] includes 0"
    the_reason(verdict, "below min_delta")
    the_reason(verdict, "too small to REJECT")


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
            "unjudged_margin": 0.125,
            "max_fallback_rate": 0.25,
            "latency_p95_max_ms": 120,
        }, "r"
    )
    evidence = replace(
        with_slice(GOOD, slice_("lang", "de", -0.125, -0.25, -0.125)),
        primary=DeltaEvidence("nDCG@10", 0.25, 0.125, 0.375),
        unjudged=unjudged(0.25, baseline_rate=0.125),
        fallbacks=FallbackEvidence(1, 4),
    )
    assert decide(exact, evidence).decision is Decision.ACCEPT
    assert decide(exact, replace(evidence, unjudged=unjudged(0.2500001, 0.125))).decision is Decision.REJECT
    assert decide(exact, replace(evidence, fallbacks=FallbackEvidence(2, 7))).decision is Decision.REJECT
    beyond = with_slice(evidence, slice_("lang", "de", -0.2, -0.25, -0.1250001))
    assert decide(exact, beyond).decision is Decision.REJECT


def test_unconfigured_checks_are_left_out():
    rule = ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.03}, "r")
    verdict = decide(rule, replace(GOOD, unjudged=unjudged(0.9), fallbacks=FallbackEvidence(90, 100)))
    assert verdict.decision is Decision.ACCEPT
    assert verdict.notes == ()


def test_ci_labels_show_the_configured_level():
    assert [ci_label(c) for c in (0.95, 0.9, 0.99, 0.99375)] == ["95% CI", "90% CI", "99% CI", "99.4% CI"]


def test_invalid_rules_and_evidence_are_refused():
    with pytest.raises(ConfigError, match=r"compare.release.min_detla: unknown setting"):
        ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.1, "min_detla": 0.2}, "compare.release")
    with pytest.raises(ConfigError, match=r"critical_slices.0.budgte: unknown setting"):
        ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.1, "critical_slices": [{"budgte": 1}]}, "r")
    with pytest.raises(ConfigError, match="min_delta: Input should be greater than or equal to 0"):
        ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": -0.1}, "r")
    with pytest.raises(ConfigError, match="max_fallback_rate: Input should be less than or equal to 1"):
        ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.1, "max_fallback_rate": 5}, "r")
    with pytest.raises(ConfigError, match="unknown measure 'm'"):
        ReleaseRule.parse({"primary_metric": "m", "min_delta": 0.1}, "r")
    # The old switch is gone: slice regressions always need evidence.
    with pytest.raises(ConfigError, match="slice_regression_needs_ci: unknown setting"):
        ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.1, "slice_regression_needs_ci": True}, "r")
    with pytest.raises(ValueError, match="'recall@100'.*'nDCG@10'"):
        decide(RULE, replace(GOOD, primary=DeltaEvidence("recall@100", 0.1, 0.05, 0.15)))
    with pytest.raises(ValueError, match="slice lang=de ci_low is not finite"):
        decide(RULE, with_slice(GOOD, slice_("lang", "de", 0.0, np.nan, 0.1)))


def test_evidence_from_stats_results():
    rng = np.random.default_rng(1)
    deltas = np.column_stack([rng.normal(0.05, 0.1, 400), rng.normal(0.0, 0.1, 400)])
    langs = np.where(np.arange(400) % 4 == 0, "de", "en")
    overall = bootstrap_ci(deltas, n_samples=2000)
    by_lang = slice_ci(deltas, langs, n_samples=2000)
    primary = DeltaEvidence.from_intervals("nDCG@10", overall, comparison=0)
    slices = SliceEvidence.from_intervals("lang", by_lang, comparison=0)
    assert primary.mean == pytest.approx(deltas[:, 0].mean())
    assert (primary.ci_low, primary.ci_high) == (overall.low[0], overall.high[0])
    assert [(s.value, s.n_queries) for s in slices] == [("de", 100), ("en", 300)]
    assert slices[0].mean == pytest.approx(deltas[langs == "de", 0].mean())
    rule = ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.03,
                              "critical_slices": [{"column": "lang", "budget": 0.02}]}, "r")
    assert decide(rule, Evidence(primary, slices)).decision is Decision.ACCEPT
    flat = DeltaEvidence.from_intervals("nDCG@10", overall, comparison=1)
    assert decide(rule, Evidence(flat, slices)).decision is Decision.INCONCLUSIVE
