"""The release decision: turn a comparison's evidence into ACCEPT, REJECT or INCONCLUSIVE.

The rule (``decide``; docs/verdict.md, "The rule", states it for users):

Every failed check is listed as a reason whichever decided (a latency REJECT still lists the quality reasons);
the first failed hard check decides a REJECT, else the first failed soft check an INCONCLUSIVE.

* REJECT when any hard check fails; the first one in this order decided it:
  more queries fell back to the fused order than ``max_fallback_rate``; the primary metric is significantly
  worse (its CI lies below 0); a critical slice with at least ``min_slice_size`` queries regresses beyond its
  budget *with evidence*: its CI, Bonferroni-adjusted for the number of such slices (confidence
  1 - (1 - c) / m), lies entirely below -budget; the unjudged-rate increase exceeds ``unjudged_margin`` (only
  where the qrels judge documents non-relevant); the latency budget is exceeded by a measurement that is trusted.
* Otherwise INCONCLUSIVE when a soft check fails; the first decided it: the run is identical to the baseline's
  (a configuration that probably never reached the system); the baseline is flagged as broken (a fused
  baseline significantly below its best component); the primary CI includes 0; the mean delta is below
  ``min_delta``; a critical slice's mean delta is below -budget without the evidence to REJECT (always so for a
  slice with fewer than ``min_slice_size`` queries: too small to REJECT, it can only block ACCEPT); a critical
  slice has no evidence; latency was not measured although a budget is set; the latency budget is exceeded by a
  measurement that is not trusted (taken while other processes competed for the CPUs: load only adds time, so an
  overrun measured under load says nothing about the system, while a pass still holds).
* Otherwise ACCEPT.

A challenger that claims ``noninferior`` (``ReleaseClaim``: margin δ, required saving, the system it is measured
against) is decided by the same rule with its quality checks replaced: REJECT when the CI of the primary delta lies
entirely below -δ; INCONCLUSIVE when its lower bound does not lie above -δ; min_delta and "CI above 0" do not
apply. The CI is the comparison's two-sided one at ``confidence`` c, so its lower bound is a one-sided (1 + c) / 2
bound: the claim is tested at a one-sided level of (1 - c) / 2 (2.5% for c = 0.95). The saving is a further check.
On ``cost`` it is an estimate with a CI (``stats.saving``: 1 - the ratio of the two systems' summed cold seconds
over the paired timed queries, its two-sided CI at c), tested by the same convention: it passes when the CI's lower
bound reaches min_saving (established, one-sided at (1 - c) / 2), REJECTs when its upper bound lies below
min_saving (established short of it), and otherwise only blocks ACCEPT (the data cannot settle it). On
``latency_p95`` the challenger's p95 must be at most (1 - min_saving) x the compared system's, REJECT when it fails
on trusted measurements; failed (or passed against a reference) measured under load, it only blocks ACCEPT. Not
measured, either only blocks ACCEPT.

A served system declared with an in-process reference (``compare.served_parity``) must score every document both
scored within its tolerance: failing that is a hard check listed right after the guardrails (REJECT, never softened),
since the model behind the endpoint is then not the one evaluated.

A caveat (``Caveat``, ``stats.caveats``) is a failed soft check right after the identical-run check. One on the
evidence (the generator cannot tell rankings apart) makes the quality checks it covers soft (the primary metric's on
every query, or its slice's critical slices): still listed, they only block ACCEPT. One on the challenger's own model
(it cannot read a language, ``_under_caveats``) softens nothing and names the likely cause beside a REJECT.

How often this is wrong on a given query set is simulated by ``rerankeval.stats.simulation``.
Pure: no I/O; the caller fills ``Evidence`` from ``rerankeval.stats`` results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from .config import SUPERIOR, ReleaseClaim, ReleaseRule
from .critical_slices import CriticalSlice
from .resampling import Intervals, SliceIntervals
from .run_checks import (Check, CoverageEvidence, FallbackEvidence, InvalidOutputEvidence, ParityEvidence,
                         coverage_checks, fallback_checks, invalid_output_checks, parity_checks)
from .saving import SavingInterval


class Decision(StrEnum):
    """Outcome of ``decide``; compares equal to its name as a string."""

    ACCEPT = "ACCEPT"
    REJECT = "REJECT"
    INCONCLUSIVE = "INCONCLUSIVE"


@dataclass(frozen=True)
class DeltaEvidence:
    """Mean delta (challenger - baseline) of one metric over the queries, with its CI."""

    metric: str
    mean: float
    ci_low: float
    ci_high: float
    confidence: float = 0.95

    @classmethod
    def from_intervals(cls, metric: str, intervals: Intervals, comparison: int) -> DeltaEvidence:
        """Column ``comparison`` of a ``stats.bootstrap_ci`` result."""
        return cls(metric, float(intervals.mean[comparison]), float(intervals.low[comparison]),
                   float(intervals.high[comparison]), intervals.confidence)


@dataclass(frozen=True)
class SliceEvidence:
    """Primary-metric mean delta and CI within one slice (``column`` == ``value``).

    ``confidence`` is the CI's level, ``adjusted_for`` the number of slice tests it was Bonferroni-adjusted for (every
    critical slice of every member of the challenger's family; the CI of a ``too_small`` slice is never used to
    REJECT).
    """

    column: str
    value: str | int
    n_queries: int
    mean: float
    ci_low: float
    ci_high: float
    too_small: bool = False
    confidence: float = 0.95
    adjusted_for: int = 1

    @classmethod
    def from_intervals(cls, column: str, intervals: SliceIntervals, comparison: int,
                       adjusted_for: int = 1) -> tuple[SliceEvidence, ...]:
        """Every slice of column ``comparison`` of a ``stats.slice_ci`` result for ``column``."""
        return tuple(
            cls(column=column, value=value, n_queries=int(intervals.sizes[k, comparison]),
                mean=float(intervals.mean[k, comparison]), ci_low=float(intervals.low[k, comparison]),
                ci_high=float(intervals.high[k, comparison]), too_small=bool(intervals.too_small[k, comparison]),
                confidence=intervals.confidence, adjusted_for=adjusted_for)
            for k, value in enumerate(intervals.values))


MIN_P99_TIMED = 100
"""Timed queries (or impressions) a p99 needs: below it, the 99th percentile is about the slowest one, and one
outlier would decide a p99 budget."""


@dataclass(frozen=True)
class LatencyEvidence:
    """p95 query latency in ms (None: not measured); ``baseline_p95_ms`` None when the baseline was not timed.

    ``challenger_untrusted`` / ``baseline_untrusted``: why that measurement is inflated by the machine's load (it
    ran while other processes competed for the CPUs), None when it is not."""

    challenger_p95_ms: float | None
    baseline_p95_ms: float | None = None
    challenger_untrusted: str | None = None
    baseline_untrusted: str | None = None
    challenger_p99_ms: float | None = None
    """p99 query latency in ms, where the evidence has one: an online readout's logged latency, of at least
    ``MIN_P99_TIMED`` timed impressions."""


@dataclass(frozen=True)
class UnjudgedEvidence:
    """Unjudged rates in the top documents; ``not_applicable`` says why the check means nothing, if it does not."""

    baseline_rate: float
    challenger_rate: float
    not_applicable: str | None = None


@dataclass(frozen=True)
class SavingEvidence:
    """What a non-inferiority claim saves: ``measure`` (``latency_p95`` in ms, ``cost`` in cold seconds per query) of
    the challenger and of ``against`` (None: not measured); ``*_untrusted``: why that figure may be the load's.
    ``interval``: the saving with its CI over the paired queries (None: not measured, or for ``latency_p95`` a
    measurement that kept no per-query times)."""

    measure: str
    against: str
    challenger: float | None
    reference: float | None
    challenger_untrusted: str | None = None
    reference_untrusted: str | None = None
    interval: SavingInterval | None = None


@dataclass(frozen=True)
class GuardrailEvidence:
    """One guardrail measure (``compare.guardrails``) of the challenger and of the system it is compared with: the
    means, the challenger's queries with a non-zero value, and (for a ``max_increase`` budget) the paired increase
    with its CI."""

    measure: str
    zero: bool
    max_increase: float | None
    challenger_mean: float
    reference_mean: float
    queries_with_any: int
    queries: int
    increase: DeltaEvidence | None = None
    slices: tuple["SliceEvidence", ...] = ()
    """The increase within each critical slice (``max_increase`` budgets only), its CI adjusted for the slices."""
    slice_budgets: tuple[float, ...] = ()
    """The budget each of ``slices`` is held to (``GuardrailRule.slice_budget``); none given: ``max_increase``."""

    def budgeted_slices(self) -> list[tuple["SliceEvidence", float]]:
        """Each slice with the max_increase it is held to."""
        assert self.max_increase is not None  # GuardrailRule: slices are checked for a max_increase budget only
        budgets = self.slice_budgets or (self.max_increase,) * len(self.slices)
        return list(zip(self.slices, budgets, strict=True))


@dataclass(frozen=True)
class Caveat:
    """Why the quality evidence cannot carry a decision on some queries: on every query (``column`` None) or on
    the slice ``column`` == ``value``."""

    message: str
    column: str | None = None
    value: str | None = None
    per_system: bool = False
    """About the challenger's own model (its language), not the evidence as such: when the other side of the pair
    carries the same caveat it cannot separate them, and it is stated as a note, not a reason (``stats.comparison``)."""


@dataclass(frozen=True)
class Evidence:
    """Everything ``decide`` looks at; None means not measured (latency, fallbacks) or not available (unjudged).

    ``identical_queries``: the number of queries when the challenger's run equals the baseline's on every one of
    them, else None; ``identical_because``: why, if its settings say. ``baseline_flag``: why the baseline cannot carry
    a decision, if it cannot."""

    primary: DeltaEvidence
    slices: tuple[SliceEvidence, ...]
    unjudged: UnjudgedEvidence | None = None
    latency: LatencyEvidence | None = None
    fallbacks: FallbackEvidence | None = None
    identical_queries: int | None = None
    identical_because: str | None = None
    baseline_flag: str | None = None
    saving: SavingEvidence | None = None
    caveats: tuple[Caveat, ...] = ()
    guardrails: tuple[GuardrailEvidence, ...] = ()
    invalid_outputs: InvalidOutputEvidence | None = None
    parity: ParityEvidence | None = None
    coverage: CoverageEvidence | None = None
    """Of the evaluated queries, how many the challenger's own run ranked (an external run; None: not one)."""
    reference_coverage: CoverageEvidence | None = None


