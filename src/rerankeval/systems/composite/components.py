"""What composite systems are made of: other configured systems, built once per process, whose scores and costs
combine.

A composite (``blend``, ``routed``, ``cascade``) names its components by their names under ``systems``, or as
``column:<name>`` for a first-stage score column of the candidates (``bm25_score``, ``dense_score``,
``fused_score``). Each component is built once per process (``BuildContext.shared``), so composites that share a
model load it once, and wrapped in a ``Component`` that scores each (query, candidate list) once and counts the pairs
its model scored and those read from the pair-score cache. A pair scorer inside a composite therefore reads what the
pair's own system already scored: a blend of a cached cross-encoder does no inference.

Costs add up: a composite's compute time, replayed compute time, cache hits and wall time are the sums of its
components' (plus its own combination time), so its latency and cost are those of the model calls it makes. A
component failing on a query fails the composite on that query (fused order, with the component named).
Deadlines: a composite judges its own ``deadline_s`` on the summed cold compute; its components' deadlines are not
applied inside it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Annotated, Any

import numpy as np
import pandas as pd
from pydantic import AfterValidator

from ...core.errors import ConfigError, ScoringFailure
from ..baselines import ColumnSystem
from ..base import RERANKED, Outcome, QueryCandidates, Scores, System, check_deadline
from ..pair_counts import PairCounts
from ..pairs import PairSystem
from ..registry import BuildContext, SystemConfig, build_system

COLUMN_PREFIX = "column:"
SCORE_COLUMNS = ("bm25_score", "dense_score", "fused_score")
CODE_DIR = "src/rerankeval/systems"
"""A component whose DVC dependency is code here needs none in the composite: a composite's code fingerprint holds
its components' kinds' code (``data/code/rerank_<system>.json``), so only a model or run file must be watched."""


class Component(System):
    """A configured system used inside composites: each (query, candidate list) is scored once per process."""

    def __init__(self, name: str, system: System):
        self.name, self.system = name, system
        self.counts_pairs = isinstance(system, PairSystem)
        self.counts = PairCounts()
        self._memo: dict[tuple, Outcome] = {}

    def score_all(self, queries: Sequence[QueryCandidates], deadline_s: float | None = None) -> dict[str, Outcome]:
        keys = {query.query_id: (query.query_id, query.query_text, tuple(query.frame["doc_id"])) for query in queries}
        todo = [query for query in queries if keys[query.query_id] not in self._memo]
        fresh = self.system.score_all(todo, None) if todo else {}
        for query in queries:
            key = keys[query.query_id]
            if query.query_id in fresh:
                outcome = self._memo[key] = fresh[query.query_id]
                if self.counts_pairs and isinstance(outcome, Scores):
                    self.counts.scored += len(query.frame) - outcome.cache_hits
                    self.counts.from_cache += outcome.cache_hits
            elif self.counts_pairs:
                self.counts.reused += len(query.frame)
        return {query.query_id: check_deadline(self._memo[keys[query.query_id]], deadline_s) for query in queries}

    @contextmanager
    def uncached(self) -> Iterator[None]:
        """Nothing remembered from earlier calls, or kept for later ones, and the system's own ``uncached``."""
        self._memo.clear()
        try:
            with self.system.uncached():
                yield
        finally:
            self._memo.clear()

    def describe(self) -> dict[str, Any]:
        return self.system.describe()


def component(context: BuildContext, name: str, where: str) -> Component:
    """The component ``name`` (a system under ``systems`` or ``column:<name>``), built once per process."""
    built = context.shared.setdefault("components", {})
    if name in built:
        return built[name]
    if name.startswith(COLUMN_PREFIX):
        column = name[len(COLUMN_PREFIX):]
        built[name] = Component(name, ColumnSystem(column))
        return built[name]
    config = context.systems.get(name)
    if config is None:
        raise ConfigError(f"{where}: no system {name!r} under `systems` (configured: {', '.join(context.systems)}).")
    if config.outdated == "demote":
        raise ConfigError(f"{where}: {name!r} has outdated: demote, a rule on its ranking, which a composite does not "
                          "read (it reads its components' scores). Fix: set outdated: demote on the composite itself, "
                          f"and use a system without it here.")
    building = context.shared.setdefault("building", [])
    if name in building:
        raise ConfigError(f"{where}: {' -> '.join([*building, name])} is a cycle: a system cannot contain itself.")
    building.append(name)
    try:
        built[name] = Component(name, build_system(name, config, context))
    finally:
        building.remove(name)
    return built[name]


# ---------------------------------------------------------------------------------------------------------------
# Configuration shared by the composite kinds


