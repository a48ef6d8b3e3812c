"""Shadow replay (online.shadow, pipeline.shadow): the query log read field by field, the queue at the log's pace and
the judging order worked out by hand, then the stage on the demo's outputs with a small log."""

import json
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from rerankeval.core.errors import CollectionError
from rerankeval.online.shadow import (judging_priority, log_query_id, queue_latency, read_query_log,
                                      segment_guardrails)
from tests.fake_rerank_api import rerank_api

REPO = Path(__file__).resolve().parents[1]
NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)


def write_log(path, records):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def test_a_log_is_read_with_its_arrivals_in_time_order_and_one_id_per_text(tmp_path):
    log = read_query_log(write_log(tmp_path / "q.jsonl", [
        {"query": "alpha", "time": "2026-11-02T09:00:10Z", "segment": "web", "count": 2},
        {"query": "beta", "time": "2026-11-02T09:00:00Z", "user_groups": ["staff"]},  # earlier than the line above
        {"query": "alpha", "time": "2026-11-02T09:00:30+01:00"},  # 08:00:30 UTC: earliest
    ]), now=NOW)
    assert log.lines == 3 and log.out_of_order == 2
    assert log.arrivals["seconds"].tolist() == [0.0, 3570.0, 3580.0]
    assert log.arrivals["query_id"].tolist() == [log_query_id("alpha"), log_query_id("beta"), log_query_id("alpha")]
    assert log.arrivals["segment"].tolist() == ["all", "all", "web"] and log.arrivals["count"].tolist() == [1, 1, 2]
    groups = dict(zip(log.queries["text"], log.queries["user_groups"]))
    assert groups == {"alpha": None, "beta": ["staff"]}


@pytest.mark.parametrize("record, says", [
    ({"time": "2026-11-02T09:00:00Z"}, "q.jsonl:1: field 'query': expected a non-empty string"),
    ({"query": "a", "time": "2026-11-02T09:00:00"}, "field 'time': '2026-11-02T09:00:00' has no time zone"),
    ({"query": "a", "time": "2027-01-01T00:00:00Z"}, "lies in the future"),
    ({"query": "a", "time": "2026-11-02T09:00:00Z", "count": 0}, "field 'count': expected a whole number >= 1"),
    ({"query": "a", "time": "2026-11-02T09:00:00Z", "user_groups": "staff"}, "field 'user_groups': expected a list"),
    ("{not json", "q.jsonl:1: not JSON"),
    ([1, 2], "q.jsonl:1: expected a JSON object (one logged query)"),
])
def test_a_bad_line_is_refused_with_its_file_line_and_field(tmp_path, record, says):
    with pytest.raises(CollectionError, match=None) as refused:
        read_query_log(write_log(tmp_path / "q.jsonl", [record]), now=NOW)
    assert says in str(refused.value) and "Fix:" in str(refused.value)


def test_above_the_bound_a_seeded_sample_of_queries_keeps_every_arrival_of_each(tmp_path):
    records = [{"query": f"q{i % 40}", "time": f"2026-11-02T09:{i // 60:02d}:{i % 60:02d}Z"} for i in range(400)]
    path = write_log(tmp_path / "q.jsonl", records)
    whole = read_query_log(path, now=NOW)
    assert (whole.distinct, whole.sampled, len(whole.queries)) == (40, False, 40)
    sample = read_query_log(path, max_queries=10, seed=3, now=NOW)
    assert (sample.distinct, sample.sampled, sample.seed, sample.lines) == (None, True, 3, 400)
    assert len(sample.queries) == 10 and len(sample.arrivals) == 100  # 10 arrivals of each kept query
    assert sample.queries.equals(read_query_log(path, max_queries=10, seed=3, now=NOW).queries)  # the seed decides
    assert not sample.queries.equals(read_query_log(path, max_queries=10, seed=4, now=NOW).queries)