@dataclass(frozen=True)
class Verdict:
    """The decision, the one reason that decided it, every reason, notes on skipped checks, and all checks run."""

    decision: Decision
    decided_by: str
    reasons: tuple[str, ...]
    notes: tuple[str, ...]
    checks: tuple[Check, ...]


def decide(rule: ReleaseRule, evidence: Evidence, claim: ReleaseClaim = SUPERIOR) -> Verdict:
    """Apply ``rule`` to ``evidence`` for a challenger claiming ``claim`` (see the module docstring)."""
    if evidence.primary.metric != rule.primary_metric:
        raise ValueError(f"evidence is for metric {evidence.primary.metric!r}, "
                         f"the rule's primary metric is {rule.primary_metric!r}")
    _require_finite(evidence)
    notes: list[str] = []
    # The order is the precedence of the reason that decides: the first failed hard check for REJECT, the first
    # failed soft check for INCONCLUSIVE.
    checks = (
        *_guardrail_checks(evidence.guardrails),
        *parity_checks(evidence.parity),
        *_identical_run(evidence.identical_queries, evidence.identical_because),
        *(Check("caveat", False, False, caveat.message) for caveat in evidence.caveats),
        *fallback_checks(rule, evidence.fallbacks, notes),
        *invalid_output_checks(rule, evidence.invalid_outputs),
        *coverage_checks(rule, evidence.coverage, evidence.reference_coverage),
        *_quality_checks(rule, claim, evidence),
        *_slice_checks(rule, evidence.slices),
        *_unjudged_checks(rule, evidence.unjudged, notes),
        *_latency_checks(rule, evidence.latency, notes),
        *_saving_checks(claim, evidence.saving),
    )
    checks = _under_caveats(checks, evidence.caveats)
    violated = [c.message for c in checks if c.hard and not c.passed]
    unmet = [c.message for c in checks if not c.hard and not c.passed]
    if violated or unmet:  # what the claim established stays stated beside what it did not
        notes += [f"met: {c.message}" for c in checks if c.passed and c.name == "saving"]
    if violated:
        return Verdict(Decision.REJECT, violated[0], (*violated, *unmet), tuple(notes), checks)
    if unmet:
        return Verdict(Decision.INCONCLUSIVE, unmet[0], tuple(unmet), tuple(notes), checks)
    primary, saving = evidence.primary, [c.message for c in checks if c.name == "saving"]  # stated in an ACCEPT
    bound = (f"above -margin {-claim.margin:+.4f}" if claim.claim == "noninferior"
             else f"above 0 and at least min_delta {rule.min_delta:+.4f}")
    summary = (f"{primary.metric} {primary.mean:+.4f}, {_ci_text(primary.ci_low, primary.ci_high, primary.confidence)}"
               f" {bound}; " + (f"{saving[0]}; every other check passed" if saving else "every check passed"))
    return Verdict(Decision.ACCEPT, summary, tuple(c.message for c in checks), tuple(notes), checks)


