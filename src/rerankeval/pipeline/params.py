"""params.yaml, typed: every block refuses unknown keys and wrong types, naming the key and the fix.

``systems`` stays as written (runs and latency records keep it verbatim); each entry is typed once, at load, by its
kind's own config class (``system_configs``), so a bad system setting is refused before any stage runs.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, model_validator

from ..core.config import StrictConfig
from ..core.errors import ConfigError
from ..eval.config import MeasureName
from ..policies.config import PoliciesConfig
from ..rag.config import RagConfig
from ..retrieval.freeze import RetrievalConfig
from ..serving.config import ServingConfig
from ..stats.comparison import CompareConfig
from ..stats.verdict import CriticalSlice
from ..systems import SystemConfig, parse_systems
from ..training.cross_encoder import TrainConfig

PARAMS = Path("params.yaml")


class DatasetConfig(StrictConfig):
    name: str
    path: str
    splits: list[str] | None = None
    """The qrels files to read (default: every qrels/*.tsv)."""
    eval_split: str = "test"
    critical_slices: list[CriticalSlice] = []


class EvaluationConfig(StrictConfig):
    measures: list[MeasureName]
    oracle_measures: list[MeasureName] = []
    depths: list[int] = []
    depth_measures: list[MeasureName] = []
    no_relevant: Literal["drop", "zero"] = "drop"
    hourly_price_usd: float = Field(ge=0)
    """Machine price for cost per query (one query at a time)."""
    warmup_queries: int = Field(2, ge=0)
    """The first queries a system processes are left out of its latency percentiles (model warm-up)."""


class Params(StrictConfig):
    dataset: DatasetConfig
    retrieval: RetrievalConfig
    train: TrainConfig
    evaluation: EvaluationConfig
    compare: CompareConfig
    policies: PoliciesConfig = PoliciesConfig()
    serving: ServingConfig = ServingConfig()
    systems: dict[str, dict[str, Any]]
    system_names: list[str]
    rag: RagConfig = RagConfig()

    @model_validator(mode="after")
    def _systems_listed_once(self) -> "Params":
        if list(self.systems) != self.system_names:
            raise ValueError(f"system_names {self.system_names} must list the systems {list(self.systems)} in order; "
                             "conf/config.yaml derives it (regenerate params.yaml)")
        if self.compare.baseline not in self.systems:
            raise ValueError(f"compare.baseline {self.compare.baseline!r} is not a configured system "
                             f"({', '.join(self.systems)})")
        return self

    @cached_property
    def system_configs(self) -> dict[str, SystemConfig]:
        """Every system's settings, typed by its kind's config class."""
        return parse_systems(self.systems)


def load_params(path: str | Path = PARAMS) -> Params:
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except FileNotFoundError:
        raise ConfigError(f"{path}: not found. Fix: run from the project root, or compose it with `dvc exp run`.")
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML ({err}).") from None
    try:
        params = Params.parse(data, "")
        params.system_configs  # noqa: B018  (typed here, once, so bad settings fail at load)
        return params
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
