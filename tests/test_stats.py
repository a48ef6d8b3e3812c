"""Hand-checked and reference-checked cases for rerankeval.stats."""

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats as scipy_stats

from rerankeval.stats.deltas import family_deltas, summarise_deltas
from rerankeval.stats.resampling import _weight_blocks, bootstrap_ci, bootstrap_means, slice_ci
from rerankeval.stats.significance import adjust_pvalues, randomisation_pvalues, significance, ttest_pvalues


def bootstrap_weights(n_queries, n_samples, seed):
    """The resamples as an (n_samples, n_queries) count matrix: the reference the vectorised paths must match."""
    return np.vstack([block for _, block in _weight_blocks(n_queries, n_samples, seed)])


RNG_SEED = 20240607


@pytest.fixture
def family() -> np.ndarray:
    """200 queries × 6 correlated comparisons with different effects."""
    rng = np.random.default_rng(RNG_SEED)
    shared = rng.normal(0, 0.1, size=(200, 1))
    return shared + rng.normal([0.0, 0.01, 0.03, -0.02, 0.05, 0.0], 0.15, size=(200, 6))


# --------------------------------------------------------------------------- per-query deltas


def test_win_tie_loss_counts_and_worst_regressions_by_hand():
    deltas = np.array([0.1, 0.0, -0.2, 5e-10, -0.2, 0.3, -0.05, -1e-10])
    (summary,) = summarise_deltas(deltas, tie_tol=1e-9, worst_n=10)
    assert (summary.improved, summary.tied, summary.regressed) == (2, 3, 3)
    # -0.2 twice: equal deltas keep query order (2 before 4); then -0.05.
    assert summary.worst_regressions == (2, 4, 6)

    (top_two,) = summarise_deltas(deltas, worst_n=2)
    assert top_two.worst_regressions == (2, 4)

    (loose,) = summarise_deltas(deltas, tie_tol=0.06)
    assert (loose.improved, loose.tied, loose.regressed) == (2, 4, 2)
    assert loose.worst_regressions == (2, 4)


def test_mean_median_percentiles_and_cohens_dz_by_hand():
    (summary,) = summarise_deltas(np.array([4.0, 0.0, 3.0, 1.0, 2.0]))
    assert summary.mean == pytest.approx(2.0)
    assert summary.median == pytest.approx(2.0)
    # Linear interpolation at position q/100 × (n − 1) of the sorted values 0..4.
    assert summary.percentiles == pytest.approx({5: 0.2, 25: 1.0, 50: 2.0, 75: 3.0, 95: 3.8})
    # sd (n − 1) of 0..4 is sqrt(2.5).
    assert summary.cohens_dz == pytest.approx(2.0 / np.sqrt(2.5))


def test_cohens_dz_with_zero_variance():
    zero, up, down = summarise_deltas(
        np.column_stack([np.zeros(5), np.full(5, 0.25), np.full(5, -0.25)])
    )
    assert zero.cohens_dz == 0.0
    assert up.cohens_dz == np.inf
    assert down.cohens_dz == -np.inf
    assert (zero.improved, zero.tied, zero.regressed) == (0, 5, 0)
    assert (down.regressed, down.worst_regressions[:3]) == (5, (0, 1, 2))


def test_summaries_come_one_per_comparison(family):
    summaries = summarise_deltas(family)
    assert len(summaries) == family.shape[1]
    for j, summary in enumerate(summaries):
        assert summary.mean == pytest.approx(family[:, j].mean())
        assert summary.improved + summary.tied + summary.regressed == len(family)


# --------------------------------------------------------------------------- bootstrap


def test_weights_are_multinomial_counts():
    weights = bootstrap_weights(50, n_samples=400, seed=3)
    assert weights.shape == (400, 50)
    np.testing.assert_array_equal(weights.sum(axis=1), 50)
    np.testing.assert_array_equal(weights, np.round(weights))
    # Each count is Binomial(50, 1/50): mean 1, variance 49/50.
    assert weights.mean() == pytest.approx(1.0, abs=0.01)
    assert weights.var() == pytest.approx(0.98, abs=0.03)