# --------------------------------------------------------------------------- checks


def _guardrail_checks(guardrails: tuple[GuardrailEvidence, ...]) -> list[Check]:
    """Listed first, and never softened by a caveat: no quality gain buys a guardrail back."""
    checks = []
    for found in guardrails:
        name = f"guardrail {found.measure}"
        if found.zero:
            share = found.queries_with_any / found.queries if found.queries else 0.0
            passed = found.queries_with_any == 0
            checks.append(Check(name, passed, True, (
                f"guardrail {found.measure}: {found.queries_with_any} of {found.queries} queries ({share:.1%}) show "
                "a document the asking user may not see; zero allowed, whatever the quality gain") if not passed
                else f"guardrail {found.measure}: 0 of {found.queries} queries, as required"))
            continue
        assert found.increase is not None and found.max_increase is not None  # GuardrailRule: one budget
        rise = found.increase
        head = (f"guardrail {found.measure}: {found.challenger_mean:.4f} vs {found.reference_mean:.4f}, increase "
                f"{rise.mean:+.4f}, {_ci_text(rise.ci_low, rise.ci_high, rise.confidence)}")
        budget = f"max_increase {found.max_increase:+.4f}"
        slices = found.budgeted_slices()
        within = [item for item, allowed in slices if item.mean <= allowed]
        own = " (some with budgets of their own)" if any(allowed != found.max_increase for _, allowed in slices) else ""
        in_slices = f"; within budget in {len(within)} of {len(slices)} checked slices{own}" if slices else ""
        if rise.ci_low > found.max_increase:
            checks.append(Check(name, False, True, f"{head} lies above {budget}"))
        elif rise.mean > found.max_increase:
            checks.append(Check(name, False, False, f"{head}: mean above {budget} but not established; blocks "
                                                    "ACCEPT"))
        else:
            checks.append(Check(name, True, True, f"{head}, within {budget}{in_slices}"))
        checks += [_guardrail_slice_check(found, item, allowed) for item, allowed in slices if item.mean > allowed]
    return checks


