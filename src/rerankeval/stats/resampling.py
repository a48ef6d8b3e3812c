"""Paired bootstrap of mean deltas: intervals for the whole query set and for every slice.

Conventions shared by every function here:

* ``deltas`` is an array of shape ``(n_queries,)`` or ``(n_queries, n_comparisons)``; column ``j``
  holds the per-query differences challenger − baseline of comparison ``j``, rows aligned on the
  sorted query ids. Per-comparison outputs always have length ``n_comparisons`` (1 for 1-D input).
* Bootstrap resamples are a pure function of ``(n_queries, n_samples, seed)``. Every function that
  is given the same three draws the same resamples, so the intervals of all metrics, all system
  pairs and all slices of a run come from the same bootstrap replicates and are mutually consistent.
* Resampled sums are exact (see ``_on_exact_grid``), so results are bit-identical whatever the
  BLAS thread count or kernel and whether comparisons are computed together or one at a time.
* Pure numpy/scipy: no I/O, no printing, no pandas. Results are frozen dataclasses of numpy arrays.
"""

from __future__ import annotations

import functools

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from .defaults import DEFAULT_CONFIDENCE, DEFAULT_MIN_SLICE_SIZE, DEFAULT_N_SAMPLES, DEFAULT_SEED

DELTA_PERCENTILES = (5, 25, 50, 75, 95)

CIMethod = Literal["percentile", "bca"]
Correction = Literal["holm", "bh"]

# Resampling draws are generated in row blocks of about this many cells: it bounds peak memory
# (draws, counts and float weights) whatever n_samples is, beyond the remembered matrices
# (_REMEMBERED_CELLS), and was faster than larger blocks (benchmarks/bench_stats.py times it).
# Changing it changes which resamples a seed gives.
_BLOCK_CELLS = 1 << 20


@dataclass(frozen=True, eq=False)
class Intervals:
    """Observed mean delta and its bootstrap confidence interval, one entry per comparison."""

    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    confidence: float
    method: CIMethod
    n_samples: int
    seed: int


@dataclass(frozen=True, eq=False)
class SliceIntervals:
    """Per-slice mean delta and paired bootstrap CI; arrays are (n_slices, n_comparisons).

    ``values`` are the distinct slice labels in sorted order; ``sizes[k, j]`` counts the queries of slice ``k``
    that comparison ``j`` is defined on (all of the slice's for complete deltas; ``stats.domains`` for the others)
    and ``too_small`` flags those with fewer than ``min_slice_size`` (unreliable CIs; the verdict never REJECTs on
    them). Every printed slice size is one of these, so the report and the verdict agree.
    ``n_resamples_used`` counts, per slice, the bootstrap replicates in which the slice drew at
    least one query (the others leave the slice mean undefined and are dropped).
    """

    values: tuple
    sizes: np.ndarray
    too_small: np.ndarray
    n_resamples_used: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    confidence: float
    method: CIMethod
    min_slice_size: int



def _as_deltas(deltas: ArrayLike) -> np.ndarray:
    """Validated float64 ``(n_queries, n_comparisons)`` view of ``deltas``."""
    matrix = np.asarray(deltas, dtype=np.float64)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    if matrix.ndim != 2:
        raise ValueError(
            f"deltas must be 1-D or 2-D (queries × comparisons), got shape {matrix.shape}"
        )
    if matrix.shape[0] < 2:
        raise ValueError(f"paired inference needs at least 2 queries, got {matrix.shape[0]}")
    if matrix.shape[1] < 1:
        raise ValueError("deltas has no comparisons (0 columns)")
    bad = ~np.isfinite(matrix)
    if bad.any():
        query, column = np.argwhere(bad)[0]
        raise ValueError(
            f"deltas contain {int(bad.sum())} NaN/inf value(s); first at query index {query}, "
            f"comparison {column} (value {matrix[query, column]})"
        )
    return matrix


def _check_positive(name: str, value: int) -> None:
    if not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


def _check_ci_method(method: str) -> None:
    if method not in ("percentile", "bca"):
        raise ValueError(f"unknown CI method {method!r}; use 'percentile' or 'bca'")


