"""The verdict table's view of release claims and several baselines: the (challenger, baseline) pairs verdicts.json
decides, and the non-inferiority rule's statement and simulated error rates (read from verdicts.json, never
computed here)."""

from __future__ import annotations

from ..stats.schema import DecisionCore, Verdict

NONINFERIORITY_HEADER = ["challenger", "vs", "true Δ = -margin", "ACCEPT at -margin (error)", "ACCEPT at 0 (power)",
                         "REJECT at 0"]


def decided(verdicts: DecisionCore) -> list[tuple[str, str, Verdict]]:
    """Every (challenger, baseline, verdict): against the first baseline, then against each other reference."""
    pairs = [(system, verdicts.baseline, verdict) for system, verdict in verdicts.verdicts.items()]
    for reference, by_system in (verdicts.verdicts_by_baseline or {}).items():
        pairs += [(system, reference, verdict) for system, verdict in by_system.items()]
    return pairs


def plain(verdicts: DecisionCore) -> bool:
    """One baseline and only superiority claims: the table needs no baseline or claim column."""
    return not verdicts.verdicts_by_baseline and not any(v.claim is not None for v in verdicts.verdicts.values())


def claim_cell(verdict: Verdict) -> str:
    claim = verdict.claim
    if claim is None:
        return "superior"
    saving = "" if claim.min_saving is None else f", saves ≥ {claim.min_saving:.0%} of {claim.saving_on}"
    return f"noninferior (margin {claim.margin:g}{saving})"


def rule_text(verdicts: DecisionCore, level: str) -> str | None:
    """The non-inferiority rule in one sentence, when some challenger claims it."""
    if not any(verdict.claim is not None for _, _, verdict in decided(verdicts)):
        return None
    one_sided = (1 - verdicts.rule.confidence) / 2
    return (f"A `noninferior` claim ACCEPTs when the lower bound of its {level} of Δ lies above -margin (a one-sided "
            f"test at {one_sided:.1%}), its saving is established and no other check fails; it REJECTs when the "
            "whole CI lies below -margin or the saving is established short of min_saving. A saving (on cost, or "
            f"on p95 latency over the timed queries) is established when the lower bound of its paired {level} lies "
            "at or above min_saving (short of it: the upper bound below), on trusted measurements. min_delta does "
            "not apply.")


def noninferiority_rows(verdicts: DecisionCore) -> list[list[str]]:
    """Rows under ``NONINFERIORITY_HEADER``: the non-inferiority rule's simulated decision rates at a true Δ of
    -margin (ACCEPT there is its error rate) and of 0 (ACCEPT there is its power)."""
    rows = []
    for system, reference, verdict in decided(verdicts):
        if verdict.claim is None:
            continue
        at_margin, at_zero = (verdict.operating_characteristics[key] for key in ("at_minus_margin", "at_zero"))
        rows.append([f"`{system}`", f"`{reference}`", f"{at_margin.effect:+.4f}",
                     *(["n/a"] * 3 if verdict.rates_why else
                       [_rate(at_margin.accept), _rate(at_zero.accept), _rate(at_zero.reject)])])
    return rows


def no_rates(verdicts: DecisionCore) -> list[str]:
    """One line per verdict whose simulated rates the pages do not show (``Verdict.rates_why``), with why."""
    return [f"n/a for `{system}` vs `{reference}`: {verdict.rates_why}."
            for system, reference, verdict in decided(verdicts) if verdict.rates_why]


def _rate(value: float) -> str:
    return f"{value:.1%}"