def _guardrail_slice_check(found: GuardrailEvidence, item: SliceEvidence, allowed: float) -> Check:
    """A critical slice's guardrail rate above its budget: REJECT with evidence, else it blocks ACCEPT."""
    name = f"guardrail {found.measure} {item.column}={item.value}"
    head = f"guardrail {found.measure} in critical slice {item.column}={item.value} (n={item.n_queries}"
    budget = f"max_increase {allowed:+.4f}" + (" (its own)" if allowed != found.max_increase else "")
    if item.too_small:
        return Check(name, False, False, f"{head}, too small to REJECT): increase {item.mean:+.4f} above {budget}; "
                                         "blocks ACCEPT")
    ci = _ci_text(item.ci_low, item.ci_high, item.confidence) + (
        f" (adjusted for {item.adjusted_for} slice tests)" if item.adjusted_for > 1 else "")
    if item.ci_low > allowed:
        return Check(name, False, True, f"{head}): increase {item.mean:+.4f}, {ci} lies above {budget}")
    return Check(name, False, False, f"{head}): increase {item.mean:+.4f} above {budget} but not established ({ci}); "
                                     "blocks ACCEPT")


def _identical_run(queries: int | None, because: str | None) -> list[Check]:
    why = because or ("probably a configuration that never reached the system (a dropped model path or flag); "
                      "check the system's config and run")
    return [] if queries is None else [Check("identical_run", False, False,
                                             f"run identical to the baseline's on all {queries} queries: {why}")]


