"""Topic-set-size design (stats.power): the textbook size, and a simulated paired t-test at that size."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

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


def test_a_noninferiority_claim_is_sized_at_its_margin_for_its_one_sided_test():
    from rerankeval.report.judging import power_section
    from rerankeval.stats.analysis import analyze
    from rerankeval.stats.config import CompareConfig

    # min_delta 0 sizes nothing for a superiority claim, but a noninferiority claim is sized by its margin.
    settings = CompareConfig.parse({"baseline": "fusion", "metrics": ["nDCG@10"], "samples": 500, "permutations": 500,
                                    "simulation": {"trials": 20, "samples": 200},
                                    "release": {"primary_metric": "nDCG@10", "min_delta": 0.0,
                                                "claims": {"small": {"claim": "noninferior", "margin": 0.02}}}},
                                   "compare")
    rng = np.random.default_rng(4)
    base = rng.random(60)
    per_query = pd.DataFrame({"system": ["fusion"] * 60 + ["small"] * 60 + ["ce"] * 60, "query_id": [f"q{i}" for i in
                              range(60)] * 3, "nDCG@10": np.concatenate([base, base + rng.normal(0, 0.1, 60),
                                                                          base + rng.normal(0, 0.1, 60)])})
    per_query["Judged@10"] = 1.0
    verdicts = analyze(per_query, pd.DataFrame(index=sorted(set(per_query["query_id"]))), settings,
                       settings.release).verdicts  # the analysis states the power of each undecided verdict
    assert {verdict.decision for verdict in verdicts.verdicts.values()} == {"INCONCLUSIVE"}
    claimed, superior = verdicts.verdicts["small"].power, verdicts.verdicts["ce"].power
    assert superior.why.startswith("min_delta is 0")
    assert claimed.claim == "noninferior" and claimed.margin == 0.02 and claimed.alpha == 0.025
    assert claimed.queries_needed == topic_set_size(claimed.sd, 0.02, 0.025, two_sided=False)
    text = power_section(verdicts)
    assert ("`small` vs `fusion` claims noninferiority: its size is for the one-sided test of Δ > -margin -0.0200"
            in text)

    # That size gives the one-sided test of Δ > -margin its power when the true Δ is 0 (simulated).
    sd, margin, alpha = 0.1, 0.02, 0.025
    n = topic_set_size(sd, margin, alpha, two_sided=False)
    assert n < topic_set_size(sd, margin, alpha)  # one tail at alpha needs fewer queries than two at alpha / 2 each
    trials = 20_000
    deltas = np.random.default_rng(18).normal(0.0, sd, size=(n, trials))
    t = (deltas.mean(axis=0) + margin) / (deltas.std(axis=0, ddof=1) / np.sqrt(n))
    rate = float((t > scipy_stats.t.ppf(1 - alpha, n - 1)).mean())
    assert rate == pytest.approx(t_test_power(n, sd, margin, alpha, two_sided=False), abs=4 * (0.16 / trials) ** 0.5)
