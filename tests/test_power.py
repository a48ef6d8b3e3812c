"""Topic-set-size design (stats.power): the textbook size, and a simulated paired t-test at that size."""

from __future__ import annotations

import numpy as np
import pytest

from rerankeval.stats.power import power_statement, t_test_power, topic_set_size
from rerankeval.stats.significance import ttest_pvalues


def test_sd_equal_to_min_delta_gives_the_textbook_size():
    # Effect size 1, two-sided alpha 0.05, power 0.8: the normal approximation says 8, the t-test needs 10
    # (G*Power's and Sakai's tables agree).
    n = topic_set_size(sd=0.03, min_delta=0.03, alpha=0.05, power=0.8)
    assert n == 10
    assert t_test_power(n, 0.03, 0.03, 0.05) >= 0.8 > t_test_power(n - 1, 0.03, 0.03, 0.05)


def test_a_paired_t_test_at_that_size_rejects_as_often_as_the_power_says():
    sd, delta, alpha = 0.12, 0.03, 0.05
    n = topic_set_size(sd, delta, alpha)
    trials = 20_000
    deltas = np.random.default_rng(17).normal(delta, sd, size=(n, trials))
    rate = float((ttest_pvalues(deltas) < alpha).mean())
    error = (0.8 * 0.2 / trials) ** 0.5
    assert rate == pytest.approx(t_test_power(n, sd, delta, alpha), abs=4 * error)
    assert abs(rate - 0.8) < 4 * error + (t_test_power(n, sd, delta, alpha) - 0.8)
    smaller = float((ttest_pvalues(deltas[: n // 2]) < alpha).mean())
    assert smaller < 0.8 - 4 * error


def test_the_size_grows_with_the_square_of_the_spread():
    small, large = topic_set_size(0.1, 0.03, 0.05), topic_set_size(0.2, 0.03, 0.05)
    assert 3.8 * small < large < 4.1 * small


def test_the_statement_says_why_when_no_size_can_be_given():
    assert power_statement([0.01, np.nan, 0.05, -0.02], 0.0, 0.95)["why"].startswith("min_delta is 0")
    assert power_statement([0.02, 0.02, 0.02], 0.03, 0.95)["why"] == ("every query has the same delta: no spread "
                                                                     "to size from")
    assert power_statement([0.02], 0.03, 0.95)["queries_needed"] is None
    deltas = np.random.default_rng(3).normal(0.01, 0.1, size=40)
    statement = power_statement(np.append(deltas, np.nan), 0.03, 0.95)
    assert statement["queries"] == 40 and statement["why"] is None
    assert statement["queries_needed"] == topic_set_size(float(deltas.std(ddof=1)), 0.03, 0.05)
    assert statement["more_queries"] == statement["queries_needed"] - 40
    assert 0 < statement["power_now"] < 0.8