def test_bootstrap_means_are_the_weighted_means(family):
    weights = bootstrap_weights(len(family), n_samples=500, seed=5)
    replicates = bootstrap_means(family, n_samples=500, seed=5)
    np.testing.assert_allclose(replicates, weights @ family / len(family), rtol=0, atol=1e-13)


def test_percentile_interval_is_the_quantiles_of_the_replicates(family):
    ci = bootstrap_ci(family, n_samples=999, seed=11, confidence=0.9)
    replicates = bootstrap_means(family, n_samples=999, seed=11)
    expected = np.quantile(replicates, [0.05, 0.95], axis=0)
    np.testing.assert_allclose(ci.low, expected[0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(ci.high, expected[1], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(ci.mean, family.mean(axis=0))
    assert (ci.method, ci.confidence, ci.n_samples, ci.seed) == ("percentile", 0.9, 999, 11)


def test_bca_matches_an_explicit_jackknife_computation(family):
    deltas = family[:60] ** 3  # skewed, so the acceleration matters
    ci = bootstrap_ci(deltas, n_samples=2000, seed=2, method="bca")
    replicates = bootstrap_means(deltas, n_samples=2000, seed=2)
    for j in range(deltas.shape[1]):
        d, reps, observed = deltas[:, j], replicates[:, j], deltas[:, j].mean()
        leave_one_out = np.array([np.delete(d, i).mean() for i in range(len(d))])
        u = leave_one_out.mean() - leave_one_out
        a = np.sum(u**3) / (6 * np.sum(u**2) ** 1.5)
        z0 = scipy_stats.norm.ppf(np.mean(reps < observed) + 0.5 * np.mean(reps == observed))
        z = scipy_stats.norm.ppf([0.025, 0.975])
        levels = scipy_stats.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))
        low, high = np.quantile(reps, levels)
        assert ci.low[j] == pytest.approx(low, abs=1e-12)
        assert ci.high[j] == pytest.approx(high, abs=1e-12)
    assert np.any(np.abs(ci.low - bootstrap_ci(deltas, n_samples=2000, seed=2).low) > 1e-4)


def test_bca_agrees_with_scipy_bootstrap_up_to_resampling_noise(family):
    deltas = np.exp(family[:, 2] * 8)  # right-skewed
    ours = bootstrap_ci(deltas, n_samples=20_000, seed=1, method="bca")
    theirs = scipy_stats.bootstrap(
        (deltas,), np.mean, n_resamples=20_000, method="BCa", rng=np.random.default_rng(1)
    ).confidence_interval
    width = theirs.high - theirs.low
    assert ours.low[0] == pytest.approx(theirs.low, abs=0.03 * width)
    assert ours.high[0] == pytest.approx(theirs.high, abs=0.03 * width)


def test_bootstrap_is_deterministic_under_a_seed(family):
    for method in ("percentile", "bca"):
        first = bootstrap_ci(family, n_samples=700, seed=9, method=method)
        again = bootstrap_ci(family, n_samples=700, seed=9, method=method)
        other = bootstrap_ci(family, n_samples=700, seed=10, method=method)
        assert first.low.tobytes() == again.low.tobytes()
        assert first.high.tobytes() == again.high.tobytes()
        assert first.low.tobytes() != other.low.tobytes()


def test_comparisons_together_or_alone_give_identical_intervals(family):
    for method in ("percentile", "bca"):
        together = bootstrap_ci(family, n_samples=1000, seed=4, method=method)
        for j in range(family.shape[1]):
            alone = bootstrap_ci(family[:, j], n_samples=1000, seed=4, method=method)
            assert alone.low[0] == together.low[j] and alone.high[0] == together.high[j]


BLAS_THREADS_SCRIPT = """
import hashlib, numpy as np
from rerankeval.stats.resampling import bootstrap_ci, slice_ci
from rerankeval.stats.significance import randomisation_pvalues
deltas = np.random.default_rng(0).normal(0.01, 0.2, size=(1000, 60))
ci = bootstrap_ci(deltas, n_samples=2000, method="bca")
sliced = slice_ci(deltas, np.arange(1000) % 3, n_samples=2000)
p = randomisation_pvalues(deltas, n_permutations=2000)
arrays = (ci.low, ci.high, sliced.low, sliced.high, p)
print(hashlib.sha256(b"".join(a.tobytes() for a in arrays)).hexdigest())
"""


def test_results_do_not_depend_on_the_blas_thread_count():
    # A plain float64 matrix product sums in a thread-dependent order; the exact grid removes it.
    digests = set()
    for threads in ("1", "2"):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
        run = subprocess.run(
            [sys.executable, "-c", BLAS_THREADS_SCRIPT],
            env=env, capture_output=True, text=True, check=True,
        )
        digests.add(run.stdout.strip())
    assert len(digests) == 1


def test_replicates_of_a_difference_are_differences_of_replicates(family):
    # Holds only if both columns are resampled identically: the contrast "metric A − metric B"
    # can be read straight off the family's replicates.
    a_minus_b = family[:, [2]] - family[:, [1]]
    replicates = bootstrap_means(family, n_samples=800, seed=8)
    contrast = bootstrap_means(a_minus_b, n_samples=800, seed=8)
    np.testing.assert_allclose(contrast[:, 0], replicates[:, 2] - replicates[:, 1], atol=1e-12)


def test_interval_brackets_the_mean_and_shrinks_with_confidence(family):
    wide = bootstrap_ci(family, n_samples=2000, confidence=0.99)
    narrow = bootstrap_ci(family, n_samples=2000, confidence=0.8)
    assert np.all(wide.low < narrow.low) and np.all(narrow.low < narrow.mean)
    assert np.all(narrow.mean < narrow.high) and np.all(narrow.high < wide.high)


def test_identical_systems_give_a_zero_width_interval():
    for method in ("percentile", "bca"):
        ci = bootstrap_ci(np.zeros(30), n_samples=200, method=method)
        assert (ci.mean[0], ci.low[0], ci.high[0]) == (0.0, 0.0, 0.0)


# --------------------------------------------------------------------------- slices


def test_slice_intervals_restrict_the_global_weights(family):
    labels = np.array(["en", "de", "fr", "de"] * 50)
    sliced = slice_ci(family, labels, n_samples=600, seed=21)
    weights = bootstrap_weights(len(family), n_samples=600, seed=21)
    assert sliced.values == ("de", "en", "fr")
    np.testing.assert_array_equal(sliced.sizes[:, 0], [100, 50, 50])
    for k, value in enumerate(sliced.values):
        members = labels == value
        reps = weights[:, members] @ family[members] / weights[:, members].sum(axis=1)[:, None]
        low, high = np.quantile(reps, [0.025, 0.975], axis=0)
        np.testing.assert_allclose(sliced.mean[k], family[members].mean(axis=0), atol=1e-15)
        np.testing.assert_allclose(sliced.low[k], low, atol=1e-12)
        np.testing.assert_allclose(sliced.high[k], high, atol=1e-12)


def test_a_single_slice_reproduces_the_global_interval(family):
    for method in ("percentile", "bca"):
        whole = slice_ci(family, np.zeros(len(family), int), n_samples=500, method=method)
        overall = bootstrap_ci(family, n_samples=500, method=method)
        np.testing.assert_allclose(whole.low[0], overall.low, atol=1e-12)
        np.testing.assert_allclose(whole.high[0], overall.high, atol=1e-12)


def test_small_slices_are_flagged_and_tiny_ones_drop_empty_resamples(family):
    labels = np.repeat([0, 1, 2], [170, 29, 1])
    sliced = slice_ci(family, labels, n_samples=1000, min_slice_size=30)
    np.testing.assert_array_equal(sliced.too_small[:, 0], [False, True, True])
    assert sliced.n_resamples_used[0] == 1000
    # A 1-query slice is missed by a resample with probability (199/200)^200 ≈ 0.37.
    assert 550 < sliced.n_resamples_used[2] < 720
    # ... and when drawn its mean is that query's delta.
    np.testing.assert_allclose(sliced.low[2], family[-1], rtol=1e-12)
    np.testing.assert_allclose(sliced.high[2], family[-1], rtol=1e-12)
    default = slice_ci(family, labels, n_samples=100)
    np.testing.assert_array_equal(default.too_small[:, 0], [False, False, True])


def test_slice_labels_are_validated(family):
    with pytest.raises(ValueError, match="one label per query"):
        slice_ci(family, np.zeros(10, int))
    with pytest.raises(ValueError, match="integers, booleans or strings"):
        slice_ci(family, np.full(len(family), np.nan))
    with pytest.raises(ValueError, match="not mutually comparable"):
        slice_ci(family, np.array(["a", None] * 100, dtype=object))


# --------------------------------------------------------------------------- significance


def test_ttest_matches_scipy_ttest_rel(family):
    rng = np.random.default_rng(RNG_SEED)
    baseline = rng.uniform(size=family.shape)
    challenger = baseline + family
    expected = scipy_stats.ttest_rel(challenger, baseline, axis=0).pvalue
    deltas = challenger - baseline
    np.testing.assert_allclose(ttest_pvalues(deltas), expected, rtol=1e-10)


def test_ttest_with_zero_variance():
    scores = np.linspace(0, 1, 12)
    identical = scores - scores
    assert ttest_pvalues(identical)[0] == 1.0
    shifted = np.full(12, 0.5)  # a constant shift cannot be chance
    assert ttest_pvalues(shifted)[0] == 0.0


def test_randomisation_pvalue_approximates_the_exact_enumeration():
    # Deltas 1..4: only the all-plus and all-minus sign patterns (2 of 16) are as extreme.
    p = randomisation_pvalues(np.array([1.0, 2.0, 3.0, 4.0]), n_permutations=20_000)
    assert p[0] == pytest.approx(2 / 16, abs=0.01)
    # Enumerating the 16 patterns of these deltas gives 12 at least as extreme. Flipping both 0.87
    # and -0.87 keeps the sum exactly, but not in floating point: without the tie tolerance the
    # estimate drops to ~0.63.
    p = randomisation_pvalues(np.array([0.29, 0.19, 0.87, -0.87]), n_permutations=20_000)
    assert p[0] == pytest.approx(12 / 16, abs=0.01)
    # v + v - 2v = 0 exactly, but v and 2v round differently onto the exact-sum grid; every one
    # of the 16 patterns is at least as extreme as the observed 0.2 (without the grid tolerance
    # two of them are lost and p drops to ~14/16).
    v = 0.25031861630159924
    p = randomisation_pvalues(np.array([v, v, -2 * v, 0.2]), n_permutations=2000)
    assert p[0] == 1.0


def test_randomisation_pvalue_bounds():
    assert randomisation_pvalues(np.zeros(25), n_permutations=999)[0] == 1.0
    strong = randomisation_pvalues(np.full(40, 0.3), n_permutations=999)
    assert strong[0] == 1 / 1000  # never zero: the observed labelling counts once


def test_randomisation_is_deterministic_and_shares_sign_flips(family):
    p = randomisation_pvalues(family, n_permutations=500, seed=6)
    again = randomisation_pvalues(family, n_permutations=500, seed=6)
    assert p.tobytes() == again.tobytes()
    for j in range(family.shape[1]):
        alone = randomisation_pvalues(family[:, j], n_permutations=500, seed=6)
        assert alone[0] == p[j]


def test_randomisation_agrees_with_ttest_on_normal_data(family):
    p_rand = randomisation_pvalues(family, n_permutations=20_000)
    p_t = ttest_pvalues(family)
    np.testing.assert_allclose(p_rand, p_t, atol=0.02)


def test_holm_by_hand():
    adjusted = adjust_pvalues([0.01, 0.04, 0.03, 0.005], "holm")
    # Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04; running max.
    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(adjust_pvalues([0.6, 0.7, 0.01]), [1.0, 1.0, 0.03])


def test_bh_by_hand_and_against_scipy():
    adjusted = adjust_pvalues([0.01, 0.04, 0.03, 0.005], "bh")
    # sorted ×m/k: 0.02, 0.02, 0.04, 0.04 → running min from the top.
    np.testing.assert_allclose(adjusted, [0.02, 0.04, 0.04, 0.02])
    p = np.random.default_rng(RNG_SEED).uniform(size=40) ** 3
    np.testing.assert_allclose(
        adjust_pvalues(p, "bh"), scipy_stats.false_discovery_control(p), rtol=1e-12
    )


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(1, 30), elements=st.floats(0.0, 1.0)))
def test_adjusted_pvalues_are_monotone_capped_and_not_below_raw(p):
    holm = adjust_pvalues(p, "holm")
    bh = adjust_pvalues(p, "bh")
    order = np.argsort(p, kind="stable")
    for adjusted in (holm, bh):
        assert np.all(adjusted >= p) and np.all(adjusted <= 1.0)
        assert np.all(np.diff(adjusted[order]) >= 0)
    assert np.all(holm >= bh - 1e-15)


