"""params.yaml, typed, as each stage may see it: only the settings its entry in the stage table declares.

Each block is typed by its class in its package's ``config`` module (``BLOCKS``), imported only when a stage reads the
block: a stage's import closure, and so its DVC code deps, holds the settings code of what it reads and nothing else.
Every block refuses unknown keys and wrong types, naming the key and the fix. Reading a setting the stage does not
declare is a programming error (``UndeclaredSetting``): the stage would re-run too rarely, since what the code stage
records for it (its settings dep, ``pipeline.code``) is its declared reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import import_module
from pathlib import Path
from typing import Any

import yaml
from pydantic import create_model

from ..core.config import StrictConfig, check_name
from ..core.errors import ConfigError
from .table import BY_NAME, SYSTEM

PARAMS = Path("params.yaml")
BLOCKS = {
    "dataset": "rerankeval.data.config:DatasetConfig",
    "retrieval": "rerankeval.retrieval.config:RetrievalConfig",
    "train": "rerankeval.training.config:TrainConfig",
    "evaluation": "rerankeval.eval.config:EvaluationConfig",
    "compare": "rerankeval.stats.config:CompareConfig",
    "policies": "rerankeval.policies.config:PoliciesConfig",
    "serving": "rerankeval.serving.config:ServingConfig",
    "rag": "rerankeval.rag.config:RagConfig",
    "privacy": "rerankeval.core.privacy:PrivacyConfig",
    "online": "rerankeval.online.config:OnlineConfig",
}
"""Each typed block of params.yaml and its class; ``systems`` (typed per kind where systems are built,
``pipeline.system_configs``) and ``system_names`` stay as params.yaml holds them."""
OPTIONAL = ("policies", "serving", "rag", "privacy", "online")
"""Blocks with defaults: absent from params.yaml, they take their class's."""
UNTYPED = ("systems", "system_names")


class UndeclaredSetting(AssertionError):
    """A stage read a setting its entry in the stage table (``pipeline.table``) does not declare."""

    def __init__(self, stage: str, key: str):
        super().__init__(f"stage {stage} reads {key}, which its entry in rerankeval/pipeline/table.py does not "
                         "declare (add it to `reads`)")


def block_module(key: str) -> str | None:
    """The config module that types the block of a dotted key (None for the untyped ``systems``)."""
    target = BLOCKS.get(key.split(".")[0])
    return target.partition(":")[0] if target else None


def block_class(block: str) -> Any:
    module, _, name = BLOCKS[block].partition(":")
    return getattr(import_module(module), name)


class _Restricted:
    """A typed block of which only some fields were declared: reading another raises ``UndeclaredSetting``."""

    def __init__(self, value: Any, block: str, allowed: set[str], stage: str):
        self._value, self._block, self._allowed, self._stage = value, block, allowed, stage

    def __getattr__(self, name: str) -> Any:
        if name not in self._allowed:
            raise UndeclaredSetting(self._stage, f"{self._block}.{name}")
        return getattr(self._value, name)