def column_name(value: str) -> str:
    if value.startswith(COLUMN_PREFIX) and value[len(COLUMN_PREFIX):] not in SCORE_COLUMNS:
        raise ValueError(f"{value!r}: a score column is one of {', '.join(COLUMN_PREFIX + c for c in SCORE_COLUMNS)}")
    return value


ComponentName = Annotated[str, AfterValidator(column_name)]
"""A system under ``systems``, or ``column:<name>`` for a first-stage score column of the candidates."""


class CompositeConfig(SystemConfig):
    """Settings of a system composed of others.

    DVC gives each system one dependency (``depends_on``) besides the candidates and the code, and tracks only the
    system's own settings. So a composite may contain at most one system with inputs of its own (a model or a run
    file; reference systems and score columns have none), and its ``depends_on`` is that system's run file
    (``data/runs/run_<name>.parquet``): DVC runs that system first, so its pairs are in the pair-score cache, and
    re-runs the composite whenever that system's model or settings change its run."""

    def component_names(self) -> list[str]:
        raise NotImplementedError


def check_composition(name: str, config: CompositeConfig, systems: Mapping[str, SystemConfig]) -> None:
    """Refuse a composite whose single DVC dependency does not cover its components (see ``CompositeConfig``)."""
    if config.depends_on is None:  # not run by DVC
        return
    where = f"systems.{name}.depends_on"
    names = [c for c in dict.fromkeys(config.component_names()) if not c.startswith(COLUMN_PREFIX)]
    with_inputs = [c for c in names if not _code_only(c, systems)]
    if len(with_inputs) > 1:
        raise ConfigError(f"{where}: {', '.join(map(repr, with_inputs))} each depend on a model or run file, but DVC "
                          f"watches one dependency per system and only the system's own settings, so a change to the "
                          f"others would leave this run stale. Fix: compose at most one such system (the others "
                          f"reference systems or column:<score>).")
    if with_inputs and not config.depends_on.replace("\\", "/").endswith(f"run_{with_inputs[0]}.parquet"):
        raise ConfigError(f"{where} is {config.depends_on!r}; set it to the run file of {with_inputs[0]!r} "
                          f"(data/runs/run_{with_inputs[0]}.parquet), so DVC runs that system first and re-runs this "
                          f"one when its model or settings change.")


def _code_only(name: str, systems: Mapping[str, SystemConfig]) -> bool:
    component_config = systems.get(name)
    depends_on = str(component_config.depends_on or "") if component_config is not None else ""
    return depends_on.startswith(CODE_DIR) or not depends_on


# ---------------------------------------------------------------------------------------------------------------
# Scores: normalisation, ordering and the sum of costs

NORMALIZATIONS = ("minmax", "zscore")


def normalise(values: np.ndarray, how: str) -> np.ndarray:
    """Per-query normalisation of one component's scores: ``minmax`` to [0, 1], ``zscore`` to mean 0 and standard
    deviation 1; a query whose scores are all equal gets 0 for every candidate (it carries no preference)."""
    values = np.asarray(values, dtype=np.float64)
    if how == "minmax":
        spread = values.max() - values.min() if len(values) else 0.0
        return (values - values.min()) / spread if spread > 0 else np.zeros_like(values)
    if how == "zscore":
        deviation = values.std() if len(values) else 0.0
        return (values - values.mean()) / deviation if deviation > 0 else np.zeros_like(values)
    raise ValueError(f"unknown normalisation {how!r}; use one of {NORMALIZATIONS}")


def system_order(values: np.ndarray, frame) -> np.ndarray:
    """Positions of ``frame``'s rows in the order the rerank driver would give these scores (ties: fused rank, then
    doc id)."""
    return keyed_order(values, frame["doc_id"].to_numpy(), frame["fused_rank"].to_numpy())


def keyed_order(values: np.ndarray, doc_ids: np.ndarray, fused_ranks: np.ndarray) -> np.ndarray:
    """``system_order`` from the rows' doc ids and fused ranks as arrays."""
    return np.lexsort((doc_ids, fused_ranks, -np.asarray(values, float)))


