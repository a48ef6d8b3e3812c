"""Open registries: a name maps to a thing (a system kind, a measure family, a generator...).

A new kind is one new file that registers itself; third-party packages register through the entry-point group
given to the registry (``[project.entry-points."rerankeval.systems"]``), loaded the first time a name is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, what: str, entry_point_group: str | None = None):
        self.what = what
        self._entry_point_group = entry_point_group
        self._entries: dict[str, T] = {}
        self._plugins_loaded = False

    def add(self, name: str, entry: T) -> T:
        if name in self._entries and self._entries[name] is not entry:
            raise ValueError(f"{self.what} {name!r} is already registered")
        self._entries[name] = entry
        return entry

    def get(self, name: str, where: str = "") -> T:
        if name not in self._entries and not self._plugins_loaded:
            self._load_plugins()
        if name not in self._entries:
            prefix = f"{where}: " if where else ""
            raise ConfigError(f"{prefix}unknown {self.what} {name!r}; known: {', '.join(sorted(self._entries))}.")
        return self._entries[name]

    def _load_plugins(self) -> None:
        self._plugins_loaded = True
        if self._entry_point_group:
            for entry_point in entry_points(group=self._entry_point_group):
                entry_point.load()  # the module registers its entries on import

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def items(self) -> list[tuple[str, T]]:
        return sorted(self._entries.items())
