"""``routed``: per query, skip reranking or send the query to a named system, by declared rules.

Rules are tried in order; the first whose conditions all hold decides (``then``: ``skip`` or a system name), else
``default`` does. Conditions read the query and its frozen candidates only (``features.py``): an identifier in the
query, that identifier being the lexical top-1 passage's own, BM25 and dense agreeing on the top-1, a first-stage
score margin, the query's slice labels. A skipped query keeps the fused order with mode ``SKIPPED`` (a decision,
not a failure like ``FUSION_FALLBACK``): no model cost, and its latency is the time the routing took. A query sent
to a system is scored by it over its own configured depth (at most this system's ``depth``; the rest follow in
fused order), and costs what that system costs plus the routing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from ...core.config import StrictConfig
from ..base import SKIPPED, Outcome, QueryCandidates, Scores
from ..registry import BuildContext, register_system
from .components import (SCORE_COLUMNS, Component, CompositeConfig, CompositeSystem, below, check_composition,
                         component, component_depth, failed, summed)
from .features import DEFAULT_IDENTIFIER_PATTERN, QueryFeatures

SKIP = "skip"


class MarginCondition(StrictConfig):
    """Top-1 minus top-2 of a first-stage score (divided by |top-1| when ``relative``) against a threshold."""

    column: Literal["bm25_score", "dense_score", "fused_score"] = "bm25_score"
    at_least: float | None = None
    below: float | None = None
    relative: bool = False

    @model_validator(mode="after")
    def _one_threshold(self) -> "MarginCondition":
        if (self.at_least is None) == (self.below is None):
            raise ValueError("set exactly one of at_least or below")
        return self


class RouteCondition(StrictConfig):
    """Every condition that is set must hold; an unset one is not tested."""

    identifier_in_query: bool | None = None
    identifier_in_lexical_top1: bool | None = None
    first_stage_agree: bool | None = None
    margin: MarginCondition | None = None
    labels: dict[str, list[str]] | None = None
    """Slice label -> accepted values (the query's label must be one of them)."""

    def holds(self, features: QueryFeatures) -> bool:
        checks = {"identifier_in_query": lambda: bool(features.identifiers),
                  "identifier_in_lexical_top1": lambda: features.identifier_in_lexical_top1,
                  "first_stage_agree": lambda: features.first_stage_agree}
        for name, check in checks.items():
            wanted = getattr(self, name)
            if wanted is not None and check() != wanted:
                return False
        if self.margin is not None:
            gap = features.margin(self.margin.column, self.margin.relative)
            if (self.margin.at_least is not None and not gap >= self.margin.at_least) or \
                    (self.margin.below is not None and not gap < self.margin.below):
                return False
        labels = features.query.query.labels
        return all(labels.get(key) in values for key, values in (self.labels or {}).items())


class RouteRule(StrictConfig):
    when: RouteCondition
    then: str
    """``skip`` or the name of a system under ``systems``."""


class RoutedConfig(CompositeConfig):
    rules: list[RouteRule] = Field(min_length=1)
    default: str
    """Where a query goes when no rule matches: ``skip`` or a system name."""
    identifier_pattern: str = DEFAULT_IDENTIFIER_PATTERN

    @field_validator("identifier_pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as err:
            raise ValueError(f"not a regular expression: {err}") from None
        return pattern

    def targets(self) -> list[str]:
        return list(dict.fromkeys(target for target in [*(rule.then for rule in self.rules), self.default]
                                  if target != SKIP))

    def component_names(self) -> list[str]:
        return self.targets()


class RoutedSystem(CompositeSystem):
    def __init__(self, config: RoutedConfig, targets: Mapping[str, Component], depths: Mapping[str, int | None]):
        self.config, self.targets, self.depths = config, dict(targets), dict(depths)
        self.pattern = re.compile(config.identifier_pattern)
        self.routes: dict[str, int] = {}

    def route(self, query: QueryCandidates) -> tuple[str, str]:
        """(target, why): the first matching rule's target, else the default."""
        features = QueryFeatures(query, self.pattern)
        for number, rule in enumerate(self.config.rules):
            if rule.when.holds(features):
                return rule.then, f"rule {number}"
        return self.config.default, "default"

    def combine(self, queries: Sequence[QueryCandidates]) -> dict[str, Outcome]:
        decisions, routing_s = {}, {}
        for query in queries:
            started = time.perf_counter()
            decisions[query.query_id] = self.route(query)
            routing_s[query.query_id] = time.perf_counter() - started
        results: dict[str, Outcome] = {}
        for target in dict.fromkeys(target for target, _ in decisions.values()):
            routed = [query for query in queries if decisions[query.query_id][0] == target]
            self.routes[target] = self.routes.get(target, 0) + len(routed)
            if target == SKIP:
                for query in routed:  # the fused order, no model: only the routing took time
                    results[query.query_id] = Scores(query.frame["fused_score"].to_numpy(dtype=np.float64),
                                                     mode=SKIPPED, wall_s=routing_s[query.query_id])
                continue
            depth = self.depths[target]
            heads = {query.query_id: QueryCandidates(query.query, query.frame.iloc[:depth] if depth else query.frame)
                     for query in routed}
            outcomes = self.targets[target].score_all(list(heads.values()))
            for query in routed:
                started = time.perf_counter()
                part = {target: outcomes[query.query_id]}
                failure = failed(part, routing_s[query.query_id])
                if failure is not None:
                    results[query.query_id] = failure
                    continue
                values = part[target].values
                padded = np.concatenate([values, below(values, len(query.frame) - len(values))])
                results[query.query_id] = summed(part, padded,
                                                 own_s=routing_s[query.query_id] + time.perf_counter() - started)
        return results

    def components(self) -> list[Component]:
        return list(self.targets.values())

    def describe(self) -> dict[str, Any]:
        return {"rules": [rule.to_dict() for rule in self.config.rules], "default": self.config.default,
                "identifier_pattern": self.config.identifier_pattern,
                "routes": dict(sorted(self.routes.items())),
                "targets": {name: target.describe() for name, target in self.targets.items()}}


@register_system("routed", RoutedConfig, composite=True)
def _routed(config: RoutedConfig, context: BuildContext) -> RoutedSystem:
    check_composition(context.name, config, context.systems)
    where = f"systems.{context.name}"
    targets = {name: component(context, name, f"{where}.rules") for name in config.targets()}
    return RoutedSystem(config, targets, {name: component_depth(context, name) for name in targets})


__all__ = ["SCORE_COLUMNS", "SKIP", "RoutedConfig", "RoutedSystem"]
