"""The ``systems`` of params.yaml typed by each kind's config class: for the stages that build systems only, since
typing imports every system kind (``rerankeval.systems.builtin``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.errors import ConfigError
from ..retrieval.candidates import candidate_source, first_stage_filled
from ..systems import builtin  # noqa: F401  (registers the built-in kinds)
from ..systems.registry import SYSTEM_KINDS, SystemConfig, parse_systems
from .params import Params

FIRST_STAGE_READS = ("bm25_score", "bm25_rank", "dense_score", "dense_rank", "identifier_in_lexical_top1",
                     "first_stage_agree")
"""Settings that read the candidates' BM25 or dense columns (``column:bm25_score``, a routed rule's features):
only the hybrid candidate source fills them."""


def system_configs(params: Params) -> dict[str, SystemConfig]:
    """Every system's typed settings by name; a bad setting is refused naming params.yaml and the key."""
    try:
        return parse_systems(params.systems)
    except ConfigError as err:
        raise ConfigError(f"{params.source}: {err}") from None


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
                f"Fix: drop the system (remove it from conf/config.yaml's defaults, or `dvc exp run -S "
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
