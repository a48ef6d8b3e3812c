"""``blend``: a weighted sum of two components' per-query normalised scores.

``score = weight * norm(first) + (1 - weight) * norm(second)`` over the top ``depth`` candidates, where ``norm`` is
the declared per-query normalisation (``minmax`` or ``zscore``, ``components.normalise``). Typical use: a
cross-encoder blended with the fused score (``fusion``) or BM25's (``column:bm25_score``).

The weight is a number, or ``fit``: then it is chosen when the system is built, on the ``fit.split`` queries (the
train split by default), never on the evaluated split, by ``fit.rule`` (``one_se`` by default: the smallest grid
weight within one standard error of the best mean ``fit.measure``; ``best``: the best mean, ties the first in the
grid) applied to all fit queries. The procedure is cross-validated over those queries (``fit.folds`` folds,
``weight_cv``): the record holds each fold's weight, the CV estimate of the fitted blend's measure and of its gain
over weight 0 (the second component alone) with bootstrap CIs, and the in-sample value beside them, which is
optimistic by construction. The fit scores its components once on those queries (pairs already in the pair-score
cache are read, not recomputed) and tries every weight on those scores in memory; the run's metadata records the
curve. A model fine-tuned on the fit split scores its own training queries far better than new ones, so a fit there
favours it (the demo's figures: results/benchmarks/training_ablations.yaml). When the model card lists queries held
out of training (``train.holdout``), the fit uses only those; otherwise the record names the in-sample components. A
dataset without the fit split fits on that split of ``train.fallback_path``, where the train stage trained the model
(``source`` in the record says which).

A component whose weight is 0 does not move the order, so the blend does not call it: a blend at weight 0 (or 1, of
its second component) costs only what its other component costs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from ...core.config import StrictConfig
from ...core.errors import ConfigError
from ...eval.measure_names import MeasureName
from ...stats.defaults import DEFAULT_CONFIDENCE
from ...training.config import MODEL_CARD
from ..base import Outcome, QueryCandidates, Scores
from ..registry import BuildContext, register_system
from .components import (NORMALIZATIONS, Component, ComponentName, CompositeConfig, CompositeSystem,
                         Rankings, check_composition, component, failed, normalise, summed)
from .weight_cv import SAMPLES, Rule, cross_validate

DEFAULT_GRID = [round(step / 20, 2) for step in range(21)]


class FitConfig(StrictConfig):
    split: str = "train"
    measure: MeasureName = "nDCG@10"
    max_queries: int | None = Field(None, ge=2)
    """Fit on a seeded sample of this many queries of the split (the cost of scoring them); None: all."""
    seed: int = 0
    """Seeds the sample, the folds' shuffle and the bootstrap of the CV estimate."""
    folds: int = Field(5, ge=2)
    """k of the k-fold cross-validation of the fit (at most the number of fit queries)."""
    rule: Rule = "one_se"
    """How a weight is picked on a set of queries (``weight_cv``): ``one_se`` or ``best``."""


class BlendConfig(CompositeConfig):
    components: list[ComponentName]
    """Exactly two: the first is weighted by ``weight``, the second by ``1 - weight``."""
    normalization: Literal["minmax", "zscore"] = "minmax"
    weight: float | Literal["fit"] = "fit"
    weight_grid: list[float] = DEFAULT_GRID
    fit: FitConfig = FitConfig()

    @model_validator(mode="after")
    def _two_components_and_weights_in_range(self) -> "BlendConfig":
        if len(self.components) != 2 or self.components[0] == self.components[1]:
            raise ValueError(f"components: name exactly two different systems, got {self.components}")
        weights = self.weight_grid + ([] if self.weight == "fit" else [self.weight])
        if not self.weight_grid or any(not 0.0 <= w <= 1.0 for w in weights):
            raise ValueError(f"weights must lie in [0, 1] (weight {self.weight}, weight_grid {self.weight_grid})")
        return self

    def component_names(self) -> list[str]:
        return list(self.components)


