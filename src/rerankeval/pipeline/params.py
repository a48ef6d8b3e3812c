"""params.yaml, typed: every block refuses unknown keys and wrong types, naming the key and the fix.

Each block's class lives in its package's ``config`` module, which imports nothing but pydantic and other config
modules: loading params.yaml loads no stage's code, so a stage's import closure (its DVC code deps) holds only what
it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import PrivateAttr, model_validator

from ..core.config import StrictConfig
from ..core.errors import ConfigError
from ..data.config import DatasetConfig
from ..eval.config import EvaluationConfig
from ..policies.config import PoliciesConfig
from ..rag.config import RagConfig
from ..retrieval.config import RetrievalConfig
from ..serving.config import ServingConfig
from ..stats.config import CompareConfig
from ..training.config import TrainConfig

PARAMS = Path("params.yaml")


class Params(StrictConfig):
    """The blocks of params.yaml.

    ``systems`` stays the mapping params.yaml holds (runs and latency records keep it verbatim). Typing an entry
    takes its kind's module, so entries are typed by their kind's config class only where systems are built, once
    per stage: ``pipeline.system_configs`` in the stages rerank, latency (with its load test) and sweep, and in
    ``rerankeval loadtest``. A stage that builds no system never imports a system kind.
    """

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
    _source: Path = PrivateAttr(PARAMS)

    @model_validator(mode="after")
    def _systems_listed_once(self) -> "Params":
        if list(self.systems) != self.system_names:
            raise ValueError(f"system_names {self.system_names} must list the systems {list(self.systems)} in order; "
                             "conf/config.yaml derives it (regenerate params.yaml)")
        self.compare.refuse_unknown(self.systems)
        return self

    @property
    def source(self) -> Path:
        """The file these params were read from, for messages."""
        return self._source


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
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
    params._source = path
    return params
