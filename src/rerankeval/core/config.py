"""Typed configuration: every settings block is a frozen pydantic model that refuses unknown keys and wrong types.

Strict on purpose: a misspelt key is an error, not a silently ignored setting; ``trust_remote_code: 'false'`` (a
quoted string) is not a boolean; ``depth: 30.9`` is not an integer. ``StrictConfig.parse`` turns pydantic's
validation errors into one ``ConfigError`` that names each offending key by its full path in params.yaml.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Self, get_args

from pydantic import BaseModel, ConfigDict, ValidationError

from .errors import ConfigError

_EXPECTED = {
    "bool_type": "true or false (a YAML boolean, unquoted)",
    "int_type": "an integer",
    "float_type": "a number",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
}


SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
"""A name that becomes a file, a DVC stage (``rerank@NAME``) and a shell word: a letter or digit, then letters,
digits, ``_``, ``.`` and ``-``, at most 100 characters (no ``/``, ``..`` at the start, ``$``, spaces or quotes)."""


def check_name(name: object, key: str) -> str:
    """``name`` when it is a ``SAFE_NAME``; else a ``ConfigError`` naming the key and the rule."""
    if isinstance(name, str) and SAFE_NAME.fullmatch(name):
        return name
    raise ConfigError(f"{key}: {name!r} is not a usable name: it becomes a file, a DVC stage and a shell word, so it "
                      "must start with a letter or digit and hold only letters, digits, '_', '.' and '-' (at most "
                      "100 characters). Fix: rename it")


def check_workspace_path(path: str, key: str) -> str:
    """``path`` when it is relative and stays inside the workspace (no ``..`` climbing out of it): what a stage
    writes there is a DVC output, and a path outside would write where no checkout tracks it. Else a ``ConfigError``
    naming the key."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    depth = 0
    for part in parts:
        depth += -1 if part == ".." else 0 if part == "." else 1
        if depth < 0:
            break
    if path and not PurePosixPath(path).is_absolute() and not PureWindowsPath(path).drive and depth >= 0:
        return path
    raise ConfigError(f"{key}: {path!r} is outside the workspace: the pipeline writes its outputs only inside it, "
                      "where DVC tracks them. Fix: a relative path that stays inside, e.g. data/models/<name>")


class StrictConfig(BaseModel):
    """Base of every typed settings block; subclasses declare fields with types and defaults."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @classmethod
    def parse(cls, data: Mapping[str, Any] | None, where: str) -> Self:
        """Validate ``data`` (the block at ``where`` in params.yaml, e.g. ``systems.ce_minilm_ft``)."""
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping of settings, got {type(data).__name__} {data!r}.")
        try:
            return cls.model_validate(dict(data))
        except ValidationError as err:
            raise ConfigError(describe_errors(err, where, cls)) from None

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def describe_errors(err: ValidationError, where: str, model: type[BaseModel]) -> str:
    """One line per problem: the key's full path, what is wrong and what is expected."""
    lines = []
    for problem in err.errors():
        location = ".".join(str(part) for part in (where, *problem["loc"]) if part != "")
        kind, value = problem["type"], problem.get("input")
        if kind == "extra_forbidden":
            block = _block_at(model, problem["loc"][:-1])
            known = ", ".join(sorted(block.model_fields)) if block else "those of the matching file in conf/"
            lines.append(f"{location}: unknown setting. Known settings here: {known}.")
        elif kind == "missing":
            lines.append(f"{location}: required setting is missing.")
        elif kind in _EXPECTED:
            lines.append(f"{location}: expected {_EXPECTED[kind]}, got {type(value).__name__} {value!r}.")
        elif kind == "value_error":
            lines.append(f"{location}: {problem['ctx']['error']}")
        elif kind == "literal_error":
            lines.append(f"{location}: {value!r} is not one of {problem['ctx']['expected']}.")
        else:
            lines.append(f"{location}: {problem['msg']} (got {value!r}).")
    return "invalid configuration:\n  " + "\n  ".join(lines)


def _block_at(model: type[BaseModel], path: tuple) -> type[BaseModel] | None:
    """The settings model at ``path`` under ``model`` (list indexes and mapping keys stepped over), or None where the
    path runs through a union of several models (pydantic's location names the one it tried, not always by name)."""
    for part in path:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            continue  # an index or a key of a list or mapping of models: the model stays the item's
        models = _models_in(field.annotation)
        if len(models) != 1:
            return None
        model = models[0]
    return model


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [found for argument in get_args(annotation) for found in _models_in(argument)]
