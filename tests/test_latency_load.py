"""The same decision under load: the latency the verdict weighs is not the machine's load (issue 21, point 7).

A simulated machine (injected clocks) stands in for a loaded one, so nothing here asserts real speed."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace

import numpy as np
import pytest
import pandas as pd

from rerankeval.core.io import write_json
from rerankeval.serving.config import LatencyConfig
from rerankeval.serving.measure import Clocks, MachineSample, measure_latency, verdict_latencies
from rerankeval.stats.config import ReleaseRule
from rerankeval.stats.critical_slices import CriticalSlice
from rerankeval.stats.verdict import Decision, DeltaEvidence, Evidence, LatencyEvidence, SliceEvidence, decide
from rerankeval.systems.base import Query, QueryCandidates
from rerankeval.systems.base import Scores, System

COST_S = 0.25  # CPU seconds one query of the simulated system takes (rounds of 1 s: long enough for /proc/stat)


class SimulatedMachine:
    """A machine on which each query costs ``COST_S`` of CPU, and the wall clock runs ``slowdown`` times that while
    other processes keep ``other_cpus`` CPUs busy."""

    def __init__(self, slowdown: float = 1.0, other_cpus: float = 0.0, cpus: int = 2):
        self.slowdown, self.other_cpus, self.cpus = slowdown, other_cpus, cpus
        self.wall_s = self.cpu_s = self.busy_s = 0.0

    def work(self, cpu_s: float) -> None:
        wall = cpu_s * self.slowdown
        self.wall_s += wall
        self.cpu_s += cpu_s
        self.busy_s += cpu_s + self.other_cpus * wall

    def idle(self, seconds: float) -> None:
        """This process waits: the wall clock runs, the other processes keep working."""
        self.wall_s += seconds
        self.busy_s += self.other_cpus * seconds

    def clocks(self, with_proc_stat: bool = True, load_average: float | None = None) -> Clocks:
        return Clocks(wall=lambda: self.wall_s, cpu=lambda: self.cpu_s,
                      machine=(lambda: MachineSample(self.busy_s, 0.0)) if with_proc_stat else (lambda: None),
                      load_average=lambda: self.other_cpus + 1.0 if load_average is None else load_average,
                      cpus=self.cpus, sleep=self.idle)


class FixedWorkload(System):
    def __init__(self, machine: SimulatedMachine):
        self.machine = machine

    def score(self, query):
        self.machine.work(COST_S)
        return Scores(np.zeros(len(query.frame)))


QUERIES = [QueryCandidates(Query(f"q{i}", "text"), pd.DataFrame({"passage": ["p"] * 3})) for i in range(8)]
SETTINGS = LatencyConfig(queries=5, warmup_queries=3, repeats=3)


def measured(machine: SimulatedMachine, with_proc_stat: bool = True) -> dict:
    return measure_latency(FixedWorkload(machine), QUERIES, SETTINGS, machine.clocks(with_proc_stat))


def test_the_cpu_time_of_a_fixed_workload_is_stable_under_a_wall_clock_slowdown():
    idle, loaded = measured(SimulatedMachine()), measured(SimulatedMachine(slowdown=9.0, other_cpus=1.8))
    assert idle["cpu_p95_ms"] == loaded["cpu_p95_ms"] == COST_S * 1000
    assert idle["p95_ms"] == COST_S * 1000 and loaded["p95_ms"] == 9 * COST_S * 1000  # wall time is the load's
    # the verdict round's time of each timed query, by id: what a p95 saving's CI resamples
    assert list(idle["wall_ms_by_query"]) == [query.query_id for query in QUERIES[SETTINGS.warmup_queries:]]
    assert set(idle["wall_ms_by_query"].values()) == {COST_S * 1000}
    assert idle["other_cpus_by_round"] == [0.0] * 3 and loaded["other_cpus_by_round"] == [1.8] * 3
    assert idle["untrusted"] is None
    assert loaded["untrusted"].startswith("measured while other processes kept 1.8 of 2 CPUs busy")


def test_a_round_of_fast_queries_is_watched_long_enough_to_see_other_processes():
    """Queries of 0.1 ms end a round within a tick of /proc/stat; the 1-minute load average still holds the stages
    that ran before (here 1.6): the round is watched, idle, for a quarter second, and what others ran is read."""

    class Fast(System):
        def score(self, query):
            machine.work(0.0001)
            return Scores(np.zeros(len(query.frame)))

    for others in (0.0, 0.9):
        machine = SimulatedMachine(other_cpus=others)
        result = measure_latency(Fast(), QUERIES, SETTINGS, machine.clocks(load_average=1.6))
        assert result["other_cpus_by_round"] == [pytest.approx(others, abs=0.01)] * 3
        assert (result["untrusted"] is None) == (others <= SETTINGS.max_other_cpus)
        assert result["p95_ms"] == pytest.approx(0.1)  # the wait is not the queries' time


def test_without_proc_stat_the_load_average_less_the_measurements_own_work_stands_in():
    loaded = measured(SimulatedMachine(slowdown=9.0, other_cpus=1.8, cpus=4), with_proc_stat=False)
    # load average 2.8 counts the measurement's own thread, which kept 1/9 of a CPU busy
    assert abs(loaded["other_cpus_by_round"][0] - (2.8 - 1 / 9)) < 0.01 and loaded["untrusted"]
    # a queue longer than the machine: other processes can keep at most every CPU busy
    assert measured(SimulatedMachine(slowdown=9.0, other_cpus=8.0), with_proc_stat=False)["other_cpus_by_round"] \
        == [2.0] * 3
    assert measured(SimulatedMachine(), with_proc_stat=False)["untrusted"] is None  # its own 1.0 is not others'


RULE = ReleaseRule(primary_metric="nDCG@10", min_delta=0.03, latency_p95_max_ms=1000,
                   critical_slices=[CriticalSlice(column="lang", budget=0.05)])
FLAT = Evidence(primary=DeltaEvidence("nDCG@10", 0.008, -0.026, 0.040),
                slices=(SliceEvidence("lang", "en", 40, -0.055, -0.16, 0.046),))


def verdict_from_measurement(tmp_path, machine: SimulatedMachine, evidence: Evidence = FLAT):
    """The verdict the compare stage would give on this machine's measurement of a system over budget."""
    system = FixedWorkload(machine)
    result = measure_latency(system, QUERIES, SETTINGS, machine.clocks())
    write_json(tmp_path / "blend.json", result)
    latency, _, untrusted = verdict_latencies(str(tmp_path / "{system}.json"), None, ["blend"])
    return decide(RULE, replace(evidence, latency=LatencyEvidence(latency["blend"],
                                                                  challenger_untrusted=untrusted.get("blend"))))


