"""The checks on how a challenger's run was produced rather than on its quality, each with its evidence: the queries
that fell back to the fused order, an LLM reranker's invalid outputs, and a served system's parity with the model it
serves in-process. ``stats.verdict.decide`` places them among its checks; ``Check`` is the outcome of any check."""

from __future__ import annotations

from dataclasses import dataclass

from .config import ReleaseRule


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
class FallbackEvidence:
    """Queries the challenger served with the fused-order fallback (deadline passed or scoring failed)."""

    fallbacks: int
    queries: int


@dataclass(frozen=True)
class CoverageEvidence:
    """Of the reranked queries, how many an external run ranked itself (the others keep the fused order)."""

    ranked: int
    queries: int


def coverage_checks(rule: ReleaseRule, challenger: CoverageEvidence | None,
                    reference: CoverageEvidence | None) -> list[Check]:
    """An external run, on either side, that ranks too few of the reranked queries leaves the rest in the fused
    order, so the delta is mostly that order against itself: the pair cannot be ACCEPTed. It does not REJECT on that
    alone."""
    checks = []
    for side, found in (("the challenger's", challenger), ("the compared system's", reference)):
        if found is None or not found.queries:
            continue
        share = found.ranked / found.queries
        passed = share >= rule.min_run_coverage
        checks.append(Check("run_coverage", passed, False, (
            f"{side} run ranks {found.ranked} of the {found.queries} reranked queries ({share:.1%}), "
            + (f"at least min_run_coverage {rule.min_run_coverage:.0%}" if passed else
               f"below min_run_coverage {rule.min_run_coverage:.0%}: the others keep the fused order, so the delta "
               "is mostly that order against itself; blocks ACCEPT"))))
    return checks


@dataclass(frozen=True)
class InvalidOutputEvidence:
    """An LLM reranker's calls whose output was invalid (``systems.llm``), of all its calls."""

    invalid: int
    calls: int


@dataclass(frozen=True)
class ParityEvidence:
    """A served system's scores against its in-process reference (``stats.agreement.score_parity``): the largest
    difference over the ``pairs`` both scored (None: no pair in common), where, and the tolerance."""

    reference: str
    pairs: int
    max_diff: float | None
    tolerance: float
    where: str = ""


def fallback_checks(rule: ReleaseRule, fallbacks: FallbackEvidence | None, notes: list[str]) -> list[Check]:
    if rule.max_fallback_rate is None:
        return []
    if fallbacks is None or fallbacks.queries == 0:
        notes.append("fallbacks not recorded; fallback limit skipped")
        return []
    rate = fallbacks.fallbacks / fallbacks.queries
    passed = rate <= rule.max_fallback_rate
    message = (f"{fallbacks.fallbacks}/{fallbacks.queries} queries ({rate:.1%}) fell back to the fused order, "
               f"{'within' if passed else 'above'} the limit {rule.max_fallback_rate:.1%}")
    return [Check("fallback_rate", passed, True, message)]


def parity_checks(found: ParityEvidence | None) -> list[Check]:
    """A served system must score as its in-process reference: otherwise the model behind the endpoint is not the
    model evaluated, and no quality gain measured on the endpoint stands for the reference (a hard check, never
    softened by a caveat)."""
    if found is None:
        return []
    if found.max_diff is None:
        return [Check("served parity", False, True, f"served parity: no document scored by both this system and "
                                                    f"{found.reference}, so the endpoint cannot be checked")]
    passed = found.max_diff <= found.tolerance
    return [Check("served parity", passed, True, (
        f"served parity: scores depart from in-process {found.reference} by up to {found.max_diff:.3g} "
        f"({found.where}) over {found.pairs} pairs, above the tolerance {found.tolerance:g}") if not passed else
        f"served parity: within {found.tolerance:g} of in-process {found.reference} on {found.pairs} pairs "
        f"(largest {found.max_diff:.3g})")]


def invalid_output_checks(rule: ReleaseRule, found: InvalidOutputEvidence | None) -> list[Check]:
    """An LLM reranker whose outputs were invalid too often cannot be ACCEPTed (its order is partly the repair
    rule's, not the model's); it does not REJECT on that alone."""
    if rule.max_invalid_rate is None or found is None or not found.calls:
        return []
    rate = found.invalid / found.calls
    passed = rate <= rule.max_invalid_rate
    return [Check("invalid_outputs", passed, False,
                  f"{found.invalid}/{found.calls} LLM calls ({rate:.1%}) gave an invalid output (repaired by the "
                  f"kind's rule), {'within' if passed else 'above'} max_invalid_rate {rule.max_invalid_rate:.1%}"
                  + ("" if passed else "; blocks ACCEPT"))]
