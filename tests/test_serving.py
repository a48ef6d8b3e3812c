"""The load test against a fake API on 127.0.0.1, the dedicated latency measurement the verdict reads, and the
report's serving sections (no Ray here: tests/test_serving_ray.py serves a real model)."""

import json
import time

import numpy as np
import pandas as pd
import pytest

from rerankeval.core.errors import ConfigError
from rerankeval.core.io import write_json
from rerankeval.policies.frontier import served_point
from rerankeval.report import serving as report_serving
from rerankeval.rerank.cost import api_cost_per_1k
from rerankeval.serving.config import LatencyConfig, LoadTestConfig
from rerankeval.serving.loadtest import Endpoint, Request, overhead, run_levels
from rerankeval.serving.measure import measure_latency, verdict_latencies
from rerankeval.systems.base import Query, QueryCandidates
from rerankeval.systems.base import Scores, System
from tests.test_http_rerank import fake_api  # noqa: F401  (the fixture)

REQUESTS = [Request(f"query {i}", ["alpha beta", "beta gamma", "gamma"], 30) for i in range(5)]


def test_the_load_test_measures_each_level_and_counts_retries(fake_api):  # noqa: F811
    server = fake_api([429, "ok"])
    settings = LoadTestConfig(concurrency=[1, 4], warmup_requests=2, requests=12, pareto_concurrency=4, backoff_s=0.0)
    levels = run_levels(Endpoint(f"http://127.0.0.1:{server.server_address[1]}"), REQUESTS, settings)
    assert [level["concurrency"] for level in levels] == [1, 4]
    assert server.calls == 1 + 2 * 14  # one 429 retried, then every warm-up and measured request once
    first, second = levels
    assert first["requests"] == first["ok"] == 12 and first["retry_rate"] == 0  # the 429 fell in the warm-up
    assert first["pairs_per_s"] == pytest.approx(3 * first["requests_per_s"])
    assert first["input_tokens_per_s"] == pytest.approx(30 * first["requests_per_s"])
    assert first["p50_ms"] <= first["p95_ms"] <= first["p99_ms"]
    assert second["server_compute_p50_ms"] == pytest.approx(1.5) and second["timeout_rate"] == 0


def test_a_hanging_endpoint_counts_as_timeouts(fake_api):  # noqa: F811
    server = fake_api(["hang"])
    settings = LoadTestConfig(concurrency=[2], warmup_requests=0, requests=2, request_timeout_s=0.2, max_retries=0,
                              pareto_concurrency=2)
    level, = run_levels(Endpoint(f"http://127.0.0.1:{server.server_address[1]}"), REQUESTS, settings)
    assert level["timeout_rate"] == 1.0 and level["ok"] == 0 and level["requests_per_s"] == 0


@pytest.mark.parametrize("status, retry_rate", [(503, 1.0), (400, 0.0)])
def test_the_load_test_retries_as_the_one_http_policy_says(fake_api, status, retry_rate):  # noqa: F811
    """5xx is retried (max_retries), then counted as http_5xx; a 4xx cannot succeed: an error, not retried."""
    server = fake_api([status])
    settings = LoadTestConfig(concurrency=[1], warmup_requests=0, requests=3, pareto_concurrency=1, max_retries=1,
                              backoff_s=0.0)
    level, = run_levels(Endpoint(f"http://127.0.0.1:{server.server_address[1]}"), REQUESTS, settings)
    assert level["ok"] == 0 and level["error_rate"] == 1.0 and level["retry_rate"] == retry_rate
    assert server.calls == 3 * (1 + retry_rate)


def test_the_load_test_takes_the_http_knob_names():
    with pytest.raises(ConfigError, match="serving.loadtest: timeout_s was renamed: use request_timeout_s"):
        LoadTestConfig.parse({"timeout_s": 60.0}, "serving.loadtest")


def test_overhead_is_served_over_in_process():
    levels = [{"concurrency": 1, "p50_ms": 30.0, "p95_ms": 50.0, "pairs_per_s": 100.0},
              {"concurrency": 8, "p50_ms": 90.0, "p95_ms": 150.0, "pairs_per_s": 150.0}]
    ratio = overhead(levels, {"p50_ms": 20.0, "p95_ms": 25.0, "pairs_per_s": 120.0})
    assert ratio == {"p50_ratio": 1.5, "p95_ratio": 2.0, "concurrency": 1, "best_throughput_ratio": 1.25}


