"""Reading a logged online experiment: every bad line refused by file, line and field; doubtful lines counted; a log
of any length sampled with a stated seed; the readout decided by the offline verdict's code."""

import gzip
import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rerankeval.core.errors import CollectionError
from rerankeval.data import beir
from rerankeval.online.config import ClickModelConfig, ReadoutConfig
from rerankeval.online.logs import read_log
from rerankeval.online.readout import readout
from rerankeval.online.synthetic import REPEATS, synthetic_log
from rerankeval.report.online import readout_page
from test_online import synthetic_pair

SYSTEMS = ("new", "old")
NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)
GOOD = {"impression": "i1", "time": "2026-11-02T09:00:00Z", "query_id": "q1", "arm": "interleaved",
        "shown": ["a", "b"], "origin": ["new", "old"], "clicks": [{"position": 1, "dwell_s": 3.0}]}
BOOT = {"n_samples": 500, "seed": 0, "confidence": 0.95}


def write_log(path, records):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def read(path, **options):
    return read_log(path, SYSTEMS, {"q1", "q2"}, {"q1": {"a", "b", "c"}, "q2": {"a", "b"}},
                    max_impressions=options.pop("max_impressions", 1000), seed=options.pop("seed", 0), now=NOW,
                    **options)


@pytest.mark.parametrize("change, field, part", [
    ({"arm": "other"}, "arm", "nor a system of this experiment"),
    ({"arm": None}, "arm", "expected a non-empty string"),
    ({"shown": "a b"}, "shown", "expected a list"),
    ({"shown": ["a", "a"], "origin": ["new", "old"]}, "shown", "shown twice"),
    ({"origin": ["new"]}, "origin", "for each of the 2 shown"),
    ({"origin": ["new", "ghost"]}, "origin", "expected one of new, old"),
    ({"clicks": [{"position": 3}]}, "clicks[0].position", "position 3 was never shown"),
    ({"clicks": [{"position": 0}]}, "clicks[0].position", "was never shown"),
    ({"clicks": [{"position": "1"}]}, "clicks[0].position", "expected an integer"),
    ({"clicks": [{"position": 1, "dwell_s": -2}]}, "clicks[0].dwell_s", "finite number >= 0"),
    ({"time": "2027-01-01T00:00:00Z"}, "time", "lies in the future"),
    ({"time": "2026-11-02T09:00:00"}, "time", "no time zone"),
    ({"time": "yesterday"}, "time", "not an ISO 8601 time"),
    ({"reformulated": "no"}, "reformulated", "expected true or false"),
    ({"latency_ms": float("nan")}, "latency_ms", "finite number"),
    ({"query_id": ""}, "query_id", "non-empty string"),
])
def test_a_bad_line_is_refused_with_its_file_line_and_field(tmp_path, change, field, part):
    path = write_log(tmp_path / "log.jsonl", [GOOD, {**GOOD, "impression": "i2", **change}])
    with pytest.raises(CollectionError) as raised:
        read(path)
    message = str(raised.value)
    assert message.startswith(f"{path}:2: field {field!r}: ") and part in message and "Fix: " in message


def test_a_line_that_is_not_json_or_not_an_object_is_refused(tmp_path):
    with pytest.raises(CollectionError, match=r"log.jsonl:2: not JSON"):
        read(write_log(tmp_path / "log.jsonl", [GOOD, "{oops"]))
    with pytest.raises(CollectionError, match=r"log.jsonl:1: expected a JSON object"):
        read(write_log(tmp_path / "log.jsonl", ["[1, 2]"]))
    with pytest.raises(CollectionError, match=r"no such interaction log"):
        read(tmp_path / "missing.jsonl")
    (tmp_path / "latin.jsonl").write_bytes(json.dumps(GOOD).encode() + b"\n{\"query_id\": \"caf\xe9\"}\n")
    with pytest.raises(CollectionError, match=r"latin.jsonl:2: byte 0xe9 at column \d+ is not UTF-8"):
        read(tmp_path / "latin.jsonl")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(CollectionError, match=r"broken.parquet: not a readable Parquet file"):
        read(tmp_path / "broken.parquet")