class BlendSystem(CompositeSystem):
    def __init__(self, parts: Sequence[Component], weight: float, normalization: str, fit: dict | None = None):
        self.parts, self.weight, self.normalization, self.fit = list(parts), weight, normalization, fit

    def combine(self, queries: Sequence[QueryCandidates]) -> dict[str, Outcome]:
        weighted = [(part, share) for part, share in zip(self.parts, (self.weight, 1.0 - self.weight)) if share > 0]
        outcomes = {part.name: part.score_all(queries) for part, _ in weighted}
        results: dict[str, Outcome] = {}
        for query in queries:
            started = time.perf_counter()
            parts = {name: outcome[query.query_id] for name, outcome in outcomes.items()}
            failure = failed(parts, 0.0)
            if failure is not None:
                results[query.query_id] = failure
                continue
            values = sum(share * normalise(parts[part.name].values, self.normalization) for part, share in weighted)
            results[query.query_id] = summed(parts, values, own_s=time.perf_counter() - started)
        return results

    def components(self) -> list[Component]:
        return list(self.parts)

    def describe(self) -> dict[str, Any]:
        return {"blend": f"{self.weight:g} * {self.normalization}({self.parts[0].name}) + "
                         f"{1 - self.weight:g} * {self.normalization}({self.parts[1].name})",
                "weight": self.weight, "normalization": self.normalization, "fit": self.fit,
                "components": {part.name: part.describe() for part in self.parts}, **self._reduces_to()}

    def _reduces_to(self) -> dict[str, Any]:
        """At weight 0 or 1 (a fitted weight can land there) the blend ranks by one component alone: which one, and
        why, so that a run equal to that component's is explained rather than taken for a lost setting."""
        if self.weight not in (0.0, 1.0):
            return {}
        alone, unused = self.parts if self.weight == 1.0 else self.parts[::-1]
        how = (f"fitted on the {self.fit['split']} split ({self.fit['queries']} queries, rule {self.fit['rule']})"
               if self.fit else "as configured")
        return {"reduces_to": {"system": alone.name, "why": f"its weight {how} is {self.weight:g}, so it ranks by "
                                                            f"{alone.name} alone and {unused.name} has no say"}}