@pytest.mark.parametrize("override, message", [
    ({"concurrency": [8, 1]}, "increasing positive levels"),
    ({"pareto_concurrency": 4}, "pareto_concurrency 4 is not among the levels"),
])
def test_bad_load_test_settings_are_refused(override, message):
    with pytest.raises(ConfigError, match=message):
        LoadTestConfig.parse(override, "serving.loadtest")


class SleepySystem(System):
    """Takes 2 ms per candidate; counts its calls."""

    def __init__(self):
        self.calls = 0

    def score(self, query):
        self.calls += 1
        time.sleep(0.002 * len(query.frame))
        return Scores(np.zeros(len(query.frame)))


def test_the_dedicated_measurement_is_warmed_up_repeated_and_states_its_noise():
    queries = [QueryCandidates(Query(f"q{i}", "text"), pd.DataFrame({"passage": ["p"] * (i + 1)})) for i in range(6)]
    system = SleepySystem()
    result = measure_latency(system, queries, LatencyConfig(queries=4, warmup_queries=2, repeats=3))
    assert system.calls == 2 + 4 * 3
    assert result["samples"] == 12 and result["queries"] == 4 and len(result["p95_ms_by_round"]) == 3
    # p95 of one round: the timed queries have 3-6 candidates at 2 ms each (interpolated: 11.7 ms and up)
    assert 11.7 <= result["p95_ms"] < 2 * 6 + 40
    assert result["p95_spread_ms"] == max(result["p95_ms_by_round"]) - min(result["p95_ms_by_round"])
    assert set(result["load_average_1m"]) == {"before", "after"} and result["cpus"] >= 1


class CachedComposite(System):
    """Reads every answer from a cache it cannot bypass (no wall time, as an LLM reranker's cached answers); they cost
    0.5 s when they were first computed."""

    def score(self, query):
        return Scores(np.zeros(len(query.frame)), replayed_s=0.5, cache_hits=len(query.frame))


def test_a_composite_reading_the_cache_is_charged_what_its_pairs_cost_when_scored():
    """What a system reads from a cache the measurement cannot bypass is charged as it cost: a cached system must not
    measure 0 ms (a blend on the demo did, 0.3 ms against the cross-encoder's 395 ms, before its components were
    made cold: ``tests/test_composite.py``)."""
    queries = [QueryCandidates(Query(f"q{i}", "text"), pd.DataFrame({"passage": ["p"]})) for i in range(5)]
    result = measure_latency(CachedComposite(), queries, LatencyConfig(queries=3, warmup_queries=2, repeats=2))
    assert 500 <= result["p50_ms"] < 520


def measurement(p95):
    return {"p50_ms": p95 / 2, "p95_ms": p95, "p99_ms": p95, "queries": 30, "repeats": 3, "p95_ms_by_round":
            [p95 - 1, p95, p95 + 1], "verdict_round": 0, "other_cpus_by_round": [0.1, 0.2, 0.1], "cpu_p95_ms": p95,
            "untrusted": None, "pairs_per_s": 100.0, "load_average_1m": {"before": 1.0, "after": 1.5}, "cpus": 2}


def loadtest_result(system="ce"):
    levels = [{"concurrency": c, "requests": 64, "ok": 64, "p50_ms": 10.0 * c, "p95_ms": 20.0 * c, "p99_ms": 30.0 * c,
               "requests_per_s": 5.0, "pairs_per_s": 150.0, "input_tokens_per_s": 9000.0, "timeout_rate": 0.0,
               "retry_rate": 0.0, "error_rate": 0.0, "server_compute_p50_ms": 8.0} for c in (1, 8, 32)]
    return {"ran": True, "system": system, "endpoint": "rerankeval serve", "depth": 30, "queries": 94,
            "pareto_concurrency": 8, "warmup_requests": 8, "levels": levels,
            "in_process": {"p50_ms": 8.0, "p95_ms": 12.0, "p99_ms": 14.0, "requests": 64, "pairs_per_s": 200.0},
            "overhead": overhead(levels, {"p50_ms": 8.0, "p95_ms": 12.0, "pairs_per_s": 200.0}),
            "server_peak_rss_mib": 900.0,
            "machine": {"before": {"load_average_1m": 1.0, "cpus": 2}, "after": {"load_average_1m": 2.0, "cpus": 2}}}


