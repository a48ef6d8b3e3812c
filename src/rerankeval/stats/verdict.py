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
from dataclasses import dataclass
from enum import StrEnum

from pydantic import Field, field_validator

from ..core.config import StrictConfig
from ..eval.config import MeasureName
from .resampling import Intervals, SliceIntervals


class Decision(StrEnum):
    """Outcome of ``decide``; compares equal to its name as a string."""

    ACCEPT = "ACCEPT"
    REJECT = "REJECT"
    INCONCLUSIVE = "INCONCLUSIVE"


class CriticalSlice(StrictConfig):
    """A slice that must not regress by more than ``budget`` (absolute, e.g. 0.02 = 2 points).

    ``value`` None means every value of ``column``.
    """

    column: str
    budget: float = Field(ge=0)
    value: str | None = None

    @field_validator("value", mode="before")
    @classmethod
    def _label_as_text(cls, value: object) -> object:
        # Slice labels are strings: a YAML `value: 2` must match the label "2".
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    def label(self) -> str:
        """``column=value``, or ``column=*`` for every value."""
        return f"{self.column}={'*' if self.value is None else self.value}"


class ReleaseRule(StrictConfig):
    """Thresholds of the release decision (absolute metric units; rates as fractions).

    ``slice_regression_needs_ci``: False fails a critical slice when its mean delta is below −budget; True
    additionally requires its CI to exclude 0 (CI high < 0).
    ``max_unjudged_increase``: largest allowed challenger − baseline unjudged rate; None skips it.
    ``latency_p95_max_ms`` / ``latency_p95_max_ratio``: challenger p95 latency at most this many ms / at most
    baseline p95 × ratio; None = no such budget.
    """

    primary_metric: MeasureName
    min_delta: float = Field(ge=0)
    critical_slices: list[CriticalSlice] = []
    slice_regression_needs_ci: bool = False
    max_unjudged_increase: float | None = Field(None, ge=0)
    latency_p95_max_ms: float | None = Field(None, ge=0)
    latency_p95_max_ratio: float | None = Field(None, ge=0)


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
