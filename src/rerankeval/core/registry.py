"""Open registries: a name maps to a thing (a system kind, a measure family, an executor, a generator...).

A new kind is one new file that registers itself, declared under the registry's entry-point group
(``[project.entry-points."rerankeval.systems"]``: the kind's name = the module that registers it), in this package's
pyproject.toml for the built-in kinds and in a third-party package's for its own. A lookup loads only the module its
name's entry point names (so a process, and a DVC stage's code deps, hold only the kinds it uses); listing the registry
loads them all. Every registry refuses an unknown name the same way: one ``ConfigError``, one message.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Names (and their aliases) to entries; ``ignore_case`` registries match names in any letter case."""

    def __init__(self, what: str, entry_point_group: str | None = None, *, ignore_case: bool = False):
        self.what = what
        self._entry_point_group = entry_point_group
        self._ignore_case = ignore_case
        self._entries: dict[str, T] = {}
        self._aliases: dict[str, tuple[str, ...]] = {}
        self._lookup: dict[str, str] = {}  # name or alias, folded -> name
        self._plugins_loaded = False

    def _key(self, name: str) -> str:
        return name.lower() if self._ignore_case else name

    def add(self, name: str, entry: T, aliases: Sequence[str] = ()) -> T:
        for key in (name, *aliases):
            holder = self._lookup.get(self._key(key))
            if holder is not None and self._entries[holder] is not entry:
                raise ValueError(f"{self.what} {key!r} is already registered (by {holder})")
        self._entries[name] = entry
        self._aliases[name] = tuple(aliases)
        self._lookup.update({self._key(key): name for key in (name, *aliases)})
        return entry

    def get(self, name: str, where: str = "") -> T:
        if self._key(name) not in self._lookup:
            self._load_declared(name)
        if self._key(name) not in self._lookup:
            self._load_plugins()
        if self._key(name) not in self._lookup:
            prefix = f"{where}: " if where else ""
            plugins = (f", or install a package that registers it under the {self._entry_point_group!r} entry-point "
                       "group" if self._entry_point_group else "")
            stale = (f" (a built-in {self.what} missing here means the installed metadata is older than "
                     "pyproject.toml's entry points: run `make install`)" if self._entry_point_group else "")
            raise ConfigError(f"{prefix}unknown {self.what} {name!r}; known: {self.known()}. "
                              f"Fix: use a known {self.what}{plugins}{stale}.")
        return self._entries[self._lookup[self._key(name)]]

    def known(self) -> str:
        """Every registered name with its aliases, for messages and help texts."""
        self._load_plugins()
        return ", ".join(f"{name} (alias {', '.join(self._aliases[name])})" if self._aliases[name] else name
                         for name in self)

    def _load_declared(self, name: str) -> None:
        """Import the module(s) an entry point of this registry's group declares for ``name``."""
        if self._entry_point_group:
            for entry_point in entry_points(group=self._entry_point_group):
                if self._key(entry_point.name) == self._key(name):
                    entry_point.load()

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        if self._entry_point_group:
            for entry_point in entry_points(group=self._entry_point_group):
                entry_point.load()  # the module registers its entries on import

    def __contains__(self, name: str) -> bool:
        if self._key(name) not in self._lookup:
            self._load_declared(name)
        if self._key(name) not in self._lookup:
            self._load_plugins()
        return self._key(name) in self._lookup

    def __iter__(self) -> Iterator[str]:
        self._load_plugins()
        return iter(sorted(self._entries, key=self._key))

    def items(self) -> list[tuple[str, T]]:
        return [(name, self._entries[name]) for name in self]

    def in_registration_order(self) -> list[T]:
        self._load_plugins()
        return list(self._entries.values())