def test_a_log_that_is_no_regular_file_or_has_no_line_breaks_is_refused_without_reading_it_whole(tmp_path,
                                                                                                  monkeypatch):
    fifo = tmp_path / "log.jsonl"
    os.mkfifo(fifo)  # reading a FIFO nobody writes would block forever
    with pytest.raises(CollectionError, match=r"log.jsonl: a FIFO \(named pipe\), not a regular file.*Fix: "):
        read(fifo)
    with pytest.raises(CollectionError, match=r"log.parquet: a FIFO"):
        os.mkfifo(tmp_path / "log.parquet")
        read(tmp_path / "log.parquet")
    (tmp_path / "deep.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    with pytest.raises(CollectionError, match=r"deep.jsonl:1: not JSON \(nested too deeply for a record\)"):
        read(tmp_path / "deep.jsonl")
    monkeypatch.setattr(beir, "MAX_LINE_BYTES", 1000)
    (tmp_path / "one_line.jsonl").write_bytes(json.dumps(GOOD).encode() + b"\n" + b"x" * 5000)
    with pytest.raises(CollectionError, match=r"one_line.jsonl:2: a line longer than .* is no record"):
        read(tmp_path / "one_line.jsonl")
    (tmp_path / "log.jsonl.gz").write_bytes(gzip.compress(json.dumps(GOOD).encode() + b"\n"))
    impressions, _ = read(tmp_path / "log.jsonl.gz")
    assert [impression.impression for impression in impressions] == ["i1"]


def test_doubtful_lines_are_counted_with_where_to_look(tmp_path):
    records = [GOOD,
               {**GOOD, "impression": "i2", "query_id": "q9"},  # not in the snapshot
               {**GOOD, "impression": "i3", "query_id": "q2", "shown": ["a", "z"]},  # z: not a candidate of q2
               {**GOOD, "impression": "i4", "time": "2026-11-02T08:00:00Z"},  # earlier than the line above
               GOOD]  # a repeat of i1
    impressions, counts = read(write_log(tmp_path / "log.jsonl", records))
    assert [found.impression for found in impressions] == ["i4", "i1", "i2", "i3"]  # in time order
    assert (counts.lines, counts.impressions, counts.unknown_queries, counts.outside_candidates, counts.duplicates,
            counts.out_of_order) == (5, 4, 1, 1, 1, 1)
    assert counts.examples["duplicates"] == [f"{tmp_path / 'log.jsonl'}:5"]
    assert not counts.sampled


def test_a_long_log_is_sampled_with_its_seed_and_repeats_are_found_however_far_apart(tmp_path):
    records = [{**GOOD, "impression": f"i{n:05d}", "time": f"2026-11-02T09:{n // 60 % 60:02d}:{n % 60:02d}Z"}
               for n in range(3000)]
    path = write_log(tmp_path / "log.jsonl", records + records[::7])  # every 7th logged twice, far below
    kept, counts = read(path, max_impressions=300, seed=4)
    again, _ = read(path, max_impressions=300, seed=4)
    other, _ = read(path, max_impressions=300, seed=5)
    assert len(kept) == 300 and counts.sampled and counts.seed == 4
    assert kept == again and kept != other
    kept_ids = {found.impression for found in kept}
    # every repeat of a kept impression is found; a repeat of one not kept cannot be, and is counted as read
    assert counts.duplicates == sum(1 for record in records[::7] if record["impression"] in kept_ids) > 0
    assert counts.impressions == counts.lines - counts.duplicates
    mean_position = sum(int(found.impression[1:]) for found in kept) / 300
    assert abs(mean_position - 1500) < 3 * 866 / 300 ** 0.5  # uniform over the log: within 3 standard errors


def test_a_parquet_log_reads_as_its_json_lines(tmp_path):
    records = [{**GOOD, "latency_ms": None}, {**GOOD, "impression": "i2", "clicks": [], "latency_ms": 12.5}]
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "log.parquet")
    from_parquet, _ = read(tmp_path / "log.parquet")
    from_lines, _ = read(write_log(tmp_path / "log.jsonl", records))
    assert from_parquet == from_lines


def logs(tmp_path, design, challenger="good", impressions=1500, model=ClickModelConfig()):
    rankings, qrels = synthetic_pair()
    lines = synthetic_log(rankings, qrels, sorted(qrels), challenger, "base", design=design, impressions=impressions,
                          median_ms={"good": 50.0, "base": 48.0}, seed=2, model=model)
    path = write_log(tmp_path / f"{design}.jsonl", lines)
    candidates = {query: set(ranking) for query, ranking in rankings["good"].items()}
    return read_log(path, ("good", "base"), set(qrels), candidates, max_impressions=10_000, seed=0, now=NOW), path