def test_significance_reports_raw_and_adjusted_side_by_side(family):
    result = significance(family, n_permutations=999, seed=3, correction="bh")
    np.testing.assert_array_equal(
        result.p_randomisation, randomisation_pvalues(family, n_permutations=999, seed=3)
    )
    np.testing.assert_array_equal(result.p_ttest, ttest_pvalues(family))
    np.testing.assert_array_equal(
        result.p_randomisation_adjusted, adjust_pvalues(result.p_randomisation, "bh")
    )
    np.testing.assert_array_equal(
        result.p_ttest_adjusted, adjust_pvalues(result.p_ttest, "bh")
    )
    assert result.correction == "bh"


# --------------------------------------------------------------------------- family and inputs


def test_family_deltas_orders_challengers_then_metrics():
    scores = {
        "bm25": {"ndcg": np.array([0.5, 0.2, 0.9]), "mrr": np.array([1.0, 0.5, 1.0])},
        "ce": {"mrr": np.array([1.0, 1.0, 0.5]), "ndcg": np.array([0.6, 0.4, 0.7])},
        "bi": {"ndcg": np.array([0.5, 0.1, 1.0]), "mrr": np.array([0.5, 0.5, 1.0])},
    }
    comparisons, deltas = family_deltas(scores, baseline="bm25")
    assert [(c.challenger, c.metric) for c in comparisons] == [
        ("bi", "mrr"), ("bi", "ndcg"), ("ce", "mrr"), ("ce", "ndcg"),
    ]
    np.testing.assert_allclose(deltas[:, 3], [0.1, 0.2, -0.2])
    np.testing.assert_allclose(deltas[:, 0], [-0.5, 0.0, 0.0])


