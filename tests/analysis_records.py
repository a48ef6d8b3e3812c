"""Complete records of compare.json and verdicts.json (``stats.schema.Method``, ``RuleRecord``, ``FirstStageCheck``,
``GeneratorCheck``) for tests that build an analysis by hand and care about other fields."""

from __future__ import annotations

from typing import Any

METHOD: dict[str, Any] = {
    "resampling": "paired bootstrap over queries", "ci": "percentile", "samples": 1000, "seed": 17,
    "confidence": 0.95, "tests": ["paired randomisation (sign flip)", "paired t-test"], "permutations": 1000,
    "correction": "holm", "inference": "family",
    "release_family": {"what": "per baseline, the release challengers (reference systems excluded) on nDCG@10",
                       "procedure": "single-step bootstrap max-|t|", "families": {}},
    "descriptive_family": {"what": "every other comparison", "size": 0, "ci": "percentile",
                           "p_adjusted": "holm over the descriptive family, paired randomisation test"},
    "tie_tolerance": 1e-9}

RULE: dict[str, Any] = {
    "primary_metric": "nDCG@10", "min_delta": 0.03, "confidence": 0.95, "critical_slices": [], "min_slice_size": 20,
    "slices_that_can_reject": 0, "slice_tests": 0, "slice_confidence": 0.95, "unjudged_margin": 0.1,
    "max_fallback_rate": 0.05, "max_invalid_rate": 0.05, "min_run_coverage": 0.5, "latency_p95_max_ms": None,
    "latency_p95_max_ratio": None}

FIRST_STAGE: dict[str, Any] = {
    "metric": "nDCG@10", "confidence": 0.95, "queries": 0, "random": None, "retrievers": {}, "best": "hybrid",
    "best_component": None, "fusion_vs_best_component": None, "baseline": "fusion", "flag": None}

GENERATOR_CHECK: dict[str, Any] = {
    "metric": "AnswerF1", "confidence": 0.95, "ceiling": "oracle", "floor": "random", "baseline": "fusion", "means": {},
    "ceiling_vs_floor": None, "baseline_vs_floor": None, "flag": None, "skipped": "AnswerF1 was not evaluated"}


def method(**changes: Any) -> dict[str, Any]:
    return {**METHOD, **changes}


def rule(**changes: Any) -> dict[str, Any]:
    return {**RULE, **changes}
