"""The system seam: what a system sees of a query, what it returns, and the modes of a run's rows.

A system scores a query's top-``depth`` candidates (higher is better); the rerank driver orders them, so a system
can only permute its candidates. How a kind is configured, registered and built is in ``registry``; this module
holds what the stages that read runs, train on a split or generate answers need as well, and imports no kind.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..core.errors import DeadlineExceeded, InfrastructureError, ScoringFailure
from ..core.progress import Progress

RERANKED, FUSED_TAIL, FUSION_FALLBACK, SKIPPED = "RERANKED", "FUSED_TAIL", "FUSION_FALLBACK", "SKIPPED"
"""Modes of a run's rows: scored by the system; beyond the depth (fused order); the system failed on the query
(fused order, with the reason); the system chose not to rerank the query (fused order, not a failure)."""

PAIR_STATS = ("query_tokens", "passage_tokens", "truncated")
"""A run row's per-pair token accounting columns (``Scores.pair_stats``), when the system has tokens."""

PROGRAMMING_ERRORS = (InfrastructureError, MemoryError, NameError, ImportError, SyntaxError)
"""Exceptions that fail the stage even when a system raises them: the machinery is broken, not one query."""


@dataclass(frozen=True)
class Query:
    query_id: str
    text: str
    labels: Mapping[str, str | None] = field(default_factory=dict)
    """The query's slice labels (language, intent, ...), for systems that route on them."""


@dataclass(frozen=True)
class QueryCandidates:
    """One query's candidates to score, in fused order (columns of ``retrieval.candidates.load_candidates``)."""

    query: Query
    frame: pd.DataFrame

    @property
    def query_id(self) -> str:
        return self.query.query_id

    @property
    def query_text(self) -> str:
        return self.query.text

    @property
    def passages(self) -> list[str]:
        return self.frame["passage"].tolist()


@dataclass
class Scores:
    """A system's scores for one query's candidates and what producing them cost."""

    values: np.ndarray
    mode: str = RERANKED
    compute_s: float = 0.0
    """Seconds of computation this run (model time; 0 for scores read from columns)."""
    replayed_s: float = 0.0
    """Compute seconds of cache hits, as measured when those scores were computed."""
    cache_hits: int = 0
    wall_s: float = 0.0
    """Measured wall time of scoring this query this run (set by ``score_all``)."""
    timings: dict[str, float] = field(default_factory=dict)
    """A breakdown of ``compute_s`` by the system's own components (tokenize_s, forward_s, network_s, ...)."""
    pair_stats: dict[str, np.ndarray] = field(default_factory=dict)
    """Optional per-candidate arrays: query_tokens, passage_tokens, truncated."""

    @property
    def cold_compute_s(self) -> float:
        """Compute time as if nothing were cached: what deadlines and cost are judged on."""
        return self.compute_s + self.replayed_s


Outcome = Scores | ScoringFailure


class System:
    """Base class of systems: implement ``score`` (one query) and ``describe``; ``score_all`` handles failures."""

    def score(self, query: QueryCandidates) -> Scores:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {}

    @contextmanager
    def uncached(self) -> Iterator[None]:
        """Within it the system scores as a cold request would, bypassing what it keeps between calls where it can
        (``serving.measure`` times systems so). Nothing to bypass here; what a system cannot bypass it reports as
        ``Scores.replayed_s``."""
        yield

    def score_all(self, queries: Sequence[QueryCandidates], deadline_s: float | None) -> dict[str, Outcome]:
        """Every query's scores, or the failure that degrades it (a system error, or a missed deadline)."""
        outcomes = {}
        progress = Progress("rerank: scoring", len(queries), unit="queries")
        for query in queries:
            started = time.perf_counter()
            outcome = guarded(lambda: self.score(query))
            wall_s = time.perf_counter() - started
            if isinstance(outcome, Scores) and not outcome.compute_s and not outcome.replayed_s:
                outcome.compute_s = wall_s  # no finer accounting: the query took what it took
            outcome.wall_s = wall_s
            if isinstance(outcome, ScoringFailure):
                outcome.compute_s = wall_s
            outcomes[query.query_id] = check_deadline(outcome, deadline_s)
            progress.update()
        return outcomes


def guarded(score: Callable[[], Scores]) -> Outcome:
    """Run one query's scoring; a system's failure becomes that query's ``ScoringFailure``."""
    try:
        return score()
    except ScoringFailure as failure:
        return failure
    except PROGRAMMING_ERRORS:
        raise
    except Exception as err:  # a model or service failing on this query degrades the query, not the run
        return ScoringFailure("error", f"{type(err).__name__}: {err}")


def check_deadline(outcome: Outcome, deadline_s: float | None) -> Outcome:
    """The deadline is judged on cold compute time, so the result never depends on what the cache held."""
    if isinstance(outcome, Scores) and deadline_s is not None and outcome.cold_compute_s > deadline_s:
        failure = DeadlineExceeded(f"{outcome.cold_compute_s:.3f}s of compute > deadline {deadline_s:g}s")
        failure.wall_s, failure.compute_s, failure.replayed_s = outcome.wall_s, outcome.compute_s, outcome.replayed_s
        return failure
    return outcome


class SplitCandidates(NamedTuple):
    """One split's frozen candidates (fused order, with text), its queries and qrels, and where they come from."""

    candidates: pd.DataFrame
    queries: Mapping[str, Query]
    qrels: pd.DataFrame
    source: Mapping[str, Any]
    """dataset, path, split, and ``fallback`` (with its reason) when the split came from ``train.fallback_path``."""
