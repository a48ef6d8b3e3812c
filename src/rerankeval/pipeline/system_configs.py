"""The ``systems`` of params.yaml typed by each kind's config class: for the stages that build systems only, since
typing imports the kinds they name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.errors import ConfigError
from ..retrieval.candidates import candidate_source, first_stage_filled
from ..systems.registry import SYSTEM_KINDS, SystemConfig, composed_of, parse_systems
from ..training.seeds import seeded_systems
from .params import Params

FIRST_STAGE_READS = ("bm25_score", "bm25_rank", "dense_score", "dense_rank", "identifier_in_lexical_top1",
                     "first_stage_agree")
"""Settings that read the candidates' BM25 or dense columns (``column:bm25_score``, a routed rule's features):
only the hybrid candidate source fills them."""


def system_configs(params: Params,
                   systems: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, SystemConfig]:
    """Every system's typed settings by name (``systems``: one training seed's copy of ``params.systems``); a bad
    setting is refused naming params.yaml and the key."""
    try:
        return parse_systems(params.systems if systems is None else systems)
    except ConfigError as err:
        raise ConfigError(f"{params.source}: {err}") from None


def first_seed_configs(params: Params) -> dict[str, SystemConfig]:
    """``system_configs`` with every seed set's model replaced by its first seed's: what the stages that build one
    model per system (latency, the load test, sweep) build, the same model as the run file's (stage rerank)."""
    per_seed = seeded_systems(params.systems)
    return system_configs(params, None if per_seed is None else next(iter(per_seed.values())))


def seeded_configs(params: Params, configs: Mapping[str, SystemConfig],
                   name: str) -> dict[int, dict[str, SystemConfig]]:
    """Each training seed's typed systems (``training.seeds.seeded_systems``) when system ``name``, or a system it is
    composed of, reads a seed set; {} when it reads none (it is built once, as before)."""
    per_seed = seeded_systems(params.systems)
    if per_seed is None:
        return {}
    first = next(iter(per_seed.values()))
    reading = {system for system, config in first.items() if config != params.systems[system]}
    if not reading & composed_of(name, configs):
        return {}
    return {seed: system_configs(params, systems) for seed, systems in per_seed.items()}


def check_first_stage_reads(params: Params, configs: dict[str, SystemConfig], candidates: Mapping[str, Any]) -> None:
    """Refuse every configured system that reads the candidates' BM25 or dense columns when the frozen candidates
    (their metadata: ``candidates``) have none (a run, or a replay file without them), before any is scored."""
    if first_stage_filled(candidates):
        return
    for name, config in configs.items():
        retriever = SYSTEM_KINDS.get(config.kind).traits.retriever
        setting = "" if retriever in ("bm25", "dense") else _first_stage_setting(params.systems[name])
        if setting is not None:
            source = candidate_source(candidates)
            raise ConfigError(
                f"{params.source}: systems.{name}{setting} reads the candidates' BM25 or dense ranking, but the "
                f"candidates come from the {source['kind']} source ({source.get('file', '')}), which has neither. "
                f"Fix: drop the system (remove it from its set's defaults in conf/system_set/, or `dvc exp run -S "
                f"'~system@systems.{name}'`), or use retrieval=hybrid.")


def _first_stage_setting(value, path: str = "") -> str | None:
    """The path (``.key``, ``[i]``) of the first setting under ``value`` that names a BM25 or dense column or
    feature, or None."""
    if isinstance(value, str):
        return path if value.removeprefix("column:") in FIRST_STAGE_READS else None
    steps = ((f".{key}", key, item) for key, item in value.items()) if isinstance(value, dict) else \
        ((f"[{index}]", None, item) for index, item in enumerate(value)) if isinstance(value, list) else ()
    for step, key, item in steps:
        found = path + step if key in FIRST_STAGE_READS else _first_stage_setting(item, path + step)
        if found is not None:
            return found
    return None
