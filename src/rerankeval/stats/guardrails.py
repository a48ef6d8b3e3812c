"""Guardrails in the analysis: each system's rate of every guardrail measure with its CI, and each pair's evidence
for the verdict (``verdict.GuardrailEvidence``), from the per-query values the evaluate stage wrote.

The rates are means over every evaluated query with their bootstrap CI (``domains.mean_intervals``); an increase is
the paired bootstrap CI of the challenger's minus the compared system's values (``resampling.bootstrap_ci``), at the
comparison's confidence: a guardrail is checked on its own, not as a member of the release family. Within each
critical slice (the dataset's ``critical_slices``, as the quality budgets) the increase gets its slice CI,
Bonferroni-adjusted for the slices large enough to REJECT (``resampling.slice_ci``), against the same budget.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from ..core.errors import ConfigError
from .config import GuardrailRule
from .critical_slices import CriticalSlice
from .domains import mean_intervals
from .evidence import adjusted_confidence
from .resampling import bootstrap_ci, slice_ci
from .verdict import DeltaEvidence, GuardrailEvidence, SliceEvidence


def guardrail_table(scores: Mapping[str, Mapping[str, np.ndarray]], systems: Sequence[str],
                    measures: Sequence[str], boot: Mapping[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """compare.json's ``guardrails``: per measure and system, its mean with CI and the queries with a non-zero value."""
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for measure in measures:
        values = np.column_stack([scores[system][measure] for system in systems])
        found = mean_intervals(values, **boot)
        table[measure] = {system: {"mean": _rounded(found.mean[j]), "low": _rounded(found.low[j]),
                                   "high": _rounded(found.high[j]),
                                   "queries_with_any": int(np.count_nonzero(values[:, j] > 0)),
                                   "queries": int(len(values))}
                          for j, system in enumerate(systems)}
    return table


def guardrail_evidence(scores: Mapping[str, Mapping[str, np.ndarray]], challenger: str, reference: str,
                       rules: Sequence[GuardrailRule], boot: Mapping[str, Any],
                       labels: Mapping[str, np.ndarray] | None = None, critical: Sequence[CriticalSlice] = (),
                       min_slice_size: int = 20) -> tuple[GuardrailEvidence, ...]:
    """The evidence of each guardrail whose measure was evaluated, for ``challenger`` against ``reference``;
    ``labels``: each slice column's label per query (the scores' order), of which ``critical`` names the checked."""
    found = []
    for rule in rules:
        name = str(rule.measure)
        if name not in scores[challenger]:
            continue
        mine, theirs = scores[challenger][name], scores[reference][name]
        delta = None
        if rule.max_increase is not None:
            intervals = bootstrap_ci((mine - theirs)[:, None], **boot)
            delta = DeltaEvidence.from_intervals(name, intervals, 0)
            delta = DeltaEvidence(name, round(delta.mean, 6), round(delta.ci_low, 6), round(delta.ci_high, 6),
                                  delta.confidence)
            slices = _slice_increases(mine - theirs, labels or {}, [*critical, *rule.slice_budgets], boot,
                                      min_slice_size)
        else:
            slices = ()
        found.append(GuardrailEvidence(measure=name, zero=rule.zero, max_increase=rule.max_increase,
                                       challenger_mean=round(float(mine.mean()), 6),
                                       reference_mean=round(float(theirs.mean()), 6),
                                       queries_with_any=int(np.count_nonzero(mine > 0)), queries=int(len(mine)),
                                       increase=delta, slices=slices,
                                       slice_budgets=tuple(rule.slice_budget(item.column, item.value)
                                                           for item in slices)))
    return tuple(found)


def check_slice_budgets(rules: Sequence[GuardrailRule], labels: Mapping[str, np.ndarray],
                        evaluated: Collection[str]) -> None:
    """A ConfigError for a guardrail's own slice budget that names a slice no evaluated query is in: it would check
    nothing, silently. ``rules``: compare.guardrails, all of them (the error names an entry by its index there);
    ``evaluated``: the guardrail measures the evaluate stage computed (the others are skipped with a note)."""
    for index, rule in enumerate(rules):
        for budget in rule.slice_budgets if str(rule.measure) in evaluated else ():
            where = f"compare.guardrails[{index}] ({rule.measure}) slice_budgets {budget.label()}"
            if budget.column not in labels:
                columns = ", ".join(sorted(labels)) or "none"
                raise ConfigError(f"{where}: no query has a slice column {budget.column!r} (the queries' slice "
                                  f"columns: {columns}). Fix: name one of them, or drop the budget.")
            values = {str(value) for value in labels[budget.column]}
            if budget.value is not None and budget.value not in values:
                raise ConfigError(f"{where}: no evaluated query has {budget.column}={budget.value} (its values: "
                                  f"{', '.join(sorted(values))}). Fix: name one of them, or drop the budget.")


def _slice_increases(increase: np.ndarray, labels: Mapping[str, np.ndarray], critical: Sequence[CriticalSlice],
                     boot: Mapping[str, Any], min_slice_size: int) -> tuple[SliceEvidence, ...]:
    """The increase within every critical slice (the dataset's and those with a budget of their own for this
    guardrail), each CI adjusted for the slices that are large enough to REJECT."""
    columns = [column for column in dict.fromkeys(spec.column for spec in critical) if column in labels]

    def wanted(column: str, value) -> bool:
        return any(spec.matches(column, value) for spec in critical)

    eligible = sum(int(count >= min_slice_size) for column in columns
                   for value, count in zip(*np.unique(labels[column], return_counts=True)) if wanted(column, value))
    level = adjusted_confidence(boot["confidence"], eligible)
    slices = []
    for column in columns:
        found = slice_ci(increase[:, None], labels[column], min_slice_size=min_slice_size,
                         **{**boot, "confidence": level})
        slices += [item for item in SliceEvidence.from_intervals(column, found, 0, adjusted_for=max(eligible, 1))
                   if wanted(column, item.value)]
    return tuple(slices)


def _rounded(value: float) -> float | None:
    return round(float(value), 6) if np.isfinite(value) else None


def invalid_output_record(invalid: np.ndarray, calls: np.ndarray, boot: Mapping[str, Any]) -> dict[str, Any]:
    """An LLM reranker's invalid outputs: in total (invalid calls of all calls, what the verdict's budget reads) and
    per query (the share of a query's calls that were invalid, averaged over the queries with a call, with its
    bootstrap CI over queries)."""
    invalid, calls = np.asarray(invalid, dtype=np.float64), np.asarray(calls, dtype=np.float64)
    asked = calls > 0
    record: dict[str, Any] = {"invalid": int(invalid.sum()), "calls": int(calls.sum()), "queries": int(asked.sum()),
                              "rate": _rounded(invalid.sum() / calls.sum()) if calls.sum() else None}
    shares = invalid[asked] / calls[asked]
    if len(shares) >= 2:  # a bootstrap over queries needs two
        found = mean_intervals(shares[:, None], **boot)
        record.update(per_query_mean=_rounded(found.mean[0]), low=_rounded(found.low[0]), high=_rounded(found.high[0]),
                      confidence=found.confidence)
    elif len(shares):
        record.update(per_query_mean=_rounded(shares[0]), low=None, high=None)
    return record
