"""The seed-aware interval of Δ (stats.seeds): it covers the population Δ over queries and seeds at its nominal rate
when a retrained model varies, where an interval over queries alone does not."""

import numpy as np
import pytest
from scipy import special

from rerankeval.stats.seeds import seed_ci, seed_summary

TRIALS = 4000
TRUE_DELTA = 0.02


def simulated(n_queries: int, n_seeds: int, query_sd: float, seed_sd: float, noise_sd: float) -> np.ndarray:
    """TRIALS data sets at once, (queries x seeds x trials): Δ + query effect + seed effect + seed x query noise."""
    rng = np.random.default_rng([n_queries, n_seeds, int(seed_sd * 1000)])
    return (TRUE_DELTA + query_sd * rng.standard_normal((n_queries, 1, TRIALS))
            + seed_sd * rng.standard_normal((1, n_seeds, TRIALS))
            + noise_sd * rng.standard_normal((n_queries, n_seeds, TRIALS)))


def covered(low: np.ndarray, high: np.ndarray) -> float:
    return float(np.mean((low <= TRUE_DELTA) & (TRUE_DELTA <= high)))


def queries_only_interval(deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The paired t interval over the per-query seed means: blind to a seed effect shared by every query."""
    means = deltas.mean(axis=1)
    half = special.stdtrit(len(means) - 1, 0.975) * means.std(axis=0, ddof=1) / np.sqrt(len(means))
    return means.mean(axis=0) - half, means.mean(axis=0) + half


@pytest.mark.parametrize("n_queries, n_seeds, seed_sd", [(50, 3, 0.0), (94, 3, 0.03), (50, 3, 0.03), (30, 5, 0.03)])
def test_the_seed_aware_interval_covers_the_population_delta_at_its_nominal_rate(n_queries, n_seeds, seed_sd):
    deltas = simulated(n_queries, n_seeds, query_sd=0.15, seed_sd=seed_sd, noise_sd=0.08)
    interval = seed_ci(deltas)
    assert 0.93 <= covered(interval.low, interval.high) <= 0.97
    np.testing.assert_allclose(interval.mean, deltas.mean(axis=1).mean(axis=0))  # the mean of per-query seed means


def test_an_interval_over_queries_alone_misses_a_seed_effect_the_seed_aware_one_counts():
    deltas = simulated(94, 3, query_sd=0.15, seed_sd=0.03, noise_sd=0.08)
    interval = seed_ci(deltas)
    naive_low, naive_high = queries_only_interval(deltas)
    assert covered(naive_low, naive_high) < 0.90 <= 0.93 <= covered(interval.low, interval.high)
    assert np.median(interval.seed_variance) > 0 and np.median(interval.df) < 93  # fewer df than queries alone


def test_seeds_that_agree_give_the_paired_t_interval_and_bad_input_is_refused():
    rng = np.random.default_rng(3)
    per_query = rng.standard_normal(40) * 0.1
    same = seed_ci(np.repeat(per_query[:, None], 3, axis=1))
    low, high = queries_only_interval(np.repeat(per_query[:, None, None], 3, axis=1))
    assert same.df[0] == pytest.approx(39)
    assert same.seed_variance[0] == pytest.approx(0) and same.residual_variance[0] == pytest.approx(0)
    np.testing.assert_allclose([same.low[0], same.high[0]], [low[0], high[0]])
    with pytest.raises(ValueError, match="at least 2 queries and 2 seeds.*one seed: use the paired bootstrap"):
        seed_ci(per_query[:, None])
    with pytest.raises(ValueError, match="NaN"):
        seed_ci(np.full((3, 2), np.nan))


def test_seed_summary_gives_each_seeds_mean_delta_and_the_spread():
    values = np.array([[0.5, 0.6, 0.4], [0.7, 0.8, 0.6]])
    summary = seed_summary((17, 18, 19), values, baseline=np.array([0.5, 0.5]))
    np.testing.assert_allclose(summary.means, [0.6, 0.7, 0.5])
    np.testing.assert_allclose(summary.deltas, [0.1, 0.2, 0.0])
    assert summary.spread == pytest.approx(0.2) and summary.seed_sd == pytest.approx(0.1)
    seeded_baseline = seed_summary((17, 18, 19), values, baseline=values - 0.05)
    np.testing.assert_allclose(seeded_baseline.deltas, [0.05, 0.05, 0.05])  # seed s against seed s
