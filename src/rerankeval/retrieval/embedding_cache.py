"""Embedding cache: one vector per (encoder fingerprint, role, text hash), in SQLite beside the pair-score cache.

A passage is encoded once, ever: across reruns, parameter changes and collections that share it. The fingerprint
covers everything that decides a vector's bits (the encoder's weights hash, its engine and its settings), the role
is "query" or "passage" (e5 prefixes them differently) and the key is the sha256 of the exact text encoded (after any
truncation), so no setting can serve a stale vector. Vectors are stored as little-endian float32 bytes, as the encoder
produced them. Each ``store`` is its own committed transaction (``core.sqlite_cache``): a killed run keeps every
batch it finished and resumes from there. Encoders cached here are batch-invariant (a text's vector does not depend on
the other texts of its batch), so a cached vector equals a freshly computed one bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.hashing import canonical_json, sha256_text
from ..core.sqlite_cache import SqliteCache

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


class EmbeddingCache(SqliteCache):
    def __init__(self, directory: str | Path, parts: Mapping[str, Any]):
        super().__init__(directory, DB_NAME, _SCHEMA, "embedding cache")
        self.parts = dict(parts)
        self.fingerprint = sha256_text(canonical_json(self.parts))
        self.write("INSERT OR IGNORE INTO encoders VALUES (?, ?)", [(self.fingerprint, canonical_json(self.parts))])

    def lookup(self, role: str, text_sha256s: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``text_sha256s``."""
        rows = self.lookup_in("SELECT text_sha256, vector FROM embeddings WHERE fingerprint = ? AND role = ? AND "
                              "text_sha256 IN ({keys})", [self.fingerprint, role], text_sha256s)
        return {sha: np.frombuffer(blob, dtype="<f4") for sha, blob in rows}

    def store(self, role: str, vectors: Mapping[str, np.ndarray]) -> None:
        """One committed transaction for a batch of vectors."""
        self.write("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)",
                   [(self.fingerprint, role, sha, np.ascontiguousarray(vector, dtype="<f4").tobytes())
                    for sha, vector in vectors.items()])

    def count(self, role: str | None = None) -> int:
        query, args = "SELECT COUNT(*) FROM embeddings WHERE fingerprint = ?", [self.fingerprint]
        if role is not None:
            query, args = query + " AND role = ?", args + [role]
        return self.execute(query, args)[0][0]
