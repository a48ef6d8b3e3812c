"""Deltas of a system trained with several seeds: per-seed summaries and a confidence interval that counts the
between-seed variance.

``deltas`` has shape ``(n_queries, n_seeds)`` or ``(n_queries, n_seeds, n_comparisons)``: challenger − baseline per
query under each training seed (a baseline without seeds is the same for every seed). The quantity estimated is the
population Δ over queries *and* seeds: the mean delta a freshly trained model would show on a fresh query. The
estimate is the mean of the per-query seed means (what the comparison ranks on).

Why not the bootstrap over queries of the seed means: it sees only the query-to-query spread, so a seed that is better
or worse on every query (the demo's retrained model moved by more than every CI, issue 24) would not widen it. The
interval here is a variance-components t interval for the two-way crossed random-effects model
``d_qs = Δ + a_q + b_s + e_qs`` (query effect, seed effect, seed × query noise), whose mean has

    Var(mean) = σ²_q / n_q + σ²_s / n_s + σ²_e / (n_q n_s).

It is estimated by (MS_Q + MS_S) / (n_q n_s), the ANOVA mean squares of queries and seeds: the spread of the
per-query seed means over n_q plus the spread of the per-seed query means over n_s. That is unbiased but for counting
σ²_e / (n_q n_s) twice (slightly conservative), and never negative, where subtracting MS_E can be. The t quantile
takes Satterthwaite's degrees of freedom of the sum: about n_q - 1 when seeds agree, falling towards n_s - 1 as the
seed term dominates, so a real seed effect measured on few seeds makes the interval wide, as it should.
Coverage, by simulation (tests/test_seed_ci.py): nominal with no seed effect or a moderate one; below nominal
(Satterthwaite's df is itself estimated from n_s - 1 degrees of freedom) when the seed term dominates and there are
only two or three seeds. Pure numpy/scipy, closed form: the same numbers on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from .defaults import DEFAULT_CONFIDENCE


@dataclass(frozen=True, eq=False)
class SeedIntervals:
    """Per comparison: the mean of per-query seed means, its interval and the variance components behind it."""

    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    standard_error: np.ndarray
    df: np.ndarray
    """Satterthwaite's degrees of freedom of the t quantile."""
    query_variance: np.ndarray
    seed_variance: np.ndarray
    """σ²_s: how far one seed's mean delta strays from the population's (0 when MS_S <= MS_E)."""
    residual_variance: np.ndarray
    """σ²_e, the seed × query noise; each component is the ANOVA estimate, a negative one set to 0."""
    n_queries: int
    n_seeds: int
    confidence: float
    method: str = "variance-components t: (MS_queries + MS_seeds) / (n_queries n_seeds), Satterthwaite df"


def _as_seed_deltas(deltas: ArrayLike) -> np.ndarray:
    cube = np.asarray(deltas, dtype=np.float64)
    if cube.ndim == 2:
        cube = cube[:, :, None]
    if cube.ndim != 3:
        raise ValueError(f"seed deltas must be (queries x seeds) or (queries x seeds x comparisons), "
                         f"got shape {cube.shape}")
    if cube.shape[0] < 2 or cube.shape[1] < 2:
        raise ValueError(f"a seed-aware interval needs at least 2 queries and 2 seeds, got {cube.shape[0]} queries "
                         f"and {cube.shape[1]} seeds (one seed: use the paired bootstrap, stats.resampling)")
    if not np.isfinite(cube).all():
        raise ValueError(f"seed deltas contain {int((~np.isfinite(cube)).sum())} NaN/inf value(s)")
    return cube


def seed_ci(deltas: ArrayLike, *, confidence: float = DEFAULT_CONFIDENCE) -> SeedIntervals:
    """Two-sided ``confidence`` interval of the population Δ over queries and seeds (see the module docstring)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    cube = _as_seed_deltas(deltas)
    n_q, n_s = cube.shape[:2]
    grand = cube.mean(axis=(0, 1))
    query_means, seed_means = cube.mean(axis=1), cube.mean(axis=0)
    residual = cube - query_means[:, None, :] - seed_means[None, :, :] + grand
    df_q, df_s = n_q - 1, n_s - 1
    ms_q = n_s * ((query_means - grand) ** 2).sum(axis=0) / df_q
    ms_s = n_q * ((seed_means - grand) ** 2).sum(axis=0) / df_s
    ms_e = (residual ** 2).sum(axis=(0, 1)) / (df_q * df_s)
    scaled = ms_q + ms_s
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(scaled > 0, scaled ** 2 / (ms_q ** 2 / df_q + ms_s ** 2 / df_s), float(df_q))
    standard_error = np.sqrt(scaled / (n_q * n_s))
    half = special.stdtrit(df, 0.5 + confidence / 2.0) * standard_error
    return SeedIntervals(mean=grand, low=grand - half, high=grand + half, standard_error=standard_error, df=df,
                         query_variance=np.maximum(ms_q - ms_e, 0.0) / n_s,
                         seed_variance=np.maximum(ms_s - ms_e, 0.0) / n_q, residual_variance=ms_e,
                         n_queries=n_q, n_seeds=n_s, confidence=confidence)


@dataclass(frozen=True, eq=False)
class SeedSummary:
    """One challenger's quality under each training seed, for the report."""

    seeds: tuple[int, ...]
    means: np.ndarray
    """The challenger's mean measure per seed."""
    deltas: np.ndarray
    """Mean Δ vs the baseline per seed."""

    @property
    def spread(self) -> float:
        """Largest minus smallest seed mean."""
        return float(self.means.max() - self.means.min())

    @property
    def seed_sd(self) -> float:
        """Standard deviation of the seed means (ddof 1; 0 for one seed)."""
        return float(self.means.std(ddof=1)) if len(self.means) > 1 else 0.0


def seed_summary(seeds: tuple[int, ...], values: ArrayLike, baseline: ArrayLike) -> SeedSummary:
    """``values`` (queries x seeds) of the challenger, ``baseline`` (queries, or queries x seeds when it is seeded
    too: seed s against seed s)."""
    values = np.asarray(values, dtype=np.float64)
    baseline = np.asarray(baseline, dtype=np.float64)
    if values.ndim != 2 or values.shape[1] != len(seeds):
        raise ValueError(f"values must be queries x {len(seeds)} seeds, got shape {values.shape}")
    paired = baseline[:, None] if baseline.ndim == 1 else baseline
    return SeedSummary(tuple(seeds), values.mean(axis=0), (values - paired).mean(axis=0))
