"""Simulation checks that rerankeval.stats intervals and tests have their nominal error rates.

Each simulated trial is one column of a delta matrix, so one library call evaluates thousands of
trials at once. Columns of one call share bootstrap resamples (or sign flips); trials are split
into chunks with different seeds so that the estimates average over resamples too.

For smooth data the percentile interval covers about 93.5% at n = 30 (it behaves like a z
interval with the n-denominator sd) and is nominal from n = 100.

Known limitation, deliberately not tested against the 93–97% band: for tie-heavy deltas (most
queries unchanged, as between similar rerankers) it under-covers at small n. With 30% of queries
changed: 90.8% at n = 30 and 93.8% at n = 100 (80,000 trials each); nominal by n = 1000.
"""

import numpy as np
import pytest
from scipy import stats as scipy_stats

from rerankeval.stats.resampling import bootstrap_ci
from rerankeval.stats.significance import adjust_pvalues, randomisation_pvalues, ttest_pvalues

CHUNK_TRIALS = 5000  # at most this many trials per library call (bounds memory)


def normal_deltas(rng, n, trials):
    return rng.normal(0.0, 0.15, size=(n, trials)), 0.0


def bounded_deltas(challenger_a):
    """Scores in [0, 1]: baseline ~ Beta(2, 5), challenger = ½ baseline + ½ Beta(a, 5).

    Deltas are ½ (Beta(a, 5) − Beta(2, 5)): bounded, skewed for a != 2, exact mean known.
    """

    def sample(rng, n, trials):
        baseline = rng.beta(2, 5, size=(n, trials))
        challenger = 0.5 * baseline + 0.5 * rng.beta(challenger_a, 5, size=(n, trials))
        return challenger - baseline, 0.5 * (challenger_a / (challenger_a + 5) - 2 / 7)

    return sample


def tie_heavy_deltas(rng, n, trials):
    """70% of queries unchanged (delta exactly 0), the rest Beta(3, 5) − Beta(2, 5)."""
    changed = rng.random((n, trials)) < 0.3
    moved = rng.beta(3, 5, size=(n, trials)) - rng.beta(2, 5, size=(n, trials))
    return np.where(changed, moved, 0.0), 0.3 * (3 / 8 - 2 / 7)


