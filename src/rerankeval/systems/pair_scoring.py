"""Scoring pairs: the ``PairScorer`` contract, work items (one query's uncached pairs) and the executors that run
them.

``local`` scores in this process, one query after another, handing back each batch as it comes (the cache stores
it at once); ``threads`` scores several queries at once in threads, for scorers that wait on a service (an HTTP API);
``ray`` (``rerankeval.systems.ray_executor``) scores on a Ray cluster. An executor is chosen by the ``executor``
setting of a pair-scoring system; scores, caching and latency accounting do not depend on it. Whatever the executor,
``on_batch`` (the cache's store) runs in the calling thread.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..core.errors import DeadlineExceeded, ScoringFailure
from ..core.registry import Registry
from .base import Scores, guarded


@dataclass
class PairBatch:
    """Raw scores of some of a query's pairs, as one step of scoring produced them."""

    indices: np.ndarray
    """Positions in the passage list given to ``score_batches``."""
    scores: np.ndarray
    compute_s: np.ndarray | None = None
    """Each pair's compute seconds; None: the batch's measured time, split evenly."""
    stats: dict[str, np.ndarray] = field(default_factory=dict)
    """Per-pair token accounting (``base.PAIR_STATS``), when the scorer has tokens."""
    timings: dict[str, float] = field(default_factory=dict)
    """Components of the batch's compute time (tokenize_s, forward_s, network_s, ...)."""


class PairScorer(Protocol):
    def fingerprint(self) -> dict[str, Any]:
        """Everything that decides a raw score (model identity and revision, versions, lengths, dtype)."""

    def score_batches(self, query: str, passages: list[str]) -> Iterator[PairBatch]:
        """Score every passage against the query, yielding batches; each index appears in exactly one batch."""

    def describe(self) -> dict[str, Any]:
        """JSON-storable facts for the run's metadata."""


@dataclass
class WorkItem:
    """One query's uncached pairs, with the compute budget left after its cache hits."""

    query_id: str
    query_text: str
    passages: list[str]
    budget_s: float | None


@dataclass
class WorkResult:
    query_id: str
    batches: list[PairBatch]
    failure: ScoringFailure | None
    wall_s: float


def score_item(scorer: PairScorer, item: WorkItem,
               on_batch: Callable[[WorkItem, PairBatch], None] | None = None) -> WorkResult:
    """Score one work item batch by batch, stopping once its compute exceeds the budget.

    ``on_batch`` (e.g. the cache's store) runs after each batch; its errors are never a query's failure."""
    batches: list[PairBatch] = []
    started = time.perf_counter()

    def run() -> Scores:
        spent, produced_at = 0.0, time.perf_counter()
        for batch in scorer.score_batches(item.query_text, item.passages):
            now = time.perf_counter()
            if batch.compute_s is None:
                batch.compute_s = np.full(len(batch.indices), (now - produced_at) / max(1, len(batch.indices)))
            batches.append(batch)
            if on_batch is not None:
                on_batch(item, batch)
            spent += float(np.sum(batch.compute_s))
            if item.budget_s is not None and spent > item.budget_s:
                raise DeadlineExceeded(f"{spent:.3f}s of compute with "
                                       f"{len(item.passages) - sum(len(b.indices) for b in batches)}"
                                       f" of {len(item.passages)} uncached pairs left (the scored ones are cached)")
            produced_at = time.perf_counter()
        return Scores(np.empty(0))

    outcome = guarded(run)
    failure = outcome if isinstance(outcome, ScoringFailure) else None
    if failure is None and sorted(i for b in batches for i in b.indices.tolist()) != list(range(len(item.passages))):
        failure = ScoringFailure("bad_response", "the scorer did not return exactly one score per passage")
    if failure is None and any(not np.all(np.isfinite(b.scores)) for b in batches):
        failure = ScoringFailure("bad_response", "the scorer returned NaN or infinite scores")
    return WorkResult(item.query_id, batches, failure, time.perf_counter() - started)


@dataclass(frozen=True)
class ScorerRecipe:
    """How to build a system's scorer again in another process (a Ray actor): its registered factory, settings and
    build context, and the directory relative paths in the settings are relative to."""

    factory: Callable[[Any, Any], PairScorer]
    settings: Any
    context: Any
    cwd: str = field(default_factory=os.getcwd)

    def build(self) -> PairScorer:
        if os.path.isdir(self.cwd):  # a worker on another machine of a cluster needs the same paths there
            os.chdir(self.cwd)
        return self.factory(self.settings, self.context)


class LocalExecutor:
    name = "local"

    def run(self, scorer: PairScorer, items: Sequence[WorkItem],
            on_batch: Callable[[WorkItem, PairBatch], None]) -> Iterator[WorkResult]:
        for item in items:
            yield score_item(scorer, item, on_batch)


class ThreadExecutor:
    """Up to ``concurrency`` queries in flight at once, one thread each: for scorers that wait on a service (an HTTP
    API: a query is one request). Not for in-process models, which already use every core for one batch."""

    name = "threads"

    def __init__(self, concurrency: int):
        self.concurrency = concurrency

    def run(self, scorer: PairScorer, items: Sequence[WorkItem],
            on_batch: Callable[[WorkItem, PairBatch], None]) -> Iterator[WorkResult]:
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="pair-scoring") as pool:
            pending = {pool.submit(score_item, scorer, item): item for item in items}
            for future in as_completed(pending):
                result = future.result()
                for batch in result.batches:  # the cache's connection belongs to this thread
                    on_batch(pending[future], batch)
                yield result


EXECUTORS: Registry[Callable[[ScorerRecipe], Any]] = Registry("executor", "rerankeval.executors")
"""Executor factories by name; a factory gets the recipe of the scorer it runs (``ray`` rebuilds it in workers)."""
EXECUTORS.add("local", lambda recipe: LocalExecutor())
EXECUTORS.add("threads", lambda recipe: ThreadExecutor(getattr(recipe.settings, "max_concurrency", 1)))


def register_executor(name: str, factory: Callable[[ScorerRecipe], Any]) -> None:
    EXECUTORS.add(name, factory)


def build_executor(name: str, recipe: ScorerRecipe):
    return EXECUTORS.get(name)(recipe)
