"""Pair-score cache: raw model scores by (scorer fingerprint, query text hash, passage content hash), in SQLite.

The fingerprint covers everything that changes a raw score (model id and revision or a hash of the local weights,
passage template and scorer versions, max_length, truncation, dtype), so a rerun, another depth or another system
sharing the model reuses scores and no setting can serve a stale one. The file's scaffolding (WAL, one committed
transaction per stored batch, chunked lookups, error messages) is ``core.sqlite_cache``'s.

Each pair also keeps the compute time it cost when it was scored (its share of its batch's tokenisation and forward
pass), so latency stays a measurement of the model, not of the cache: a cache hit replays that time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.caches import cache_dir  # noqa: F401 (re-exported for pair scorers)
from ..core.hashing import canonical_json, sha256_text
from ..core.sqlite_cache import SqliteCache

DB_NAME = "pair_scores.v3.sqlite"
"""v2 added compute_s, v3 made the token counts optional (not every scorer has tokens); the file name carries the
schema version, so an older cache is never misread."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS fingerprints (fingerprint TEXT PRIMARY KEY, parts TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pair_scores (
    fingerprint TEXT NOT NULL,
    query_sha256 TEXT NOT NULL,
    passage_sha256 TEXT NOT NULL,
    score REAL NOT NULL,
    query_tokens INTEGER,
    passage_tokens INTEGER,
    truncated INTEGER,
    compute_s REAL NOT NULL,
    PRIMARY KEY (fingerprint, query_sha256, passage_sha256)
) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class PairScore:
    """A raw score, the token accounting of the pair that produced it (None for scorers without tokens) and the
    compute time it cost."""

    score: float
    query_tokens: int | None
    passage_tokens: int | None
    truncated: bool | None
    compute_s: float
    """Seconds this pair cost when it was scored (its share of its batch)."""


def _optional_int(value) -> int | None:
    return None if value is None else int(value)


def fingerprint(parts: Mapping[str, Any]) -> str:
    return sha256_text(canonical_json(dict(parts)))


class ScoreCache(SqliteCache):
    """One SQLite file shared by every system and process; each ``store`` commits."""

    def __init__(self, directory: str | Path, parts: Mapping[str, Any]):
        super().__init__(directory, DB_NAME, _SCHEMA, "pair-score cache")
        self.parts = dict(parts)
        self.fingerprint = fingerprint(self.parts)
        self.write("INSERT OR IGNORE INTO fingerprints VALUES (?, ?)", [(self.fingerprint, canonical_json(self.parts))])

    def lookup(self, query_sha256: str, passage_sha256s: Iterable[str]) -> dict[str, PairScore]:
        rows = self.lookup_in(
            "SELECT passage_sha256, score, query_tokens, passage_tokens, truncated, compute_s FROM pair_scores "
            "WHERE fingerprint = ? AND query_sha256 = ? AND passage_sha256 IN ({keys})",
            [self.fingerprint, query_sha256], passage_sha256s)
        return {sha: PairScore(score, q_tokens, p_tokens, None if cut is None else bool(cut), seconds)
                for sha, score, q_tokens, p_tokens, cut, seconds in rows}

    def store(self, query_sha256: str, scored: Mapping[str, PairScore]) -> None:
        """Write one batch of scores as a single committed transaction."""
        self.write("INSERT OR REPLACE INTO pair_scores VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   [(self.fingerprint, query_sha256, sha, float(pair.score), _optional_int(pair.query_tokens),
                     _optional_int(pair.passage_tokens), _optional_int(pair.truncated), float(pair.compute_s))
                    for sha, pair in scored.items()])

    def count(self) -> int:
        """Pairs cached under this fingerprint."""
        return self.execute("SELECT COUNT(*) FROM pair_scores WHERE fingerprint = ?", (self.fingerprint,))[0][0]