QUALITY_CHECKS = ("primary_not_worse", "primary_not_inferior")


def _under_caveats(checks: tuple[Check, ...], caveats: tuple[Caveat, ...]) -> tuple[Check, ...]:
    """The hard quality checks a caveat on the evidence covers, made soft (on every query: the primary metric's and
    every slice's; on a slice: that slice's); one on the challenger's own model (``per_system``) covers none."""
    on_evidence = [c for c in caveats if not c.per_system]
    covered = {f"slice {c.column}={c.value}" for c in on_evidence if c.column is not None}
    everything = any(c.column is None for c in on_evidence)

    def covers(check: Check) -> bool:
        return check.name in covered or (everything and (check.name in QUALITY_CHECKS or check.name[:6] == "slice "))

    return tuple(Check(c.name, c.passed, False, c.message + ("; blocks ACCEPT only: a caveat covers it"
                                                             if not c.passed else ""))
                 if c.hard and covers(c) else c for c in checks)


def _quality_checks(rule: ReleaseRule, claim: ReleaseClaim, evidence: Evidence) -> list[Check]:
    if claim.claim == "noninferior":
        assert claim.margin is not None  # ReleaseClaim requires it
        return [*_noninferiority(claim.margin, evidence.primary), *_baseline_check(evidence.baseline_flag)]
    return [_primary_not_worse(evidence.primary), *_baseline_check(evidence.baseline_flag),
            *_primary_improvement(rule, evidence.primary)]


def _noninferiority(margin: float, primary: DeltaEvidence) -> list[Check]:
    """REJECT when the whole CI lies below -margin; ACCEPT needs its lower bound above -margin."""
    ci = _ci_text(primary.ci_low, primary.ci_high, primary.confidence)
    head = f"{primary.metric} (claim noninferior, margin {margin:.4f}): mean delta {primary.mean:+.4f}, {ci}"
    if primary.ci_high < -margin:
        return [Check("primary_not_inferior", False, True, f"{head} lies below -margin {-margin:+.4f}: inferior")]
    within = primary.ci_low > -margin
    return [Check("primary_not_inferior", True, True, f"{head}: upper bound above -margin {-margin:+.4f}, so not "
                                                      "shown inferior"),
            Check("primary_within_margin", within, False,
                  f"{head}: lower bound {'above' if within else 'not above'} -margin {-margin:+.4f}")]


