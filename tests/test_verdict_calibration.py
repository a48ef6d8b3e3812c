"""The release rule's operating characteristics on a fixed query set with small critical slices.

Trials draw fresh per-query deltas (tie-heavy and bounded, like the deltas of two rerankers) on the same 100 queries
and slice labels, and go through the verdict's own evidence and decision code (``stats.simulation.decisions``).
The sign-flip simulation the report prints is checked against the same bounds.
"""

import numpy as np
import pytest

from rerankeval.stats.evidence import slices_that_can_reject
from rerankeval.stats.simulation import decisions, operating_characteristics, sign_flip_trials
from rerankeval.stats.config import ReleaseRule

N_QUERIES, TRIALS, SAMPLES, MIN_SLICE_SIZE = 100, 1000, 2000, 20
LANGUAGE = np.repeat(["en", "ko", "mixed"], [45, 35, 20])
# Four of six intents are below MIN_SLICE_SIZE: they can block ACCEPT, never REJECT.
INTENT = np.random.default_rng(0).permutation(np.repeat(["lookup", "howto", "compare", "temporal", "multi_hop",
                                                         "error_code"], [25, 20, 15, 15, 13, 12]))
LABELS = {"language": LANGUAGE, "intent": INTENT}
RULE = ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.03,
                          "critical_slices": [{"column": "language", "budget": 0.05},
                                              {"column": "intent", "budget": 0.05}]}, "compare.release")
STATS = dict(min_slice_size=MIN_SLICE_SIZE, n_samples=SAMPLES, seed=17, confidence=0.95, method="percentile")


def null_deltas(rng, trials):
    """60% of queries unchanged, the rest the difference of two Beta(2, 3) scores: mean 0, sd about 0.22."""
    changed = rng.random((N_QUERIES, trials)) < 0.4
    moved = rng.beta(2, 3, size=(N_QUERIES, trials)) - rng.beta(2, 3, size=(N_QUERIES, trials))
    return np.where(changed, moved, 0.0)


def rates(found):
    return {decision: float(np.mean(found == decision)) for decision in ("ACCEPT", "REJECT", "INCONCLUSIVE")}


@pytest.fixture(scope="module")
def standard_error():
    # The standard error of the mean delta of the null distribution, by simulation: sd / sqrt(n).
    return float(null_deltas(np.random.default_rng(1), 20000).std() / np.sqrt(N_QUERIES))


def test_the_query_set_has_small_critical_slices():
    assert slices_that_can_reject(RULE, LABELS, MIN_SLICE_SIZE) == 5  # en, ko, mixed, lookup, howto


def test_null_challengers_are_rarely_rejected_or_accepted():
    null = rates(decisions(null_deltas(np.random.default_rng(2), TRIALS), LABELS, RULE, **STATS))
    assert null["REJECT"] <= 0.10, null
    assert null["ACCEPT"] <= 0.05, null


def test_a_three_standard_error_challenger_is_accepted(standard_error):
    assert 0.03 < 3 * standard_error  # min_delta is within reach of the effect
    better = null_deltas(np.random.default_rng(3), TRIALS) + 3 * standard_error
    found = rates(decisions(better, LABELS, RULE, **STATS))
    assert found["ACCEPT"] >= 0.80, found
    assert found["REJECT"] <= 0.01, found


def test_the_printed_sign_flip_simulation_meets_the_same_bounds(standard_error):
    observed = null_deltas(np.random.default_rng(4), 1)[:, 0] + 0.2  # a real effect: centring removes it
    at_zero, better = operating_characteristics(observed, LABELS, RULE, [0.0, 3 * standard_error], trials=TRIALS,
                                                **STATS)
    assert at_zero.reject <= 0.10 and at_zero.accept <= 0.05, at_zero
    assert better.accept >= 0.80, better
    # Seeded: the report's numbers are reproducible.
    first, second = (operating_characteristics(observed, LABELS, RULE, [0.0], trials=50, **STATS) for _ in range(2))
    assert first == second


def test_sign_flips_keep_the_shape_and_remove_the_effect():
    observed = np.array([0.5, 0.0, -0.2, 0.3])
    trials = sign_flip_trials(observed, 2000, seed=1)
    assert trials.shape == (4, 2000)
    assert np.allclose(np.abs(trials), np.abs(observed - observed.mean())[:, None])
    assert abs(trials.mean()) < 0.01
