"""A blend weight chosen out of sample: k-fold cross-validation of the weight's selection over the fit queries.

Input: ``values``, the (fit queries x grid weights) matrix of the fit measure, and ``reference``, each query's value
at weight 0 (the blend's second component alone: the fused order for a blend with ``fusion``).

The rule that picks a weight on a set of queries (``select``):

* ``best``: the grid weight with the best mean (ties: the first in the grid).
* ``one_se``: the smallest weight whose mean lies within one standard error of the best's, the standard error being
  that of the per-query paired difference between the two weights. Weights closer to the best than the noise of that
  comparison are not distinguishable from it on these queries; the smallest of them leans least on the first
  component (at weight 0 the blend never calls it), so the rule gives up only a gain the fit queries cannot show and
  does not chase the noise of a flat curve, which is how a weight fitted on a few dozen queries ends up worse than
  weight 0 on test (issue 24, finding 4).

Cross-validation: the queries are shuffled (``seed``) into ``folds`` folds; for each fold the rule picks a weight on
the other folds and the fold's queries are scored with it. Each query's out-of-fold value is what the fitting
procedure scores on a query it was not fitted on; their mean is the CV estimate of the fitted blend's measure, and the
mean of the out-of-fold value minus the value at weight 0 the CV gain over weight 0. The blend's weight is the rule
applied to all fit queries. Its mean there (the in-sample value) is recorded beside the estimate and is optimistic by
construction: the CV estimate is the one to quote.

CIs: a percentile bootstrap over the fit queries that redoes the selection in every replicate (each query keeps its
fold, so a query drawn twice never sits on both sides of a split). Resampling the out-of-fold values alone would
treat them as independent, but each fold's weight was picked on the other folds' queries, which ties the folds'
errors together: on a grid that chases noise such an interval covered the truth in well under 95% of simulated fits.
This one errs the other way there (wider than the estimate's spread, as a replicate's selection adds its own noise);
``tests/test_blend_cv.py`` checks that it covers the truth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ...stats.defaults import DEFAULT_CONFIDENCE

Rule = Literal["one_se", "best"]
SAMPLES = 2000
"""Bootstrap replicates of a fit's CIs (each redoes the selection ``folds`` times)."""


def select_weighted(values: np.ndarray, counts: np.ndarray, grid: Sequence[float], rule: Rule) -> np.ndarray:
    """The column of ``values`` (queries x grid weights) the rule picks on each row of ``counts`` (replicates x
    queries: how many times each query counts; 0 leaves it out)."""
    total = counts.sum(axis=1, keepdims=True)
    means = counts @ values / np.maximum(total, 1)
    best = np.argmax(means, axis=1)  # argmax keeps the first of equal means
    if rule == "best":
        return best
    rows = np.arange(len(counts))
    squares = counts @ values ** 2 / np.maximum(total, 1)
    with_best = (counts * values[:, best].T) @ values / np.maximum(total, 1)
    gaps = means[rows, best][:, None] - means
    spread = squares[rows, best][:, None] - 2 * with_best + squares - gaps ** 2  # the paired difference's variance
    # The paired difference's standard error, std(ddof=1) / sqrt(n); one query has none to be within.
    errors = np.where(total > 1, np.sqrt(np.clip(spread, 0.0, None) / np.maximum(total - 1, 1)), 0.0)
    order = np.argsort(np.asarray(grid, dtype=np.float64), kind="stable")
    within = (gaps <= errors)[:, order]
    return order[np.argmax(within, axis=1)]


def select(values: np.ndarray, grid: Sequence[float], rule: Rule) -> int:
    """The column of ``values`` (queries x grid weights) the rule picks on all of its queries."""
    return int(select_weighted(np.asarray(values, dtype=np.float64), np.ones((1, len(values))), grid, rule)[0])


def fold_of(n_queries: int, folds: int, seed: int) -> np.ndarray:
    """Each query's fold: a seeded shuffle cut into ``folds`` parts of near-equal size."""
    fold = np.empty(n_queries, dtype=np.int64)
    for number, members in enumerate(np.array_split(np.random.default_rng(seed).permutation(n_queries), folds)):
        fold[members] = number
    return fold


def out_of_fold_means(values: np.ndarray, reference: np.ndarray, counts: np.ndarray, fold: np.ndarray,
                      grid: Sequence[float], rule: Rule) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``counts``: the mean out-of-fold value, the mean out-of-fold gain over ``reference``, and each
    fold's picked column (replicates x folds)."""
    folds = int(fold.max()) + 1
    rows = np.arange(len(counts))
    picked = np.empty((len(counts), folds), dtype=np.int64)
    scored = np.zeros(len(counts))
    for number in range(folds):
        held = fold == number
        picked[:, number] = select_weighted(values[~held], counts[:, ~held], grid, rule)
        scored += (counts[:, held] @ values[held])[rows, picked[:, number]]
    total = counts.sum(axis=1)
    return scored / total, (scored - counts @ reference) / total, picked


@dataclass(frozen=True)
class CrossValidated:
    column: int
    """The column the rule picks on every query: the blend's weight."""
    fold_columns: list[int]
    estimate: tuple[float, float, float]
    """Mean out-of-fold value and its bootstrap CI (low, high)."""
    gain: tuple[float, float, float]
    """Mean out-of-fold gain over weight 0 and its bootstrap CI."""
    in_sample: float
    """The picked weight's mean on the queries it was picked on."""


def cross_validate(values: np.ndarray, reference: np.ndarray, grid: Sequence[float], *, folds: int, rule: Rule,
                   seed: int, samples: int = SAMPLES, confidence: float = DEFAULT_CONFIDENCE) -> CrossValidated:
    values, reference = np.asarray(values, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    if not 2 <= folds <= len(values):
        raise ValueError(f"{folds} folds need between 2 and {len(values)} (the fit queries) folds")
    fold = fold_of(len(values), folds, seed)
    observed, gained, picked = out_of_fold_means(values, reference, np.ones((1, len(values))), fold, grid, rule)
    draws = np.random.default_rng(seed).multinomial(len(values), np.full(len(values), 1.0 / len(values)), samples)
    replicated, replicated_gain, _ = out_of_fold_means(values, reference, draws.astype(np.float64), fold, grid, rule)
    levels = [(1 - confidence) / 2, (1 + confidence) / 2]
    estimate = (float(observed[0]), *(float(q) for q in np.quantile(replicated, levels)))
    gain = (float(gained[0]), *(float(q) for q in np.quantile(replicated_gain, levels)))
    column = select(values, grid, rule)
    return CrossValidated(column, picked[0].tolist(), estimate, gain, float(values[:, column].mean()))
