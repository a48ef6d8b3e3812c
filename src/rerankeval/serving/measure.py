"""The latency the verdict reads: measured on its own, not as a side effect of the quality run.

In-process by default: the system scores the first ``queries`` queries of the evaluated split (by query id) at its
depth, with nothing cached, after ``warmup_queries`` untimed ones, ``repeats`` rounds over all of them. Load from
other processes only adds wall time, so the verdict reads the quietest round (lowest p95), and each round records
what competed with it: the CPUs other processes kept busy (``/proc/stat`` minus this process's CPU time, steal
included; the load average where there is no ``/proc/stat`` or the round is too short for its clock ticks). A round
where that exceeds ``max_other_cpus`` is not trusted: an overrun measured then cannot REJECT (``stats.verdict``). The
CPU time of each query (every thread of this process, so torch's intra-op threads count) is recorded beside: what the
system costs, whatever the load. When a load test of the system ran, the verdict reads the load test's p95 at
``pareto_concurrency`` instead (latency as a client of the served model sees it).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import ScoringFailure
from ..core.io import read_json
from ..systems.base import QueryCandidates, System
from ..systems.pairs import PairSystem
from .config import LatencyConfig

SOURCE_IN_PROCESS, SOURCE_LOADTEST = "in-process", "load test"
# /proc/stat columns that are a CPU at work for someone (user nice system idle iowait irq softirq steal ...).
_BUSY_COLUMNS, _STEAL_COLUMN = (0, 1, 2, 5, 6, 7), 7
# /proc/stat counts in clock ticks (10 ms per CPU): over this window a tick either way on 2 CPUs moves the other
# processes' CPUs by under 0.1, well inside serving.latency.max_other_cpus. A shorter round is watched this long.
_MIN_PROC_STAT_WINDOW_S = 0.25


@dataclass(frozen=True)
class MachineSample:
    """The machine's CPU seconds since boot, all CPUs together: busy (steal included) and stolen by a hypervisor."""

    busy_s: float
    steal_s: float