def _on_exact_grid(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Deltas rounded to a per-column power-of-two grid on which the resampling sums are exact.

    With grid >= 4·n·max|d| / 2⁵³, every delta is an integer multiple of grid and every sum this
    module forms (counts summing to n times deltas, or 2·Σ of a subset) stays below 2⁵³ grid, so
    float64 adds it exactly in any order. Results therefore cannot depend on BLAS threads, CPU
    kernels or which other columns share the product. The rounding moves each delta by at most
    grid/2, a relative change of about 4·n·1.1e-16. Returns (rounded deltas, grid per column).
    """
    largest = np.abs(matrix).max(axis=0)
    with np.errstate(divide="ignore"):
        exponent = np.ceil(np.log2(4.0 * matrix.shape[0] * largest)) - 53
    # All-zero columns (log2(0) = −inf) and tiny deltas get the smallest normal grid.
    grid = np.ldexp(1.0, np.maximum(exponent, -1022).astype(np.int64))
    return np.round(matrix / grid) * grid, grid


def _exact_mean(matrix: np.ndarray) -> np.ndarray:
    """Mean of the gridded deltas: the replicate of the all-ones resample, bit for bit."""
    gridded, _ = _on_exact_grid(matrix)
    return gridded.sum(axis=0) / matrix.shape[0]


# --------------------------------------------------------------------------- bootstrap


def _weight_blocks(n_queries: int, n_samples: int, seed: int) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(first_row, counts)`` blocks of the bootstrap count matrix, rows in order (read-only arrays)."""
    if isinstance(seed, (int, np.integer)) and n_queries * n_samples <= _REMEMBERED_CELLS:
        yield from _remembered_blocks(int(n_queries), int(n_samples), int(seed))
    else:
        yield from _drawn_blocks(n_queries, n_samples, seed)


_REMEMBERED_CELLS = 1 << 23
"""A count matrix of a fixed seed up to this size (64 MB; the last two are kept) is drawn once and reused: the compare
stage asks for the same resamples over a thousand times (every interval of every simulated trial). Drawn each time,
the demo's compare stage took 11.1-11.5 s against 9.2-9.4 s (Intel Xeon, 2 cores, `python -m rerankeval.pipeline
compare`, twice each; compare.json identical)."""


@functools.lru_cache(maxsize=2)
def _remembered_blocks(n_queries: int, n_samples: int, seed: int) -> tuple[tuple[int, np.ndarray], ...]:
    blocks = tuple(_drawn_blocks(n_queries, n_samples, seed))
    for _, counts in blocks:
        counts.setflags(write=False)
    return blocks


def _drawn_blocks(n_queries: int, n_samples: int, seed: int) -> Iterator[tuple[int, np.ndarray]]:
    rng = np.random.default_rng(seed)
    rows_per_block = max(1, _BLOCK_CELLS // n_queries)
    for start in range(0, n_samples, rows_per_block):
        rows = min(rows_per_block, n_samples - start)
        # Uniform index draws + one bincount over row-offset indices is faster than
        # rng.multinomial (benchmarks/bench_stats.py) and gives exactly the multinomial(n, 1/n) counts per row.
        draws = rng.integers(0, n_queries, size=(rows, n_queries))
        draws += np.arange(rows)[:, None] * n_queries
        counts = np.bincount(draws.ravel(), minlength=rows * n_queries)
        yield start, counts.reshape(rows, n_queries).astype(np.float64)


def bootstrap_means(
    deltas: ArrayLike, *, n_samples: int = DEFAULT_N_SAMPLES, seed: int = DEFAULT_SEED
) -> np.ndarray:
    """Bootstrap replicates of the mean delta, ``(n_samples, n_comparisons)``.

    Replicate ``b`` of comparison ``j`` is ``sum_i w_bi * d_ij / n_queries`` with ``w`` the
    ``bootstrap_weights`` rows: the same query resamples for every comparison (one matrix product).
    The sum is exact for deltas rounded to a grid of relative size ~4·n·2⁻⁵³ (``_on_exact_grid``).
    """
    matrix, _ = _on_exact_grid(_as_deltas(deltas))
    _check_positive("n_samples", n_samples)
    n_queries, n_comparisons = matrix.shape
    replicates = np.empty((n_samples, n_comparisons))
    for start, weights in _weight_blocks(n_queries, n_samples, seed):
        np.matmul(weights, matrix, out=replicates[start : start + len(weights)])
    replicates /= n_queries
    return replicates


def bootstrap_ci(
    deltas: ArrayLike,
    *,
    n_samples: int = DEFAULT_N_SAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
    method: CIMethod = "percentile",
) -> Intervals:
    """Paired bootstrap confidence interval of the mean delta of every comparison.

    ``percentile``: the (1−confidence)/2 and (1+confidence)/2 quantiles (linear interpolation, as
    ``numpy.quantile``) of the ``bootstrap_means`` replicates.
    ``bca``: bias-corrected and accelerated quantile levels
    ``Φ(z0 + (z0 + z_α) / (1 − a (z0 + z_α)))``, where ``z0 = Φ⁻¹(share of replicates below the
    observed mean, ties counted half)`` and ``a`` is the jackknife acceleration of the mean.
    Comparisons computed together or one at a time give bit-identical intervals.
    """
    _check_confidence(confidence)
    _check_ci_method(method)
    matrix = _as_deltas(deltas)
    replicates = bootstrap_means(matrix, n_samples=n_samples, seed=seed)
    low, high = _interval(replicates, _exact_mean(matrix), matrix, confidence, method)
    return Intervals(matrix.mean(axis=0), low, high, confidence, method, n_samples, seed)


def slice_ci(
    deltas: ArrayLike,
    labels: ArrayLike,
    *,
    n_samples: int = DEFAULT_N_SAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
    method: CIMethod = "percentile",
    min_slice_size: int = DEFAULT_MIN_SLICE_SIZE,
) -> SliceIntervals:
    """Mean delta and paired bootstrap CI of every comparison within every slice.

    ``labels`` gives one int/str/bool slice value per query. A slice's replicate ``b`` is the
    weighted mean of its queries' deltas under the *global* resample ``b``:
    ``sum_{i in s} w_bi d_ij / sum_{i in s} w_bi``.

    Why restrict the global weights instead of resampling within each slice: the slice intervals
    then come from the very replicates of the global interval (same ``n_samples``/``seed``), so
    slice and overall statements are jointly consistent, and the number of slice queries varies
    across replicates as it would if the query sample were redrawn. Replicates in which a slice
    draws no query (probability about e^-size, negligible from ``min_slice_size`` = 20 up) leave its
    mean undefined and are dropped; see ``SliceIntervals.n_resamples_used``. ``bca`` uses the
    jackknife acceleration over the slice's own queries. Slices with fewer than ``min_slice_size``
    queries are flagged in ``too_small``. Holds n_slices × n_samples × n_comparisons floats.
    """
    _check_confidence(confidence)
    _check_ci_method(method)
    _check_positive("n_samples", n_samples)
    _check_positive("min_slice_size", min_slice_size)
    matrix = _as_deltas(deltas)
    gridded, _ = _on_exact_grid(matrix)
    n_queries, n_comparisons = matrix.shape
    values, codes = _slice_codes(labels, n_queries)
    n_slices = len(values)

    # Sorting queries by slice makes every slice a contiguous column range of the weight block.
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes, minlength=n_slices)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    sorted_deltas = matrix[order]
    sorted_gridded = gridded[order]

    weighted_sums = np.empty((n_slices, n_samples, n_comparisons))
    weight_totals = np.empty((n_slices, n_samples))
    for start, weights in _weight_blocks(n_queries, n_samples, seed):
        rows = slice(start, start + len(weights))
        sorted_weights = weights[:, order]
        for k in range(n_slices):
            members = slice(bounds[k], bounds[k + 1])
            np.matmul(
                sorted_weights[:, members], sorted_gridded[members], out=weighted_sums[k, rows]
            )
            weight_totals[k, rows] = sorted_weights[:, members].sum(axis=1)

    mean = np.empty((n_slices, n_comparisons))
    low = np.full((n_slices, n_comparisons), np.nan)
    high = np.full((n_slices, n_comparisons), np.nan)
    used = np.zeros(n_slices, dtype=np.int64)
    for k in range(n_slices):
        members = slice(bounds[k], bounds[k + 1])
        mean[k] = sorted_deltas[members].mean(axis=0)
        drawn = weight_totals[k] > 0
        used[k] = int(drawn.sum())
        if used[k]:
            replicates = weighted_sums[k, drawn] / weight_totals[k, drawn, None]
            observed = sorted_gridded[members].sum(axis=0) / sizes[k]
            low[k], high[k] = _interval(replicates, observed, sorted_deltas[members], confidence, method)
    comparison_sizes = np.repeat(sizes[:, None], n_comparisons, axis=1)
    return SliceIntervals(
        values=values,
        sizes=comparison_sizes,
        too_small=comparison_sizes < min_slice_size,
        n_resamples_used=used,
        mean=mean,
        low=low,
        high=high,
        confidence=confidence,
        method=method,
        min_slice_size=min_slice_size,
    )


def _slice_codes(labels: ArrayLike, n_queries: int) -> tuple[tuple, np.ndarray]:
    """Sorted distinct slice values and each query's index into them."""
    array = np.asarray(labels)
    if array.ndim != 1 or len(array) != n_queries:
        raise ValueError(
            f"slice labels must be 1-D with one label per query ({n_queries}), "
            f"got shape {array.shape}"
        )
    if array.dtype.kind not in "biuUSO":
        raise ValueError(
            f"slice labels must be integers, booleans or strings, got dtype {array.dtype}"
        )
    try:
        values, codes = np.unique(array, return_inverse=True)
    except TypeError as error:  # e.g. a mix of str and None in an object array
        raise ValueError(f"slice labels are not mutually comparable: {error}") from None
    return tuple(values.tolist()), codes


def _jackknife_acceleration(matrix: np.ndarray) -> np.ndarray:
    """BCa acceleration from the leave-one-out means, per column.

    With u_i = mean(θ_(·)) − θ_(i), a = Σu³ / (6 (Σu²)^1.5). For the mean,
    θ_(i) = (Σd − d_i)/(n−1), so u_i = (d_i − d̄)/(n−1) and the (n−1) factors cancel:
    a = Σ(d−d̄)³ / (6 (Σ(d−d̄)²)^1.5).
    Zero spread (or a single query) gives a = 0.
    """
    centred = matrix - matrix.mean(axis=0)
    spread = np.sum(centred**2, axis=0)
    skew = np.sum(centred**3, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(spread > 0, skew / (6.0 * spread**1.5), 0.0)


def _interval(
    replicates: np.ndarray,
    observed: np.ndarray,
    matrix: np.ndarray,
    confidence: float,
    method: CIMethod,
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per column of ``replicates`` (n_replicates, n_comparisons); ``matrix`` holds the deltas the
    BCa acceleration is computed from."""
    n_replicates = len(replicates)
    tail = (1.0 - confidence) / 2.0
    if method == "percentile":
        levels = np.repeat([[tail], [1.0 - tail]], replicates.shape[1], axis=1)
    else:
        acceleration = _jackknife_acceleration(matrix)
        below = np.mean(replicates < observed, axis=0)
        below += 0.5 * np.mean(replicates == observed, axis=0)
        # Clipping keeps z0 finite when the observed mean lies outside every replicate.
        below = np.clip(below, 0.5 / n_replicates, 1.0 - 0.5 / n_replicates)
        z0 = special.ndtri(below)
        z = special.ndtri([[tail], [1.0 - tail]])
        levels = special.ndtr(z0 + (z0 + z) / (1.0 - acceleration * (z0 + z)))
    return _column_quantiles(np.sort(replicates.T, axis=1), levels)


def _column_quantiles(sorted_rows: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Quantile ``levels[r, j]`` of sorted row ``j``, linearly interpolated like numpy.quantile."""
    last = sorted_rows.shape[1] - 1
    position = np.clip(levels, 0.0, 1.0) * last
    below = np.floor(position).astype(np.int64)
    above = np.minimum(below + 1, last)
    columns = np.arange(sorted_rows.shape[0])
    lower = sorted_rows[columns, below]
    upper = sorted_rows[columns, above]
    return lower + (position - below) * (upper - lower)