def fit_weight(name: str, config: BlendConfig, parts: Sequence[Component], context: BuildContext) -> tuple[float, dict]:
    """The weight ``fit.rule`` picks on the fit split's queries, and the record of the fit (``weight_cv``)."""
    from ...eval.engine import evaluate

    fit, where = config.fit, f"systems.{name}"
    if context.candidates_of is None:
        raise ConfigError(f"{where}.weight: 'fit' needs the {fit.split!r} split's candidates, which this "
                          "caller does not provide. Fix: set a number.")
    if fit.split == context.evaluated_split:
        raise ConfigError(f"{where}.fit.split is {fit.split!r}, the evaluated split: a weight fitted there is tuned "
                          "on the queries it is judged on. Fix: fit on another split (train) or set a number.")
    frame, queries, split_qrels, source = context.candidates_of(fit.split)
    query_ids = sorted(frame["query_id"].unique())
    in_sample, held_out = training_queries(parts, fit.split)
    if held_out is not None:
        query_ids = [qid for qid in query_ids if qid in held_out]
    if fit.max_queries is not None and fit.max_queries < len(query_ids):
        rng = np.random.default_rng(fit.seed)
        query_ids = sorted(rng.choice(np.array(query_ids, dtype=object), fit.max_queries, replace=False).tolist())
    frames = {qid: group.sort_values("fused_rank").reset_index(drop=True)
              for qid, group in frame[frame["query_id"].isin(query_ids)].groupby("query_id", sort=True)}
    heads = [QueryCandidates(queries[qid], group.iloc[:config.depth]) for qid, group in frames.items()]
    outcomes = {part.name: part.score_all(heads) for part in parts}
    usable = [qid for qid in frames if all(isinstance(outcomes[part.name][qid], Scores) for part in parts)]
    if not usable:
        raise ConfigError(f"{where}: no {fit.split!r} query could be scored by every component to fit the "
                          "weight. Fix: set a number.")
    normalised = {qid: [normalise(outcomes[part.name][qid].values, config.normalization) for part in parts]
                  for qid in usable}
    qrels = split_qrels[split_qrels["query_id"].isin(usable)]

    rankings = Rankings([frames[qid] for qid in normalised])

    def per_query(weight: float) -> pd.Series:
        run = rankings.run([weight * first + (1.0 - weight) * second for first, second in normalised.values()])
        return evaluate(run, qrels, [fit.measure], queries=usable, no_relevant="drop")[fit.measure]

    grid = list(config.weight_grid)
    values = pd.concat([per_query(weight) for weight in grid], axis=1, keys=range(len(grid)))
    reference = values[grid.index(0.0)] if 0.0 in grid else per_query(0.0)
    if not 2 <= fit.folds <= len(values):
        fewer = f"set folds between 2 and {len(values)}, or " if len(values) >= 2 else ""
        raise ConfigError(f"{where}.fit.folds is {fit.folds}, but the fit has {len(values)} {fit.split!r} queries "
                          f"with a relevant passage. Fix: {fewer}fit on more queries (fit.max_queries, "
                          "train.holdout).")
    found = cross_validate(values.to_numpy(), reference.to_numpy(), grid, folds=fit.folds, rule=fit.rule,
                           seed=fit.seed)
    weight = grid[found.column]
    curve = [{"weight": w, "mean": round(float(values[j].mean()), 6), "queries": int(len(values))}
             for j, w in enumerate(grid)]
    gain = found.gain
    return weight, {"split": fit.split, "source": dict(source), "measure": fit.measure,
                    "queries": len(usable), "failed_queries": len(frames) - len(usable),
                    "weight": weight, "rule": fit.rule, "best_weight": grid[int(np.argmax(values.mean().to_numpy()))],
                    "curve": curve, "held_out_of_training": held_out is not None, "in_sample": in_sample,
                    "cv": {"folds": fit.folds, "fold_weights": [grid[j] for j in found.fold_columns],
                           "confidence": DEFAULT_CONFIDENCE, "samples": SAMPLES,
                           "estimate": _interval(found.estimate), "gain_over_zero": _interval(gain),
                           "distinguishable_from_zero": bool(gain[1] > 0 or gain[2] < 0),
                           "in_sample_mean": round(found.in_sample, 6)}}


def _interval(found: tuple[float, float, float]) -> dict[str, float]:
    return dict(zip(("mean", "low", "high"), (round(value, 6) for value in found)))


def training_queries(parts: Sequence[Component], split: str) -> tuple[list[str], set[str] | None]:
    """(components fine-tuned on all of ``split``, so in-sample there; the queries of ``split`` every component
    fine-tuned on it left out of training, or None when none did). Read from each model's card."""
    in_sample, held_out = [], None
    for part in parts:
        model_dir = part.describe().get("model_dir")
        path = Path(model_dir) / MODEL_CARD if model_dir else None
        card = json.loads(path.read_text(encoding="utf-8")) if path is not None and path.is_file() else {}
        if card.get("split") != split:
            continue
        kept_out = set(card.get("data", {}).get("held_out_queries", []))
        if not kept_out:
            in_sample.append(part.name)
        else:
            held_out = kept_out if held_out is None else held_out & kept_out
    return in_sample, held_out


@register_system("blend", BlendConfig, composite=True)
def _blend(config: BlendConfig, context: BuildContext) -> BlendSystem:
    name = context.name
    check_composition(name, config, context.systems)
    parts = [component(context, part, f"systems.{name}.components") for part in config.components]
    if config.weight != "fit":
        return BlendSystem(parts, float(config.weight), config.normalization)
    weight, record = fit_weight(name, config, parts, context)
    return BlendSystem(parts, weight, config.normalization, record)


__all__ = ["BlendConfig", "BlendSystem", "NORMALIZATIONS", "fit_weight"]
