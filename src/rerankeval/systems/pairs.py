"""Pair scorers: systems whose score of a (query, passage) pair depends on those two texts only.

Such a system is written as a ``PairScorer`` (a fingerprint of what decides its scores, and a generator of scored
batches) and registered with ``@register_pair_scorer("kind", Config)``. The registry wraps it in a ``PairSystem``,
which gives every pair scorer, with no code of its own:

* the pair-score cache (``rerankeval.systems.cache``): pairs scored before, by any run, depth or system with the
  same fingerprint, are read back; each batch is committed as it arrives, so a killed run resumes where it stopped;
* latency replay: a cache hit costs the compute time measured when the pair was scored, so latency, deadlines and
  cost stay the model's whatever the cache holds;
* deadlines judged on that cold compute time, checked between batches;
* a declared normalisation of the raw scores (after the cache, which keeps raw scores);
* pluggable executors for the uncached pairs (``executor`` in the config; ``rerankeval.systems.pair_scoring``).
"""

from __future__ import annotations

import functools

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

import numpy as np
from pydantic import field_validator

from ..core.errors import DeadlineExceeded, ScoringFailure
from ..core.hashing import sha256_text
from ..core.progress import Progress
from ..core.registry import Registry
from .base import PAIR_STATS, Outcome, QueryCandidates, Scores, System, check_deadline
from .cache import PairScore, ScoreCache, cache_dir
from .pair_scoring import EXECUTORS, PairBatch, PairScorer, ScorerRecipe, WorkItem, WorkResult, build_executor
from .registry import BuildContext, SystemConfig, register_system

NORMALIZE: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "none": lambda scores: scores,
    "sigmoid": lambda scores: 1.0 / (1.0 + np.exp(-scores)),
    "clamp": lambda scores: np.clip(scores, 0.0, 1.0),
}


class PairScorerConfig(SystemConfig):
    normalization: Literal["none", "sigmoid", "clamp"] = "none"
    cache_dir: str | None = None
    """Where the pair-score cache lives (RERANKEVAL_CACHE_DIR overrides it); default data/score_cache."""
    executor: str = "local"
    """How uncached pairs are scored: ``local`` (this process), ``threads`` (queries in flight at once, for API
    systems), ``ray`` (a Ray Data actor pool; ``RAY_ADDRESS`` joins a cluster) or another registered executor."""

    @field_validator("executor")
    @classmethod
    def _known_executor(cls, name: str) -> str:
        EXECUTORS.get(name)
        return name


