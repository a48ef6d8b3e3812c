"""The system seam: what a system sees of a query, what it returns, and the open registry of system kinds.

A system scores a query's top-``depth`` candidates (higher is better); the rerank driver orders them, so a system
can only permute its candidates. A new kind is one file: a config class (a ``SystemConfig`` subclass) and a
factory registered with ``@register_system("kind", Config)``; third-party packages register through the
``rerankeval.systems`` entry-point group. Systems that score (query, passage) pairs independently register with
``rerankeval.systems.pairs.register_pair_scorer`` instead and get the pair-score cache, latency replay and
pluggable executors for free.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from pydantic import Field

from ..core.config import StrictConfig
from ..core.errors import DeadlineExceeded, InfrastructureError, ScoringFailure
from ..core.progress import Progress
from ..core.registry import Registry

RERANKED, FUSED_TAIL, FUSION_FALLBACK, SKIPPED = "RERANKED", "FUSED_TAIL", "FUSION_FALLBACK", "SKIPPED"
"""Modes of a run's rows: scored by the system; beyond the depth (fused order); the system failed on the query
(fused order, with the reason); the system chose not to rerank the query (fused order, not a failure)."""

PROGRAMMING_ERRORS = (InfrastructureError, MemoryError, NameError, ImportError, SyntaxError)
"""Exceptions that fail the stage even when a system raises them: the machinery is broken, not one query."""


@dataclass(frozen=True)
class Query:
    query_id: str
    text: str
    labels: Mapping[str, str | None] = field(default_factory=dict)
    """The query's slice labels (language, intent, ...), for systems that route on them."""


@dataclass(frozen=True)
class QueryCandidates:
    """One query's candidates to score, in fused order (columns of ``retrieval.candidates.load_candidates``)."""

    query: Query
    frame: pd.DataFrame

    @property
    def query_id(self) -> str:
        return self.query.query_id

    @property
    def query_text(self) -> str:
        return self.query.text

    @property
    def passages(self) -> list[str]:
        return self.frame["passage"].tolist()


@dataclass
class Scores:
    """A system's scores for one query's candidates and what producing them cost."""

    values: np.ndarray
    mode: str = RERANKED
    compute_s: float = 0.0
    """Seconds of computation this run (model time; 0 for scores read from columns)."""
    replayed_s: float = 0.0
    """Compute seconds of cache hits, as measured when those scores were computed."""
    cache_hits: int = 0
    wall_s: float = 0.0
    """Measured wall time of scoring this query this run (set by ``score_all``)."""
    timings: dict[str, float] = field(default_factory=dict)
    """A breakdown of ``compute_s`` by the system's own components (tokenize_s, forward_s, network_s, ...)."""
    pair_stats: dict[str, np.ndarray] = field(default_factory=dict)
    """Optional per-candidate arrays: query_tokens, passage_tokens, truncated."""

    @property
    def cold_compute_s(self) -> float:
        """Compute time as if nothing were cached: what deadlines and cost are judged on."""
        return self.compute_s + self.replayed_s


Outcome = Scores | ScoringFailure


class System:
    """Base class of systems: implement ``score`` (one query) and ``describe``; ``score_all`` handles failures."""

    def score(self, query: QueryCandidates) -> Scores:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {}

    def score_all(self, queries: Sequence[QueryCandidates], deadline_s: float | None) -> dict[str, Outcome]:
        """Every query's scores, or the failure that degrades it (a system error, or a missed deadline)."""
        outcomes = {}
        progress = Progress("rerank: scoring", len(queries), unit="queries")
        for query in queries:
            started = time.perf_counter()
            outcome = guarded(lambda: self.score(query))
            wall_s = time.perf_counter() - started
            if isinstance(outcome, Scores) and not outcome.compute_s and not outcome.replayed_s:
                outcome.compute_s = wall_s  # no finer accounting: the query took what it took
            outcome.wall_s = wall_s
            if isinstance(outcome, ScoringFailure):
                outcome.compute_s = wall_s
            outcomes[query.query_id] = check_deadline(outcome, deadline_s)
            progress.update()
        return outcomes


def guarded(score: Callable[[], Scores]) -> Outcome:
    """Run one query's scoring; a system's failure becomes that query's ``ScoringFailure``."""
    try:
        return score()
    except ScoringFailure as failure:
        return failure
    except PROGRAMMING_ERRORS:
        raise
    except Exception as err:  # a model or service failing on this query degrades the query, not the run
        return ScoringFailure("error", f"{type(err).__name__}: {err}")


def check_deadline(outcome: Outcome, deadline_s: float | None) -> Outcome:
    """The deadline is judged on cold compute time, so the result never depends on what the cache held."""
    if isinstance(outcome, Scores) and deadline_s is not None and outcome.cold_compute_s > deadline_s:
        failure = DeadlineExceeded(f"{outcome.cold_compute_s:.3f}s of compute > deadline {deadline_s:g}s")
        failure.wall_s, failure.compute_s, failure.replayed_s = outcome.wall_s, outcome.compute_s, outcome.replayed_s
        return failure
    return outcome


