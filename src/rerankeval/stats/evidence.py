"""The statistical evidence of the release rule, from a family of primary-metric comparisons.

One function for the comparison and for the simulation of the rule's error rates (``stats.simulation``): the
family's columns are challengers in the one and simulated trials in the other (``deltas_family``), so what is
simulated is exactly what decides. The primary intervals are the family's simultaneous ones (``stats.family``) over
the comparison's own resamples, so the verdict's primary CI and adjusted p are the ones compare.json reports; its slice
CIs come from the same replicates at the Bonferroni level for every critical slice of every member of the family.
Pure numpy.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from .config import ReleaseRule
from .deltas import Comparison
from .domains import PairedFamily, family_slices
from .family import simultaneous_intervals
from .resampling import CIMethod, Intervals
from .verdict import DeltaEvidence, SliceEvidence


def critical_columns(rule: ReleaseRule, labels: Mapping[str, np.ndarray]) -> list[str]:
    """The slice columns the rule names that the queries carry, in rule order."""
    return [column for column in dict.fromkeys(spec.column for spec in rule.critical_slices) if column in labels]


def slices_that_can_reject(rule: ReleaseRule, labels: Mapping[str, np.ndarray], min_slice_size: int) -> int:
    """m: the critical slices with at least ``min_slice_size`` queries; their CIs are Bonferroni-adjusted for m."""
    count = 0
    for column in critical_columns(rule, labels):
        values, sizes = np.unique(np.asarray(labels[column]), return_counts=True)
        count += sum(1 for value, size in zip(values.tolist(), sizes)
                     if size >= min_slice_size and any(spec.matches(column, value) for spec in rule.critical_slices))
    return count


def adjusted_confidence(confidence: float, slices: int) -> float:
    """Bonferroni: each of ``slices`` intervals at 1 - (1 - confidence) / slices, so that all hold together."""
    return 1.0 - (1.0 - confidence) / max(slices, 1)


def deltas_family(deltas: np.ndarray, metric: str) -> PairedFamily:
    """Per-query deltas (queries x columns) as a family against a zero baseline: its intervals are exactly
    ``bootstrap_ci``'s and ``slice_ci``'s of the deltas."""
    deltas = np.asarray(deltas, dtype=np.float64)
    if deltas.ndim == 1:
        deltas = deltas[:, None]
    comparisons = tuple(Comparison(f"column {j}", metric) for j in range(deltas.shape[1]))
    return PairedFamily(comparisons, np.where(np.isnan(deltas), np.nan, 0.0), deltas)


def verdict_queries(family: PairedFamily) -> np.ndarray:
    """The queries on which every comparison of the family is defined: those the slice family size counts."""
    return ~np.isnan(family.deltas).any(axis=1)


def release_evidence(family: PairedFamily, labels: Mapping[str, np.ndarray], rule: ReleaseRule,
                     groups: Sequence[Hashable] | None = None, *, min_slice_size: int, n_samples: int, seed: int,
                     confidence: float, method: CIMethod,
                     overall: Intervals | None = None) -> list[tuple[DeltaEvidence, tuple[SliceEvidence, ...]]]:
    """Per comparison of ``family`` (the primary metric): the overall delta with its simultaneous CI within its group
    (``groups[j]``: member j's multiplicity family; None: each member alone; ``overall``: the caller's intervals, when
    it already has them) and every slice of the critical columns with its CI at the Bonferroni level for every
    critical slice of every member of its group (``labels``: one string label per query of the family and
    column)."""
    groups = list(range(len(family.comparisons))) if groups is None else list(groups)
    if overall is None:
        overall = simultaneous_intervals(family, groups, n_samples=n_samples, seed=seed,
                                         confidence=confidence).intervals
    defined = verdict_queries(family)
    slice_family = slices_that_can_reject(rule, {column: np.asarray(values)[defined]
                                                 for column, values in labels.items()}, min_slice_size)
    group_sizes = [groups.count(group) for group in groups]
    columns = critical_columns(rule, labels)
    boot = dict(n_samples=n_samples, seed=seed, method=method)
    by_size = {size: [family_slices(family, labels[column], confidence=adjusted_confidence(confidence,
                                                                                        slice_family * size),
                                    min_slice_size=min_slice_size, **boot) for column in columns]
               for size in (sorted(set(group_sizes)) if columns else [])}
    evidence = []
    for j in range(len(family.comparisons)):
        # A slice none of whose queries the primary metric is defined on gives no evidence.
        slices = tuple(found for column, result in zip(columns, by_size.get(group_sizes[j], []))
                       for found in SliceEvidence.from_intervals(column, result, j,
                                                                 adjusted_for=slice_family * group_sizes[j])
                       if found.n_queries)
        evidence.append((DeltaEvidence.from_intervals(rule.primary_metric, overall, j), slices))
    return evidence