def machine_sample() -> MachineSample | None:
    """From ``/proc/stat``; None where there is none (then the load average stands in)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    values = [int(value) for value in fields]
    return MachineSample(sum(values[i] for i in _BUSY_COLUMNS if i < len(values)) / ticks,
                         (values[_STEAL_COLUMN] if len(values) > _STEAL_COLUMN else 0) / ticks)


@dataclass(frozen=True)
class Clocks:
    """What a measurement reads; a test injects its own to simulate a loaded machine."""

    wall: Callable[[], float] = time.perf_counter
    cpu: Callable[[], float] = time.process_time
    machine: Callable[[], MachineSample | None] = machine_sample
    load_average: Callable[[], float] = lambda: os.getloadavg()[0]
    cpus: int = os.cpu_count() or 1
    sleep: Callable[[float], None] = time.sleep


def score_uncached(system: System, query: QueryCandidates) -> float:
    """Score one query as a cold request: a pair scorer calls its model directly, a composite with every component
    cold (``System.uncached``: no pair-score cache, nothing remembered from the last query), so a blend of a
    cross-encoder is timed scoring its pairs. Returns the compute seconds of cache hits a system could not bypass
    (an LLM reranker's answers): the caller charges them, as measured when they were first computed."""
    if isinstance(system, PairSystem):
        for _ in system.scorer.score_batches(query.query_text, query.passages):
            pass
        return 0.0
    with system.uncached():
        return system.score(query).replayed_s


def percentiles_ms(seconds: Sequence[float], prefix: str = "") -> dict[str, float | None]:
    values = np.asarray(seconds, dtype=np.float64) * 1000
    if not len(values):
        return {f"{prefix}p{q}_ms": None for q in (50, 95, 99)}
    return {f"{prefix}p{q}_ms": float(np.percentile(values, q)) for q in (50, 95, 99)}


@dataclass
class _Round:
    wall_s: list[float]
    cpu_s: list[float]
    replayed_s: float
    other_cpus: float
    steal_cpus: float | None


def measure_latency(system: System, queries: Sequence[QueryCandidates], settings: LatencyConfig,
                    clocks: Clocks = Clocks()) -> dict[str, Any]:
    """Per-query latency percentiles of the quietest round, each round's p95 and competing load, CPU time per
    query, and whether the figure can be trusted to REJECT."""
    warmup, timed = queries[:settings.warmup_queries], queries[settings.warmup_queries:]
    if not timed:
        timed = queries
    load_before = clocks.load_average()
    for query in warmup:
        _timed(system, query, clocks)
    rounds, failures = [], 0
    for _ in range(settings.repeats):
        round_, round_failures = _measure_round(system, timed, clocks)
        rounds.append(round_)
        failures += round_failures
    load_after = clocks.load_average()
    round_p95 = [percentiles_ms(round_.wall_s)["p95_ms"] for round_ in rounds]
    quietest = int(np.argmin(round_p95))
    chosen = rounds[quietest]
    pairs = sum(len(query.frame) for query in timed)
    every_cpu = [s for round_ in rounds for s in round_.cpu_s]
    return {
        "source": SOURCE_IN_PROCESS, "queries": len(timed), "warmup_queries": len(warmup),
        "repeats": settings.repeats, "samples": len(every_cpu), "failures": failures,
        **percentiles_ms(chosen.wall_s), "verdict_round": quietest,
        # the verdict round's own times, by query: what a p95 saving's CI resamples, paired with the other system's
        "wall_ms_by_query": {query.query_id: round(1000 * seconds, 3) for query, seconds in zip(timed, chosen.wall_s)},
        "p95_ms_by_round": round_p95,
        "p95_spread_ms": float(max(round_p95) - min(round_p95)),
        **percentiles_ms(every_cpu, "cpu_"),
        "other_cpus_by_round": [round(r.other_cpus, 2) for r in rounds],
        "steal_cpus_by_round": [None if r.steal_cpus is None else round(r.steal_cpus, 2) for r in rounds],
        "replayed_share": float(chosen.replayed_s / sum(chosen.wall_s)) if sum(chosen.wall_s) > 0 else 0.0,
        "pairs_per_s": float(pairs / sum(chosen.wall_s)) if sum(chosen.wall_s) > 0 else None,
        "load_average_1m": {"before": round(load_before, 2), "after": round(load_after, 2)},
        "cpus": clocks.cpus,
        "untrusted": _untrusted(chosen, settings, clocks.cpus, max(load_before, load_after)),
    }


def _measure_round(system: System, timed: Sequence[QueryCandidates], clocks: Clocks) -> tuple[_Round, int]:
    machine_start, cpu_start, wall_start, load_start = clocks.machine(), clocks.cpu(), clocks.wall(), \
        clocks.load_average()
    wall_s, cpu_s, replayed, failures = [], [], 0.0, 0
    for query in timed:
        elapsed, cpu, replayed_s, failed = _timed(system, query, clocks)
        wall_s.append(elapsed)
        cpu_s.append(cpu)
        replayed += replayed_s
        failures += failed
    wall = clocks.wall() - wall_start
    if machine_start is not None and wall < _MIN_PROC_STAT_WINDOW_S:
        # A round of fast queries is over within a few ticks: keep watching the machine, idle, until the window is
        # long enough to see what other processes ran. The 1-minute load average cannot stand in: it still holds
        # the stages that ran before this one.
        clocks.sleep(_MIN_PROC_STAT_WINDOW_S - wall)
    machine_end, own_cpu, window = clocks.machine(), clocks.cpu() - cpu_start, clocks.wall() - wall_start
    if machine_start is None or machine_end is None:
        # No /proc/stat: the load average counts this measurement's own running threads too: take out what it used.
        load = max(load_start, clocks.load_average())
        other = min(clocks.cpus, max(0.0, load - own_cpu / max(window, 1e-9)))  # runnable threads beyond CPUs wait
        return _Round(wall_s, cpu_s, replayed, other, None), failures
    other = (machine_end.busy_s - machine_start.busy_s - own_cpu) / window
    steal = (machine_end.steal_s - machine_start.steal_s) / window
    return _Round(wall_s, cpu_s, replayed, min(clocks.cpus, max(0.0, other)), max(0.0, steal)), failures


def _untrusted(chosen: _Round, settings: LatencyConfig, cpus: int, load_average: float) -> str | None:
    """Why the verdict's figure may be the machine's load rather than the system's cost, or None."""
    if chosen.other_cpus > settings.max_other_cpus:
        stolen = chosen.steal_cpus is not None and chosen.steal_cpus >= 0.05
        steal = f", {chosen.steal_cpus:.1f} of them stolen by the hypervisor" if stolen else ""
        return (f"measured while other processes kept {chosen.other_cpus:.1f} of {cpus} CPUs busy{steal} (load "
                f"average {load_average:.2f}; serving.latency.max_other_cpus is {settings.max_other_cpus:g})")
    if sum(chosen.wall_s) > 0 and chosen.replayed_s / sum(chosen.wall_s) > 0.5:
        return ("most of it is compute replayed from the pair-score cache, timed when the pairs were scored "
                "under a load that was not recorded")
    return None


def _timed(system: System, query: QueryCandidates, clocks: Clocks) -> tuple[float, float, float, int]:
    """Wall and CPU seconds of one query, each with the replayed compute of its cache hits, that compute, and 1
    when it failed."""
    started, cpu_started = clocks.wall(), clocks.cpu()
    try:
        replayed_s = score_uncached(system, query)
        failed = 0
    except ScoringFailure as failure:  # a failed query still cost its time until it failed
        replayed_s, failed = getattr(failure, "replayed_s", 0.0), 1
    return clocks.wall() - started + replayed_s, clocks.cpu() - cpu_started + replayed_s, replayed_s, failed


def loadtest_p95(loadtest: Mapping[str, Any] | None, system: str) -> float | None:
    """The load test's p95 at its chosen concurrency, when it ran on ``system``."""
    if not loadtest or not loadtest.get("ran") or loadtest.get("system") != system:
        return None
    level = next((row for row in loadtest["levels"] if row["concurrency"] == loadtest["pareto_concurrency"]), None)
    return None if level is None else level["p95_ms"]


def verdict_times_by_query(measurement_pattern: str, loadtest_path: str | Path | None, systems: Sequence[str]
                           ) -> dict[str, pd.Series]:
    """Each system's per-query wall times (ms, indexed by query id) of the round its verdict p95 comes from; none for
    a system the load test decided (its p95 is the served one) or a measurement made before they were kept."""
    loadtest = read_json(loadtest_path) if loadtest_path and Path(loadtest_path).exists() else None
    found = {}
    for system in systems:
        if loadtest_p95(loadtest, system) is None:
            measured = read_json(measurement_pattern.replace("{system}", system))
            if measured.get("wall_ms_by_query"):
                found[system] = pd.Series(measured["wall_ms_by_query"], dtype=np.float64)
    return found


def verdict_latencies(measurement_pattern: str, loadtest_path: str | Path | None, systems: Sequence[str]
                      ) -> tuple[dict[str, float | None], dict[str, str], dict[str, str]]:
    """Each system's p95 (ms) for the verdict, where it comes from (the load test when it ran on the system, else
    the dedicated in-process measurement; ``measurement_pattern`` has ``{system}``), and, for the measurements
    the machine's load may have inflated, why."""
    loadtest = read_json(loadtest_path) if loadtest_path and Path(loadtest_path).exists() else None
    latency, sources, untrusted = {}, {}, {}
    for system in systems:
        served = loadtest_p95(loadtest, system)
        if served is not None:
            latency[system], sources[system] = served, f"{SOURCE_LOADTEST} at concurrency " \
                                                       f"{loadtest['pareto_concurrency']}"
            continue
        measured = read_json(measurement_pattern.replace("{system}", system))
        latency[system] = measured["p95_ms"]
        quietest = measured["verdict_round"]
        sources[system] = (
            f"{SOURCE_IN_PROCESS}, {measured['queries']} queries x {measured['repeats']} rounds, quietest round "
            f"{quietest + 1} (p95 by round {min(measured['p95_ms_by_round']):.1f}-"
            f"{max(measured['p95_ms_by_round']):.1f} ms), other processes' CPUs "
            f"{measured['other_cpus_by_round'][quietest]} of {measured['cpus']}, load average "
            f"{measured['load_average_1m']['before']}/{measured['load_average_1m']['after']}, CPU time p95 "
            f"{measured['cpu_p95_ms']:.1f} ms"
            + (f", measured as {measured['timed_as']} (the same timed work)" if measured.get("timed_as") else ""))
        if measured["untrusted"]:
            untrusted[system] = measured["untrusted"]
    return latency, sources, untrusted
