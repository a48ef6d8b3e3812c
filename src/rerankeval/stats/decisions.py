"""Every release pair's decision: what the verdicts weigh besides the per-query metrics (``RunFacts``), each pair's
verdict record (``stats.verdict.decide`` on its family's interval, its claim's saving, its guardrails), and each
multiplicity family's simulated error rates, as verdicts.json stores them. ``stats.comparison.compare`` hands the
primary metric's pairs here once their intervals are known."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from . import domains
from .config import CompareConfig, ReleaseClaim, ReleaseRule
from .guardrails import guardrail_evidence
from .power import power_statement
from .run_checks import CoverageEvidence, FallbackEvidence, InvalidOutputEvidence, ParityEvidence
from .saving import SavingInterval, cost_saving, p95_saving
from .simulation import NO_SPREAD, family_characteristics
from .verdict import (Caveat, DeltaEvidence, Evidence, GuardrailEvidence, LatencyEvidence, SavingEvidence,
                      SliceEvidence, UnjudgedEvidence, decide)


@dataclass(frozen=True)
class RunFacts:
    """What the verdicts weigh besides the per-query metrics; each part is optional (the CLI has only runs).

    ``latency_p95_ms``: per system, None when not measured; ``latency_untrusted``: why a system's figure may be
    the machine's load (``serving.measure``). ``fallbacks``: per system, (fallback queries, queries); ``timeouts``:
    per system, how many of its fallbacks were timeouts (``core.errors.is_timeout``).
    ``identical_to_baseline``: challengers whose run equals the baseline's, with the number of queries.
    ``baseline_flag``: why the baseline cannot carry a decision. ``positive_only``: why unjudged-based measures and
    checks do not apply (``sanity.positive_only_reason``). ``cost_seconds``: per system, the cold seconds of each
    timed query, indexed by query id (what a non-inferiority claim's ``saving_on: cost`` compares, paired by query:
    ``stats.saving``). ``identical_to_baseline`` and ``baseline_flag``
    concern the first baseline. ``caveats``: per challenger, where its quality evidence cannot carry a decision
    (``stats.caveats``: the generator, the model's language)."""

    latency_p95_ms: Mapping[str, float | None] = field(default_factory=dict)
    latency_untrusted: Mapping[str, str] = field(default_factory=dict)
    fallbacks: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    timeouts: Mapping[str, int] = field(default_factory=dict)
    identical_to_baseline: Mapping[str, int] = field(default_factory=dict)
    identical_because: Mapping[str, str] = field(default_factory=dict)
    """Per challenger identical to the baseline, why its own settings make it the baseline's ranking, where its run
    says (``describe.reduces_to``: a blend whose weight is 0 or 1); else the identity suggests a lost setting."""
    baseline_flag: str | None = None
    positive_only: str | None = None
    cost_seconds: Mapping[str, pd.Series] = field(default_factory=dict)
    caveats: Mapping[str, Sequence[Caveat]] = field(default_factory=dict)
    invalid_outputs: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Per LLM reranker: (calls whose output was invalid, calls), from its run's ``describe`` (``systems.llm``)."""
    served_parity: Mapping[str, ParityEvidence] = field(default_factory=dict)
    """Per served system declared in ``compare.served_parity``: its scores against its in-process reference."""
    latency_by_query: Mapping[str, pd.Series] = field(default_factory=dict)
    """Per system, the per-query wall ms of the round its ``latency_p95_ms`` comes from (indexed by query id): what a
    ``saving_on: latency_p95`` claim's CI resamples (``stats.saving.p95_saving``)."""
    coverage: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Per external run (a ``trec_run`` system): (reranked queries its run ranked, reranked queries); the rule's
    ``min_run_coverage`` applies to it on either side of a pair."""
    reference_systems: frozenset[str] = frozenset()
    """Systems that are reference points, not release challengers (first stages, the oracle, random: their
    kind's role): each is decided alone, outside the release family, and shown as descriptive."""



def finite(value: float) -> float | None:
    """JSON has no infinities or NaN: those become null."""
    value = float(value)
    return round(value, 6) if math.isfinite(value) else None



def _coverage(facts: RunFacts, system: str) -> CoverageEvidence | None:
    return CoverageEvidence(*facts.coverage[system]) if system in facts.coverage else None



def family_of(item, index: int, reference_systems: frozenset[str], inference: str) -> tuple[str, str | int]:
    """A primary-metric pair's multiplicity family: its baseline's release family, or itself alone (a reference
    system, or any pair under ``per_comparison``)."""
    if inference == "family" and item.challenger not in reference_systems:
        return ("release", item.baseline)
    return ("alone", f"{item.challenger} vs {item.baseline}")



def family_label(group: tuple[str, str | int]) -> str:
    kind, name = group
    return f"release vs {name}" if kind == "release" else f"alone: {name}"



def _verdict(rule: ReleaseRule, claim: ReleaseClaim, challenger: str, reference: str,
             evidence: tuple[DeltaEvidence, tuple[SliceEvidence, ...]], facts: RunFacts,
             unjudged_rate: Mapping[str, float | None], confidence: float,
             saving: SavingEvidence | None, guardrails: tuple[GuardrailEvidence, ...] = (),
             unguarded: Sequence[str] = ()) -> dict[str, Any]:
    """``challenger``'s decision against ``reference`` for ``claim`` (``saving``: what its claim saves, if it
    claims non-inferiority), as verdicts.json stores it (less its simulated operating characteristics)."""
    delta, slice_evidence = evidence
    # A caveat on the challenger's own model that the other side carries too (a language neither can read) cannot
    # separate them: stated as a note, not a reason.
    theirs = set(facts.caveats.get(reference, ()))
    shared = [caveat for caveat in facts.caveats.get(challenger, ()) if caveat.per_system and caveat in theirs]
    caveats = tuple(caveat for caveat in facts.caveats.get(challenger, ()) if caveat not in shared)
    # Decided on the stored numbers (6 decimals), so that the reasons' text and verdicts.json agree digit for digit.
    delta = replace(delta, mean=round(delta.mean, 6), ci_low=round(delta.ci_low, 6), ci_high=round(delta.ci_high, 6))
    fallbacks = facts.fallbacks.get(challenger)
    verdict = decide(rule, Evidence(
        primary=delta, slices=slice_evidence,
        unjudged=UnjudgedEvidence(unjudged_rate[reference], unjudged_rate[challenger], facts.positive_only),
        latency=LatencyEvidence(facts.latency_p95_ms.get(challenger), facts.latency_p95_ms.get(reference),
                                facts.latency_untrusted.get(challenger), facts.latency_untrusted.get(reference)),
        fallbacks=None if fallbacks is None else FallbackEvidence(*fallbacks),
        identical_queries=facts.identical_to_baseline.get(challenger),
        identical_because=facts.identical_because.get(challenger), baseline_flag=facts.baseline_flag,
        saving=saving, caveats=caveats, guardrails=guardrails,
        invalid_outputs=None if challenger not in facts.invalid_outputs else InvalidOutputEvidence(
            *facts.invalid_outputs[challenger]), parity=facts.served_parity.get(challenger),
        coverage=_coverage(facts, challenger), reference_coverage=_coverage(facts, reference)), claim)
    entry: dict[str, Any] = {
        "decision": str(verdict.decision), "decided_by": verdict.decided_by, "metric": rule.primary_metric,
        "delta": finite(delta.mean), "ci": [finite(delta.ci_low), finite(delta.ci_high)],
        "confidence": confidence, "reasons": list(verdict.reasons),
        "notes": [*verdict.notes, *(f"{reference} too: {caveat.message} (the same for both sides, so not a reason "
                                    "between them)" for caveat in shared), *unguarded]}
    if guardrails:
        failed = [check for check in verdict.checks if check.name.startswith("guardrail ") and not check.passed]

        def outcome_of(measure: str) -> str:  # its own check and its critical slices' together
            mine = [check for check in failed if check.name.split(" ")[1] == measure]
            return "violated" if any(c.hard for c in mine) else "unsettled" if mine else "held"

        entry["guardrails"] = [{"measure": found.measure, "outcome": outcome_of(found.measure),
                                "challenger": found.challenger_mean,
                                "against": found.reference_mean, "queries_with_any": found.queries_with_any,
                                "queries": found.queries, **({"zero": True} if found.zero else {
                                    "max_increase": found.max_increase, "increase": found.increase.mean,
                                    "ci": [found.increase.ci_low, found.increase.ci_high],
                                    "slices_above_budget": [f"{item.column}={item.value}" for item, allowed
                                                            in found.budgeted_slices() if item.mean > allowed]})}
                               for found in guardrails]
    if claim.claim == "noninferior":
        entry["claim"] = {**claim.to_dict(), "against": reference}
    if saving is not None:
        entry["saving"] = {"measure": saving.measure, "challenger": _finite_or_none(saving.challenger),
                           "against": _finite_or_none(saving.reference)}
        if saving.interval is not None:
            found = saving.interval
            entry["saving"].update(estimate=found.estimate, ci=[found.low, found.high], confidence=found.confidence,
                                   queries=found.queries)
    return entry



def saving_evidence(claim: ReleaseClaim, challenger: str, reference: str, facts: RunFacts,
                    settings: CompareConfig) -> SavingEvidence | None:
    """What a non-inferiority claim saves (None for any other claim): the two p95 latencies with the p95 saving's
    paired CI where both measurements kept their per-query times, or the cost saving with its paired CI, each over
    the comparison's ``samples`` / ``seed`` / ``confidence`` (``stats.saving``)."""
    if claim.claim != "noninferior":
        return None
    if claim.saving_on == "latency_p95":
        figures, untrusted = facts.latency_p95_ms, facts.latency_untrusted
        times = (facts.latency_by_query.get(challenger), facts.latency_by_query.get(reference))
        found = None if times[0] is None or times[1] is None else p95_saving(
            *times, **settings.resampling(with_method=False))
        return SavingEvidence(claim.saving_on, reference, figures.get(challenger), figures.get(reference),
                              untrusted.get(challenger), untrusted.get(reference), _stored(found))
    seconds = (facts.cost_seconds.get(challenger), facts.cost_seconds.get(reference))
    found = None if seconds[0] is None or seconds[1] is None else cost_saving(
        *seconds, **settings.resampling(with_method=False))
    if found is None:
        return SavingEvidence(claim.saving_on, reference, None, None)
    found = _stored(found)
    return SavingEvidence(claim.saving_on, reference, found.challenger_mean, found.reference_mean, interval=found)



def _stored(found: SavingInterval | None) -> SavingInterval | None:
    """Decided on the stored numbers (6 decimals), as the delta: the reasons' text and verdicts.json agree."""
    return None if found is None else replace(found, **{
        name: round(getattr(found, name), 6) for name in ("estimate", "low", "high", "challenger_mean",
                                                          "reference_mean")})



def _finite_or_none(value: float | None) -> float | None:
    return None if value is None else finite(value)


@dataclass(frozen=True)
class ReleasePairs:
    """The primary metric's pairs as the verdicts read them: the paired deltas, each pair's multiplicity family
    (``family_of``), its evidence (its family's interval and its slices', ``stats.evidence.release_evidence``), its
    adjusted p from the same procedure, and, for a pair involving a system trained with several seeds, the seeds its
    seed-aware interval counts (by pair index)."""

    family: domains.PairedFamily
    groups: Sequence[tuple[str, str]]
    evidence: Sequence[tuple[DeltaEvidence, tuple[SliceEvidence, ...]]]
    p_adjusted: Sequence[float]
    ci_seeds: Mapping[int, list[int]]


@dataclass(frozen=True)
class GuardrailInputs:
    """The guardrail measures the evaluate stage computed (per system, per measure, per query), those it could not
    (``unguarded``: a note on every verdict) and every query's slice labels (a guardrail is defined on every query)."""

    scores: Mapping[str, Mapping[str, np.ndarray]]
    measures: Sequence[str]
    unguarded: Sequence[str]
    labels: Mapping[str, np.ndarray]


def evidence_settings(settings: CompareConfig) -> dict[str, Any]:
    """What the release evidence and its simulation share: slice size, seed, confidence and interval method."""
    return dict(min_slice_size=settings.min_slice_size, seed=settings.seed, confidence=settings.confidence,
                method=settings.ci_method)


def decide_pairs(pairs: ReleasePairs, deltas: np.ndarray, labels: Mapping[str, np.ndarray], rule: ReleaseRule,
                 settings: CompareConfig, facts: RunFacts, unjudged_rate: Mapping[str, float | None],
                 references: Sequence[str], guards: GuardrailInputs) -> tuple[dict[str, dict[str, dict]], dict]:
    """Each pair's verdict by its reference, and each family's record (members, simulated family-wise error rates).
    ``deltas``: the pairs' per-query deltas on the queries a verdict reads, ``labels`` theirs."""
    family, groups = pairs.family, pairs.groups
    verdicts: dict[str, dict[str, dict]] = {reference: {} for reference in references}
    claims = [rule.claim_for(item.challenger, item.baseline, settings.baseline) for item in family.comparisons]
    boot = settings.resampling()
    simulated = {}
    for group in dict.fromkeys(groups):
        members = [k for k, found in enumerate(groups) if found == group]
        simulated[group] = (members, family_characteristics(
            deltas[:, members], labels, rule, [claims[k] for k in members], trials=settings.simulation.trials,
            n_samples=settings.simulation.samples, **evidence_settings(settings)))
    families = {}
    for group, (members, rates) in simulated.items():
        families[family_label(group)] = {
            "members": [family.comparisons[k].challenger for k in members],
            "baseline": family.comparisons[members[0]].baseline, **rates.family_record()}
        for position, k in enumerate(members):
            item = family.comparisons[k]
            verdict = _verdict(rule, claims[k], item.challenger, item.baseline, pairs.evidence[k],
                               facts if item.baseline == settings.baseline else replace(
                                   facts, identical_to_baseline={}, baseline_flag=None),
                               unjudged_rate, settings.confidence,
                               saving_evidence(claims[k], item.challenger, item.baseline, facts, settings),
                               guardrail_evidence(guards.scores, item.challenger, item.baseline, settings.guardrails,
                                                  boot, guards.labels, rule.critical_slices,
                                                  settings.min_slice_size) if guards.measures else (),
                               guards.unguarded)
            at_null, at_alternative = rates.at_null[position].to_dict(), rates.at_alternative[position].to_dict()
            verdict["operating_characteristics"] = (
                {"at_zero": at_null, "at_min_delta": at_alternative} if claims[k].claim == "superior"
                else {"at_minus_margin": at_null, "at_zero": at_alternative})
            defined = family.deltas[~np.isnan(family.deltas[:, k]), k]
            if len(defined) and not defined.std() > 0:  # the trials keep the observed spread: here none
                verdict["rates_why"] = NO_SPREAD
            verdict["family"] = family_label(group)
            verdict["p_adjusted"] = finite(pairs.p_adjusted[k])
            # An undecided verdict says how many queries would decide it (stats.power), at the claim's own effect.
            verdict["power"] = (power_statement(family.deltas[:, k], rule.min_delta, settings.confidence,
                                                margin=claims[k].margin if claims[k].claim == "noninferior" else None)
                                if verdict["decision"] == "INCONCLUSIVE" else None)
            if k in pairs.ci_seeds:  # its CI is the seed-aware one
                verdict["ci_seeds"] = pairs.ci_seeds[k]
            verdicts[item.baseline][item.challenger] = verdict
    return verdicts, families
