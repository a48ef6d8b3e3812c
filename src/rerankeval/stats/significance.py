"""Significance of paired deltas: a sign-flip randomisation test, a paired t-test, and family-wise corrections."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as scipy_stats

from .defaults import DEFAULT_N_SAMPLES, DEFAULT_SEED
from .resampling import _BLOCK_CELLS, Correction, _as_deltas, _check_positive, _on_exact_grid


@dataclass(frozen=True, eq=False)
class Significance:
    """Raw and family-adjusted two-sided p-values, one entry per comparison."""

    p_randomisation: np.ndarray
    p_randomisation_adjusted: np.ndarray
    p_ttest: np.ndarray
    p_ttest_adjusted: np.ndarray
    correction: Correction
    n_permutations: int
    seed: int



def randomisation_pvalues(
    deltas: ArrayLike, *, n_permutations: int = DEFAULT_N_SAMPLES, seed: int = DEFAULT_SEED
) -> np.ndarray:
    """Two-sided paired randomisation (sign-flip) test of mean delta = 0, per comparison.

    Under H0 each query's delta is symmetric about 0, so its sign is exchangeable. With
    ``n_permutations`` random sign vectors s (shared by all comparisons, one matrix product),
    ``p = (1 + #{|mean(s·d)| >= |mean(d)| − ε}) / (1 + n_permutations)``. Sums are exact on the
    ``_on_exact_grid`` deltas and ε = grid ≈ 4·n·1.1e-16·max|d| (each delta moves at most grid/2
    onto the grid), so sign patterns tying exactly with the observed deltas always count, and
    others only if within ε. Never 0; all-zero deltas give p = 1.
    """
    matrix, grid = _on_exact_grid(_as_deltas(deltas))
    _check_positive("n_permutations", n_permutations)
    n_queries, n_comparisons = matrix.shape
    column_sums = matrix.sum(axis=0)
    threshold = np.abs(column_sums) - n_queries * grid
    rng = np.random.default_rng(seed)
    rows_per_block = max(1, _BLOCK_CELLS // n_queries)
    extreme = np.zeros(n_comparisons, dtype=np.int64)
    for start in range(0, n_permutations, rows_per_block):
        rows = min(rows_per_block, n_permutations - start)
        # Random bytes unpacked to bits are faster than rng.integers(0, 2) (bench_stats.py); the flipped sum
        # is Σ(2b−1)d = 2·(b @ d) − Σd, which avoids materialising the ±1 matrix.
        bits = np.unpackbits(np.frombuffer(rng.bytes(-(-rows * n_queries // 8)), dtype=np.uint8))
        plus = bits[: rows * n_queries].reshape(rows, n_queries).astype(np.float64)
        flipped_sums = 2.0 * (plus @ matrix) - column_sums
        extreme += np.count_nonzero(np.abs(flipped_sums) >= threshold, axis=0)
    return (1.0 + extreme) / (1.0 + n_permutations)


def ttest_pvalues(deltas: ArrayLike) -> np.ndarray:
    """Two-sided paired t-test p-values (equal to ``scipy.stats.ttest_rel``), per comparison.

    t = mean(d) / (sd(d) / √n) with sd using n − 1, referred to Student's t with n − 1 df.
    Zero variance: all deltas 0 (identical systems) gives p = 1; a constant non-zero shift has
    |t| = ∞ and p = 0 (scipy would return NaN and ±∞ respectively).
    """
    matrix = _as_deltas(deltas)
    n_queries = matrix.shape[0]
    mean = matrix.mean(axis=0)
    sd = matrix.std(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, mean / (sd / np.sqrt(n_queries)), np.where(mean == 0, 0.0, np.inf))
    return np.minimum(1.0, 2.0 * scipy_stats.t.sf(np.abs(t), df=n_queries - 1))


def adjust_pvalues(pvalues: ArrayLike, method: Correction = "holm") -> np.ndarray:
    """Multiplicity-adjusted p-values across a family, in the input order.

    With p_(1) <= … <= p_(m):
    ``holm`` (controls the family-wise error rate under any dependence):
    adj_(i) = max_{k<=i} min(1, (m − k + 1) p_(k)).
    ``bh`` (Benjamini–Hochberg, controls the false discovery rate for independent or positively
    dependent tests): adj_(i) = min_{k>=i} min(1, m p_(k) / k).
    Rejecting adjusted p <= α is the corresponding procedure at level α.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"p-values must be 1-D, got shape {p.shape}")
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must be finite and within [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if method == "holm":
        adjusted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * ranked))
    elif method == "bh":
        scaled = np.minimum(1.0, ranked * (m / np.arange(1, m + 1)))
        adjusted = np.minimum.accumulate(scaled[::-1])[::-1]
    else:
        raise ValueError(f"unknown correction {method!r}; use 'holm' or 'bh'")
    result = np.empty(m)
    result[order] = adjusted
    return result


def significance(
    deltas: ArrayLike,
    *,
    n_permutations: int = DEFAULT_N_SAMPLES,
    seed: int = DEFAULT_SEED,
    correction: Correction = "holm",
) -> Significance:
    """Randomisation and t-test p-values of every comparison, raw and adjusted over the family.

    The family is every column of ``deltas``; each test's p-values are adjusted separately with
    ``adjust_pvalues(…, correction)``.
    """
    p_randomisation = randomisation_pvalues(deltas, n_permutations=n_permutations, seed=seed)
    p_ttest = ttest_pvalues(deltas)
    return Significance(
        p_randomisation=p_randomisation,
        p_randomisation_adjusted=adjust_pvalues(p_randomisation, correction),
        p_ttest=p_ttest,
        p_ttest_adjusted=adjust_pvalues(p_ttest, correction),
        correction=correction,
        n_permutations=n_permutations,
        seed=seed,
    )