class Rankings:
    """Queries' candidates (``frames``: one per query, all its candidates in fused order) ranked by any scores as the
    rerank driver assembles a run: the first ``len(values)`` rows of a query by its scores, the rest in fused order.
    Prepared once and ranked many times: a blend's weight fit ranks its queries once per weight of its grid. With a
    frame per query and weight, the demo's rerank@blend_ce_fusion took 1.7-1.9 s against 1.1-1.3 s, its scores cached
    (Intel Xeon, 2 cores, `python -m rerankeval.pipeline rerank blend_ce_fusion`, twice each; the run identical)."""

    def __init__(self, frames: Sequence[pd.DataFrame]):
        columns = ["query_id", "doc_id", "fused_rank"]
        self.stacked = pd.concat([frame[columns] for frame in frames], ignore_index=True) if frames else \
            pd.DataFrame(columns=columns)
        self.sizes = [len(frame) for frame in frames]
        self.starts = np.cumsum([0, *self.sizes])[:-1]
        self.keys = [(frame["doc_id"].to_numpy(), frame["fused_rank"].to_numpy()) for frame in frames]

    def run(self, values: Sequence[np.ndarray]) -> pd.DataFrame:
        """Every query's run by its ``values`` (in the frames' order), in one frame: query_id, doc_id, fused_rank,
        rank."""
        positions = [start + np.concatenate([keyed_order(scores, doc_ids[:len(scores)], fused_ranks[:len(scores)]),
                                             np.arange(len(scores), size)])
                     for start, size, (doc_ids, fused_ranks), scores in zip(self.starts, self.sizes, self.keys, values)]
        out = self.stacked.iloc[np.concatenate(positions) if positions else []].reset_index(drop=True)
        out["rank"] = np.concatenate([np.arange(1, size + 1, dtype=np.int64) for size in self.sizes]) \
            if self.sizes else np.empty(0, dtype=np.int64)
        return out


def below(scored: np.ndarray, count: int) -> np.ndarray:
    """``count`` scores strictly below every score in ``scored``, decreasing: the rows a stage did not score keep
    the order they are given in, after every row it scored."""
    floor = float(np.min(scored)) if len(scored) else 0.0
    return floor - 1.0 - np.arange(count, dtype=np.float64)


def summed(parts: Mapping[str, Scores], values: np.ndarray, *, own_s: float, mode: str = RERANKED) -> Scores:
    """A composite's scores for one query: its values and the sum of its components' costs."""
    timings: dict[str, float] = {}
    for name, part in parts.items():
        for key, seconds in part.timings.items():
            timings[f"{name}.{key}"] = timings.get(f"{name}.{key}", 0.0) + seconds
    stats = next((part.pair_stats for part in parts.values() if part.pair_stats), {})
    return Scores(np.asarray(values, dtype=np.float64), mode=mode,
                  compute_s=sum(part.compute_s for part in parts.values()),
                  replayed_s=sum(part.replayed_s for part in parts.values()),
                  cache_hits=sum(part.cache_hits for part in parts.values()),
                  wall_s=sum(part.wall_s for part in parts.values()) + own_s, timings=timings,
                  pair_stats=stats if all(len(v) == len(values) for v in stats.values()) else {})


def failed(parts: Mapping[str, Outcome], own_s: float) -> ScoringFailure | None:
    """The first component failure of a query, renamed to say which component failed, with the time spent."""
    for name, part in parts.items():
        if isinstance(part, ScoringFailure):
            failure = ScoringFailure(part.reason, f"component {name}: {part.detail}")
            failure.wall_s = sum(p.wall_s for p in parts.values()) + own_s
            failure.compute_s = sum(p.compute_s for p in parts.values())
            failure.replayed_s = sum(p.replayed_s for p in parts.values())
            return failure
    return None


class CompositeSystem(System):
    """Base of composites: ``score_all`` times the composite's own work and judges its deadline on cold compute."""

    def combine(self, queries: Sequence[QueryCandidates]) -> dict[str, Outcome]:
        raise NotImplementedError

    def components(self) -> list[Component]:
        """The components it combines."""
        raise NotImplementedError(f"{type(self).__name__} lists no components(): the latency stage makes them cold "
                                  "through it (CompositeSystem.uncached), so every composite returns them")

    @contextmanager
    def uncached(self) -> Iterator[None]:
        """Every component cold (``Component.uncached``): a blend of a cross-encoder is timed scoring its pairs."""
        with ExitStack() as stack:
            for part in self.components():
                stack.enter_context(part.uncached())
            yield

    def score(self, query: QueryCandidates) -> Scores:
        outcome = self.combine([query])[query.query_id]
        if isinstance(outcome, ScoringFailure):
            raise outcome
        return outcome

    def score_all(self, queries: Sequence[QueryCandidates], deadline_s: float | None) -> dict[str, Outcome]:
        return {query_id: check_deadline(outcome, deadline_s) for query_id, outcome in self.combine(queries).items()}


def timed(started: float) -> float:
    return time.perf_counter() - started


def component_depth(context: BuildContext, name: str) -> int | None:
    """A configured component's own depth (None for a score column)."""
    if name.startswith(COLUMN_PREFIX):
        return None
    return context.systems[name].depth