def _saving_checks(claim: ReleaseClaim, saving: SavingEvidence | None) -> list[Check]:
    """The claim's saving: on cost by its CI (``_interval_saving_check``); on p95 latency by its CI too where the
    measurements kept their per-query times (else by the two figures), where an outcome the machine's load may have
    decided only blocks ACCEPT: a failure with a loaded measurement, or a pass against a loaded reference (load only
    adds time, so a loaded challenger that passes still passes)."""
    if claim.claim != "noninferior" or claim.min_saving is None:
        return []
    if claim.saving_on == "cost":
        if saving is None or saving.interval is None:
            return [_saving_unmeasured(claim.min_saving, "cost (cold s per query)")]
        return [_interval_saving_check(claim.min_saving, saving.against, saving.interval,
                                       "cost (cold s per query)", "s", ".4f")]
    what = "p95 latency"
    if saving is None or saving.challenger is None or saving.reference is None:
        return [_saving_unmeasured(claim.min_saving, what)]
    if saving.interval is not None:  # the per-query times are kept: decided by the saving's CI, as on cost
        check = _interval_saving_check(claim.min_saving, saving.against, saving.interval, what, "ms", ".1f")
        passed, message = check.passed, check.message
        if not check.hard:
            return [check]
    else:
        limit = saving.reference * (1 - claim.min_saving)
        passed = saving.challenger <= limit
        message = (f"saving on {what}: challenger {saving.challenger:.1f} ms "
                   f"{'within' if passed else 'exceeds'} {saving.against} {saving.reference:.1f} ms x "
                   f"(1 - {claim.min_saving:g}) = {limit:.1f} ms")
    untrusted = [f"{side} {why}" for side, why, matters in (
        ("challenger", saving.challenger_untrusted, not passed), (saving.against, saving.reference_untrusted, True))
        if why is not None and matters]
    if untrusted:
        return [Check("saving", False, False, f"{message}, but not trusted: {'; '.join(untrusted)}; re-measure on "
                                              "an idle machine")]
    return [Check("saving", passed, True, message)]


def _saving_unmeasured(min_saving: float, what: str) -> Check:
    return Check("saving_measured", False, False, f"saving of {_share(min_saving)} on {what} cannot be checked: the "
                                                  "challenger or the compared system was not timed")


def _interval_saving_check(min_saving: float, against: str, interval: SavingInterval, what: str, unit: str,
                           form: str) -> Check:
    """Established (the CI's lower bound reaches ``min_saving``) passes, established short of it (the upper bound
    below) REJECTs, a CI that includes it only blocks ACCEPT: each bound is one-sided at (1 - c) / 2, as the claim's
    Δ test. ``what`` the saving is on, each side's figure in ``unit`` written with ``form``."""
    head = (f"saving on {what} vs {against}: {interval.estimate:.1%}, {ci_label(interval.confidence)} "
            f"[{interval.low:.1%}, {interval.high:.1%}] over {interval.queries} paired queries "
            f"({interval.challenger_mean:{form}} {unit} vs {interval.reference_mean:{form}} {unit})")
    required = _share(min_saving)
    if interval.low >= min_saving:
        return Check("saving", True, True, f"{head}: established at {required} (lower bound reaches it)")
    if interval.high < min_saving:
        return Check("saving", False, True, f"{head}: short of {required} (upper bound below it)")
    return Check("saving", False, False, f"{head}: not established at {required} (CI includes it); blocks ACCEPT")


def _primary_not_worse(primary: DeltaEvidence) -> Check:
    ci = _ci_text(primary.ci_low, primary.ci_high, primary.confidence)
    if primary.ci_high < 0:
        return Check("primary_not_worse", False, True,
                     f"{primary.metric} significantly worse: mean delta {primary.mean:+.4f}, {ci} lies below 0")
    return Check("primary_not_worse", True, True,
                 f"{primary.metric} not significantly worse: mean delta {primary.mean:+.4f}, {ci} reaches 0 or above")


def _baseline_check(baseline_flag: str | None) -> list[Check]:
    if baseline_flag is None:
        return []
    return [Check("baseline_sane", False, False, f"{baseline_flag}; beating it proves little")]