# ---------------------------------------------------------------------------------------------------------------
# Configuration and the registry


class SystemConfig(StrictConfig):
    """Settings every system has; a kind's config subclasses this and adds its own."""

    kind: str
    depth: int = Field(ge=1)
    """Candidates scored per query (in fused order); the rest keep the fused order."""
    deadline_s: float | None = Field(None, gt=0)
    """Per-query compute budget; a query over it falls back to the fused order."""
    depends_on: str | None = None
    """What DVC watches for this system besides the candidates (dvc.yaml): its model directory or run file."""


class SplitCandidates(NamedTuple):
    """One split's frozen candidates (fused order, with text), its queries and qrels, and where they come from."""

    candidates: pd.DataFrame
    queries: Mapping[str, Query]
    qrels: pd.DataFrame
    source: Mapping[str, Any]
    """dataset, path, split, and ``fallback`` (with its reason) when the split came from ``train.fallback_path``."""


@dataclass(frozen=True)
class BuildContext:
    """What a registered kind (a system, a generator) may need besides its own config."""

    qrels: pd.DataFrame | None = None
    """The snapshot's qrels, for systems that read judgments (the oracle)."""
    systems: Mapping[str, SystemConfig] = field(default_factory=dict)
    """Every configured system's typed settings by name (``Params.system_configs``; a mapping is typed here), for
    kinds composed of other systems."""
    candidates_of: Callable[[str], SplitCandidates] | None = None
    """A split's candidates (all of them, fused order), queries and qrels, for kinds that fit a setting on another
    split than the evaluated one (a blend's weight on the train split)."""
    name: str = ""
    """The name (under ``systems``) of the system being built; ``build_system`` sets it."""
    corpus_texts: Sequence[str] = ()
    """Every corpus text, for generators that need term statistics."""
    calibration: Mapping[str, Any] = field(default_factory=dict)
    """The calibrate stage's fitted settings, for generators."""
    shared: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Systems built for composites in this process, by name, so that every composite shares one instance (one model
    load, one scoring of each pair)."""

    def __post_init__(self) -> None:
        if any(not isinstance(config, SystemConfig) for config in self.systems.values()):
            object.__setattr__(self, "systems", {name: config if isinstance(config, SystemConfig) else
                                                 parse_system_config(name, config)
                                                 for name, config in self.systems.items()})


ROLES = ("reranker", "first_stage", "ceiling", "floor")
"""What a kind's systems are in a comparison: a reranker under test; a first-stage ranking as it is (a reference);
the ceiling (oracle) or floor (random) of what reranking the candidates can do (bounds, not deployable)."""


@dataclass(frozen=True)
class SystemKind:
    """A registered kind: its config class, its factory, and the role its systems play in reports and checks."""

    name: str
    config: type[SystemConfig]
    build: Callable[[Any, BuildContext], System]
    role: str = "reranker"
    retriever: str | None = None
    """For a first-stage kind: the first-stage ranking (``first_stage.parquet``'s retriever) it reproduces."""
    composite: bool = False
    """Composed of other configured systems (its settings are swept over their stored scores)."""

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"system kind {self.name!r}: role {self.role!r} is not one of {', '.join(ROLES)}")

    @property
    def reference(self) -> bool:
        """A reference point of the comparison (first stage or bound), not a reranker under test."""
        return self.role != "reranker"

    @property
    def bound(self) -> bool:
        return self.role in ("ceiling", "floor")


SYSTEM_KINDS: Registry[SystemKind] = Registry("system kind", entry_point_group="rerankeval.systems")


def register_system(kind: str, config: type[SystemConfig], *, role: str = "reranker", retriever: str | None = None,
                    composite: bool = False):
    """Decorator registering ``factory(config, context) -> System`` as the system kind ``kind``, with its role."""

    def register(factory: Callable[[Any, BuildContext], System]):
        SYSTEM_KINDS.add(kind, SystemKind(kind, config, factory, role, retriever, composite))
        return factory

    return register


def kind_of(config: Mapping[str, Any]) -> SystemKind:
    """The registered kind of a system's settings (a ``systems`` entry of params.yaml)."""
    return SYSTEM_KINDS.get(str(config.get("kind")))


def parse_system_config(name: str, mapping: Mapping[str, Any]) -> SystemConfig:
    where = f"systems.{name}"
    kind = mapping.get("kind") if isinstance(mapping, Mapping) else None
    return SYSTEM_KINDS.get(str(kind), where=f"{where}.kind").config.parse(mapping, where)


def parse_systems(mappings: Mapping[str, Mapping[str, Any]]) -> dict[str, SystemConfig]:
    """Every ``systems`` entry typed by its kind's config class: params.yaml's one parse of the systems."""
    return {name: parse_system_config(name, mapping) for name, mapping in mappings.items()}


def build_system(name: str, config: SystemConfig | Mapping[str, Any], context: BuildContext) -> System:
    """``config``: the system's typed settings (``Params.system_configs``), or a mapping parsed here."""
    if not isinstance(config, SystemConfig):
        config = parse_system_config(name, config)
    return SYSTEM_KINDS.get(config.kind).build(config, replace(context, name=name))
