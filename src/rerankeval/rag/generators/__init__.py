"""Generator kinds: one file per kind, registered with ``register_generator`` (plugins: the
``rerankeval.generators`` entry-point group, where pyproject.toml declares the built-in ones: a kind is imported when
its name is looked up).

    @register_generator("my_kind", MyConfig)
    class MyGenerator(Generator): ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...core.errors import ConfigError
from ...core.registry import Registry
from .base import BuildContext, Example, Generated, Generator, GeneratorConfig

GENERATORS: Registry[tuple[type[GeneratorConfig], type[Generator]]] = Registry("generator kind",
                                                                                 "rerankeval.generators")


def register_generator(kind: str, config_class: type[GeneratorConfig]) -> Callable[[type[Generator]], type[Generator]]:
    def register(cls: type[Generator]) -> type[Generator]:
        GENERATORS.add(kind, (config_class, cls))
        return cls
    return register


def parse_generator_config(mapping: Mapping[str, Any], where: str = "rag.generator") -> GeneratorConfig:
    kind = mapping.get("kind") if isinstance(mapping, Mapping) else None
    if not isinstance(kind, str):
        raise ConfigError(f"{where}.kind: required; one of {', '.join(GENERATORS)}.")
    config_class, _ = GENERATORS.get(kind, f"{where}.kind")
    return config_class.parse(mapping, where)


def build_generator(mapping: Mapping[str, Any], context: BuildContext | None = None,
                    where: str = "rag.generator") -> Generator:
    config = parse_generator_config(mapping, where)
    _, cls = GENERATORS.get(config.kind, f"{where}.kind")
    return cls(config, context or BuildContext())


__all__ = ["GENERATORS", "BuildContext", "Example", "Generated", "Generator", "GeneratorConfig", "build_generator",
           "parse_generator_config", "register_generator"]