def _primary_improvement(rule: ReleaseRule, primary: DeltaEvidence) -> list[Check]:
    ci = _ci_text(primary.ci_low, primary.ci_high, primary.confidence)
    significant = primary.ci_low > 0
    large_enough = primary.mean >= rule.min_delta
    where = "excludes 0" if significant else "lies below 0" if primary.ci_high < 0 else "includes 0"
    return [
        Check("primary_ci_excludes_0", significant, False, f"{primary.metric}: {ci} {where}"),
        Check("primary_min_delta", large_enough, False,
              f"{primary.metric}: mean delta {primary.mean:+.4f} "
              f"{'meets' if large_enough else 'is below'} min_delta {rule.min_delta:+.4f}"),
    ]


def _slice_checks(rule: ReleaseRule, slices: tuple[SliceEvidence, ...]) -> list[Check]:
    checks = []
    for spec in rule.critical_slices:
        matching = [s for s in slices if spec.matches(s.column, s.value)]
        if not matching:
            checks.append(Check(f"slice {spec.label()}", False, False,
                                f"critical slice {spec.label()}: no slice evidence, budget cannot be checked"))
        checks += [_slice_check(spec, found) for found in matching]
    return checks


def _slice_check(spec: CriticalSlice, found: SliceEvidence) -> Check:
    name = f"slice {found.column}={found.value}"
    head = f"critical slice {found.column}={found.value} (n={found.n_queries}"
    delta = f"mean delta {found.mean:+.4f}"
    if found.too_small:
        head += ", too small to REJECT)"
        if found.mean < -spec.budget:
            return Check(name, False, False, f"{head}: {delta} below budget -{spec.budget:.4f} blocks ACCEPT")
        return Check(name, True, False, f"{head}: {delta} within budget -{spec.budget:.4f}")
    ci = _ci_text(found.ci_low, found.ci_high, found.confidence)
    if found.adjusted_for > 1:
        ci += f" (adjusted for {found.adjusted_for} slice tests)"
    head += ")"
    if found.ci_high < -spec.budget:
        return Check(name, False, True, f"{head} regresses beyond its budget: {delta}, {ci} lies below "
                                        f"-{spec.budget:.4f}")
    if found.mean < -spec.budget:
        return Check(name, False, False, f"{head}: {delta} below budget -{spec.budget:.4f} but not established "
                                         f"({ci} reaches above it); blocks ACCEPT")
    return Check(name, True, True, f"{head}: {delta}, {ci}, within budget -{spec.budget:.4f}")


def _unjudged_checks(rule: ReleaseRule, unjudged: UnjudgedEvidence | None, notes: list[str]) -> list[Check]:
    if rule.unjudged_margin is None:
        return []
    if unjudged is None:
        notes.append("unjudged rates not available; unjudged check skipped")
        return []
    if unjudged.not_applicable:
        notes.append(f"unjudged check not applicable: {unjudged.not_applicable}")
        return []
    increase = unjudged.challenger_rate - unjudged.baseline_rate
    passed = increase <= rule.unjudged_margin
    message = (f"unjudged rate: challenger {unjudged.challenger_rate:.4f} - baseline {unjudged.baseline_rate:.4f} = "
               f"{increase:+.4f}, {'within' if passed else 'exceeds'} margin {rule.unjudged_margin:.4f}")
    return [Check("unjudged_margin", passed, True, message)]


def _latency_checks(rule: ReleaseRule, latency: LatencyEvidence | None, notes: list[str]) -> list[Check]:
    return [*_p95_checks(rule, latency, notes), *_p99_checks(rule, latency)]


