"""The latency the verdict reads: measured on its own, not as a side effect of the quality run.

In-process by default: the system scores the first ``queries`` queries of the evaluated split (by query id) at its
depth, with nothing cached, after ``warmup_queries`` untimed ones, ``repeats`` rounds over all of them (a burst of
load from elsewhere then hits every query alike). The result states its noise: the p95 of each round, their spread,
and the machine's load average before and after. When a load test of the system ran, the verdict reads the load
test's p95 at ``pareto_concurrency`` instead (latency as a client of the served model sees it).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import ScoringFailure
from ..core.io import read_json
from ..systems.base import QueryCandidates, System
from ..systems.pairs import PairSystem
from .config import LatencyConfig

SOURCE_IN_PROCESS, SOURCE_LOADTEST = "in-process", "load test"


def score_uncached(system: System, query: QueryCandidates) -> float:
    """Score one query as a cold request: a pair scorer bypasses its pair-score cache. Returns the compute seconds
    of cache hits it could not bypass (a composite's components read the cache): the caller charges them, as
    measured when those pairs were scored, so a blend of a cached cross-encoder costs what the cross-encoder does."""
    if isinstance(system, PairSystem):
        for _ in system.scorer.score_batches(query.query_text, query.passages):
            pass
        return 0.0
    return system.score(query).replayed_s


def percentiles_ms(seconds: Sequence[float]) -> dict[str, float | None]:
    values = np.asarray(seconds, dtype=np.float64) * 1000
    if not len(values):
        return {"p50_ms": None, "p95_ms": None, "p99_ms": None}
    return {f"p{q}_ms": float(np.percentile(values, q)) for q in (50, 95, 99)}


def measure_latency(system: System, queries: Sequence[QueryCandidates], settings: LatencyConfig) -> dict[str, Any]:
    """Per-query latency percentiles over every timed round, with each round's p95 and the machine's load."""
    warmup, timed = queries[:settings.warmup_queries], queries[settings.warmup_queries:]
    if not timed:
        timed = queries
    load_before = os.getloadavg()
    for query in warmup:
        _timed(system, query)
    rounds, failures = [], 0
    for _ in range(settings.repeats):
        seconds = []
        for query in timed:
            elapsed, failed = _timed(system, query)
            seconds.append(elapsed)
            failures += failed
        rounds.append(seconds)
    every = [s for round_ in rounds for s in round_]
    round_p95 = [percentiles_ms(round_)["p95_ms"] for round_ in rounds]
    pairs = sum(len(query.frame) for query in timed) * settings.repeats
    return {
        "source": SOURCE_IN_PROCESS, "queries": len(timed), "warmup_queries": len(warmup),
        "repeats": settings.repeats, "samples": len(every), "failures": failures, **percentiles_ms(every),
        "p95_ms_by_round": round_p95,
        "p95_spread_ms": float(max(round_p95) - min(round_p95)),
        "pairs_per_s": float(pairs / sum(every)) if sum(every) > 0 else None,
        "load_average_1m": {"before": round(load_before[0], 2), "after": round(os.getloadavg()[0], 2)},
        "cpus": os.cpu_count(),
    }


def _timed(system: System, query: QueryCandidates) -> tuple[float, int]:
    started = time.perf_counter()
    try:
        replayed_s = score_uncached(system, query)
        failed = 0
    except ScoringFailure as failure:  # a failed query still cost its time until it failed
        replayed_s, failed = getattr(failure, "replayed_s", 0.0), 1
    return time.perf_counter() - started + replayed_s, failed


def loadtest_p95(loadtest: Mapping[str, Any] | None, system: str) -> float | None:
    """The load test's p95 at its chosen concurrency, when it ran on ``system``."""
    if not loadtest or not loadtest.get("ran") or loadtest.get("system") != system:
        return None
    level = next((row for row in loadtest["levels"] if row["concurrency"] == loadtest["pareto_concurrency"]), None)
    return None if level is None else level["p95_ms"]


def verdict_latencies(measurement_pattern: str, loadtest_path: str | Path | None,
                      systems: Sequence[str]) -> tuple[dict[str, float | None], dict[str, str]]:
    """Each system's p95 (ms) for the verdict and where it comes from: the load test when it ran on the system,
    else the dedicated in-process measurement (``measurement_pattern`` has ``{system}``)."""
    loadtest = read_json(loadtest_path) if loadtest_path and Path(loadtest_path).exists() else None
    latency, sources = {}, {}
    for system in systems:
        served = loadtest_p95(loadtest, system)
        if served is not None:
            latency[system], sources[system] = served, f"{SOURCE_LOADTEST} at concurrency " \
                                                       f"{loadtest['pareto_concurrency']}"
            continue
        measured = read_json(measurement_pattern.replace("{system}", system))
        latency[system], sources[system] = measured["p95_ms"], (
            f"{SOURCE_IN_PROCESS}, {measured['queries']} queries x {measured['repeats']} rounds, p95 by round "
            f"{min(measured['p95_ms_by_round']):.1f}-{max(measured['p95_ms_by_round']):.1f} ms, load average "
            f"{measured['load_average_1m']['before']}/{measured['load_average_1m']['after']} on {measured['cpus']} CPUs")
    return latency, sources
