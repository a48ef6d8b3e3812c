"""The saving of a non-inferiority claim, as a paired estimate with a bootstrap CI over queries: on cost (cold
seconds) or on p95 latency.

The saving is ``1 - sum(challenger) / sum(reference)`` over the timed queries both systems answered, paired by query
id: the share of the reference's total cold seconds the challenger does not spend. Its CI resamples queries, the
same resample for both systems (``resampling.bootstrap_means`` on the two columns), and each replicate is the saving
of the resampled queries (a ratio of sums). Pairing matters: how long a query takes depends mostly on the query
(its candidates, their length), and that variation, shared by both systems, cancels in the ratio of each resample
instead of widening the interval. Percentile interval at ``confidence``, like every other CI of the comparison.

The p95 saving is ``1 - p95(challenger) / p95(reference)`` over the queries both timed in the round each verdict
p95 comes from (``serving.measure``), and each replicate is that of the same resampled queries (the p95 as the
measurement computes it: numpy's linear interpolation). With a few dozen timed queries a p95 rests on its two or
three slowest, so its interval is wide: that is what the claim can establish, not a defect of the interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .resampling import bootstrap_means


@dataclass(frozen=True)
class SavingInterval:
    """The saving (a share: 0.2 = 20%) with its two-sided ``confidence`` CI over ``queries`` paired queries, and
    each system's figure over them (``cost_saving``: the mean cold seconds per query; ``p95_saving``: the p95 in
    ms)."""

    estimate: float
    low: float
    high: float
    confidence: float
    queries: int
    challenger_mean: float
    reference_mean: float


def cost_saving(challenger: pd.Series, reference: pd.Series, *, n_samples: int, seed: int,
                confidence: float) -> SavingInterval | None:
    """The saving of ``challenger`` over ``reference`` (per-query cold seconds, indexed by query id) on the queries
    both timed; None when fewer than 2 are paired (no interval to draw)."""
    paired = pd.concat([challenger.rename("challenger"), reference.rename("reference")], axis=1, join="inner")
    paired = paired.sort_index()
    seconds = paired.to_numpy(dtype=np.float64)
    if len(seconds) < 2:
        return None
    if not np.all(np.isfinite(seconds)) or np.any(seconds < 0):
        raise ValueError("cold seconds per query must be finite and >= 0; check the systems' latency tables")
    if seconds[:, 1].sum() <= 0:
        raise ValueError("the reference's cold seconds sum to 0 on the paired queries: no cost to save")
    replicates = bootstrap_means(seconds, n_samples=n_samples, seed=seed)
    # A resample of only zero-cost reference queries has no saving defined: it is dropped (rare by design).
    drawn = replicates[replicates[:, 1] > 0]
    savings = 1.0 - drawn[:, 0] / drawn[:, 1]
    tail = (1.0 - confidence) / 2.0
    challenger_mean, reference_mean = seconds.mean(axis=0)
    return SavingInterval(estimate=float(1.0 - seconds[:, 0].sum() / seconds[:, 1].sum()),
                          low=float(np.quantile(savings, tail)), high=float(np.quantile(savings, 1.0 - tail)),
                          confidence=confidence, queries=len(seconds), challenger_mean=float(challenger_mean),
                          reference_mean=float(reference_mean))


def p95_saving(challenger: pd.Series, reference: pd.Series, *, n_samples: int, seed: int,
               confidence: float) -> SavingInterval | None:
    """The p95 latency saving of ``challenger`` over ``reference`` (per-query wall ms, indexed by query id) on the
    queries both timed, with its paired bootstrap CI; None when fewer than 2 are paired."""
    paired = pd.concat([challenger.rename("challenger"), reference.rename("reference")], axis=1, join="inner")
    times = paired.sort_index().to_numpy(dtype=np.float64)
    if len(times) < 2:
        return None
    if not np.all(np.isfinite(times)) or np.any(times < 0):
        raise ValueError("per-query latencies must be finite and >= 0; check the latency measurements")
    rows = np.random.default_rng(seed).integers(0, len(times), size=(n_samples, len(times)))
    challenger_p95 = np.percentile(times[rows, 0], 95, axis=1)
    reference_p95 = np.percentile(times[rows, 1], 95, axis=1)
    defined = reference_p95 > 0
    savings = 1.0 - challenger_p95[defined] / reference_p95[defined]
    observed = np.percentile(times, 95, axis=0)
    if observed[1] <= 0 or not len(savings):
        raise ValueError("the reference's p95 is 0 ms on the paired queries: no latency to save")
    tail = (1.0 - confidence) / 2.0
    return SavingInterval(estimate=float(1.0 - observed[0] / observed[1]), low=float(np.quantile(savings, tail)),
                          high=float(np.quantile(savings, 1.0 - tail)), confidence=confidence, queries=len(times),
                          challenger_mean=float(observed[0]), reference_mean=float(observed[1]))
