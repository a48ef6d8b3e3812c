"""The one SQLite scaffolding under every on-disk cache (pair scores, embeddings, LLM replies).

A cache is one file shared by every process: WAL mode (readers never block the writer), autocommit outside explicit
batches, and each ``write`` one committed transaction, so a killed process loses at most the batch it was computing.
A cache that cannot be opened, read or written fails the stage with an ``InfrastructureError`` naming the file and
the fix (a full disk and a damaged file have different fixes). Lookups by a list of keys are chunked, so any number
of keys stays under SQLite's bound-parameter limit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .caches import CACHE_DIR_ENV
from .errors import InfrastructureError

LOOKUP_CHUNK = 500
"""Keys per SELECT (SQLite's bound-parameter limit is 32766 on current builds, 999 on old ones)."""


def _fix(err: BaseException) -> str:
    text = str(err).lower()
    if "full" in text or getattr(err, "errno", None) == 28:  # SQLITE_FULL or ENOSPC
        return f"free disk space on that file system, or point {CACHE_DIR_ENV} at one with room."
    if ("readonly" in text or "read-only" in text or "unable to open" in text or "disk i/o" in text
            or isinstance(err, PermissionError) or getattr(err, "errno", None) in (13, 30)):  # EACCES, EROFS
        return f"make the folder writable, or point {CACHE_DIR_ENV} at a writable one."
    if "locked" in text or "busy" in text:
        return "another process holds the cache too long; let it finish, or give this run its own cache folder."
    return (f"the file is damaged: delete it (it only saves recomputation; it is rebuilt on the next run), or point "
            f"{CACHE_DIR_ENV} elsewhere.")


class SqliteCache:
    """Open (creating it if needed) ``directory/file_name`` with ``schema``; ``what`` names the cache in messages."""

    def __init__(self, directory: str | Path, file_name: str, schema: str, what: str):
        self.path = Path(directory) / file_name
        self.what = what
        with self.guard("open"):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Autocommit mode: every statement outside an explicit BEGIN is its own transaction.
            self._db = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # in WAL mode, committed data survives a process kill
            self._db.executescript(schema)

    @contextmanager
    def guard(self, action: str) -> Iterator[None]:
        """A cache that cannot be read or written fails the stage, naming the file: it is not a model's failure."""
        try:
            yield
        except (sqlite3.Error, OSError) as err:
            raise InfrastructureError(f"{self.path}: cannot {action} the {self.what} ({type(err).__name__}: {err}). "
                                      f"Fix: {_fix(err)}") from err

    def execute(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        with self.guard("read"):
            return self._db.execute(sql, args).fetchall()

    def write(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """``executemany`` as one committed transaction."""
        with self.guard("write"), self._db:  # BEGIN ... COMMIT (rolled back on error)
            self._db.execute("BEGIN")
            self._db.executemany(sql, rows)

    def lookup_in(self, sql: str, args: Sequence[Any], keys: Iterable[str]) -> list[tuple]:
        """Rows of ``sql`` (ending in ``IN ({keys})``) for every distinct key, ``LOOKUP_CHUNK`` keys per SELECT."""
        wanted = sorted(set(keys))
        rows: list[tuple] = []
        with self.guard("read"):
            for start in range(0, len(wanted), LOOKUP_CHUNK):
                chunk = wanted[start:start + LOOKUP_CHUNK]
                rows += self._db.execute(sql.format(keys=",".join("?" * len(chunk))), [*args, *chunk]).fetchall()
        return rows

    def close(self) -> None:
        self._db.close()