class PairSystem(System):
    """A pair scorer behind the pair-score cache, with deadlines on cold compute time and an executor."""

    def __init__(self, scorer: PairScorer, cache: ScoreCache, normalization: str, executor):
        self.scorer, self.cache, self.normalization, self.executor = scorer, cache, normalization, executor
        self._reads_cache = True

    @contextmanager
    def uncached(self) -> Iterator[None]:
        """Every pair scored by the model, none read from the pair-score cache or written to it (the cache keeps
        the compute time measured when each pair was first scored)."""
        previous, self._reads_cache = self._reads_cache, False  # a component two composites share is entered twice
        try:
            yield
        finally:
            self._reads_cache = previous

    def score(self, query: QueryCandidates) -> Scores:
        outcome = self.score_all([query], None)[query.query_id]
        if isinstance(outcome, ScoringFailure):
            raise outcome
        return outcome

    def score_all(self, queries: Sequence[QueryCandidates], deadline_s: float | None) -> dict[str, Outcome]:
        plans, items, outcomes = {}, [], {}
        for query in queries:
            started = time.perf_counter()
            query_sha = sha256_text(query.query_text)
            passage_shas = [sha256_text(passage) for passage in query.passages]
            known = self.cache.lookup(query_sha, passage_shas) if self._reads_cache else {}
            todo = {sha: passage for sha, passage in zip(passage_shas, query.passages) if sha not in known}
            replayed = sum(known[sha].compute_s for sha in passage_shas if sha in known)
            plans[query.query_id] = (query_sha, passage_shas, known, list(todo), time.perf_counter() - started)
            budget = None if deadline_s is None else deadline_s - replayed
            if budget is not None and budget < 0:
                failure = DeadlineExceeded(f"{replayed:.3f}s of compute on cached pairs alone > deadline "
                                           f"{deadline_s:g}s")
                failure.wall_s, failure.replayed_s = plans[query.query_id][-1], replayed
                outcomes[query.query_id] = failure
            elif todo:
                items.append(WorkItem(query.query_id, query.query_text, list(todo.values()), budget))

        def store(item: WorkItem, batch: PairBatch) -> None:
            query_sha, _, known, todo_shas, _ = plans[item.query_id]
            fresh = {todo_shas[index]: _pair_score(batch, position, index)
                     for position, index in enumerate(batch.indices.tolist())}
            if self._reads_cache:
                self.cache.store(query_sha, fresh)
            known.update(fresh)

        prepare = getattr(self.scorer, "prepare", None)
        if items and prepare is not None:  # e.g. load the model, now that a pair needs it (outside per-query guards)
            prepare()
        progress, results = Progress("rerank: scoring", len(items), unit="queries"), {}
        for result in self.executor.run(self.scorer, items, store):
            results[result.query_id] = result
            progress.update()
        for query in queries:
            if query.query_id in outcomes:
                continue
            result = results.get(query.query_id)
            if result is not None and result.failure is not None:
                failure, (_, passage_shas, known, todo_shas, lookup_s) = result.failure, plans[query.query_id]
                failure.wall_s = lookup_s + result.wall_s
                failure.compute_s = sum(float(np.sum(batch.compute_s)) for batch in result.batches)
                failure.replayed_s = sum(known[sha].compute_s for sha in passage_shas if sha not in set(todo_shas))
                outcomes[query.query_id] = failure
                continue
            outcomes[query.query_id] = check_deadline(self._scores(plans[query.query_id], result), deadline_s)
        return outcomes

    def _scores(self, plan, result: WorkResult | None) -> Scores:
        _, passage_shas, known, todo_shas, lookup_s = plan
        fresh = set(todo_shas)
        pairs = [known[sha] for sha in passage_shas]
        timings: dict[str, float] = {}
        for batch in result.batches if result else []:
            for name, seconds in batch.timings.items():
                timings[name] = timings.get(name, 0.0) + seconds
        stats = {}
        if all(pair.query_tokens is not None for pair in pairs):
            stats = {"query_tokens": np.array([p.query_tokens for p in pairs], dtype=np.int32),
                     "passage_tokens": np.array([p.passage_tokens for p in pairs], dtype=np.int32),
                     "truncated": np.array([p.truncated for p in pairs], dtype=bool)}
        raw = np.array([pair.score for pair in pairs], dtype=np.float64)
        return Scores(NORMALIZE[self.normalization](raw), wall_s=lookup_s + (result.wall_s if result else 0.0),
                      compute_s=sum(known[sha].compute_s for sha in todo_shas),
                      replayed_s=sum(pair.compute_s for sha, pair in zip(passage_shas, pairs) if sha not in fresh),
                      cache_hits=sum(sha not in fresh for sha in passage_shas), timings=timings, pair_stats=stats)

    def describe(self) -> dict[str, Any]:
        return {**self.scorer.describe(), "normalization": self.normalization,
                "cache": {"fingerprint": self.cache.fingerprint, "key": self.cache.parts},
                "executor": self.executor.name}


def _pair_score(batch: PairBatch, position: int, index: int) -> PairScore:
    stats = {name: batch.stats[name][position].item() for name in PAIR_STATS if name in batch.stats}
    return PairScore(float(batch.scores[position]), stats.get("query_tokens"), stats.get("passage_tokens"),
                     stats.get("truncated"), float(batch.compute_s[position]))


PAIR_SCORERS: Registry[Callable[[Any, BuildContext], PairScorer]] = Registry("pair-scorer kind",
                                                                                  "rerankeval.systems")
"""Pair-scorer factories by kind: what builds the bare scorer again (in a Ray actor, behind ``rerankeval serve``)."""


def register_pair_scorer(kind: str, config: type[PairScorerConfig], *, learned: bool = False):
    """Decorator registering ``factory(config, context) -> PairScorer`` as the system kind ``kind``; ``learned``: it
    scores with a trained model (``roles.KindTraits``)."""
    def register(factory: Callable[[Any, BuildContext], PairScorer]):
        @functools.wraps(factory)  # the kind's build names the module that registered it (the CLI reference's filter)
        def build(settings: PairScorerConfig, context: BuildContext) -> System:
            scorer = factory(settings, context)
            cache = ScoreCache(cache_dir(settings.cache_dir), scorer.fingerprint())
            recipe = ScorerRecipe(factory, settings, context)
            return PairSystem(scorer, cache, settings.normalization, build_executor(settings.executor, recipe))

        register_system(kind, config, learned=learned)(build)
        PAIR_SCORERS.add(kind, factory)
        return factory

    return register