def _p95_checks(rule: ReleaseRule, latency: LatencyEvidence | None, notes: list[str]) -> list[Check]:
    if rule.latency_p95_max_ms is None and rule.latency_p95_max_ratio is None:
        return []
    if latency is None or latency.challenger_p95_ms is None:
        # A budget that cannot be checked must not pass silently: it blocks ACCEPT.
        return [Check("latency_measured", False, False,
                      "latency p95 not measured (no timed query), the latency budget cannot be checked")]
    checks = []
    p95 = latency.challenger_p95_ms
    if rule.latency_p95_max_ms is not None:
        passed = p95 <= rule.latency_p95_max_ms
        message = (f"latency p95: challenger {p95:.1f} ms {'within' if passed else 'exceeds'} "
                   f"budget {rule.latency_p95_max_ms:.1f} ms")
        checks.append(_latency_check("latency_p95_ms", passed, message,
                                     None if passed else latency.challenger_untrusted))
    if rule.latency_p95_max_ratio is not None:
        if latency.baseline_p95_ms is None:
            notes.append("baseline latency not measured; latency ratio budget skipped")
        else:
            limit = latency.baseline_p95_ms * rule.latency_p95_max_ratio
            passed = p95 <= limit
            message = (f"latency p95: challenger {p95:.1f} ms {'within' if passed else 'exceeds'} baseline "
                       f"{latency.baseline_p95_ms:.1f} ms x {rule.latency_p95_max_ratio:g} = {limit:.1f} ms")
            # A loaded challenger inflates an overrun; a loaded baseline inflates the limit, so a pass.
            untrusted = latency.baseline_untrusted if passed else latency.challenger_untrusted
            checks.append(_latency_check("latency_p95_ratio", passed, message,
                                         None if untrusted is None else
                                         f"{'baseline' if passed else 'challenger'} {untrusted}"))
    return checks


def _p99_checks(rule: ReleaseRule, latency: LatencyEvidence | None) -> list[Check]:
    """The p99 budget, after the p95 ones (an online readout's; ``compare.release`` refuses it)."""
    if rule.latency_p99_max_ms is None:
        return []
    p99 = None if latency is None else latency.challenger_p99_ms
    if p99 is None:  # a budget that cannot be checked must not pass silently: it blocks ACCEPT
        return [Check("latency_p99_measured", False, False, f"latency p99 not measured (fewer than {MIN_P99_TIMED} "
                      "timed queries: their p99 would be about their slowest), the p99 budget cannot be checked")]
    passed = p99 <= rule.latency_p99_max_ms
    return [_latency_check("latency_p99_ms", passed, f"latency p99: challenger {p99:.1f} ms "
                           f"{'within' if passed else 'exceeds'} budget {rule.latency_p99_max_ms:.1f} ms",
                           None if passed else latency.challenger_untrusted)]


def _latency_check(name: str, passed: bool, message: str, untrusted: str | None) -> Check:
    """A latency check; one whose outcome the machine's load may have decided only blocks ACCEPT."""
    if untrusted is None:
        return Check(name, passed, True, message)
    return Check(name, False, False, f"{message}, but not trusted: {untrusted}; re-measure on an idle machine "
                                     "(delete data/latency/<system>.json, then dvc repro -s latency compare)")


# --------------------------------------------------------------------------- helpers


def ci_label(confidence: float) -> str:
    """``95% CI``; levels that are not whole percents keep one decimal (``99.4% CI``)."""
    percent = confidence * 100
    return f"{percent:.0f}% CI" if abs(percent - round(percent)) < 1e-9 else f"{percent:.1f}% CI"


def _share(value: float) -> str:
    """``20%``, ``12.5%``: a configured share as written, not rounded to a whole percent."""
    return f"{value * 100:g}%"


def _ci_text(low: float, high: float, confidence: float) -> str:
    return f"{ci_label(confidence)} [{low:+.4f}, {high:+.4f}]"


def _require_finite(evidence: Evidence) -> None:
    numbers = {"primary mean": evidence.primary.mean, "primary ci_low": evidence.primary.ci_low,
               "primary ci_high": evidence.primary.ci_high}
    if evidence.unjudged is not None:
        numbers["baseline unjudged rate"] = evidence.unjudged.baseline_rate
        numbers["challenger unjudged rate"] = evidence.unjudged.challenger_rate
    for s in evidence.slices:
        fields = ("mean",) if s.too_small else ("mean", "ci_low", "ci_high")
        for field in fields:
            numbers[f"slice {s.column}={s.value} {field}"] = getattr(s, field)
    for name, value in numbers.items():
        if not math.isfinite(value):
            raise ValueError(f"evidence {name} is not finite: {value!r}")
