"""The blend weight fitted out of sample: the cross-validated estimate does not inherit the in-sample optimism of a
grid that chases noise, its CI covers the truth, the one-standard-error rule, and the fit never sees the evaluated
split."""

import numpy as np
import pandas as pd
import pytest

from rerankeval.core.errors import ConfigError
from rerankeval.rerank.driver import RerankSettings, rerank
from rerankeval.systems.base import Query, SplitCandidates
from rerankeval.systems.composite.weight_cv import cross_validate, fold_of, select
from rerankeval.systems.registry import build_system
from tests.composite_fixtures import QUERIES, SCORED, candidates, context, systems  # noqa: F401, F811  (fixture)

GRID = [round(step / 20, 2) for step in range(21)]


def noisy_fit(rng, queries=60, truth=0.5, noise=0.25):
    """Every weight is truly worth ``truth``; each (query, weight) value adds its own noise, so the grid's best mean
    on these queries is the luckiest weight, not a better one."""
    values = truth + rng.normal(0.0, noise, (queries, len(GRID)))
    return values, values[:, 0]


@pytest.mark.parametrize("rule", ["best", "one_se"])
def test_cv_estimate_is_below_the_in_sample_best_and_its_ci_covers_the_truth(rule):
    rng = np.random.default_rng(3)
    trials, covered, optimism = 100, 0, []
    for trial in range(trials):
        values, reference = noisy_fit(rng)
        found = cross_validate(values, reference, GRID, folds=5, rule=rule, seed=trial, samples=200)
        mean, low, high = found.estimate
        covered += low <= 0.5 <= high
        optimism.append(values.mean(axis=0).max() - mean)
        if trial == 0:
            assert mean < values.mean(axis=0).max()  # the train score of the best weight is the optimistic one
            assert len(found.fold_columns) == 5
    # Resampling the out-of-fold values alone (no selection redone) covered 85-89% of such fits: too narrow.
    assert covered / trials >= 0.93
    # The in-sample best sits about two standard errors (0.25 / sqrt(60)) above the truth; the CV estimate does not.
    assert np.mean(optimism) > 0.05


def test_best_rule_in_sample_value_over_fits_where_the_cv_estimate_does_not():
    rng = np.random.default_rng(5)
    in_sample, estimates = [], []
    for trial in range(100):
        values, reference = noisy_fit(rng)
        found = cross_validate(values, reference, GRID, folds=5, rule="best", seed=trial, samples=100)
        in_sample.append(found.in_sample)
        estimates.append(found.estimate[0])
    assert np.mean(in_sample) - 0.5 > 0.05  # the in-sample value chases the noise
    assert abs(np.mean(estimates) - 0.5) < 0.01  # the out-of-fold one is unbiased for the fitted policy


def test_one_standard_error_rule_by_hand():
    grid = [0.0, 0.5, 1.0]
    # Means 0.50, 0.52, 0.53: the best is weight 1. Weight 0's paired differences to it (.02, .04, .02, .04) have a
    # standard error of 0.0058, below its gap 0.03; weight 0.5's (0, .03, 0, .01) 0.0071, below its gap 0.01: the
    # best is distinguishable from both, and the rule keeps it.
    values = np.array([[0.50, 0.52, 0.52], [0.50, 0.51, 0.54], [0.50, 0.52, 0.52], [0.50, 0.53, 0.54]])
    assert select(values, grid, "best") == 2 and select(values, grid, "one_se") == 2
    # Weight 0.5 noisier (differences -.04, .07, -.04, .05: standard error 0.029 over a gap 0.01): within one SE of
    # the best, and smaller, so the rule picks it; the best-mean rule still picks weight 1.
    noisy = np.array([[0.50, 0.56, 0.52], [0.50, 0.47, 0.54], [0.50, 0.56, 0.52], [0.50, 0.49, 0.54]])
    assert select(noisy, grid, "one_se") == 1 and select(noisy, grid, "best") == 2
    # The smallest weight within one SE, wherever it sits in the grid.
    assert select(noisy[:, ::-1], grid[::-1], "one_se") == 1


