"""Where the quality evidence cannot carry a decision: the checks resting on it only block ACCEPT (``verdict.Caveat``).

* Generator: for the primary answer measure (``compare.generator_check.metric``), the ceiling (oracle) and the
  baseline against the floor (random), with paired CIs over the comparison's resamples. When either CI reaches 0 the
  generator cannot tell rankings apart on this collection: every answer-level number compares generator noise, so
  no verdict rests on an answer measure (a primary metric that is one becomes a caveat).
* Language: a learned system whose tokenizer cannot read a slice's text (``systems.learned.language``, recorded in
  its run's metadata) gets a caveat on that slice, or on every query when no slice is readable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..eval.measures import parse_measure
from . import domains
from .verdict import Caveat, ci_label

# rag-input measures that read the selected context only: the generator does not move them.
CONTEXT_MEASURES = frozenset({"EvidenceCoverage", "ParentCoverage", "ContextPrecision", "Redundancy",
                              "NearDuplicates", "ContextTokens"})


def answer_level(measure: str) -> bool:
    """Whether ``measure`` reads the generated answer (AnswerF1, abstention, citations, ...), not only the ranking or
    the selected context."""
    family = parse_measure(measure).family
    return family.needs == "rag" and family.name not in CONTEXT_MEASURES


def generator_sanity(per_query: pd.DataFrame, metric: str, ceiling: str | None, floor: str | None, baseline: str,
                     *, n_samples: int, seed: int, confidence: float) -> dict[str, Any]:
    """Δ ceiling - floor and Δ baseline - floor on ``metric`` (per_query: system, query_id, measure columns), each
    with its paired percentile CI (``domains``: answer measures are undefined on some queries). ``flag`` says why
    the generator cannot tell rankings apart, or is None; ``skipped`` why the check did not run, or is None."""
    result: dict[str, Any] = {"metric": metric, "confidence": confidence, "ceiling": ceiling, "floor": floor,
                              "baseline": baseline, "means": {}, "ceiling_vs_floor": None,
                              "baseline_vs_floor": None, "flag": None, "skipped": None}
    if metric not in per_query.columns:
        result["skipped"] = f"{metric} was not evaluated (add it to evaluation.measures)"
        return result
    missing = [role for role, name in (("ceiling (oracle)", ceiling), ("floor (random)", floor)) if name is None]
    if missing:
        result["skipped"] = f"no {' and no '.join(missing)} system is configured"
        return result
    systems = list(dict.fromkeys([floor, ceiling, baseline]))
    wide = per_query.pivot(index="query_id", columns="system", values=metric).sort_index()[systems]
    if wide.isna().all().all():  # a collection without gold answers: the measure is defined on no query
        result["skipped"] = (f"no query has a gold answer, so {metric} is defined on none: answer-level measures do "
                             "not apply to this collection")
        return result
    result["queries"] = int(wide.notna().any(axis=1).sum())
    result["means"] = {system: _rounded(wide[system].mean()) for system in systems}
    challengers = [name for name in (ceiling, baseline) if name != floor]
    family = domains.paired_family({system: {metric: wide[system].to_numpy()} for system in systems}, floor)
    intervals = domains.family_intervals(family, n_samples=n_samples, seed=seed, confidence=confidence)
    found = {item.challenger: {"delta": _rounded(intervals.mean[j]), "low": _rounded(intervals.low[j]),
                               "high": _rounded(intervals.high[j])}
             for j, item in enumerate(family.comparisons) if item.challenger in challengers}
    result["ceiling_vs_floor"], result["baseline_vs_floor"] = found.get(ceiling), found.get(baseline)
    reaching = [f"{name} - {floor} {_signed(found[name]['delta'])} ({ci_label(confidence)} "
                f"[{_signed(found[name]['low'])}, {_signed(found[name]['high'])}])"
                for name in dict.fromkeys(challengers) if found[name]["low"] is None or found[name]["low"] <= 0]
    if reaching:
        result["flag"] = (f"the generator cannot tell rankings apart on this collection: on {metric}, "
                          f"{'; '.join(reaching)} reaches 0, so answer-level differences between systems measure "
                          "the generator's noise, not the ranking")
    return result


def _signed(value: float | None) -> str:
    """A delta or bound; n/a where too few queries define it (a CI needs two)."""
    return "n/a" if value is None else f"{value:+.3f}"


def generator_caveat(sanity: Mapping[str, Any], primary_metric: str) -> Caveat | None:
    """A caveat on every query when the generator is flagged and the primary metric reads the answer."""
    if not sanity.get("flag") or not answer_level(primary_metric):
        return None
    return Caveat(f"{sanity['flag']}; no verdict rests on {primary_metric}")


def language_caveats(check: Mapping[str, Any] | None, slices: pd.DataFrame, query_ids: Sequence[str]) -> list[Caveat]:
    """Caveats from a run's ``describe.language_check``: one per unreadable slice, or one on every query when the
    unreadable slices hold every evaluated query (or the check covered the whole collection)."""
    if not check or not check.get("measured") or not check.get("unreadable"):
        return []
    column, unreadable = check.get("column"), list(check["unreadable"])
    shares = ", ".join(f"{value}: {check['slices'][value][check['decided_on']]:.1%}" for value in unreadable)
    text = "queries'" if check["decided_on"] == "query_share" else "queries' and passages'"
    what = (f"its tokenizer maps more than {check['threshold']:.0%} of the {text} characters to unknown, byte or "
            f"split pieces ({shares}), so the model cannot read that language here")
    if column is None:
        return [Caveat(f"cannot read this collection: {what}", per_system=True)]
    labels = slices.reindex(list(query_ids))[column].fillna("(none)").astype(str) if column in slices else None
    if labels is None or set(labels) <= set(unreadable):
        return [Caveat(f"cannot read any {column} slice of this collection ({', '.join(unreadable)}): {what}",
                       per_system=True)]
    return [Caveat(f"cannot read {column}={value}: {what}", column, value, per_system=True) for value in unreadable]


def _rounded(value: float) -> float | None:
    value = float(value)
    return round(value, 6) if np.isfinite(value) else None