class Params:
    """The settings one stage declared, read from params.yaml: ``params.<block>`` for a declared block (a typed config,
    or a restricted view of one when only some of its keys are declared)."""

    def __init__(self, data: dict[str, Any], reads: tuple[str, ...], stage: str, source: Path = PARAMS):
        self._source, self._stage, self._reads, self._data = source, stage, reads, data
        self._configured = list(data.get("systems") or {}) if isinstance(data.get("systems"), dict) else []
        for name in self._configured:  # every system name becomes files and stage names, whatever the stage reads
            check_name(name, f"{source}: systems")
        self._values: dict[str, Any] = {}
        wanted: dict[str, set[str] | None] = {}
        for key in reads:
            block, _, rest = key.partition(".")
            field = rest.split(".")[0]
            if block == "systems" or not field:
                wanted[block] = None
            elif wanted.get(block, set()) is not None:
                wanted.setdefault(block, set()).add(field)
        problems = []
        for block, fields in wanted.items():
            try:
                self._values[block] = self._typed(data, block, fields)
            except ConfigError as err:
                problems.append(str(err).removeprefix("invalid configuration:\n"))
        if problems:  # every block's problems at once, as one message
            raise ConfigError("invalid configuration:\n" + "\n".join(problems))
        if {"systems", "system_names"} <= set(wanted) and list(data["systems"]) != data["system_names"]:
            raise ConfigError(f"system_names {data['system_names']} must list the systems {list(data['systems'])} in "
                              "order; conf/config.yaml derives it (regenerate params.yaml)")
        if "compare" in wanted and wanted["compare"] is None and "systems" in wanted:  # the whole block: its names
            self._values["compare"].refuse_unknown(data["systems"])

    def _typed(self, data: dict[str, Any], block: str, fields: set[str] | None) -> Any:
        if block not in BLOCKS and block not in UNTYPED:
            raise AssertionError(f"stage {self._stage} declares {block!r}, not a block of params.yaml")
        if block not in data and block not in OPTIONAL:
            raise ConfigError(f"{block}: required. Fix: compose params.yaml from conf/ (`dvc exp run`).")
        if block in UNTYPED:
            value = data[block]
            if block == "systems" and not isinstance(value, dict):
                raise ConfigError("systems: expected a mapping of system name -> settings")
            return value
        # A one-field model, so that a block typed by a union (retrieval's sources) is read and reported as the rest.
        annotation = block_class(block)
        holder = create_model(f"{block}_block", __base__=StrictConfig, **{block: (annotation, ...)})
        value = getattr(holder.parse({block: data.get(block) or {}}, ""), block) if block in data else annotation()
        return value if fields is None else _Restricted(value, block, fields, self._stage)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._values:
            raise UndeclaredSetting(self._stage, name)
        return self._values[name]

    @classmethod
    def parse(cls, data: dict[str, Any], where: str = "") -> Params:
        """Every block of an already-read params mapping, typed."""
        return cls(data, (*BLOCKS, *UNTYPED), where or "(all settings)")

    def model_copy(self, update: dict[str, Any]) -> Params:
        """These settings with some blocks replaced (declared ones only)."""
        for name in update:
            getattr(self, name)  # replacing a block the stage does not declare is refused like reading it
        copy = object.__new__(Params)
        copy.__dict__.update(self.__dict__, _values={**self._values, **update})
        return copy

    def declared_values(self, keys: Iterable[tuple[str, ...]]) -> dict[str, Any]:
        """params.yaml's values at ``keys`` (each a path of keys: a name may hold a dot) as it holds them, nested as
        there (a key it lacks is left out: its block's default then applies), for a stage's recorded settings
        (``pipeline.code``); each key must be declared or under a declared one."""
        declared = [tuple(read.split(".")) for read in self._reads]
        found: dict[str, Any] = {}
        for parts in keys:
            if not any(parts[:len(read)] == read for read in declared):
                raise UndeclaredSetting(self._stage, ".".join(parts))
            value = self._data
            for part in parts:
                if not isinstance(value, dict) or part not in value:
                    break
                value = value[part]
            else:
                holder = found
                for part in parts[:-1]:
                    holder = holder.setdefault(part, {})
                holder[parts[-1]] = value
        return found

    @property
    def configured_systems(self) -> list[str]:
        """The names under ``systems``: which ``<stage>@<system>`` instances exist, for any stage (not a setting)."""
        return self._configured

    @property
    def source(self) -> Path:
        """The file these params were read from, for messages."""
        return self._source


def load_params(path: str | Path = PARAMS, *, stage: str | None = None) -> Params:
    """The settings ``stage`` declares in the stage table, typed; every block (unknown ones refused) without a stage:
    for what reads the whole configuration (the CLI, tests)."""
    path = Path(path)
    data = _read(path)
    if stage is None:
        unknown = sorted(set(data) - set(BLOCKS) - set(UNTYPED))
        if unknown:
            raise ConfigError(f"{path}: unknown block(s) {', '.join(unknown)}; known: "
                              f"{', '.join([*BLOCKS, *UNTYPED])}.")
    return _params(data, (*BLOCKS, *UNTYPED) if stage is None else BY_NAME[stage].reads, stage or "(all settings)",
                   path)


