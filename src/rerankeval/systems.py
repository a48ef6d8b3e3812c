"""Systems: what scores a query's top-``depth`` candidates. A system only scores; the rerank driver orders.

Every system kind is built from its Hydra config (``conf/system/*.yaml``) by ``build_system``. Learned kinds live in
``rerankeval.models`` and are imported only when such a system is built, so the light stages start fast.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class QueryCandidates:
    """One query's candidates to score, in fused order (columns of ``candidates.parquet``)."""

    query_id: str
    query_text: str
    frame: pd.DataFrame

    @property
    def passages(self) -> list[str]:
        return self.frame["passage"].tolist()


@dataclass
class Scored:
    """Scores for a query's candidates (higher is better) and what producing them cost."""

    scores: np.ndarray
    tokenize_s: float = 0.0
    forward_s: float = 0.0
    cache_hits: int = 0
    replayed_s: float = 0.0
    """Compute seconds of the cache hits, as measured when those pairs were scored (0 for systems without a cache)."""
    pair_stats: dict[str, np.ndarray] = field(default_factory=dict)
    """Optional per-pair arrays aligned with the candidates: query_tokens, passage_tokens, truncated."""


class DeadlineExceeded(RuntimeError):
    """Raised by a system that notices the per-query deadline has passed."""


class System(Protocol):
    def score(self, query: QueryCandidates, deadline: float | None) -> Scored: ...

    def describe(self) -> dict[str, Any]: ...


@dataclass
class ColumnSystem:
    """Scores are a function of the frozen first-stage columns (fused, BM25 or dense order)."""

    column: str
    sign: float = 1.0

    def score(self, query: QueryCandidates, deadline: float | None) -> Scored:
        return Scored(scores=self.sign * query.frame[self.column].to_numpy(dtype=np.float64))

    def describe(self) -> dict[str, Any]:
        return {"scores": f"{'-' if self.sign < 0 else ''}{self.column}"}


@dataclass
class OracleSystem:
    """Candidates by true grade (unjudged = 0): the ceiling any reranker of these candidates can reach."""

    grades: Mapping[tuple[str, str], int]

    def score(self, query: QueryCandidates, deadline: float | None) -> Scored:
        grades = [self.grades.get((query.query_id, doc_id), 0) for doc_id in query.frame["doc_id"]]
        return Scored(scores=np.asarray(grades, dtype=np.float64))

    def describe(self) -> dict[str, Any]:
        return {"scores": "true grade from qrels (unjudged = 0)"}


@dataclass
class RandomSystem:
    """Uniform random scores, seeded per query: the floor a reranker must clear."""

    seed: int

    def score(self, query: QueryCandidates, deadline: float | None) -> Scored:
        rng = np.random.default_rng([self.seed, zlib.crc32(query.query_id.encode("utf-8"))])
        return Scored(scores=rng.random(len(query.frame)))

    def describe(self) -> dict[str, Any]:
        return {"scores": f"uniform random, seed {self.seed} mixed with crc32(query_id)"}


@dataclass
class RunFileSystem:
    """An external TREC run: its score for each candidate; candidates the run lacks go last, in fused order."""

    path: str
    scores_by_pair: Mapping[tuple[str, str], float]

    def score(self, query: QueryCandidates, deadline: float | None) -> Scored:
        scores = [self.scores_by_pair.get((query.query_id, doc_id), -np.inf) for doc_id in query.frame["doc_id"]]
        return Scored(scores=np.asarray(scores, dtype=np.float64))

    def describe(self) -> dict[str, Any]:
        return {"scores": f"TREC run {self.path}; candidates missing from it score -inf"}


@dataclass(frozen=True)
class BuildContext:
    """What some system kinds need besides their own config."""

    qrels: pd.DataFrame


def _trec_run(config: Mapping[str, Any], context: BuildContext) -> System:
    from .trec import read_trec_run

    run = read_trec_run(config["path"])
    pairs = dict(zip(zip(run["query_id"], run["doc_id"]), run["score"].astype(float)))
    return RunFileSystem(path=str(config["path"]), scores_by_pair=pairs)


def _oracle(config: Mapping[str, Any], context: BuildContext) -> System:
    qrels = context.qrels
    return OracleSystem(grades=dict(zip(zip(qrels["query_id"], qrels["doc_id"]), qrels["relevance"].astype(int))))


def _learned(kind: str) -> Callable[[Mapping[str, Any], BuildContext], System]:
    def build(config: Mapping[str, Any], context: BuildContext) -> System:
        from . import models

        return models.build(kind, config)

    return build


SYSTEM_KINDS: dict[str, Callable[[Mapping[str, Any], BuildContext], System]] = {
    "fusion": lambda config, context: ColumnSystem("fused_score"),
    "bm25": lambda config, context: ColumnSystem("bm25_rank", sign=-1.0),
    "dense": lambda config, context: ColumnSystem("dense_rank", sign=-1.0),
    "oracle": _oracle,
    "random": lambda config, context: RandomSystem(seed=int(config.get("seed", 0))),
    "trec_run": _trec_run,
    "cross_encoder": _learned("cross_encoder"),
    "flag_reranker": _learned("flag_reranker"),
    "bi_encoder": _learned("bi_encoder"),
}


def build_system(name: str, config: Mapping[str, Any], context: BuildContext) -> System:
    kind = config.get("kind")
    if kind not in SYSTEM_KINDS:
        raise ValueError(f"system {name!r}: unknown kind {kind!r}; known kinds: {sorted(SYSTEM_KINDS)}. "
                         f"Fix: set `kind` in conf/system/<file>.yaml.")
    return SYSTEM_KINDS[kind](config, context)
