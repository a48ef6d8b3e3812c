"""How a system kind is configured, registered and built: ``SystemConfig``, ``BuildContext`` and the open registry
of kinds.

A new kind is one file: a config class (a ``SystemConfig`` subclass) and a factory registered with
``@register_system("kind", Config)``; third-party packages register through the ``rerankeval.systems`` entry-point
group. Systems that score (query, passage) pairs independently register with
``rerankeval.systems.pairs.register_pair_scorer`` instead and get the pair-score cache, latency replay and
pluggable executors for free. Every kind, built-in or not, is declared under the ``rerankeval.systems`` entry-point
group (this package's pyproject.toml) and imported when its name is first looked up: a stage runs, and its DVC code
deps hold, the code of the kinds its systems name and no other (``pipeline.code``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import pandas as pd
from pydantic import Field

from ..core.config import StrictConfig
from ..core.registry import Registry
from .base import SplitCandidates, System
from .roles import KindTraits


class SystemConfig(StrictConfig):
    """Settings every system has; a kind's config subclasses this and adds its own."""

    kind: str
    depth: int = Field(ge=1)
    """Candidates scored per query (in fused order); the rest keep the fused order."""
    deadline_s: float | None = Field(None, gt=0)
    """Per-query compute budget; a query over it falls back to the fused order."""
    depends_on: str | None = None
    """What DVC watches for this system besides the candidates (dvc.yaml): its model directory or run file."""
    access_filter: bool = True
    """false: this system reranks the candidates as they were before the access filter (the withheld ones back in
    their places, ``retrieval.access``) and its context ignores access too: what a pipeline without the filter would
    show its users, to see the ACLViolation guardrail REJECT it. Never for a release."""
    outdated: Literal["keep", "demote"] = "keep"
    """demote: after this system ranks a query, the candidates outdated at the query's as-of date (the collection's
    validity labels: ``valid_to``, ``superseded_by``, ``status``; ``data.access``) go below the current ones, each
    part in the system's order: freshness as a rule after the score, which knows none (``rerank.driver``)."""


@dataclass(frozen=True)
class BuildContext:
    """What a registered kind (a system, a generator) may need besides its own config."""

    qrels: pd.DataFrame | None = None
    """The snapshot's qrels, for systems that read judgments (the oracle)."""
    systems: Mapping[str, SystemConfig] = field(default_factory=dict)
    """Every configured system's typed settings by name (``pipeline.system_configs``; a mapping is typed here), for
    kinds composed of other systems."""
    candidates_of: Callable[[str], SplitCandidates] | None = None
    """A split's candidates (all of them, fused order), queries and qrels, for kinds that fit a setting on another
    split than the evaluated one (a blend's weight on the train split)."""
    evaluated_split: str | None = None
    """The split the built systems are judged on, which no fit may read (None: not known to this caller)."""
    name: str = ""
    """The name (under ``systems``) of the system being built; ``build_system`` sets it."""
    corpus_texts: Sequence[str] = ()
    """Every corpus text, for generators that need term statistics."""
    calibration: Mapping[str, Any] = field(default_factory=dict)
    """The calibrate stage's fitted settings, for generators."""
    stale: Callable[[str, Sequence[str]], Any] | None = None
    """Per query id and doc ids: which are outdated at the query's as-of date (``data.access.AccessLabels.stale``),
    for a system with ``outdated: demote``; None: this caller read no labels."""
    shared: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Systems built for composites in this process, by name, so that every composite shares one instance (one model
    load, one scoring of each pair)."""

    def __post_init__(self) -> None:
        if any(not isinstance(config, SystemConfig) for config in self.systems.values()):
            object.__setattr__(self, "systems", {name: config if isinstance(config, SystemConfig) else
                                                 parse_system_config(name, config)
                                                 for name, config in self.systems.items()})


@dataclass(frozen=True)
class SystemKind:
    """A registered kind: its config class, its factory, and what its systems are in reports and checks."""

    name: str
    config: type[SystemConfig]
    build: Callable[[Any, BuildContext], System]
    traits: KindTraits = KindTraits()


SYSTEM_KINDS: Registry[SystemKind] = Registry("system kind", entry_point_group="rerankeval.systems")


def register_system(kind: str, config: type[SystemConfig], *, role: str = "reranker", retriever: str | None = None,
                    composite: bool = False, learned: bool = False):
    """Decorator registering ``factory(config, context) -> System`` as the system kind ``kind``, with its traits
    (``roles.KindTraits``)."""

    def register(factory: Callable[[Any, BuildContext], System]):
        try:
            traits = KindTraits(role, retriever, composite, learned)
        except ValueError as err:
            raise ValueError(f"system kind {kind!r}: {err}") from None
        SYSTEM_KINDS.add(kind, SystemKind(kind, config, factory, traits))
        return factory

    return register


def parse_system_config(name: str, mapping: Mapping[str, Any]) -> SystemConfig:
    where = f"systems.{name}"
    kind = mapping.get("kind") if isinstance(mapping, Mapping) else None
    return SYSTEM_KINDS.get(str(kind), where=f"{where}.kind").config.parse(mapping, where)


def parse_systems(mappings: Mapping[str, Mapping[str, Any]]) -> dict[str, SystemConfig]:
    """Every ``systems`` entry typed by its kind's config class: params.yaml's one parse of the systems."""
    return {name: parse_system_config(name, mapping) for name, mapping in mappings.items()}


def build_system(name: str, config: SystemConfig | Mapping[str, Any], context: BuildContext) -> System:
    """``config``: the system's typed settings (``pipeline.system_configs``), or a mapping parsed here."""
    if not isinstance(config, SystemConfig):
        config = parse_system_config(name, config)
    return SYSTEM_KINDS.get(config.kind).build(config, replace(context, name=name))


def composed_of(name: str, configs: Mapping[str, SystemConfig]) -> set[str]:
    """``name`` and every system under ``systems`` it is composed of, at any depth (score columns are none)."""
    found, pending = set(), [name]
    while pending:
        current = pending.pop()
        if current in found or current not in configs:
            continue
        found.add(current)
        pending += getattr(configs[current], "component_names", list)()
    return found