def test_an_overrun_measured_under_load_is_inconclusive_with_the_load_reason_never_reject(tmp_path):
    loaded = verdict_from_measurement(tmp_path, SimulatedMachine(slowdown=6.0, other_cpus=1.9))
    assert loaded.decision is Decision.INCONCLUSIVE
    latency_reason = next(reason for reason in loaded.reasons if reason.startswith("latency p95"))
    assert latency_reason.startswith("latency p95: challenger 1500.0 ms exceeds budget 1000.0 ms, but not trusted: "
                                     "measured while other processes kept 1.9 of 2 CPUs busy")
    assert "re-measure on an idle machine" in latency_reason
    idle = verdict_from_measurement(tmp_path, SimulatedMachine())
    assert idle.decision is Decision.INCONCLUSIVE and not any("latency" in r for r in idle.reasons)
    assert [r for r in loaded.reasons if not r.startswith("latency")] == list(idle.reasons)


def test_a_real_overrun_on_an_idle_machine_still_rejects(tmp_path):
    slow_but_idle = verdict_from_measurement(tmp_path, SimulatedMachine(slowdown=6.0, other_cpus=0.1))
    assert slow_but_idle.decision is Decision.REJECT
    assert slow_but_idle.decided_by == "latency p95: challenger 1500.0 ms exceeds budget 1000.0 ms"


