"""Paired inference for measures that are undefined (NaN) on some queries: their *domain* is where they are defined.

A ranking measure is undefined on a query without a relevant document; citation precision on a query the system
abstained on. A system's value is the mean over its domain; a delta is the difference of the two systems' means, each
over its own domain (for a domain that depends on the query only, such as the ranking measures', this is the mean of
the per-query deltas over it).

Intervals use the very bootstrap resamples of ``resampling`` (the same ``(n_queries, n_samples, seed)`` draws): a
replicate of a mean is the weighted mean of the domain's values under the global weights, ``sum w v / sum w``, as
``slice_ci`` does for a slice, and a delta's replicate is the difference of the two systems' replicates. Replicates
in which a domain draws no query are dropped. Intervals are percentile intervals (``bca`` is not defined for these
ratio estimates; ``method`` says what was used). Values are rounded to ``_on_exact_grid`` first, so every sum is
exact and results do not depend on BLAS threads.

The test is a paired randomisation test that swaps the two systems' values (defined or not) on each query with
probability 1/2; for a query-only domain it is the sign-flip test on the domain's deltas. Columns without NaN go
through ``resampling`` and ``significance`` unchanged, so results for complete measures are bit for bit the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .defaults import DEFAULT_CONFIDENCE, DEFAULT_MIN_SLICE_SIZE, DEFAULT_N_SAMPLES, DEFAULT_SEED
from .deltas import Comparison, DeltaSummary, summarise_deltas
from .resampling import (_BLOCK_CELLS, Intervals, SliceIntervals, _interval, _on_exact_grid, _slice_codes,
                         _weight_blocks, bootstrap_ci, slice_ci)
from .significance import Significance, adjust_pvalues, randomisation_pvalues, ttest_pvalues


@dataclass(frozen=True, eq=False)
class PairedFamily:
    """Every challenger x metric against the baseline: ``base`` and ``challenger`` are (n_queries, n_comparisons)."""

    comparisons: tuple[Comparison, ...]
    base: np.ndarray
    challenger: np.ndarray

    @property
    def partial(self) -> np.ndarray:
        """Per comparison: some value is undefined, so the domain path is used."""
        return np.isnan(self.base).any(axis=0) | np.isnan(self.challenger).any(axis=0)

    @property
    def deltas(self) -> np.ndarray:
        """Per-query deltas; NaN where either side is undefined."""
        return self.challenger - self.base

    def subset(self, members: Sequence[int]) -> PairedFamily:
        """The family of ``members`` (indices into ``comparisons``), in that order."""
        members = list(members)
        return PairedFamily(tuple(self.comparisons[j] for j in members), self.base[:, members],
                            self.challenger[:, members])


def paired_family(scores: Mapping[str, Mapping[str, ArrayLike]], baseline: str,
                  references: Mapping[str, Sequence[str]] | None = None) -> PairedFamily:
    """Like ``deltas.family_deltas`` (challengers, then metrics, both sorted), keeping both sides.

    ``references``: per reference system its challengers (``CompareConfig.references``), one family over all of
    them, reference by reference; each comparison names its reference. None: every other system against
    ``baseline``."""
    metrics = sorted(scores[baseline])
    if references is None:
        pairs = [(None, system) for system in sorted(system for system in scores if system != baseline)]
    else:
        pairs = [(reference, system) for reference, challengers in references.items() for system in challengers]
    if not metrics or not pairs:
        raise ValueError("a comparison family needs at least one metric and one challenger")
    comparisons = tuple(Comparison(system, metric, reference) for reference, system in pairs for metric in metrics)
    base = np.column_stack([np.asarray(scores[c.baseline or baseline][c.metric], dtype=np.float64)
                            for c in comparisons])
    challenger = np.column_stack([np.asarray(scores[c.challenger][c.metric], dtype=np.float64) for c in comparisons])
    return PairedFamily(comparisons, base, challenger)


def _gridded(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values on the exact grid with NaN as 0, defined mask as float)."""
    defined = ~np.isnan(values)
    filled = np.where(defined, values, 0.0)
    if filled.shape[0] >= 2:
        filled, _ = _on_exact_grid(filled)
    return filled, defined.astype(np.float64)


def _domain_mean(values: np.ndarray, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
    part = values[rows]
    counts = (~np.isnan(part)).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, np.nansum(part, axis=0) / np.maximum(counts, 1), np.nan)


