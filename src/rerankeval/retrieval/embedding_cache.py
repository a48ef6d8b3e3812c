"""Embedding cache: one vector per (encoder fingerprint, role, text hash), in SQLite beside the pair-score cache.

A passage is encoded once, ever: across reruns, parameter changes and collections that share it. The fingerprint
covers everything that decides a vector's bits (the encoder's weights hash, its engine and its settings), the role
is "query" or "passage" (e5 prefixes them differently) and the key is the sha256 of the exact text encoded (after any
truncation), so no setting can serve a stale vector. Vectors are stored as little-endian float32 bytes, as the encoder
produced them. Each ``store`` is its own committed transaction in WAL mode: a killed run keeps every batch it
finished and resumes from there. Encoders cached here are batch-invariant (a text's vector does not depend on the
other texts of its batch), so a cached vector equals a freshly computed one bit for bit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..core.caches import CACHE_DIR_ENV
from ..core.errors import InfrastructureError
from ..core.hashing import canonical_json, sha256_text

DB_NAME = "embeddings.v1.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS encoders (fingerprint TEXT PRIMARY KEY, parts TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS embeddings (
    fingerprint TEXT NOT NULL,
    role TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (fingerprint, role, text_sha256)
) WITHOUT ROWID;
"""
_LOOKUP_CHUNK = 500
"""Keys per SELECT (SQLite's bound-parameter limit is 32766 on current builds, 999 on old ones)."""


class EmbeddingCache:
    def __init__(self, directory: str | Path, parts: Mapping[str, Any]):
        self.path = Path(directory) / DB_NAME
        self.parts = dict(parts)
        self.fingerprint = sha256_text(canonical_json(self.parts))
        with self._guard("open"):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            self._db.execute("INSERT OR IGNORE INTO encoders VALUES (?, ?)",
                             (self.fingerprint, canonical_json(self.parts)))

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        try:
            yield
        except (sqlite3.Error, OSError) as err:
            raise InfrastructureError(
                f"{self.path}: cannot {action} the embedding cache ({type(err).__name__}: {err}). Fix: free disk "
                f"space or, if the file is damaged, delete it (it only saves recomputation) or point "
                f"{CACHE_DIR_ENV} elsewhere.") from err

    def lookup(self, role: str, text_sha256s: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``text_sha256s``."""
        wanted = sorted(set(text_sha256s))
        found: dict[str, np.ndarray] = {}
        with self._guard("read"):
            for start in range(0, len(wanted), _LOOKUP_CHUNK):
                chunk = wanted[start:start + _LOOKUP_CHUNK]
                rows = self._db.execute(
                    "SELECT text_sha256, vector FROM embeddings WHERE fingerprint = ? AND role = ? AND text_sha256 "
                    f"IN ({','.join('?' * len(chunk))})", [self.fingerprint, role, *chunk]).fetchall()
                found.update((sha, np.frombuffer(blob, dtype="<f4")) for sha, blob in rows)
        return found

    def store(self, role: str, vectors: Mapping[str, np.ndarray]) -> None:
        """One committed transaction for a batch of vectors."""
        rows = [(self.fingerprint, role, sha, np.ascontiguousarray(vector, dtype="<f4").tobytes())
                for sha, vector in vectors.items()]
        with self._guard("write"), self._db:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)", rows)

    def count(self, role: str | None = None) -> int:
        query, args = "SELECT COUNT(*) FROM embeddings WHERE fingerprint = ?", [self.fingerprint]
        if role is not None:
            query, args = query + " AND role = ?", args + [role]
        with self._guard("read"):
            return self._db.execute(query, args).fetchone()[0]

    def close(self) -> None:
        self._db.close()