def test_arrivals_are_kept_up_to_window_arrivals_and_counted_after_it(tmp_path):
    """A contiguous stretch from the log's start: the sampled queries' arrivals (counts summed) until they number
    window_arrivals; after that line, arrivals add to each query's traffic only (the judging queue's weight), and are
    counted."""
    records = [{"query": f"q{i % 4}", "time": f"2026-11-02T09:{i // 60:02d}:{i % 60:02d}Z", "count": 1 + i % 2}
               for i in range(100)]
    log = read_query_log(write_log(tmp_path / "q.jsonl", records), window_arrivals=30, now=NOW)
    # counts 1, 2, 1, 2, ...: the first 20 lines hold 30 arrivals
    assert len(log.arrivals) == 20 and int(log.arrivals["count"].sum()) == 30 and log.window_lines == 20
    assert log.arrivals["seconds"].max() == 19.0
    assert log.after_window == sum(1 + i % 2 for i in range(20, 100)) == int(log.traffic.sum()) - 30
    assert log.traffic.to_dict() == {log_query_id(f"q{k}"): 25 * (1 + k % 2) for k in range(4)}
    whole = read_query_log(write_log(tmp_path / "q.jsonl", records), now=NOW)
    assert (whole.window_lines, whole.after_window, len(whole.arrivals)) == (None, 0, 100)
    assert whole.traffic.equals(log.traffic)
    queue = judging_priority(log.traffic, {"ce": pd.Series(0.5, index=log.traffic.index)})
    assert queue["traffic"].tolist() == [50, 50, 25, 25]  # the whole log's traffic, not the window's


def test_the_window_holds_the_final_sample_s_arrivals_however_late_its_queries_come(tmp_path):
    """The sample is drawn over the whole log before any arrival is kept: queries that a later line pushes out of the
    bottom-k sample take no room in the window, and one first logged late still has its arrivals in it."""
    records = [{"query": f"early{i % 3}", "time": f"2026-11-02T09:{i // 60:02d}:{i % 60:02d}Z"} for i in range(300)]
    records += [{"query": f"late{i % 50}", "time": f"2026-11-02T10:{i // 60:02d}:{i % 60:02d}Z"} for i in range(300)]
    for seed in range(5):
        log = read_query_log(write_log(tmp_path / "q.jsonl", records), max_queries=3, seed=seed, window_arrivals=100,
                             now=NOW)
        sampled = set(log.queries["query_id"])
        assert len(sampled) == 3 and set(log.traffic.index) == sampled
        total = int(log.traffic.sum())
        assert int(log.arrivals["count"].sum()) == min(100, total) and set(log.arrivals["query_id"]) <= sampled
        assert log.after_window == total - min(100, total)


def test_memory_stays_bounded_whatever_the_log_s_length(tmp_path):
    """A log of many lines of few queries: the reader's peak memory does not grow with the log."""
    import tracemalloc

    def peak(lines: int) -> int:
        path = write_log(tmp_path / f"q{lines}.jsonl", [
            {"query": f"q{i % 7}", "time": f"2026-11-02T{9 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"}
            for i in range(lines)])
        tracemalloc.start()
        log = read_query_log(path, max_queries=5, window_arrivals=200, now=NOW)
        found = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert len(log.arrivals) == 200 and int(log.traffic.sum()) < lines  # 5 of the 7 queries
        return found

    short, long = peak(2_000), peak(20_000)
    assert long < 1.5 * short, (short, long)


def test_one_text_with_two_group_sets_and_an_empty_log_are_refused(tmp_path):
    with pytest.raises(CollectionError, match="q.jsonl:2: field 'user_groups': the same query text"):
        read_query_log(write_log(tmp_path / "q.jsonl", [
            {"query": "a", "time": "2026-11-02T09:00:00Z", "user_groups": ["x"]},
            {"query": "a", "time": "2026-11-02T09:00:01Z", "user_groups": ["y"]}]), now=NOW)
    with pytest.raises(CollectionError, match="no logged query"):
        read_query_log(write_log(tmp_path / "empty.jsonl", []), now=NOW)


