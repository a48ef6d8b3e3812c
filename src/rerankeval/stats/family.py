"""Simultaneous inference over a family of comparisons: intervals and adjusted p-values from one procedure.

The release decision reads each challenger's interval of the primary metric; the multiplicity family is every release
challenger against one baseline (``compare.inference: family``). Reading unadjusted intervals beside Holm-adjusted
p-values let a page call a challenger "significantly worse" next to an adjusted p of 0.25: two procedures, two
answers. Here both come from one: the single-step bootstrap max-|t| (Westfall and Young 1993, with the bootstrap of
the comparison's own resamples, ``domains._replicates``).

For a family of comparisons j with observed deltas d_j and bootstrap replicates d*_bj (the same query resamples for
every member), each studentized by its own standard error (the bootstrap-t: se_j of the sample, se*_bj of the
replicate, both the linearised standard error of a difference of two domain means, which for a measure defined on
every query is sd(d) / sqrt(n)), T*_b = max_j |d*_bj - d_j| / se*_bj. With the B valid replicates sorted,
s_1 <= ... <= s_B, and m = floor(alpha (1 + B) - 1), the critical value is c = s_(B - m):

- the simultaneous interval of j is d_j -+ c se_j (all of them hold together with probability about 1 - alpha);
- the adjusted p of j is (1 + #{b: T*_b >= |d_j| / se_j}) / (1 + B).

0 lies outside j's interval exactly when |d_j| / se_j > c, which is exactly when its adjusted p <= alpha (#{T* >= t}
<= m iff t > s_(B - m)), so a verdict that reads the interval and a page that prints the p never disagree. A family of
one is the per-comparison studentized bootstrap, which ``compare.inference: per_comparison`` uses for every member.
A member with no spread (identical runs: se 0) has the interval [d, d] and p 1 when d is 0, else 1 / (1 + B).
Pure numpy.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from .domains import PairedFamily, _domain_mean, _gridded
from .resampling import _weight_blocks
from .resampling import Intervals

PROCEDURE = "single-step bootstrap max-|t| (simultaneous intervals and adjusted p from the same resamples)"
PER_COMPARISON_PROCEDURE = ("per-comparison studentized bootstrap (each pair's interval and p from its own resamples, "
                            "no multiplicity control)")
"""``compare.inference: per_comparison``: the procedure above on a family of one, each pair alone."""


def procedure(inference: str) -> str:
    """The procedure behind the release decision's intervals and p under ``compare.inference``."""
    return PROCEDURE if inference == "family" else PER_COMPARISON_PROCEDURE


@dataclass(frozen=True, eq=False)
class SimultaneousIntervals:
    """Per member: the simultaneous interval (``intervals``), its adjusted p, and its family's size and critical
    value."""

    intervals: Intervals
    p_adjusted: np.ndarray
    family_size: np.ndarray
    critical: np.ndarray


def critical_index(n_valid: int, confidence: float) -> int:
    """0-based index into the sorted valid max statistics of the critical value s_(B - m) (-1: none, the family
    cannot reject at this level with so few replicates)."""
    alpha = 1.0 - confidence
    m = int(np.floor(alpha * (1 + n_valid) - 1 + 1e-12))
    return n_valid - m - 1 if m >= 0 else -1


def simultaneous_intervals(family: PairedFamily, groups: Sequence[Hashable], *, n_samples: int, seed: int,
                           confidence: float) -> SimultaneousIntervals:
    """The max-|t| procedure within each group of ``family``'s members (``groups[j]``: member j's family)."""
    if len(groups) != len(family.comparisons):
        raise ValueError(f"{len(groups)} group labels for {len(family.comparisons)} comparisons")
    delta = _domain_mean(family.challenger) - _domain_mean(family.base)
    n_queries = family.base.shape[0]
    se = studentized(family, np.ones((1, n_queries)))[1][0]
    replicates, replicate_se = np.empty((n_samples, len(delta))), np.empty((n_samples, len(delta)))
    for start, weights in _weight_blocks(n_queries, n_samples, seed):
        block = slice(start, start + len(weights))
        replicates[block], replicate_se[block] = studentized(family, weights)
    # A resample that drew one value over and over has no spread of its own (tiny domains): it is studentized by the
    # sample's standard error, not divided by 0.
    replicate_se = np.where(replicate_se > 0, replicate_se, se)
    n = len(family.comparisons)
    low, high, p = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    sizes, critical = np.zeros(n, dtype=np.int64), np.full(n, np.nan)
    labels = list(groups)
    for group in dict.fromkeys(labels):
        members = np.array([j for j, label in enumerate(labels) if label == group])
        sizes[members] = len(members)
        spread = members[np.isfinite(se[members]) & (se[members] > 0)]
        flat = members[~np.isin(members, spread)]
        # A member without spread: its delta is the same in every replicate, so it is its own interval.
        low[flat], high[flat] = delta[flat], delta[flat]
        p[flat] = np.where(delta[flat] == 0, 1.0, 1.0 / (1 + n_samples))
        if not len(spread):
            continue
        with np.errstate(invalid="ignore"):
            statistics = np.abs(replicates[:, spread] - delta[spread]) / replicate_se[:, spread]
        statistics[np.isnan(statistics) & np.isfinite(replicates[:, spread])] = 0.0  # a replicate without spread
        valid = np.isfinite(statistics).all(axis=1)
        maxima = np.sort(statistics[valid].max(axis=1))
        index = critical_index(len(maxima), confidence)
        c = maxima[index] if index >= 0 else np.inf
        critical[spread] = c
        low[spread], high[spread] = delta[spread] - c * se[spread], delta[spread] + c * se[spread]
        observed = np.abs(delta[spread]) / se[spread]
        exceed = len(maxima) - np.searchsorted(maxima, observed, side="left")
        p[spread] = (1.0 + exceed) / (1.0 + len(maxima))
    return SimultaneousIntervals(Intervals(delta, low, high, confidence, "max-t", n_samples, seed), p, sizes,
                                 critical)


def studentized(family: PairedFamily, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per resample (a row of query ``weights``, each row summing to the number of queries) and member: the delta
    of the two domain means and its linearised standard error. A side's mean over its domain is R = sum w m v /
    sum w m (m: defined); query i's influence on it is m_i (v_i - R) / (sum w m / n), the delta's the challenger's
    minus the baseline's, and the variance of the delta is sum w z^2 / (n (n - 1)). Each term is a product of the
    weights with a per-query column, so a block of resamples costs a few matrix products."""
    n = family.base.shape[0]
    (c, cm), (b, bm) = _gridded(family.challenger), _gridded(family.base)
    with np.errstate(invalid="ignore", divide="ignore"):
        dc, db = weights @ cm, weights @ bm
        rc, rb = (weights @ c) / dc, (weights @ b) / db
        # sum w z^2 with z = m_c (c - R_c) / D_c - m_b (b - R_b) / D_b, D = sum w m / n, expanded into products.
        own_c = weights @ (cm * c * c) - 2 * rc * (weights @ (cm * c)) + rc * rc * dc
        own_b = weights @ (bm * b * b) - 2 * rb * (weights @ (bm * b)) + rb * rb * db
        both = cm * bm
        cross = (weights @ (both * c * b) - rb * (weights @ (both * c)) - rc * (weights @ (both * b))
                 + rc * rb * (weights @ both))
        scale_c, scale_b = n / dc, n / db
        total = own_c * scale_c ** 2 + own_b * scale_b ** 2 - 2 * cross * scale_c * scale_b
        se = np.sqrt(np.maximum(total, 0.0) / (n * (n - 1)))
    return rc - rb, se
