"""Per-query deltas of a family of comparisons (every challenger x metric against one baseline) and their
description: median, effect size, win/tie/loss, percentiles and the worst regressions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .defaults import DEFAULT_TIE_TOL, DEFAULT_WORST_N
from .resampling import DELTA_PERCENTILES, _as_deltas


@dataclass(frozen=True)
class Comparison:
    """One member of the family: ``challenger`` vs the baseline on ``metric`` (``baseline``: which, in a family
    with several; None in a family with one)."""

    challenger: str
    metric: str
    baseline: str | None = None



@dataclass(frozen=True)
class DeltaSummary:
    """Descriptive statistics of one comparison's per-query deltas (see ``summarise_deltas``)."""

    mean: float
    median: float
    cohens_dz: float
    improved: int
    tied: int
    regressed: int
    percentiles: Mapping[int, float]
    worst_regressions: tuple[int, ...]



def family_deltas(
    scores: Mapping[str, Mapping[str, ArrayLike]], baseline: str
) -> tuple[tuple[Comparison, ...], np.ndarray]:
    """Delta matrix of the whole family: every challenger × every metric against ``baseline``.

    ``scores[system][metric]`` is a 1-D per-query metric array, aligned on the same sorted query
    ids for every system. Returns the comparisons (challengers, then metrics, both sorted by name)
    and the ``(n_queries, n_comparisons)`` matrix whose column ``j`` is
    ``scores[c_j.challenger][c_j.metric] − scores[baseline][c_j.metric]``.
    """
    if baseline not in scores:
        raise ValueError(f"baseline system {baseline!r} not in scores (have {sorted(scores)})")
    metrics = sorted(scores[baseline])
    challengers = sorted(system for system in scores if system != baseline)
    if not metrics or not challengers:
        raise ValueError("family_deltas needs at least one metric and one challenger")
    comparisons, columns = [], []
    for system in challengers:
        if sorted(scores[system]) != metrics:
            raise ValueError(
                f"system {system!r} has metrics {sorted(scores[system])}, "
                f"baseline {baseline!r} has {metrics}"
            )
        for metric in metrics:
            base = np.asarray(scores[baseline][metric], dtype=np.float64)
            chal = np.asarray(scores[system][metric], dtype=np.float64)
            if base.ndim != 1 or base.shape != chal.shape:
                raise ValueError(
                    f"metric {metric!r}: system {system!r} has shape {chal.shape}, baseline "
                    f"{baseline!r} has {base.shape}; expected equal 1-D per-query arrays"
                )
            comparisons.append(Comparison(system, metric))
            columns.append(chal - base)
    return tuple(comparisons), _as_deltas(np.column_stack(columns))



def summarise_deltas(
    deltas: ArrayLike, *, tie_tol: float = DEFAULT_TIE_TOL, worst_n: int = DEFAULT_WORST_N
) -> tuple[DeltaSummary, ...]:
    """Per-comparison description of the per-query deltas d.

    * ``mean``, ``median``; ``percentiles`` at 5, 25, 50, 75, 95 (linear interpolation).
    * ``cohens_dz`` = mean(d) / sd(d) (sd with n − 1). sd = 0: 0 when the mean is 0 too, ±inf
      (the sign of the mean) for a constant non-zero shift.
    * ``improved`` / ``tied`` / ``regressed``: d > tol, |d| <= tol, d < −tol.
    * ``worst_regressions``: row indices of up to ``worst_n`` regressed queries, most negative
      first; equal deltas keep row order, i.e. sorted query-id order.
    """
    matrix = _as_deltas(deltas)
    if tie_tol < 0:
        raise ValueError(f"tie_tol must be >= 0, got {tie_tol!r}")
    if not isinstance(worst_n, int | np.integer) or worst_n < 0:
        raise ValueError(f"worst_n must be a non-negative integer, got {worst_n!r}")
    mean = matrix.mean(axis=0)
    sd = matrix.std(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        dz = np.where(sd > 0, mean / sd, np.sign(mean) * np.inf)
    dz = np.where((sd == 0) & (mean == 0), 0.0, dz)
    percentiles = np.percentile(matrix, DELTA_PERCENTILES, axis=0)
    summaries = []
    for j, column in enumerate(matrix.T):
        ranked = np.argsort(column, kind="stable")
        worst = ranked[column[ranked] < -tie_tol][:worst_n]
        summaries.append(
            DeltaSummary(
                mean=float(mean[j]),
                median=float(np.median(column)),
                cohens_dz=float(dz[j]),
                improved=int(np.count_nonzero(column > tie_tol)),
                tied=int(np.count_nonzero(np.abs(column) <= tie_tol)),
                regressed=int(np.count_nonzero(column < -tie_tol)),
                percentiles={q: float(v) for q, v in zip(DELTA_PERCENTILES, percentiles[:, j])},
                worst_regressions=tuple(int(i) for i in worst),
            )
        )
    return tuple(summaries)
