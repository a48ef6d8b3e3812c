"""The statistical evidence of the release rule, from per-query primary-metric deltas.

One function for the comparison and for the simulation of the rule's error rates (``stats.simulation``): the
columns of ``deltas`` are challengers in the one and simulated trials in the other, so what is simulated is exactly
what decides. Pure numpy.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .resampling import CIMethod, bootstrap_ci, slice_ci
from .verdict import DeltaEvidence, ReleaseRule, SliceEvidence


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


def release_evidence(deltas: np.ndarray, labels: Mapping[str, np.ndarray], rule: ReleaseRule, *, min_slice_size: int,
                     n_samples: int, seed: int, confidence: float,
                     method: CIMethod) -> list[tuple[DeltaEvidence, tuple[SliceEvidence, ...]]]:
    """Per column of ``deltas`` (queries x columns, primary metric): the overall delta with its CI and every slice of
    the critical columns with its Bonferroni-adjusted CI (``labels``: one string label per query and column)."""
    deltas = np.asarray(deltas, dtype=np.float64)
    if deltas.ndim == 1:
        deltas = deltas[:, None]
    boot = dict(n_samples=n_samples, seed=seed, method=method)
    overall = bootstrap_ci(deltas, confidence=confidence, **boot)
    family = slices_that_can_reject(rule, labels, min_slice_size)
    level = adjusted_confidence(confidence, family)
    columns = critical_columns(rule, labels)
    by_column = [slice_ci(deltas, labels[column], confidence=level, min_slice_size=min_slice_size, **boot)
                 for column in columns]
    evidence = []
    for j in range(deltas.shape[1]):
        slices = tuple(found for column, result in zip(columns, by_column)
                       for found in SliceEvidence.from_intervals(column, result, j, adjusted_for=family))
        evidence.append((DeltaEvidence.from_intervals(rule.primary_metric, overall, j), slices))
    return evidence
