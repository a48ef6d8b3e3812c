"""The comparison's primary-metric pairs that involve a system trained with several seeds: their seed-aware CI.

The evaluate stage writes each seed's per-query measures (``eval.seeds``); a pair's deltas are the (queries x seeds)
matrix challenger − baseline, an unseeded side giving the same value under every seed and two seeded sides paired
seed s with seed s. Its interval is ``stats.seeds.seed_ci`` (crossed random effects of query and seed, Satterthwaite
t), which replaces the bootstrap's for the pair's primary metric, in compare.json and in the verdict alike; the
bootstrap interval over queries alone is kept beside it for contrast.

Each record also carries the interval's coverage simulated at the pair's own design: its numbers of queries and seeds
and its estimated variance components (``simulated_coverage``), beside that of a t interval over queries alone; the
method's coverage across designs is checked in tests/test_seed_ci.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from .deltas import Comparison
from .resampling import Intervals
from .seeds import SeedIntervals, seed_ci, seed_summary

COVERAGE_TRIALS, COVERAGE_CHUNK = 2000, 100


@dataclass(frozen=True, eq=False)
class SeedValues:
    """One seeded system's measure under each training seed, on the comparison's queries (queries x seeds)."""

    seeds: tuple[int, ...]
    values: np.ndarray


def seed_values(per_query_seeds: pd.DataFrame, metric: str, query_ids: Sequence[str]) -> dict[str, SeedValues]:
    """Each seeded system's ``metric`` from the evaluate stage's per_query_seeds table, rows in ``query_ids``'
    order (the comparison's); a system without seeds is absent."""
    found = {}
    for system, frame in per_query_seeds.groupby("system", sort=True):
        table = frame.pivot(index="query_id", columns="seed", values=metric).reindex(list(query_ids))
        found[str(system)] = SeedValues(tuple(int(seed) for seed in table.columns), table.to_numpy(np.float64))
    return found


@dataclass(frozen=True, eq=False)
class SeedComparison:
    """One (challenger, baseline) pair on the primary metric under every seed."""

    challenger: str
    baseline: str
    seeds: tuple[int, ...]
    challenger_means: np.ndarray
    deltas: np.ndarray
    """The mean Δ under each seed."""
    interval: SeedIntervals
    queries: int


def seed_comparison(challenger: str, baseline: str, seeded: Mapping[str, SeedValues],
                    scores: Mapping[str, np.ndarray], confidence: float) -> SeedComparison | None:
    """The pair's seed-aware comparison (``scores``: each unseeded system's per-query values), or None when neither
    side is seeded. Queries where the measure is undefined (NaN) on either side are left out."""
    sides = [seeded[system].seeds for system in (challenger, baseline) if system in seeded]
    if not sides:
        return None
    if len(set(sides)) > 1:
        raise ValueError(f"{challenger!r} and {baseline!r} were trained with different seeds {sides}: seed s of one "
                         "is paired with seed s of the other")
    seeds = sides[0]

    def matrix(system: str) -> np.ndarray:
        if system in seeded:
            return seeded[system].values
        return np.repeat(np.asarray(scores[system], np.float64)[:, None], len(seeds), axis=1)

    values, reference = matrix(challenger), matrix(baseline)
    defined = ~np.isnan(values - reference).any(axis=1)
    summary = seed_summary(seeds, values[defined], reference[defined])
    return SeedComparison(challenger, baseline, seeds, summary.means, summary.deltas,
                          seed_ci(values[defined] - reference[defined], confidence=confidence), int(defined.sum()))


def with_seed_intervals(intervals: Intervals, found: Mapping[int, SeedComparison]) -> Intervals:
    """``intervals`` with the columns of ``found`` (family index -> its seed comparison) replaced by the seed-aware
    mean and interval."""
    if not found:
        return intervals
    mean, low, high = intervals.mean.copy(), intervals.low.copy(), intervals.high.copy()
    for j, comparison in found.items():
        mean[j], low[j], high[j] = (float(comparison.interval.mean[0]), float(comparison.interval.low[0]),
                                    float(comparison.interval.high[0]))
    return replace(intervals, mean=mean, low=low, high=high)


def simulated_coverage(interval: SeedIntervals, *, seed: int, trials: int = COVERAGE_TRIALS) -> dict[str, Any]:
    """How often the seed-aware interval, and a paired t interval over the per-query seed means, cover the true Δ in
    ``trials`` data sets drawn from the crossed model with ``interval``'s design and variance components."""
    n_q, n_s, confidence = interval.n_queries, interval.n_seeds, interval.confidence
    sds = np.sqrt([interval.query_variance[0], interval.seed_variance[0], interval.residual_variance[0]])
    rng = np.random.default_rng(seed)
    hits = np.zeros(2)
    for start in range(0, trials, COVERAGE_CHUNK):  # chunks: queries x seeds x trials stays small in memory
        k = min(COVERAGE_CHUNK, trials - start)
        cube = (sds[0] * rng.standard_normal((n_q, 1, k)) + sds[1] * rng.standard_normal((1, n_s, k))
                + sds[2] * rng.standard_normal((n_q, n_s, k)))  # true Δ = 0
        found = seed_ci(cube, confidence=confidence)
        means = cube.mean(axis=1)
        half = special.stdtrit(n_q - 1, 0.5 + confidence / 2.0) * means.std(axis=0, ddof=1) / np.sqrt(n_q)
        hits += [((found.low <= 0) & (found.high >= 0)).sum(), (np.abs(means.mean(axis=0)) <= half).sum()]
    return {"trials": trials, "seed": seed, "seed_aware": round(float(hits[0] / trials), 4),
            "queries_only_t": round(float(hits[1] / trials), 4)}


def seeds_record(found: Mapping[int, SeedComparison], queries_only: Intervals, metric: str,
                 confidence: float, seed: int) -> dict[str, Any]:
    """compare.json's ``seeds``: per challenger of a pair involving a seeded system, its seeds and mean under each,
    and per baseline each seed's Δ, their spread, the seed-aware CI with its variance components and the bootstrap
    CI over queries alone."""
    def rounded(values) -> list[float]:
        return [round(float(value), 6) for value in np.atleast_1d(values)]

    systems: dict[str, dict[str, Any]] = {}
    for j, comparison in found.items():
        interval = comparison.interval
        means = comparison.challenger_means
        entry = systems.setdefault(comparison.challenger, {
            "seeds": list(comparison.seeds), "means": rounded(means),
            "sd": round(float(means.std(ddof=1)), 6), "range": round(float(means.max() - means.min()), 6),
            "against": {}})
        entry["against"][comparison.baseline] = {
            "queries": comparison.queries, "deltas": rounded(comparison.deltas),
            "deltas_sd": round(float(comparison.deltas.std(ddof=1)), 6),
            "deltas_range": round(float(comparison.deltas.max() - comparison.deltas.min()), 6),
            "delta": round(float(interval.mean[0]), 6),
            "ci": rounded([interval.low[0], interval.high[0]]),
            "queries_only_ci": rounded([queries_only.low[j], queries_only.high[j]]),
            "df": round(float(interval.df[0]), 3), "standard_error": round(float(interval.standard_error[0]), 6),
            "variance": {"queries": round(float(interval.query_variance[0]), 8),
                         "seeds": round(float(interval.seed_variance[0]), 8),
                         "residual": round(float(interval.residual_variance[0]), 8)},
            "coverage": simulated_coverage(interval, seed=seed)}
    return {"metric": metric, "confidence": confidence, "method": SeedIntervals.method,
            "queries_only_method": f"{queries_only.method} bootstrap over queries of the per-query seed means",
            "systems": systems}


def seed_family(per_query_seeds: pd.DataFrame | None, family: Sequence[Comparison],
                scores: Mapping[str, Mapping[str, np.ndarray]], query_ids: Sequence[str], metric: str,
                confidence: float) -> dict[int, SeedComparison]:
    """Family index -> seed comparison, for each ``metric`` pair of ``family`` that involves a seeded system; {}
    when none is seeded (the comparison is the bootstrap's alone, as before)."""
    if per_query_seeds is None or per_query_seeds.empty:
        return {}
    seeded = seed_values(per_query_seeds, metric, query_ids)
    on_metric = {system: values[metric] for system, values in scores.items()}
    found = {j: seed_comparison(item.challenger, item.baseline, seeded, on_metric, confidence)
             for j, item in enumerate(family) if item.metric == metric}
    return {j: comparison for j, comparison in found.items() if comparison is not None}
