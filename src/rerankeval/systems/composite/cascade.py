"""``cascade``: system ``first`` scores the top ``depth`` candidates, system ``second`` rescores first's top
``second_depth``.

The final order is second's order of those ``second_depth`` candidates, then the rest of the top ``depth`` in
first's order, then the remaining candidates in fused order. Scores in the run: second's for the candidates it
scored; below them, values that keep first's order (``components.below``). Latency and cost are the sum of both
stages (plus the ordering); pairs either stage already scored come from the pair-score cache. At ``second_depth`` 0
the second stage is not called: the cascade is its first stage alone, and costs what that costs. Token counts in the
run are those of the stage whose model counts tokens, on the rows it scored (``CascadeSystem._row_token_counts``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from ..base import Outcome, QueryCandidates, Scores
from ..registry import BuildContext, register_system
from .components import (Component, ComponentName, CompositeConfig, CompositeSystem, below, check_composition,
                         component, failed, summed, system_order)


class CascadeConfig(CompositeConfig):
    first: ComponentName
    """Scores the top ``depth`` candidates."""
    second: ComponentName
    """Rescores first's top ``second_depth``."""
    second_depth: int = Field(ge=0)
    """0: no second stage (first's order alone)."""

    @model_validator(mode="after")
    def _second_stage_within_the_first(self) -> "CascadeConfig":
        if self.second_depth > self.depth:
            raise ValueError(f"second_depth {self.second_depth} exceeds depth {self.depth}: the second stage rescores "
                             "part of what the first stage scored")
        if self.first == self.second:
            raise ValueError(f"first and second are both {self.first!r}")
        return self

    def component_names(self) -> list[str]:
        return [self.first, self.second]


class CascadeSystem(CompositeSystem):
    def __init__(self, first: Component, second: Component, second_depth: int):
        self.first, self.second, self.second_depth = first, second, second_depth

    def combine(self, queries: Sequence[QueryCandidates]) -> dict[str, Outcome]:
        firsts = self.first.score_all(queries)
        results: dict[str, Outcome] = {}
        shortlists, orders, own_s = {}, {}, {}
        for query in queries:
            outcome = firsts[query.query_id]
            if isinstance(outcome, Exception):
                results[query.query_id] = failed({self.first.name: outcome}, 0.0)
                continue
            started = time.perf_counter()
            order = system_order(outcome.values, query.frame)
            orders[query.query_id] = order
            shortlists[query.query_id] = QueryCandidates(query.query, query.frame.iloc[order[:self.second_depth]])
            own_s[query.query_id] = time.perf_counter() - started
        seconds = self.second.score_all(list(shortlists.values())) if self.second_depth else {}
        for query in queries:
            if query.query_id in results:
                continue
            started = time.perf_counter()
            parts = {self.first.name: firsts[query.query_id]}
            if self.second_depth:
                parts[self.second.name] = seconds[query.query_id]
            failure = failed(parts, own_s[query.query_id])
            if failure is not None:
                results[query.query_id] = failure
                continue
            order = orders[query.query_id]
            rescored = parts[self.second.name].values if self.second_depth else np.empty(0)
            values = np.empty(len(query.frame), dtype=np.float64)
            values[order[:len(rescored)]] = rescored
            values[order[len(rescored):]] = below(rescored, len(order) - len(rescored))
            results[query.query_id] = summed(parts, values,
                                             own_s=own_s[query.query_id] + time.perf_counter() - started)
            results[query.query_id].pair_stats = self._row_token_counts(parts, order, len(query.frame))
        return results

    def _row_token_counts(self, parts: dict[str, Scores], order: np.ndarray, rows: int) -> dict[str, np.ndarray]:
        """Token accounting per row (``base.PAIR_STATS``) when one stage's model tokenised pairs: its counts on the
        rows it scored, None on the others (a first stage scored from a column, or rows below the second's
        shortlist). When both stages count tokens none is recorded: a shortlisted row was tokenised twice, by two
        models, and no one count stands for it."""
        first = parts[self.first.name].pair_stats
        second = parts[self.second.name].pair_stats if self.second_depth else {}
        if first and second:
            return {}
        if first:
            return first
        counts = {}
        for column, values in second.items():
            counts[column] = np.full(rows, None, dtype=object)
            counts[column][order[:len(values)]] = np.asarray(values, dtype=object)
        return counts

    def components(self) -> list[Component]:
        return [self.first, self.second]

    def describe(self) -> dict[str, Any]:
        return {"cascade": f"{self.first.name} on the top depth, then {self.second.name} on its top "
                           f"{self.second_depth}",
                "first": self.first.describe(), "second": self.second.describe(), "second_depth": self.second_depth}


@register_system("cascade", CascadeConfig, composite=True)
def _cascade(config: CascadeConfig, context: BuildContext) -> CascadeSystem:
    check_composition(context.name, config, context.systems)
    where = f"systems.{context.name}"
    return CascadeSystem(component(context, config.first, f"{where}.first"),
                         component(context, config.second, f"{where}.second"), config.second_depth)
