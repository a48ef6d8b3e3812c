"""The rerank driver: every query of the candidates through one system, assembled into a run and a latency table.

Failures are classified: a system's failure on a query (an exception inside its scoring, bad scores, a missed
deadline) degrades that query to ``FUSION_FALLBACK`` with the reason; anything else (the score cache or the disk
failing, a bug in the driver, a run that is not a permutation) fails the stage.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.errors import ConfigError, ScoringFailure
from ..systems.base import Query, QueryCandidates, System
from ..systems.registry import SystemConfig
from .assemble import assemble, check_permutation, run_frame
from .latency import LATENCY_SCHEMA


Demotion = Callable[[str, Sequence[str]], np.ndarray]
"""Per query id and its doc ids in rank order: which go below the others (``data.access.AccessLabels.stale``)."""


@dataclass(frozen=True)
class RerankSettings:
    depth: int
    deadline_s: float | None = None
    demote: Demotion | None = None
    """After the system ranks a query, the documents this flags go below the others, each part in its order."""

    def __post_init__(self):
        if self.depth < 1:
            raise ValueError(f"depth must be >= 1, got {self.depth}")


def settings_of(config: SystemConfig, stale: Demotion | None, where: str) -> RerankSettings:
    """A system's rerank settings: its depth and deadline, and with ``outdated: demote`` the labels' ``stale`` flags
    (``BuildContext.stale``), which ``where`` must have read."""
    if config.outdated == "demote" and stale is None:
        raise ConfigError(f"{where}: outdated: demote needs the collection's validity labels, which this command does "
                          "not read. Fix: run it as a pipeline stage (rerank, sweep, shadow), or set outdated: keep.")
    return RerankSettings(config.depth, config.deadline_s, stale if config.outdated == "demote" else None)


def rerank(candidates: pd.DataFrame, queries: Mapping[str, Query], system: System,
           settings: RerankSettings) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rerank every query of ``candidates``; return (run, latency) frames."""
    candidates = candidates.sort_values(["query_id", "fused_rank"], kind="stable").reset_index(drop=True)
    if "parent_id" not in candidates.columns:
        candidates = candidates.assign(parent_id=candidates["doc_id"])
    positions = candidates.groupby("query_id", sort=True).indices  # each query's rows, in fused order
    frames = {query_id: candidates.iloc[rows].reset_index(drop=True) for query_id, rows in positions.items()}
    heads = [QueryCandidates(queries[query_id], frame.iloc[: settings.depth]) for query_id, frame in frames.items()]
    outcomes = system.score_all(heads, settings.deadline_s)

    query_runs, latency_rows = [], []
    for position, (query_id, frame) in enumerate(frames.items()):
        outcome = outcomes[query_id]
        started = time.perf_counter()
        query_run = assemble(frame, settings.depth, outcome)
        if settings.demote is not None:
            query_run = query_run.demoted(settings.demote(query_id, frame["doc_id"].to_numpy()[query_run.order]
                                                          .tolist()))
        sort_s = time.perf_counter() - started
        query_runs.append(query_run)
        scored = not isinstance(outcome, ScoringFailure)
        latency_rows.append({
            "query_id": query_id, "position": position, "mode": query_run.mode, "reason": query_run.reason,
            "n_pairs": min(settings.depth, len(frame)),
            "cache_hits": outcome.cache_hits if scored else 0,
            "wall_s": outcome.wall_s + sort_s, "compute_s": outcome.compute_s, "replayed_s": outcome.replayed_s,
            "sort_s": sort_s,
            "timings": sorted(outcome.timings.items()) if scored else [],
        })
    run = run_frame(candidates, [positions[query_id] for query_id in frames], query_runs)
    check_permutation(candidates, run)
    return run, pd.DataFrame(latency_rows, columns=LATENCY_SCHEMA.names)