def test_a_pass_measured_under_load_stands_load_only_adds_time(tmp_path):
    good = replace(FLAT, primary=DeltaEvidence("nDCG@10", 0.08, 0.05, 0.11),
                   slices=(SliceEvidence("lang", "en", 40, 0.06, 0.01, 0.11),))
    assert verdict_from_measurement(tmp_path, SimulatedMachine(slowdown=3.0, other_cpus=1.5),
                                    good).decision is Decision.ACCEPT


def test_a_loaded_baseline_cannot_pass_the_ratio_budget_it_inflated():
    rule = RULE.model_copy(update={"latency_p95_max_ms": None, "latency_p95_max_ratio": 1.5})
    good = replace(FLAT, primary=DeltaEvidence("nDCG@10", 0.08, 0.05, 0.11),
                   slices=(SliceEvidence("lang", "en", 40, 0.06, 0.01, 0.11),))
    verdict = decide(rule, replace(good, latency=LatencyEvidence(140.0, 100.0, baseline_untrusted="measured while x")))
    assert verdict.decision is Decision.INCONCLUSIVE
    assert verdict.decided_by.endswith("within baseline 100.0 ms x 1.5 = 150.0 ms, but not trusted: baseline measured "
                                       "while x; re-measure on an idle machine (delete data/latency/<system>.json, "
                                       "then dvc repro -s latency compare)")


def test_every_failed_check_is_a_listed_reason_whichever_decided():
    over = LatencyEvidence(2596.5)
    cases = {
        Decision.REJECT: replace(FLAT, latency=over),  # a latency REJECT with quality and slice reasons
        Decision.INCONCLUSIVE: replace(FLAT, latency=replace(over, challenger_untrusted="loaded")),
        Decision.ACCEPT: replace(FLAT, primary=DeltaEvidence("nDCG@10", 0.08, 0.05, 0.11),
                                 slices=(SliceEvidence("lang", "en", 40, 0.06, 0.01, 0.11),),
                                 latency=LatencyEvidence(400.0)),
    }
    for decision, evidence in cases.items():
        verdict = decide(RULE, evidence)
        assert verdict.decision is decision
        failed = [check.message for check in verdict.checks if not check.passed]
        assert set(failed) <= set(verdict.reasons)
        if decision is not Decision.ACCEPT:
            assert verdict.decided_by == verdict.reasons[0]
            assert len(verdict.reasons) == len(failed) == 4  # CI, min_delta, slice, latency
            assert any(r.startswith("nDCG@10: 95% CI") for r in verdict.reasons)
            assert any(r.startswith("critical slice lang=en") for r in verdict.reasons)
            assert verdict.decided_by.startswith("latency p95" if decision is Decision.REJECT else "nDCG@10")


def test_a_system_whose_time_is_mostly_replayed_cannot_reject_on_it():
    """The replayed compute was timed when it was first computed, under a load the measurement cannot see."""

    machine = SimulatedMachine()

    class Replaying(System):
        def score(self, query):
            machine.work(COST_S)
            return Scores(np.zeros(len(query.frame)), replayed_s=1.5, cache_hits=len(query.frame))

    result = measure_latency(Replaying(), QUERIES, SETTINGS, machine.clocks())
    assert result["p95_ms"] == 1750.0 and result["cpu_p95_ms"] == 1750.0 and result["untrusted"]
    assert result["untrusted"].startswith("most of it is compute replayed from the pair-score cache")


class Sleeper(System):
    def score(self, query):
        time.sleep(0.02)
        return Scores(np.zeros(len(query.frame)))


def test_real_competing_processes_are_recorded_as_other_cpus():
    """Two busy loops beside a measurement that only sleeps: /proc/stat's busy time is theirs, not its own."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        time.sleep(0.2)
        result = measure_latency(Sleeper(), QUERIES, SETTINGS)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    assert max(result["other_cpus_by_round"]) > 0.2
    assert result["cpu_p95_ms"] is not None and result["load_average_1m"]["after"] >= 0