def test_the_queue_at_the_log_s_pace_by_hand():
    """Arrivals 0, 1, 1.5 s, service 2, 1, 1 s: starts 0, 2, 3; finishes 2, 3, 4; responses 2, 2, 2.5 s; waits 0, 1,
    1.5 s; the server is busy 4 s of the 4 s span. Twice as fast: arrivals 0, 0.5, 0.75, responses 2, 2.5, 3.25 s."""
    found = queue_latency(np.array([0.0, 1.0, 1.5]), np.array([2.0, 1.0, 1.0]))
    assert found["p50_ms"] == pytest.approx(2000.0) and found["mean_wait_ms"] == pytest.approx(2500 / 3)
    assert found["p99_ms"] == pytest.approx(np.percentile([2.0, 2.0, 2.5], 99) * 1000)
    assert found["utilisation"] == pytest.approx(1.0)
    faster = queue_latency(np.array([0.0, 1.0, 1.5]), np.array([2.0, 1.0, 1.0]), speed=2.0)
    assert faster["p50_ms"] == pytest.approx(2500.0) and faster["p99_ms"] == pytest.approx(
        np.percentile([2.0, 2.5, 3.25], 99) * 1000)


def test_guardrails_per_segment_and_the_judging_order_by_hand():
    arrivals = pd.DataFrame({"query_id": ["a", "b", "c", "a"], "seconds": [0, 1, 2, 3],
                             "segment": ["web", "web", "mobile", "mobile"], "count": [2, 1, 4, 1]})
    latency = pd.DataFrame({"query_id": ["a", "b"], "mode": ["reranked", "fusion_fallback"],
                            "reason": [None, "deadline: cold compute time 2.1 s over deadline_s 1.0"]})
    found = segment_guardrails(arrivals, latency, answered={"a", "b"}, fallback_mode="fusion_fallback")
    # web: a (2) and b (1, fell back at its deadline); mobile: c (4, no candidate: an empty page) and a (1)
    assert found == {"mobile": {"arrivals": 5, "empty": 4, "fallbacks": 0, "timeouts": 0},
                     "web": {"arrivals": 3, "empty": 0, "fallbacks": 1, "timeouts": 1}}
    # traffic a 3, b 1, c 4; 1 - RBO per challenger: a (0.5, 0.1), b (0.9, 0.7), c (0, 0): priority a 3 x 0.3,
    # b 1 x 0.8, c 0 (the systems agree there: a judgment would decide nothing between them)
    traffic = arrivals.groupby("query_id")["count"].sum()
    queue = judging_priority(traffic, {"x": pd.Series({"a": 0.5, "b": 0.9, "c": 0.0}),
                                       "y": pd.Series({"a": 0.1, "b": 0.7, "c": 0.0})})
    assert queue["query_id"].tolist() == ["a", "b", "c"]
    assert queue["priority"].tolist() == pytest.approx([0.9, 0.8, 0.0])


@pytest.fixture(scope="module")
def demo():
    from rerankeval.workspace.paths import PipelinePaths

    paths = PipelinePaths.load(REPO / "dvc.yaml")
    if not (REPO / paths.run("ce_minilm_ft")).is_file():
        pytest.skip("the demo's outputs are not here: run `make demo` first")
    return paths


