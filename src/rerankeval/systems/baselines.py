"""Reference systems: the first-stage orders, the oracle ceiling, the random floor and external TREC runs."""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import model_validator

from .base import QueryCandidates, Scores, System
from .registry import BuildContext, SystemConfig, register_system


@dataclass
class ColumnSystem(System):
    """Scores are a function of the frozen first-stage columns (fused, BM25 or dense order)."""

    column: str
    sign: float = 1.0

    def score(self, query: QueryCandidates) -> Scores:
        return Scores(self.sign * query.frame[self.column].to_numpy(dtype=np.float64))

    def describe(self) -> dict[str, Any]:
        return {"scores": f"{'-' if self.sign < 0 else ''}{self.column}"}


@dataclass
class OracleSystem(System):
    """Candidates by true grade (unjudged = 0): the ceiling any reranker of these candidates can reach."""

    grades: Mapping[tuple[str, str], int]

    def score(self, query: QueryCandidates) -> Scores:
        grades = [self.grades.get((query.query_id, doc_id), 0) for doc_id in query.frame["doc_id"]]
        return Scores(np.asarray(grades, dtype=np.float64))

    def describe(self) -> dict[str, Any]:
        return {"scores": "true grade from qrels (unjudged = 0)"}


@dataclass
class RandomSystem(System):
    """Uniform random scores, seeded per query: the floor a reranker must clear."""

    seed: int

    def score(self, query: QueryCandidates) -> Scores:
        rng = np.random.default_rng([self.seed, zlib.crc32(query.query_id.encode("utf-8"))])
        return Scores(rng.random(len(query.frame)))

    def describe(self) -> dict[str, Any]:
        return {"scores": f"uniform random, seed {self.seed} mixed with crc32(query_id)"}


@dataclass
class RunFileSystem(System):
    """An external TREC run: its score for each candidate; candidates the run lacks go last, in fused order.

    The run only reorders the frozen candidates, so its rows naming other documents (or other queries) are unused:
    ``score_all`` counts them (``run_coverage``) and ``describe`` records the count, which the stage prints and the
    report warns about."""

    path: str
    run: pd.DataFrame
    scores_by_pair: Mapping[tuple[str, str], float]
    coverage: dict[str, Any] = field(default_factory=dict)

    def score_all(self, queries: Sequence[QueryCandidates], deadline_s: float | None):
        self.coverage = run_coverage(self.run, queries)
        return super().score_all(queries, deadline_s)

    def score(self, query: QueryCandidates) -> Scores:
        scores = [self.scores_by_pair.get((query.query_id, doc_id), -np.inf) for doc_id in query.frame["doc_id"]]
        return Scores(np.asarray(scores, dtype=np.float64))

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {"scores": f"TREC run {self.path}; candidates missing from it score -inf"}
        if self.coverage:
            described["run_coverage"] = self.coverage
        return described


OTHER_QUERY_EXAMPLES = 10
"""Ids of run queries outside the candidates recorded in a run's metadata."""


def run_coverage(run: pd.DataFrame, scored: Sequence[QueryCandidates]) -> dict[str, Any]:
    """What of an external run (query_id, doc_id rows) the scored candidates (each query's top ``depth``) leave out:
    the run's rows of the evaluated queries naming documents outside them (in total, as a share, per query), the
    run's queries that are not evaluated and the evaluated queries the run lacks."""
    candidates = pd.concat([query.frame[["query_id", "doc_id"]] for query in scored], ignore_index=True) if scored \
        else pd.DataFrame({"query_id": [], "doc_id": []})
    evaluated = set(candidates["query_id"])
    in_scope = run["query_id"].isin(evaluated)
    rows = run.loc[in_scope, ["query_id", "doc_id"]]
    found = rows.merge(candidates.drop_duplicates(), how="left", on=["query_id", "doc_id"], indicator=True)
    outside = found.loc[found["_merge"] == "left_only", "query_id"].value_counts().sort_index()
    others = run.loc[~in_scope, "query_id"]
    other_ids = sorted(set(others))
    return {"run_rows": len(rows), "outside_rows": int(outside.sum()),
            "outside_share": float(outside.sum() / len(rows)) if len(rows) else 0.0,
            "outside_by_query": {str(query_id): int(count) for query_id, count in outside.items()},
            "depth": max((len(query.frame) for query in scored), default=0),
            "other_queries": len(other_ids), "other_query_rows": len(others),
            "other_query_examples": other_ids[:OTHER_QUERY_EXAMPLES],
            "queries": len(evaluated), "missing_queries": len(evaluated - set(rows["query_id"])),
            # queries whose run rows name at least one candidate: the others keep the fused order
            "ranked_queries": int(found.loc[found["_merge"] == "both", "query_id"].nunique())}


class RandomConfig(SystemConfig):
    seed: int = 0


class TrecRunConfig(SystemConfig):
    path: str

    @model_validator(mode="after")
    def _watch_the_run_file(self) -> "TrecRunConfig":
        require_watched(self.path, self.depends_on)
        return self


def require_watched(path: str, depends_on: str | None) -> None:
    """Refuse a config whose DVC dependency does not cover the file or folder its scores come from."""
    if depends_on is None:  # not run by DVC
        return
    watched, target = Path(depends_on).resolve(), Path(path).resolve()
    if not (target == watched or watched in target.parents):
        raise ValueError(f"depends_on is {depends_on!r}, but the scores come from {path!r}, so DVC would not re-run "
                         f"this system when that changes. Fix: set depends_on: {path}")


# Each first-stage kind reproduces one ranking of first_stage.parquet (its ``retriever``).
for kind, retriever, column, sign in (("fusion", "hybrid", "fused_score", 1.0), ("bm25", "bm25", "bm25_rank", -1.0),
                                      ("dense", "dense", "dense_rank", -1.0)):
    register_system(kind, SystemConfig, role="first_stage", retriever=retriever)(
        lambda config, context, column=column, sign=sign: ColumnSystem(column, sign))


@register_system("oracle", SystemConfig, role="ceiling")
def _oracle(config: SystemConfig, context: BuildContext) -> System:
    qrels = context.qrels
    return OracleSystem(dict(zip(zip(qrels["query_id"], qrels["doc_id"]), qrels["relevance"].astype(int))))


@register_system("random", RandomConfig, role="floor")
def _random(config: RandomConfig, context: BuildContext) -> System:
    return RandomSystem(config.seed)


@register_system("trec_run", TrecRunConfig)
def _trec_run(config: TrecRunConfig, context: BuildContext) -> System:
    from ..data.trec import read_trec_run

    run = read_trec_run(config.path)
    pairs = dict(zip(zip(run["query_id"], run["doc_id"]), run["score"].astype(float)))
    return RunFileSystem(config.path, run[["query_id", "doc_id"]], pairs)
