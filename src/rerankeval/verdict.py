"""The release decision: turn a comparison's evidence into ACCEPT, REJECT or INCONCLUSIVE.

Semantics (``decide``):

* Hard constraints: the primary metric is not significantly worse (CI high >= 0); no critical
  slice regresses by more than its budget; the unjudged-rate increase stays within its margin;
  the latency budget holds. REJECT if any is violated; the reasons are every violation.
* Otherwise ACCEPT if the primary mean delta is at least ``min_delta`` and its CI excludes 0
  (CI low > 0); the reasons are every check, all passed.
* Otherwise INCONCLUSIVE; the reasons are what kept it from ACCEPT: the CI includes 0, the
  improvement is below ``min_delta``, or a configured critical slice has no evidence.

Checks that cannot run (latency not measured, no unjudged margin configured) are skipped and
said so in ``Verdict.notes``, as are critical slices with too few queries for a reliable CI.
Pure: no I/O; the caller fills ``Evidence`` from ``rerankeval.stats`` results.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any

from rerankeval.stats import Intervals, SliceIntervals


class Decision(StrEnum):
    """Outcome of ``decide``; compares equal to its name as a string."""

    ACCEPT = "ACCEPT"
    REJECT = "REJECT"
    INCONCLUSIVE = "INCONCLUSIVE"


@dataclass(frozen=True)
class CriticalSlice:
    """A slice that must not regress by more than ``budget`` (absolute, e.g. 0.02 = 2 points).

    ``value`` None means every value of ``column``.
    """

    column: str
    budget: float
    value: str | int | None = None

    def label(self) -> str:
        """``column=value``, or ``column=*`` for every value."""
        return f"{self.column}={'*' if self.value is None else self.value}"


@dataclass(frozen=True)
class ReleaseRule:
    """Thresholds of the release decision (absolute metric units; rates as fractions).

    ``slice_regression_needs_ci``: False (default) fails a critical slice when its mean delta is
    below −budget; True additionally requires its CI to exclude 0 (CI high < 0).
    ``max_unjudged_increase``: largest allowed challenger − baseline unjudged rate; None skips it.
    ``latency_p95_max_ms`` / ``latency_p95_max_ratio``: challenger p95 latency at most this many
    ms / at most baseline p95 × ratio; None = no such budget.
    """

    primary_metric: str
    min_delta: float
    critical_slices: tuple[CriticalSlice, ...] = ()
    slice_regression_needs_ci: bool = False
    max_unjudged_increase: float | None = None
    latency_p95_max_ms: float | None = None
    latency_p95_max_ratio: float | None = None

    def __post_init__(self) -> None:
        if not self.min_delta >= 0:
            raise ValueError(f"min_delta must be >= 0, got {self.min_delta!r}")
        for name in ("max_unjudged_increase", "latency_p95_max_ms", "latency_p95_max_ratio"):
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise ValueError(f"{name} must be >= 0 or None, got {value!r}")
        for spec in self.critical_slices:
            if not spec.budget >= 0:
                raise ValueError(f"critical slice {spec.label()}: budget must be >= 0")

    @classmethod
    def from_dict(cls, config: Mapping[str, Any]) -> ReleaseRule:
        """Build from plain config, e.g. a YAML mapping::

            primary_metric: ndcg@10
            min_delta: 0.03
            critical_slices:
              - {column: lang, value: de, budget: 0.02}
              - {column: intent, budget: 0.05}      # every intent value
            slice_regression_needs_ci: false
            max_unjudged_increase: 0.05
            latency_p95_max_ms: 150
            latency_p95_max_ratio: 1.5

        Unknown keys raise ValueError, so a misspelt threshold cannot silently go unchecked.
        """
        _reject_unknown_keys("release rule", config, {f.name for f in fields(cls)})
        slices = []
        for entry in config.get("critical_slices", ()):
            _reject_unknown_keys("critical slice", entry, {"column", "value", "budget"})
            budget = float(entry["budget"])
            slices.append(CriticalSlice(str(entry["column"]), budget, entry.get("value")))
        return cls(
            primary_metric=str(config["primary_metric"]),
            min_delta=float(config["min_delta"]),
            critical_slices=tuple(slices),
            slice_regression_needs_ci=bool(config.get("slice_regression_needs_ci", False)),
            max_unjudged_increase=_optional_float(config.get("max_unjudged_increase")),
            latency_p95_max_ms=_optional_float(config.get("latency_p95_max_ms")),
            latency_p95_max_ratio=_optional_float(config.get("latency_p95_max_ratio")),
        )


@dataclass(frozen=True)
class DeltaEvidence:
    """Mean delta (challenger − baseline) of one metric over the queries, with its CI."""

    metric: str
    mean: float
    ci_low: float
    ci_high: float
    confidence: float = 0.95

    @classmethod
    def from_intervals(cls, metric: str, intervals: Intervals, comparison: int) -> DeltaEvidence:
        """Column ``comparison`` of a ``stats.bootstrap_ci`` result."""
        return cls(
            metric,
            float(intervals.mean[comparison]),
            float(intervals.low[comparison]),
            float(intervals.high[comparison]),
            intervals.confidence,
        )


@dataclass(frozen=True)
class SliceEvidence:
    """Primary-metric mean delta and CI within one slice (``column`` == ``value``)."""

    column: str
    value: str | int
    n_queries: int
    mean: float
    ci_low: float
    ci_high: float
    too_small: bool = False

    @classmethod
    def from_intervals(
        cls, column: str, intervals: SliceIntervals, comparison: int
    ) -> tuple[SliceEvidence, ...]:
        """Every slice of column ``comparison`` of a ``stats.slice_ci`` result for ``column``."""
        return tuple(
            cls(
                column=column,
                value=value,
                n_queries=int(intervals.sizes[k]),
                mean=float(intervals.mean[k, comparison]),
                ci_low=float(intervals.low[k, comparison]),
                ci_high=float(intervals.high[k, comparison]),
                too_small=bool(intervals.too_small[k]),
            )
            for k, value in enumerate(intervals.values)
        )


@dataclass(frozen=True)
class LatencyEvidence:
    """p95 query latency in ms; ``baseline_p95_ms`` None when the baseline was not timed."""

    challenger_p95_ms: float
    baseline_p95_ms: float | None = None


@dataclass(frozen=True)
class Evidence:
    """Everything ``decide`` looks at; ``latency`` None means latency was not measured."""

    primary: DeltaEvidence
    slices: tuple[SliceEvidence, ...]
    baseline_unjudged_rate: float
    challenger_unjudged_rate: float
    latency: LatencyEvidence | None = None


@dataclass(frozen=True)
class Check:
    """Outcome of one check; ``message`` names the measured number and the threshold.

    A failed ``hard`` check is a violation (REJECT); a failed soft check only blocks ACCEPT.
    """

    name: str
    passed: bool
    hard: bool
    message: str


@dataclass(frozen=True)
class Verdict:
    """The decision, every reason that decided it, notes on skipped checks, and all checks run."""

    decision: Decision
    reasons: tuple[str, ...]
    notes: tuple[str, ...]
    checks: tuple[Check, ...]


def decide(rule: ReleaseRule, evidence: Evidence) -> Verdict:
    """Apply ``rule`` to ``evidence`` (see the module docstring for the semantics)."""
    if evidence.primary.metric != rule.primary_metric:
        raise ValueError(
            f"evidence is for metric {evidence.primary.metric!r}, "
            f"the rule's primary metric is {rule.primary_metric!r}"
        )
    _require_finite(evidence)
    notes: list[str] = []
    checks = (
        _primary_not_worse(evidence.primary),
        *_slice_checks(rule, evidence.slices, notes),
        *_unjudged_checks(rule, evidence, notes),
        *_latency_checks(rule, evidence.latency, notes),
        *_primary_improvement(rule, evidence.primary),
    )

    violated = [c.message for c in checks if c.hard and not c.passed]
    if violated:
        return Verdict(Decision.REJECT, tuple(violated), tuple(notes), checks)
    unmet = [c.message for c in checks if not c.passed]
    if unmet:
        return Verdict(Decision.INCONCLUSIVE, tuple(unmet), tuple(notes), checks)
    return Verdict(Decision.ACCEPT, tuple(c.message for c in checks), tuple(notes), checks)


# --------------------------------------------------------------------------- checks


def _primary_not_worse(primary: DeltaEvidence) -> Check:
    ci = _ci_text(primary.ci_low, primary.ci_high, primary.confidence)
    if primary.ci_high < 0:
        message = (
            f"primary {primary.metric} is significantly worse: mean delta {primary.mean:+.4f}, "
            f"{ci} lies below 0"
        )
        return Check("primary_not_worse", False, True, message)
    message = (
        f"primary {primary.metric} not significantly worse: mean delta {primary.mean:+.4f}, "
        f"{ci} reaches 0 or above"
    )
    return Check("primary_not_worse", True, True, message)


def _primary_improvement(rule: ReleaseRule, primary: DeltaEvidence) -> list[Check]:
    ci = _ci_text(primary.ci_low, primary.ci_high, primary.confidence)
    name = f"primary {primary.metric}"
    significant = primary.ci_low > 0
    large_enough = primary.mean >= rule.min_delta
    return [
        Check(
            "primary_ci_excludes_0",
            significant,
            False,
            f"{name}: {ci} {'excludes' if significant else 'includes'} 0",
        ),
        Check(
            "primary_min_delta",
            large_enough,
            False,
            f"{name}: mean delta {primary.mean:+.4f} "
            f"{'meets' if large_enough else 'is below'} min_delta {rule.min_delta:+.4f}",
        ),
    ]


def _slice_checks(
    rule: ReleaseRule, slices: tuple[SliceEvidence, ...], notes: list[str]
) -> list[Check]:
    checks = []
    for spec in rule.critical_slices:
        matching = [
            s for s in slices if s.column == spec.column and spec.value in (None, s.value)
        ]
        if not matching:
            # Unverifiable: blocks ACCEPT (a failed check) without being a violation (not hard).
            message = f"critical slice {spec.label()}: no slice evidence, budget cannot be checked"
            checks.append(Check(f"slice {spec.label()}", False, False, message))
        for found in matching:
            checks.append(_slice_check(rule, spec, found))
            if found.too_small:
                notes.append(
                    f"critical slice {found.column}={found.value} has only {found.n_queries} "
                    "queries; its CI is unreliable"
                )
    return checks


def _slice_check(rule: ReleaseRule, spec: CriticalSlice, found: SliceEvidence) -> Check:
    label = f"{found.column}={found.value}"
    ci = _ci_text(found.ci_low, found.ci_high)
    over_budget = found.mean < -spec.budget
    if rule.slice_regression_needs_ci:
        violated = over_budget and found.ci_high < 0
        condition = "mean delta below -budget with CI excluding 0"
    else:
        violated = over_budget
        condition = "mean delta below -budget"
    verb = "regresses beyond" if violated else "within"
    message = (
        f"critical slice {label} (n={found.n_queries}): mean delta {found.mean:+.4f}, {ci}, "
        f"{verb} budget -{spec.budget:.4f} (fails when {condition})"
    )
    return Check(f"slice {label}", not violated, True, message)


def _unjudged_checks(rule: ReleaseRule, evidence: Evidence, notes: list[str]) -> list[Check]:
    if rule.max_unjudged_increase is None:
        notes.append("unjudged-rate margin not configured; check skipped")
        return []
    increase = evidence.challenger_unjudged_rate - evidence.baseline_unjudged_rate
    passed = increase <= rule.max_unjudged_increase
    message = (
        f"unjudged rate: challenger {evidence.challenger_unjudged_rate:.4f} - baseline "
        f"{evidence.baseline_unjudged_rate:.4f} = {increase:+.4f}, "
        f"{'within' if passed else 'exceeds'} margin {rule.max_unjudged_increase:.4f}"
    )
    return [Check("unjudged_margin", passed, True, message)]


def _latency_checks(
    rule: ReleaseRule, latency: LatencyEvidence | None, notes: list[str]
) -> list[Check]:
    budgets = rule.latency_p95_max_ms is not None or rule.latency_p95_max_ratio is not None
    if not budgets:
        return []
    if latency is None:
        notes.append("latency not measured; latency budget skipped")
        return []
    checks = []
    p95 = latency.challenger_p95_ms
    if rule.latency_p95_max_ms is not None:
        passed = p95 <= rule.latency_p95_max_ms
        message = (
            f"latency p95: challenger {p95:.1f} ms "
            f"{'within' if passed else 'exceeds'} budget {rule.latency_p95_max_ms:.1f} ms"
        )
        checks.append(Check("latency_p95_ms", passed, True, message))
    if rule.latency_p95_max_ratio is not None:
        if latency.baseline_p95_ms is None:
            notes.append("baseline latency not measured; latency ratio budget skipped")
        else:
            limit = latency.baseline_p95_ms * rule.latency_p95_max_ratio
            passed = p95 <= limit
            message = (
                f"latency p95: challenger {p95:.1f} ms {'within' if passed else 'exceeds'} "
                f"baseline {latency.baseline_p95_ms:.1f} ms x {rule.latency_p95_max_ratio:g} "
                f"= {limit:.1f} ms"
            )
            checks.append(Check("latency_p95_ratio", passed, True, message))
    return checks


# --------------------------------------------------------------------------- helpers


def _ci_text(low: float, high: float, confidence: float | None = None) -> str:
    level = "CI" if confidence is None else f"{confidence:.0%} CI"
    return f"{level} [{low:+.4f}, {high:+.4f}]"


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _reject_unknown_keys(what: str, config: Mapping[str, Any], known: set[str]) -> None:
    unknown = sorted(set(config) - known)
    if unknown:
        raise ValueError(f"unknown {what} key(s) {unknown}; known: {sorted(known)}")


def _require_finite(evidence: Evidence) -> None:
    numbers = {
        "primary mean": evidence.primary.mean,
        "primary ci_low": evidence.primary.ci_low,
        "primary ci_high": evidence.primary.ci_high,
        "baseline_unjudged_rate": evidence.baseline_unjudged_rate,
        "challenger_unjudged_rate": evidence.challenger_unjudged_rate,
    }
    for s in evidence.slices:
        for field in ("mean", "ci_low", "ci_high"):
            numbers[f"slice {s.column}={s.value} {field}"] = getattr(s, field)
    for name, value in numbers.items():
        if not math.isfinite(value):
            raise ValueError(f"evidence {name} is not finite: {value!r}")