def test_the_stage_replays_a_log_through_the_systems_on_the_demo(demo, tmp_path, monkeypatch):
    """Three of the demo's test queries (their pairs are in the score cache) and a text the snapshot lacks, replayed
    through the baseline and ce_minilm_ft: the baseline agrees with nothing (it is the reference), the challenger's
    agreement and changes are shares, the queue is in priority order, the page renders."""
    from dataclasses import replace

    from rerankeval.data.snapshot import Snapshot
    from rerankeval.pipeline import shadow
    from rerankeval.pipeline.params import Params

    monkeypatch.chdir(REPO)
    texts = Snapshot(demo.snapshot).queries_of("test")["text"].tolist()[:3] + ["zygomorphic quasar lattices"]
    log = write_log(tmp_path / "log.jsonl", [{"query": text, "time": f"2026-11-02T09:00:{i:02d}Z", "count": 1 + i % 2,
                                              "segment": "web" if i % 2 else "mobile"} for i, text in enumerate(texts)])
    data = yaml.safe_load((REPO / "params.yaml").read_text())
    data["online"]["shadows"] = {"t": {"log": str(log), "systems": ["fusion", "ce_minilm_ft"]}}
    paths = replace(demo, reports=tmp_path / "reports")
    shadow.run(Params.parse(data), paths, "t")
    found = json.loads(paths.shadow("t").read_text())
    assert (found["queries"], found["replayed"], found["replayed_arrivals"], found["sampled"]) == (4, 4, 6, False)
    assert "agreement" not in found["systems"]["fusion"]
    challenger = found["systems"]["ce_minilm_ft"]
    assert 0.0 <= challenger["agreement"]["rbo"]["mean"] <= 1.0 and 0.0 <= challenger["top_k_changed_of_traffic"] <= 1
    assert set(challenger["guardrails"]) == {"mobile", "web"} and challenger["latency"]["p95_ms"] > 0
    queue = pd.read_csv(paths.shadow_queue("t"), sep="\t")
    assert list(queue["priority"]) == sorted(queue["priority"], reverse=True) and len(queue) == 4
    page = paths.shadow("t").with_suffix(".md").read_text()
    assert "# Shadow replay `t`" in page and "`ce_minilm_ft`" in page
    row = next(line for line in page.splitlines() if line.startswith("| `ce_minilm_ft` |")).split(" | ")
    agreement = challenger["agreement"]  # RBO, Kendall τ and overlap, each with its CI, as the page's first columns
    assert row[1:4] == [f"{agreement[name]['mean']:.3f} [{agreement[name]['low']:.3f}, {agreement[name]['high']:.3f}]"
                        for name in ("rbo", "tau", "overlap")]


SERVICE_S = 0.1
"""Each request's time at the one-at-a-time API: the queue a log's burst meets is then known exactly."""


def test_a_burst_sent_open_loop_to_a_served_system_meets_the_queue_the_simulation_predicts(demo, tmp_path,
                                                                                         monkeypatch):
    """Four logged queries arriving in the same second, sent at their times to an endpoint that serves one request at
    a time: the last waits for the three before it, in the served replay as in the simulated queue."""
    from dataclasses import replace

    from rerankeval.data.snapshot import Snapshot
    from rerankeval.pipeline import shadow
    from rerankeval.pipeline.params import Params

    with rerank_api(SERVICE_S, one_at_a_time=True) as url:
        monkeypatch.chdir(REPO)
        texts = Snapshot(demo.snapshot).queries_of("test")["text"].tolist()[:4]
        log = write_log(tmp_path / "log.jsonl", [{"query": text, "time": "2026-11-02T09:00:00Z"} for text in texts])
        data = yaml.safe_load((REPO / "params.yaml").read_text())
        data["systems"]["api"] = {"kind": "http_rerank", "base_url": url, "model": "one-at-a-time", "depth": 5,
                                  "cache_dir": str(tmp_path / "cache")}
        data["system_names"] = list(data["systems"])
        data["online"]["shadows"] = {"t": {"log": str(log), "systems": ["fusion", "api"],
                                           "served": {"system": "api", "max_arrivals": 10}}}
        paths = replace(demo, reports=tmp_path / "reports")
        shadow.run(Params.parse(data), paths, "t")
    served = json.loads(paths.shadow("t").read_text())["served"]
    replayed, simulated = served["replayed"], served["simulated"]
    assert (served["arrivals"], served["without_candidates"], replayed["requests"], replayed["ok"]) == (4, 0, 4, 4)
    last_waits = 3.5 * SERVICE_S  # the fourth arrival: three requests ahead of it, then its own
    assert replayed["p99_ms"] / 1000 >= last_waits and simulated["p99_ms"] / 1000 >= last_waits
    assert "served at the log's arrival pattern" in paths.shadow("t").with_suffix(".md").read_text()