def _replicates(sides: list[np.ndarray], signs: list[float], n_samples: int, seed: int,
                members: np.ndarray | None = None) -> np.ndarray:
    """Bootstrap replicates of sum_s sign_s * (domain mean of side s); NaN where a domain drew no query."""
    n_queries, n_columns = sides[0].shape
    prepared = [_gridded(side) for side in sides]
    out = np.zeros((n_samples, n_columns))
    for start, weights in _weight_blocks(n_queries, n_samples, seed):
        if members is not None:
            weights = weights * members
        block = slice(start, start + len(weights))
        for (values, defined), sign in zip(prepared, signs):
            totals = weights @ defined
            with np.errstate(invalid="ignore", divide="ignore"):
                out[block] += sign * np.where(totals > 0, (weights @ values) / totals, np.nan)
    return out


def _percentile(replicates: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    low = np.full(replicates.shape[1], np.nan)
    high = np.full(replicates.shape[1], np.nan)
    for j in range(replicates.shape[1]):
        column = replicates[:, j]
        column = column[np.isfinite(column)]
        if len(column):
            lo, hi = _interval(column[:, None], np.zeros(1), np.zeros(1), confidence, "percentile")
            low[j], high[j] = lo[0], hi[0]
    return low, high


def mean_intervals(values: ArrayLike, *, n_samples: int = DEFAULT_N_SAMPLES, seed: int = DEFAULT_SEED,
                   confidence: float = DEFAULT_CONFIDENCE, method: str = "percentile") -> Intervals:
    """Each column's mean (over its domain) with its bootstrap CI; complete columns exactly as ``bootstrap_ci``."""
    values = np.asarray(values, dtype=np.float64)
    partial = np.isnan(values).any(axis=0)
    mean, low, high = _domain_mean(values), np.full(values.shape[1], np.nan), np.full(values.shape[1], np.nan)
    if (~partial).any():
        complete = bootstrap_ci(values[:, ~partial], n_samples=n_samples, seed=seed, confidence=confidence,
                                method=method)
        mean[~partial], low[~partial], high[~partial] = complete.mean, complete.low, complete.high
    if partial.any():
        replicates = _replicates([values[:, partial]], [1.0], n_samples, seed)
        low[partial], high[partial] = _percentile(replicates, confidence)
    return Intervals(mean, low, high, confidence, method, n_samples, seed)


def family_intervals(family: PairedFamily, *, n_samples: int = DEFAULT_N_SAMPLES, seed: int = DEFAULT_SEED,
                     confidence: float = DEFAULT_CONFIDENCE, method: str = "percentile") -> Intervals:
    """The delta of every comparison with its paired bootstrap CI."""
    partial = family.partial
    n = len(family.comparisons)
    mean, low, high = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    if (~partial).any():
        complete = bootstrap_ci(family.deltas[:, ~partial], n_samples=n_samples, seed=seed, confidence=confidence,
                                method=method)
        mean[~partial], low[~partial], high[~partial] = complete.mean, complete.low, complete.high
    if partial.any():
        mean[partial] = _domain_mean(family.challenger[:, partial]) - _domain_mean(family.base[:, partial])
        replicates = _replicates([family.challenger[:, partial], family.base[:, partial]], [1.0, -1.0],
                                 n_samples, seed)
        low[partial], high[partial] = _percentile(replicates, confidence)
    return Intervals(mean, low, high, confidence, method, n_samples, seed)


def swap_pvalues(base: np.ndarray, challenger: np.ndarray, *, n_permutations: int = DEFAULT_N_SAMPLES,
                 seed: int = DEFAULT_SEED) -> np.ndarray:
    """Two-sided paired randomisation test by swapping the systems' values per query; NaN when untestable."""
    n_queries, n_columns = base.shape
    (b, bd), (c, cd) = _gridded(base), _gridded(challenger)
    observed = _domain_mean(challenger) - _domain_mean(base)
    rng = np.random.default_rng(seed)
    rows_per_block = max(1, _BLOCK_CELLS // n_queries)
    extreme = np.zeros(n_columns, dtype=np.int64)
    tolerance = 1e-12 * (1.0 + np.abs(observed))
    for start in range(0, n_permutations, rows_per_block):
        rows = min(rows_per_block, n_permutations - start)
        bits = np.unpackbits(np.frombuffer(rng.bytes(-(-rows * n_queries // 8)), dtype=np.uint8))
        swap = bits[: rows * n_queries].reshape(rows, n_queries).astype(np.float64)
        keep = 1.0 - swap
        with np.errstate(invalid="ignore", divide="ignore"):
            new_c = (keep @ c + swap @ b) / (keep @ cd + swap @ bd)
            new_b = (keep @ b + swap @ c) / (keep @ bd + swap @ cd)
        extreme += np.count_nonzero(np.abs(new_c - new_b) >= np.abs(observed) - tolerance, axis=0)
    p = (1.0 + extreme) / (1.0 + n_permutations)
    return np.where(np.isfinite(observed), p, np.nan)


def family_significance(family: PairedFamily, *, n_permutations: int = DEFAULT_N_SAMPLES, seed: int = DEFAULT_SEED,
                        correction: str = "holm") -> Significance:
    """Raw p-values (sign flips for complete columns, swaps for partial ones; t-test on the shared domain's deltas)
    adjusted together over the family; a comparison that cannot be tested (an empty domain) gets NaN."""
    partial = family.partial
    n = len(family.comparisons)
    p_rand, p_t = np.full(n, np.nan), np.full(n, np.nan)
    if (~partial).any():
        deltas = family.deltas[:, ~partial]
        p_rand[~partial] = randomisation_pvalues(deltas, n_permutations=n_permutations, seed=seed)
        p_t[~partial] = ttest_pvalues(deltas)
    for j in np.flatnonzero(partial):
        p_rand[j] = swap_pvalues(family.base[:, [j]], family.challenger[:, [j]], n_permutations=n_permutations,
                                 seed=seed)[0]
        shared = family.deltas[:, j][~np.isnan(family.deltas[:, j])]
        p_t[j] = ttest_pvalues(shared)[0] if len(shared) >= 2 else np.nan
    return Significance(p_rand, adjust_testable(p_rand, correction), p_t, adjust_testable(p_t, correction), correction,
                        n_permutations, seed)


def adjust_testable(p: np.ndarray, correction: str) -> np.ndarray:
    """``adjust_pvalues`` over the testable (finite) p-values; an untestable comparison keeps NaN."""
    adjusted = np.full(len(p), np.nan)
    testable = np.isfinite(p)
    if testable.any():
        adjusted[testable] = adjust_pvalues(p[testable], correction)
    return adjusted


def family_summaries(family: PairedFamily, *, tie_tol: float, worst_n: int) -> tuple[DeltaSummary, ...]:
    """``summarise_deltas`` of each comparison over the queries where both sides are defined (row indices of the
    worst regressions refer to all queries)."""
    summaries = []
    for j in range(len(family.comparisons)):
        column = family.deltas[:, j]
        rows = np.flatnonzero(~np.isnan(column))
        if len(rows) < 2:
            summaries.append(DeltaSummary(np.nan, np.nan, np.nan, 0, len(rows), 0, {}, ()))
            continue
        summary = summarise_deltas(column[rows], tie_tol=tie_tol, worst_n=worst_n)[0]
        summaries.append(DeltaSummary(summary.mean, summary.median, summary.cohens_dz, summary.improved,
                                      summary.tied, summary.regressed, summary.percentiles,
                                      tuple(int(rows[i]) for i in summary.worst_regressions)))
    return tuple(summaries)


def family_slices(family: PairedFamily, labels: ArrayLike, *, n_samples: int = DEFAULT_N_SAMPLES,
                  seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE, method: str = "percentile",
                  min_slice_size: int = DEFAULT_MIN_SLICE_SIZE) -> SliceIntervals:
    """``slice_ci`` for complete comparisons; for partial ones each slice's delta over slice and domain, with the
    global resamples restricted to the slice. ``sizes[k, j]`` count the slice's queries on
    which both sides of comparison ``j`` are defined."""
    partial = family.partial
    n_queries, n = family.base.shape
    if not partial.any():
        return slice_ci(family.deltas, labels, n_samples=n_samples, seed=seed, confidence=confidence, method=method,
                        min_slice_size=min_slice_size)
    values, codes = _slice_codes(np.asarray(labels), n_queries)
    k = len(values)
    mean, low, high = np.full((k, n), np.nan), np.full((k, n), np.nan), np.full((k, n), np.nan)
    used = np.zeros(k, dtype=np.int64)
    if (~partial).any():
        complete = slice_ci(family.deltas[:, ~partial], labels, n_samples=n_samples, seed=seed,
                            confidence=confidence, method=method, min_slice_size=min_slice_size)
        mean[:, ~partial], low[:, ~partial], high[:, ~partial] = complete.mean, complete.low, complete.high
        used = complete.n_resamples_used
    for s in range(k):
        members = (codes == s).astype(np.float64)
        rows = codes == s
        mean[s, partial] = (_domain_mean(family.challenger[:, partial], rows)
                            - _domain_mean(family.base[:, partial], rows))
        replicates = _replicates([family.challenger[:, partial], family.base[:, partial]], [1.0, -1.0], n_samples,
                                 seed, members=members)
        low[s, partial], high[s, partial] = _percentile(replicates, confidence)
        if not (~partial).any():
            used[s] = int(np.isfinite(replicates).all(axis=1).sum())
    defined = ~np.isnan(family.deltas)
    sizes = np.stack([defined[codes == code].sum(axis=0) for code in range(k)])
    return SliceIntervals(values, sizes, sizes < min_slice_size, used, mean, low, high, confidence, method,
                          min_slice_size)