@pytest.mark.parametrize("design", ["team_draft", "probabilistic", "ab"])
def test_the_better_ranking_is_accepted_by_the_offline_verdict_s_code(tmp_path, design):
    (impressions, counts), path = logs(tmp_path, design)
    assert counts.duplicates == REPEATS and counts.out_of_order == 2
    config = ReadoutConfig(log=str(path), challenger="good", design=design, max_abandonment_increase=0.05,
                           latency_p95_max_ratio=1.5)
    found = readout(impressions, counts, config, "base", BOOT)
    assert found["primary"]["ci_low"] > 0, found["primary"]
    assert found["verdict"]["decision"] == "ACCEPT", found["verdict"]
    page = readout_page({"experiment": "x", "log_sha256": "0" * 64, **found})
    assert page.startswith("# Online experiment `x`: ACCEPT") and "synthetic" not in page
    simulated = readout_page({"experiment": "x", "log_sha256": "0" * 64, "synthetic": "simulated users", **found})
    for arm in found["per_arm"].values():  # each click measure's CI holds its mean
        assert all(low <= arm[name] <= high for name, (low, high) in arm["intervals"].items()), arm
        assert any(low < high for low, high in arm["intervals"].values())
    assert "% percentile bootstrap CI over them." in page
    assert "**A synthetic log**: simulated users." in simulated.split("**ACCEPT**")[0]  # said before the verdict
    # the same log read as if the baseline were the challenger: the preference turns, and the verdict with it
    flipped = readout(impressions, counts, config.model_copy(update={"challenger": "base"}), "good", BOOT)
    assert flipped["primary"]["ci_high"] < 0 and flipped["verdict"]["decision"] == "REJECT"


def test_a_log_whose_arms_are_not_the_configured_design_is_refused(tmp_path):
    (impressions, counts), path = logs(tmp_path, "ab")
    with pytest.raises(CollectionError, match=r"arms \['base', 'good'\], but a team_draft experiment"):
        readout(impressions, counts, ReadoutConfig(log=str(path), challenger="good"), "base", BOOT)


def test_the_abandonment_guardrail_rejects_before_quality(tmp_path):
    # shy users (clicks from 0 at grade 0 to 0.5 at the top grade; pbm, lower ranks seldom seen): the worse page is
    # more often left without a click
    shy = ClickModelConfig(kind="pbm", click=[0.0, 0.5], position_bias=2.0)
    (impressions, counts), path = logs(tmp_path, "ab", impressions=6000, model=shy)
    strict = ReadoutConfig(log=str(path), challenger="base", design="ab", max_abandonment_increase=0.0,
                           latency_p95_max_ratio=None)
    found = readout(impressions, counts, strict, "good", BOOT)
    assert found["verdict"]["decided_by"].startswith("guardrail Abandonment")


def test_more_empty_result_pages_reject_before_quality(tmp_path):
    from dataclasses import replace

    (impressions, counts), path = logs(tmp_path, "ab")
    config = ReadoutConfig(log=str(path), challenger="good", design="ab", max_abandonment_increase=None,
                           latency_p95_max_ratio=1.5)
    assert readout(impressions, counts, config, "base", BOOT)["verdict"]["decision"] == "ACCEPT"
    # one in five of the better arm's pages shows nothing: the guardrail decides, before its click measure is read
    emptied = [replace(found, shown=(), origin=(), clicks=(), dwell_s=())
               if found.arm == "good" and index % 5 == 0 else found for index, found in enumerate(impressions)]
    found = readout(emptied, counts, config, "base", BOOT)
    empty = next(g for g in found["guardrails"] if g["measure"] == "EmptyResults")
    assert empty["increase"]["ci_low"] > config.max_empty_increase
    assert found["verdict"]["decision"] == "REJECT"
    assert found["verdict"]["decided_by"].startswith("guardrail EmptyResults")
    off = readout(emptied, counts, config.model_copy(update={"max_empty_increase": None}), "base", BOOT)
    assert [g["measure"] for g in off["guardrails"]] == []


def test_a_slow_tail_that_the_p95_hides_is_rejected_by_the_p99_budget(tmp_path):
    from dataclasses import replace

    (impressions, counts), path = logs(tmp_path, "ab")
    config = ReadoutConfig(log=str(path), challenger="good", design="ab", max_abandonment_increase=None,
                           latency_p95_max_ratio=1.5, latency_p99_max_ms=500.0)
    assert readout(impressions, counts, config, "base", BOOT)["verdict"]["decision"] == "ACCEPT"
    # one in fifty of the better arm's pages took 4 s: its p95 stays where it was, its p99 does not
    slow = [replace(found, latency_ms=4000.0) if found.arm == "good" and index % 50 == 0 else found
            for index, found in enumerate(impressions)]
    found = readout(slow, counts, config, "base", BOOT)
    assert found["per_arm"]["good"]["p95_ms"] < 500.0 < found["per_arm"]["good"]["p99_ms"]
    verdict = found["verdict"]
    assert verdict["decision"] == "REJECT" and verdict["decided_by"].startswith("latency p99: challenger")
    untimed = [replace(found, latency_ms=None) for found in impressions]  # a budget nothing can check blocks ACCEPT
    unchecked = readout(untimed, counts, config.model_copy(update={"latency_p95_max_ratio": None}), "base", BOOT)
    assert unchecked["verdict"]["decision"] != "ACCEPT"
    assert any("p99 not measured" in reason for reason in unchecked["verdict"]["reasons"])