def test_the_verdict_reads_the_measurement_or_the_load_test_never_the_quality_run(tmp_path):
    for system, p95 in (("fusion", 0.5), ("ce", 400.0)):
        write_json(tmp_path / f"{system}.json", measurement(p95))
    pattern = str(tmp_path / "{system}.json")
    latency, sources, _ = verdict_latencies(pattern, tmp_path / "absent.json", ["fusion", "ce"])
    assert latency == {"fusion": 0.5, "ce": 400.0} and sources["ce"].startswith("in-process, 30 queries x 3 rounds")
    write_json(tmp_path / "off.json", {"ran": False})
    assert verdict_latencies(pattern, tmp_path / "off.json", ["ce"])[0] == {"ce": 400.0}
    write_json(tmp_path / "loadtest.json", loadtest_result("ce"))
    latency, sources, _ = verdict_latencies(pattern, tmp_path / "loadtest.json", ["fusion", "ce"])
    assert latency == {"fusion": 0.5, "ce": 160.0} and sources["ce"] == "load test at concurrency 8"


def test_report_sections_plot_pareto_point_and_efficiency_record(tmp_path):
    loadtest = loadtest_result()
    text = report_serving.loadtest_section(loadtest, "plots")
    assert "| 8 | 64 | 80.0 | 160.0 | 240.0 | 5.00 | 150.0 | 9000 |" in text
    assert "p50 is 1.25x and p95 1.67x the in-process latency" in text and "900 MiB" in text
    report_serving.loadtest_plot(loadtest, tmp_path / "loadtest.png")
    assert (tmp_path / "loadtest.png").stat().st_size > 1000
    assert "No load test ran" in report_serving.loadtest_section({"ran": False}, "plots")
    points = pd.DataFrame({"policy": ["ce depth", "ce depth", "fusion depth"], "position": [10, 30, 100],
                           "quality": [0.5, 0.6, 0.55], "p95_ms": [100.0, 300.0, 0.1],
                           "label": ["ce@10", "ce@30", "fusion@100"]})
    with_served = served_point(points, loadtest)
    assert with_served.iloc[-1][["label", "quality", "p95_ms"]].tolist() == ["ce@30 served, concurrency 8", 0.6, 160.0]
    record = report_serving.efficiency_record({"ce": measurement(400.0)}, {"ce": "load test at concurrency 8"},
                                              loadtest)
    assert record["latency"]["ce"]["p95_ms"] == 400.0 and record["loadtest"]["levels"][1]["p95_ms"] == 160.0
    assert "| `ce` | 30 | 3 | 200.0 | 400.0 |" in report_serving.latency_section({"ce": measurement(400.0)}, {})
    json.dumps(record)


def test_api_prices_give_the_cost_columns():
    latency = pd.DataFrame({"n_pairs": [100, 150],
                            "timings": [[("billed_tokens", 2000.0)], [("billed_tokens", 4000.0)]]})
    per_search = {"kind": "http_rerank", "price_per_search_usd": 0.002, "documents_per_search": 100}
    assert api_cost_per_1k(per_search, latency) == pytest.approx(0.002 * 1.5 * 1000)
    per_token = {"kind": "http_rerank", "price_per_million_tokens_usd": 0.02}
    assert api_cost_per_1k(per_token, latency) == pytest.approx(0.02 * 3000 / 1e6 * 1000)
    unreported = latency.assign(timings=[[], []])
    assert api_cost_per_1k(per_token, unreported) is None


def test_serve_refuses_systems_without_a_model_of_their_own():
    from rerankeval.serving.server import serving_recipe

    systems = {"fusion": {"kind": "fusion", "depth": 10},
               "api": {"kind": "http_rerank", "base_url": "http://127.0.0.1:9", "depth": 10}}
    for name in systems:
        with pytest.raises(ConfigError, match="only systems that score pairs with a model of their own"):
            serving_recipe(name, systems)
    with pytest.raises(ConfigError, match="no system 'nope'"):
        serving_recipe("nope", systems)