def stage_keys(stage: str, item: str | None = None) -> list[tuple[str, ...]]:
    """The settings ``stage`` declares (the instance of a per-system stage for ``item``), each as a path of keys
    (``item`` is one key, whatever it holds)."""
    return [tuple(item if part == SYSTEM else part for part in key.split(".")) for key in BY_NAME[stage].reads]


def load_recorded_params(recorded: dict[str, Any], stage: str, item: str | None, where: str,
                         path: Path = PARAMS) -> Params:
    """The settings ``stage`` (per-system ``stage``'s instance for ``item``) declares, typed from params.yaml as
    ``load_params`` types them (an instance's ``systems``: the ones the code stage recorded for it, its system and
    that system's components). Refused when they differ from ``recorded``, the values the code stage wrote for it
    (``where``: its DVC dep, ``pipeline.code``): the stage runs on what DVC records, never on an edit the code stage
    has not seen."""
    keys = stage_keys(stage, item)
    data = _read(path)
    own = ("systems", item)
    recorded_systems = list(recorded.get("systems", {})) if item is not None and own in keys else []
    if recorded_systems and isinstance(data.get("systems"), dict):
        data = {**data, "systems": {name: value for name, value in data["systems"].items() if name in recorded_systems}}
    compared = [key for read in keys for key in ([("systems", name) for name in recorded_systems or [item]]
                                                 if item is not None and read == own else [read])]
    differ = [".".join(key) for key in compared if _json_at(data, key) != _json_at(recorded, key)]
    if differ:
        name = stage if item is None else f"{stage}@{item}"
        raise ConfigError(f"{path}: {', '.join(differ)} of {name} differ from what the code stage last wrote "
                          f"for it ({where}). Fix: `dvc repro` (the code stage runs first), or `dvc repro code` "
                          "before running one stage.")
    reads = tuple(".".join(key) for key in keys)  # typed by block and first field: a dot in ``item`` is harmless
    return _params(data, reads, stage, path)


def configured_items(each: str, path: Path = PARAMS) -> list[str]:
    """The names under ``each`` (``systems``, ``online.readouts``) in params.yaml: the instances of a per-system
    stage. Not a setting: which stage instances exist."""
    found = _at(_read(path), tuple(each.split(".")))
    return list(found) if isinstance(found, dict) else []


def _at(values: Any, parts: tuple[str, ...]) -> Any:
    """The value at the path of keys ``parts`` (None when absent)."""
    for part in parts:
        if not isinstance(values, dict) or part not in values:
            return None
        values = values[part]
    return values


def _json_at(values: Any, parts: tuple[str, ...]) -> str:
    """The value at ``parts`` as canonical JSON: compared as the code stage wrote it (a NaN equals a NaN)."""
    return json.dumps(_at(values, parts), sort_keys=True, default=str)


def log_privacy(path: str | Path = PARAMS) -> Any:
    """params.yaml's ``privacy`` block (``core.privacy.PrivacyConfig``), for what a stage's stdout and stderr show
    (``core.privacy.redact_logs``). A log is no output: a stage reads this without declaring it, and a change of
    patterns re-runs no stage."""
    path = Path(path)
    return _params(_read(path), ("privacy",), "the stage logs", path).privacy


def _params(data: dict[str, Any], reads: tuple[str, ...], stage: str, path: Path) -> Params:
    try:
        return Params(data, reads, stage, path)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def _read(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except FileNotFoundError:
        raise ConfigError(f"{path}: not found. Fix: run from the project root, or compose it with `dvc exp run`.")
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML ({err}).") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of blocks ({', '.join([*BLOCKS, *UNTYPED])}).")
    return data