def test_family_deltas_names_mismatches():
    good = {"ndcg": np.zeros(4)}
    with pytest.raises(ValueError, match="'ce' has metrics"):
        family_deltas({"bm25": good, "ce": {"mrr": np.zeros(4)}}, "bm25")
    with pytest.raises(ValueError, match=r"metric 'ndcg': system 'ce' has shape \(3,\)"):
        family_deltas({"bm25": good, "ce": {"ndcg": np.zeros(3)}}, "bm25")
    with pytest.raises(ValueError, match="baseline system 'x'"):
        family_deltas({"bm25": good}, "x")


def test_input_validation_names_the_problem(family):
    with_nan = family.copy()
    with_nan[7, 2] = np.nan
    for function in (bootstrap_ci, randomisation_pvalues, ttest_pvalues):
        with pytest.raises(ValueError, match="NaN/inf.*query index 7, comparison 2"):
            function(with_nan)
    with pytest.raises(ValueError, match="at least 2 queries"):
        bootstrap_ci(np.array([0.3]))
    with pytest.raises(ValueError, match="1-D or 2-D"):
        bootstrap_ci(np.zeros((3, 3, 3)))
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci(family, confidence=95)
    with pytest.raises(ValueError, match="unknown CI method 'basic'"):
        bootstrap_ci(family, method="basic")
    with pytest.raises(ValueError, match="n_samples"):
        bootstrap_ci(family, n_samples=0)
    with pytest.raises(ValueError, match="unknown correction 'bonferroni'"):
        adjust_pvalues([0.1], "bonferroni")
    with pytest.raises(ValueError, match=r"within \[0, 1\]"):
        adjust_pvalues([0.1, 1.5])
    with pytest.raises(ValueError, match="tie_tol"):
        summarise_deltas(family, tie_tol=-1)