def test_folds_are_seeded_and_balanced():
    fold = fold_of(11, 3, seed=0)
    assert sorted(np.bincount(fold).tolist()) == [3, 4, 4]
    assert (fold == fold_of(11, 3, seed=0)).all() and not (fold == fold_of(11, 3, seed=1)).all()
    with pytest.raises(ValueError, match="between 2 and 2"):
        cross_validate(np.zeros((2, 3)), np.zeros(2), [0.0, 0.5, 1.0], folds=3, rule="best", seed=0)


def train_split(count):
    """``count`` train queries (t1, t2, ...), disjoint from the evaluated q1, q2; each one's relevant passage d1."""
    queries = {f"t{i}": Query(f"t{i}", f"train question {i}") for i in range(1, count + 1)}
    qrels = pd.DataFrame({"query_id": list(queries), "doc_id": "d1", "relevance": 1})
    return SplitCandidates(candidates(tuple(queries)), queries, qrels, {"split": "train", "fallback": False})


def test_the_fit_never_sees_the_evaluated_split(systems):  # noqa: F811
    systems["blend"] = {"kind": "blend", "depth": 4, "components": ["length", "column:bm25_score"],
                        "weight": "fit", "weight_grid": [0.0, 0.5, 1.0],
                        "fit": {"split": "train", "measure": "RR@10", "folds": 3}}
    split, asked = train_split(6), []

    def candidates_of(name):
        asked.append(name)
        assert name != "test", "the fit asked for the evaluated split"
        return split

    system = build_system("blend", systems["blend"], context(systems, candidates_of=candidates_of,
                                                             evaluated_split="test"))
    # Every pair the scorer saw belongs to a train query; none to the evaluated ones (q1, q2, by their texts).
    assert asked == ["train"] and {text for text, _ in SCORED} == {q.text for q in split.queries.values()}
    fit = system.fit
    assert fit["queries"] == 6 and len(fit["cv"]["fold_weights"]) == 3
    estimate, gain = fit["cv"]["estimate"], fit["cv"]["gain_over_zero"]
    assert estimate["low"] <= estimate["mean"] <= estimate["high"] and gain["low"] <= gain["mean"] <= gain["high"]
    # d1 (4 words, BM25 8) is first under either component alone: every weight scores RR 1, so nothing beats 0.
    assert system.weight == 0.0 and fit["cv"]["in_sample_mean"] == 1.0 and not fit["cv"]["distinguishable_from_zero"]
    # So it ranks by BM25 alone, and its run says why (the compare stage explains a run equal to the baseline's by it).
    assert system.describe()["reduces_to"] == {
        "system": "column:bm25_score", "why": "its weight fitted on the train split (6 queries, rule one_se) is 0, so "
                                              "it ranks by column:bm25_score alone and length has no say"}
    with pytest.raises(ConfigError, match=r"systems.blend.fit.split is 'test', the evaluated split"):
        build_system("blend", {**systems["blend"], "fit": {"split": "test", "folds": 3}},
                     context(systems, candidates_of=candidates_of, evaluated_split="test"))
    with pytest.raises(ConfigError, match=r"systems.blend.fit.folds is 7, but the fit has 6 'train' queries"):
        build_system("blend", {**systems["blend"], "fit": {"split": "train", "folds": 7}},
                     context(systems, candidates_of=candidates_of, evaluated_split="test"))


def test_a_blend_at_weight_zero_does_not_call_its_first_component(systems):  # noqa: F811
    systems["blend"] = {"kind": "blend", "depth": 4, "components": ["length", "column:bm25_score"], "weight": 0.0}
    run, latency = rerank(candidates(), QUERIES, build_system("blend", systems["blend"], context(systems)),
                          RerankSettings(4))
    assert SCORED == [] and (latency["replayed_s"] == 0).all() and (latency["cache_hits"] == 0).all()
    assert build_system("blend", systems["blend"], context(systems)).describe()["reduces_to"]["why"].startswith(
        "its weight as configured is 0")
    assert "reduces_to" not in build_system("blend", {**systems["blend"], "weight": 0.5}, context(systems)).describe()
    # BM25 alone (2, 8, 4, 0): d1, d2, d0, d3, the order the blend's formula gives at weight 0.
    assert run[run["query_id"] == "q1"]["doc_id"].tolist() == ["d1", "d2", "d0", "d3"]