def coverage(sampler, n, trials, method="percentile", n_samples=1000, seed=0):
    """Share of trials whose 95% bootstrap CI contains the true mean delta."""
    rng = np.random.default_rng(seed)
    chunks = max(4, trials // CHUNK_TRIALS)
    covered = 0
    for chunk in range(chunks):
        deltas, true_mean = sampler(rng, n, trials // chunks)
        ci = bootstrap_ci(deltas, n_samples=n_samples, seed=seed * 100 + chunk, method=method)
        covered += np.count_nonzero((ci.low <= true_mean) & (true_mean <= ci.high))
    return covered / trials


# At n = 30 the percentile interval's expected coverage is ~93.5% (it acts like a z interval with
# the n-denominator sd; 2 × t_29.cdf(1.96 √(29/30)) − 1 = 93.6%), so that setting gets 40,000
# trials (standard error 0.12 points) and 2,000 resamples to sit reliably inside the band.
TRIALS = {30: 40_000, 100: 4_000, 1000: 2_000}
BOOTSTRAP_SAMPLES = {30: 2000, 100: 1000, 1000: 1000}
SETTINGS = {
    "normal, delta 0": normal_deltas,
    "bounded, delta 0": bounded_deltas(2.0),
    "bounded, delta +0.028": bounded_deltas(2.6),
    "bounded, delta +0.079": bounded_deltas(4.0),
}


@pytest.mark.parametrize("n", sorted(TRIALS))
@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_percentile_ci_covers_the_true_mean_at_the_nominal_rate(setting, n):
    observed = coverage(SETTINGS[setting], n, TRIALS[n], n_samples=BOOTSTRAP_SAMPLES[n], seed=n)
    assert 0.93 <= observed <= 0.97, f"{setting}, n={n}: coverage {observed:.4f}"


def test_percentile_ci_coverage_with_tie_heavy_deltas_at_n_1000():
    observed = coverage(tie_heavy_deltas, 1000, 2_000, seed=7)
    assert 0.93 <= observed <= 0.97, f"coverage {observed:.4f}"


@pytest.mark.parametrize("setting", ["bounded, delta +0.079", "normal, delta 0"])
def test_bca_ci_coverage_is_sane(setting):
    observed = coverage(SETTINGS[setting], 100, 4_000, method="bca", seed=3)
    assert 0.93 <= observed <= 0.97, f"{setting}: BCa coverage {observed:.4f}"


def test_a_miscalibrated_interval_would_be_caught():
    # The coverage check has teeth: a 90% interval sold as 95% lands far outside the band.
    rng = np.random.default_rng(5)
    deltas, true_mean = bounded_deltas(2.6)(rng, 100, 4000)
    ci = bootstrap_ci(deltas, n_samples=1000, confidence=0.9)
    observed = np.mean((ci.low <= true_mean) & (true_mean <= ci.high))
    assert not 0.93 <= observed <= 0.97


# --------------------------------------------------------------------------- p-values


def null_randomisation_pvalues(shift=0.0, n=40, datasets=2000, chunks=40):
    """Randomisation p-values of symmetric null deltas (+ shift), one sign-flip seed per chunk."""
    rng = np.random.default_rng(11)
    pvalues = []
    for chunk in range(chunks):
        deltas, _ = bounded_deltas(2.0)(rng, n, datasets // chunks)  # symmetric about 0
        pvalues.append(
            randomisation_pvalues(deltas + shift, n_permutations=999, seed=chunk)
        )
    return np.concatenate(pvalues)


def test_randomisation_pvalues_are_uniform_under_the_null():
    pvalues = null_randomisation_pvalues()
    assert scipy_stats.kstest(pvalues, "uniform").pvalue > 0.01
    assert np.mean(pvalues <= 0.05) == pytest.approx(0.05, abs=0.015)


def test_randomisation_pvalues_are_not_uniform_under_an_alternative():
    pvalues = null_randomisation_pvalues(shift=0.03)
    assert scipy_stats.kstest(pvalues, "uniform").pvalue < 1e-6


def null_family_pvalues(families, size, n=30, effects=()):
    """t-test p-values, (families, size); the first len(effects) comparisons have those effects."""
    rng = np.random.default_rng(13)
    means = np.zeros(size)
    means[: len(effects)] = effects
    deltas = rng.normal(0.0, 1.0, size=(n, families, size)) + means
    return ttest_pvalues(deltas.reshape(n, -1)).reshape(families, size)


def test_holm_controls_the_family_wise_error_rate():
    families = 5000
    pvalues = null_family_pvalues(families, size=10)
    adjusted = np.array([adjust_pvalues(p, "holm") for p in pvalues])
    fwer = np.mean((adjusted <= 0.05).any(axis=1))
    unadjusted_fwer = np.mean((pvalues <= 0.05).any(axis=1))
    # Independent nulls are Holm's worst case (1 − 0.995^10 ≈ 4.9%); allow 3 Monte Carlo SEs.
    assert fwer <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / families), f"FWER {fwer:.4f}"
    assert unadjusted_fwer > 0.3  # ≈ 40%: without correction the check fails


def test_bh_controls_the_false_discovery_rate():
    families, effects = 5000, (0.6,) * 5
    pvalues = null_family_pvalues(families, size=20, effects=effects)
    is_null = np.arange(20) >= len(effects)

    def false_discovery_proportion(rejected):
        return (rejected & is_null).sum(axis=1) / np.maximum(rejected.sum(axis=1), 1)

    bh = np.array([adjust_pvalues(p, "bh") for p in pvalues]) <= 0.05
    fdp = false_discovery_proportion(bh)
    # BH guarantees FDR <= (15/20) × 5% = 3.75% here; allow 3 Monte Carlo SEs above 5%.
    assert fdp.mean() <= 0.05 + 3 * fdp.std() / np.sqrt(families), f"FDR {fdp.mean():.4f}"
    assert false_discovery_proportion(pvalues <= 0.05).mean() > 0.1
    holm = np.array([adjust_pvalues(p, "holm") for p in pvalues]) <= 0.05
    assert bh[:, ~is_null].mean() > holm[:, ~is_null].mean()  # BH buys power for its weaker error