def test_a_p99_needs_a_hundred_timed_impressions_and_the_offline_rule_refuses_a_p99_budget(tmp_path):
    from dataclasses import replace

    from rerankeval.stats.config import ReleaseRule

    (impressions, counts), path = logs(tmp_path, "ab")
    config = ReadoutConfig(log=str(path), challenger="good", design="ab", max_abandonment_increase=None,
                           latency_p95_max_ratio=None, latency_p99_max_ms=10_000.0)
    good = [index for index, found in enumerate(impressions) if found.arm == "good"]
    few = [replace(found, latency_ms=None) if found.arm == "good" and index not in good[:99] else found
           for index, found in enumerate(impressions)]  # 99 timed: their p99 is about their maximum
    found = readout(few, counts, config, "base", BOOT)
    assert found["per_arm"]["good"]["timed"] == 99 and found["verdict"]["decision"] != "ACCEPT"
    assert any("p99 not measured" in reason for reason in found["verdict"]["reasons"])
    with pytest.raises(ValueError, match="online readouts"):
        ReleaseRule(primary_metric="nDCG@10", min_delta=0.0, latency_p99_max_ms=500.0)


def test_the_demo_s_pages_of_a_synthetic_log_say_so_before_anything_else():
    """Each log params.yaml marks synthetic (the demo's three) has a page that opens with the warning."""
    from rerankeval.pipeline.params import load_params
    from rerankeval.workspace.paths import PipelinePaths

    online, paths = load_params().online, PipelinePaths.load()
    pages = {**{paths.readout(name).with_suffix(".md"): config for name, config in online.readouts.items()},
             **{paths.shadow(name).with_suffix(".md"): config for name, config in online.shadows.items()}}
    marked = {page: config.synthetic for page, config in pages.items() if config.synthetic}
    assert len(marked) == 3, marked
    for page, statement in marked.items():
        assert f"**A synthetic log**: {statement}." in page.read_text(encoding="utf-8").split("\n## ")[0], page


def test_the_demo_s_synthetic_logs_were_drawn_from_the_committed_runs():
    """datasets/demo-online/provenance.json names the md5 of the runs make_interactions.py drew the logs from; they
    are dvc.lock's, the committed one's or this checkout's (a `make demo` on another CPU rewrites the latter)."""
    import subprocess

    import yaml

    repo = Path(__file__).resolve().parents[1]
    drawn_from = json.loads((repo / "datasets" / "demo-online" / "provenance.json").read_text())["runs_md5"]
    committed = subprocess.run(["git", "show", "HEAD:dvc.lock"], cwd=repo, capture_output=True, text=True)
    locks = [(repo / "dvc.lock").read_text(encoding="utf-8")]
    if committed.returncode == 0:  # not a git checkout: this one's lock only
        locks.append(committed.stdout)
    recorded = [{out["path"]: out.get("md5") for stage in yaml.safe_load(lock)["stages"].values()
                 for out in stage.get("outs", [])} for lock in locks]
    assert any(all(outs.get(path) == md5 for path, md5 in drawn_from.items()) for outs in recorded), (
        f"the demo's synthetic logs were drawn from runs {drawn_from}, which dvc.lock no longer records: their pages "
        "read out clicks on rankings the systems no longer give. Fix: `python datasets/demo-src/make_interactions.py`, "
        "then `dvc repro`, and commit datasets/demo-online/ with the outputs")


def test_a_log_of_another_collection_s_queries_is_refused_not_read_out(tmp_path, tiny_beir):
    """A log none of whose impressions asks a query of the snapshot (the demo's logs against one's own collection) is
    refused naming the log and the fix: a readout of it would decide on another collection's traffic."""
    from rerankeval.core.errors import ConfigError
    from rerankeval.pipeline import readout as readout_stage
    from rerankeval.pipeline.params import Params
    from tests.stage_fixtures import frozen_tiny_project, tiny_paths

    params = frozen_tiny_project(tmp_path, tiny_beir)
    log = write_log(tmp_path / "other.jsonl", [{**GOOD, "impression": f"i{k}", "query_id": "elsewhere",
                                                 "origin": ["ce_minilm_ft", "fusion"]} for k in range(3)])
    params["online"]["readouts"] = {"other": {"log": str(log), "challenger": "ce_minilm_ft", "design": "team_draft"}}
    with pytest.raises(ConfigError, match=r"other.jsonl: none of the log's 3 impressions asks a query of this "
                                          r"snapshot.*Fix: point online.readouts.other.log"):
        readout_stage.run(Params.parse(params, ""), tiny_paths(tmp_path), "other")
