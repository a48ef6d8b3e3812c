"""`rerankeval diff`: the pure diff and comment on hand-made frames, then two revisions of a real git + DVC repo."""

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from rerankeval.stats.config import CompareConfig
from rerankeval.cli.main import _diff as run_diff
from rerankeval.cli.main import main as cli
from rerankeval.report.prdiff import COMMENT_MARKER, add_diff_arguments, load_revision, markdown_comment
from rerankeval.stats.revisions import Revision, diff_revisions, params_changes

SETTINGS = CompareConfig.parse({"baseline": "fusion", "metrics": ["nDCG@10"], "samples": 1000, "permutations": 1000,
                                "min_slice_size": 10, "release": {"primary_metric": "nDCG@10", "min_delta": 0.03}},
                               "compare")


def revision(label, values, snapshot=None, params=None):
    """A Revision from {system: per-query nDCG@10 array}; queries q00.. with a `language` slice (every 3rd is ko)."""
    frames = [pd.DataFrame({"system": system, "query_id": [f"q{i:02d}" for i in range(len(column))],
                            "nDCG@10": column}) for system, column in values.items()]
    n = max(len(column) for column in values.values())
    slices = pd.DataFrame({"language": ["ko" if i % 3 == 0 else "en" for i in range(n)]},
                          index=pd.Index([f"q{i:02d}" for i in range(n)], name="query_id"))
    return Revision(label, pd.concat(frames, ignore_index=True), slices, snapshot or {"qrels": "aaa"}, params or {})


def test_real_change_gets_a_ci_excluding_zero_and_identical_systems_collapse():
    rng = np.random.default_rng(0)
    before = rng.uniform(0.2, 0.6, 40)
    ko = np.arange(40) % 3 == 0
    after = before + np.where(ko, 0.2, 0.0) + rng.normal(0, 0.01, 40)
    fusion = rng.uniform(0.2, 0.6, 40)
    base = revision("main (1234567)", {"fusion": fusion, "reranker": before}, params={"systems": {"reranker": 1}})
    head = revision("working tree", {"fusion": fusion, "reranker": after}, params={"systems": {"reranker": 2}})

    diffed = diff_revisions(base, head, SETTINGS, "nDCG@10")
    result = diffed.model_dump()  # the diff as `rerankeval diff --json` writes it

    assert result["systems"]["changed"] == ["reranker"] and result["systems"]["unchanged"] == ["fusion"]
    [row] = result["comparisons"]
    assert row["delta"] == pytest.approx((after - before).mean(), abs=1e-6)
    assert 0 < row["low"] < row["delta"] < row["high"]
    assert row["p_adjusted"] < 0.01 and result["regressions"] == []
    assert [(s["column"], s["value"]) for s in result["slices"]] == [("language", "ko")]
    assert result["warnings"] == []

    comment = markdown_comment(diffed)
    assert comment.startswith(COMMENT_MARKER)
    assert "## rerankeval diff: `main (1234567)` → `working tree`" in comment
    assert "- `systems.reranker`: `1` → `2`" in comment
    assert f"| `reranker` | nDCG@10 | {before.mean():.4f} | {after.mean():.4f} | ▲ +" in comment
    assert "Unchanged (identical per-query values): `fusion`" in comment
    assert "| `reranker` | language = ko | 14 | ▲ +0.2" in comment
    unlabelled = diff_revisions(base, replace(head, slices=head.slices[[]]), SETTINGS, "nDCG@10")
    assert "The queries carry no slice labels." in markdown_comment(unlabelled)


def test_regression_data_change_and_query_mismatch_are_called_out():
    rng = np.random.default_rng(1)
    before = rng.uniform(0.3, 0.7, 30)
    base = revision("main (1234567)", {"fusion": before}, snapshot={"qrels": "aaa", "queries": "q1"})
    head = revision("pr (89abcde)", {"fusion": before[:29] - 0.1}, snapshot={"qrels": "bbb", "queries": "q1"})

    diffed = diff_revisions(base, head, SETTINGS, "nDCG@10")
    result = diffed.model_dump()

    assert result["regressions"] == ["fusion"]
    assert result["queries"] == {"base": 30, "head": 29, "paired": 29}
    assert [s["value"] for s in result["slices"]] == ["en", "ko"]
    assert [s["too_small"] for s in result["slices"]] == [False, False]
    comment = markdown_comment(diffed)
    assert "❌ **nDCG@10 regressed** (95% CI entirely below 0): `fusion`" in comment
    assert "1 only in base, 0 only in head); the diff pairs the 29 queries" in comment
    assert "The snapshot changed (qrels)" in comment
    assert "▼ -0.1000" in comment


def test_an_llm_reranker_whose_pins_changed_is_labelled_as_another_system():
    from dataclasses import replace

    values = {"fusion": np.linspace(0, 1, 10), "llm": np.linspace(1, 0, 10)}
    pins = {"model": "qwen", "template_sha256": "aaa", "decoding": {"temperature": 0.0}, "served_models": {"qwen": 3}}
    base = replace(revision("a (1)", values), pins={"llm": pins})
    head = replace(revision("b (2)", values), pins={"llm": {**pins, "template_sha256": "bbb"}})
    comment = markdown_comment(diff_revisions(base, head, SETTINGS, "nDCG@10"))
    assert "`llm`'s pins differ (template_sha256: 'aaa' -> 'bbb'): base and head ran different systems" in comment
    older = replace(base, pins={"llm": {**pins, "backends": {"owned_by=vllm; version=0.6.3": 3}}})
    upgraded = replace(head, pins={"llm": {**pins, "backends": {"owned_by=vllm; version=0.6.4": 3}}})
    assert ("pins differ (backends: {'owned_by=vllm; version=0.6.3': 3} -> {'owned_by=vllm; version=0.6.4': 3})"
            in markdown_comment(diff_revisions(older, upgraded, SETTINGS, "nDCG@10")))
    assert "pins differ" not in markdown_comment(diff_revisions(  # unsaid by the server, or not yet recorded
        base, replace(head, pins={"llm": {**pins, "backends": {}, "system_fingerprints": {}}}), SETTINGS, "nDCG@10"))
    same = diff_revisions(base, replace(head, pins={"llm": pins}), SETTINGS, "nDCG@10")
    assert not any("pins differ" in warning for warning in same.warnings)
    for key, before, after in [("max_passage_words", 180, 120), ("yes_words", ["yes"], ["yes", "relevant"]),
                               ("grades", None, [0, 1, 2])]:  # what the model is asked, and how its answer is read
        changed = replace(head, pins={"llm": {**pins, key: after}})
        assert f"pins differ ({key}: {before!r} -> {after!r})" in markdown_comment(diff_revisions(
            replace(base, pins={"llm": {**pins, key: before}}), changed, SETTINGS, "nDCG@10"))
    moved = replace(head, pins={"llm": {**pins, "base_url": "http://10.0.0.2:8000/v1"}})
    assert "pins differ" not in markdown_comment(diff_revisions(base, moved, SETTINGS, "nDCG@10"))


def test_no_change_gives_a_short_comment():
    values = {"fusion": np.linspace(0, 1, 10), "bm25": np.linspace(1, 0, 10)}
    result = diff_revisions(revision("a (1)", values), revision("b (2)", values), SETTINGS, "nDCG@10")
    assert result.systems["unchanged"] == ["fusion", "bm25"] and result.comparisons == []
    comment = markdown_comment(result)
    assert "No system's per-query metrics changed." in comment
    assert "Slices that moved" not in comment and "regressed" not in comment


def test_params_changes_flattens_nested_keys_and_marks_absent_sides():
    base = {"systems": {"random": {"seed": 17, "depth": 100}, "bm25": {"k1": 1.2}}, "names": ["a", "b"]}
    head = {"systems": {"random": {"seed": 99, "depth": 100}, "dense": {"k": 1}}, "names": ["a", "b"]}
    assert params_changes(base, head) == [
        {"key": "systems.bm25.k1", "base": 1.2},
        {"key": "systems.dense.k", "head": 1},
        {"key": "systems.random.seed", "base": 17, "head": 99},
    ]


def test_arguments_canonicalise_metrics_and_workspace_without_outputs_says_what_to_run(tmp_path):
    parser = argparse.ArgumentParser()
    add_diff_arguments(parser)
    args = parser.parse_args(["origin/main", "--metric", "MRR@10", "--metric", "nDCG@10"])
    assert (args.base, args.head, args.metrics) == ("origin/main", None, ["RR@10", "nDCG@10"])
    (tmp_path / "dvc.yaml").write_text(DVC_YAML)
    with pytest.raises(ValueError, match=r"the working tree has no data/eval/per_query.parquet .*run `dvc repro`"):
        load_revision(tmp_path, None)


# --------------------------------------------------------------------------- a real git + DVC repository

EVALUATE = '''
import json, pathlib
import numpy as np, pandas as pd, pyarrow as pa, yaml
from rerankeval.core.io import write_table

params = yaml.safe_load(open("params.yaml"))
query_ids = [f"q{i:02d}" for i in range(60)]
ko = np.arange(60) % 3 == 0
snapshot = {"corpus": "c0", "queries": "q0", "qrels": "r0"}
queries = pd.DataFrame({"query_id": query_ids, "text": query_ids, "split": "test",
                        "language": np.where(ko, "ko", "en")})
write_table("data/snapshot/queries.parquet", pa.Table.from_pandas(queries, preserve_index=False))
pathlib.Path("data/snapshot/manifest.json").write_text(json.dumps({"slice_columns": ["language"]}))
frames = []
for system, config in params["systems"].items():
    ndcg = np.random.default_rng(config["seed"]).uniform(0.1, 0.7, 60) + np.where(ko, config["boost"], 0.0)
    frames.append(pd.DataFrame({"system": system, "query_id": query_ids, "nDCG@10": ndcg, "RR@10": np.sqrt(ndcg)}))
write_table("data/eval/per_query.parquet", pa.Table.from_pandas(pd.concat(frames), preserve_index=False),
            {"split": "test", "snapshot": snapshot})
for system, config in params["systems"].items():  # 5 documents a query; a boost swaps the top two of the ko ones
    rows = [(q, f"d{k}", k + 1, 1.0 - k / 10) for q in query_ids for k in range(5)]
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "rank", "score"])
    swap = run["query_id"].isin(np.array(query_ids)[ko]) & run["rank"].le(2) & (config["boost"] > 0)
    run.loc[swap, "rank"] = 3 - run.loc[swap, "rank"]
    write_table(f"data/runs/run_{system}.parquet", pa.Table.from_pandas(run, preserve_index=False))
'''

DVC_YAML = """
vars:
  - paths: {snapshot: data/snapshot, eval: data/eval, runs: data/runs}
stages:
  evaluate:
    cmd: python evaluate.py
    deps: [evaluate.py]
    params: [systems]
    outs: [data/snapshot, data/eval, data/runs]
"""

PARAMS = {
    "systems": {"fusion": {"seed": 1, "boost": 0.0}, "reranker": {"seed": 2, "boost": 0.0}},
    "compare": {"baseline": "fusion", "metrics": ["nDCG@10", "RR@10"], "samples": 2000, "seed": 17,
                "confidence": 0.95, "ci_method": "percentile", "permutations": 2000, "correction": "holm",
                "tie_tolerance": 1e-9, "worst_n": 5, "min_slice_size": 25,
                "release": {"primary_metric": "nDCG@10", "min_delta": 0.03}},
}


def run(repo, *command):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               DVC_NO_ANALYTICS="1", DVC_SITE_CACHE_DIR=str(repo.parent / "dvc-site-cache"),
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    result = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def commit_revision(repo, params, tag):
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run(repo, sys.executable, "-m", "dvc", "repro", "--quiet")
    run(repo, "git", "add", "-A")
    run(repo, "git", "commit", "--quiet", "-m", tag)
    run(repo, "git", "tag", tag)


@pytest.fixture
def two_revisions(tmp_path, monkeypatch):
    """Tag `before`, and tag `after` (also the working tree) where the reranker gains 0.15 on the 20 `ko` queries."""
    monkeypatch.setenv("DVC_SITE_CACHE_DIR", str(tmp_path / "dvc-site-cache"))
    repo = tmp_path / "repo"
    repo.mkdir()
    run(repo, "git", "init", "--quiet")
    run(repo, sys.executable, "-m", "dvc", "init", "--quiet")
    (repo / "evaluate.py").write_text(EVALUATE)
    (repo / "dvc.yaml").write_text(DVC_YAML)
    commit_revision(repo, PARAMS, "before")
    after = json.loads(json.dumps(PARAMS))
    after["systems"]["reranker"]["boost"] = 0.15
    commit_revision(repo, after, "after")
    return repo


def diff(*argv):
    parser = argparse.ArgumentParser()
    add_diff_arguments(parser)
    return run_diff(parser.parse_args(argv))


def test_diff_of_two_dvc_revisions(two_revisions, tmp_path):
    repo = str(two_revisions)
    assert diff("before", "--repo", repo, "--output", str(tmp_path / "diff.md"), "--fail-on-regression") == 0
    comment = (tmp_path / "diff.md").read_text()
    assert "## rerankeval diff: `before (" in comment and "→ `working tree`" in comment
    assert "- `systems.reranker.boost`: `0.0` → `0.15`" in comment
    assert "| `reranker` | nDCG@10 |" in comment and "| ▲ +0.0500 |" in comment
    assert "Unchanged (identical per-query values): `fusion`" in comment
    assert "| `reranker` | language = ko | 20 ⚠ | ▲ +0.1500 | +0.1500 .. +0.1500 |" in comment
    # the reranker's top two swap on the 20 ko queries of 60: its top 10 changed on a third of them
    assert "### How far the rankings moved, head against base" in comment
    assert "Same ranking in both (identical runs): `fusion`" in comment

    assert diff("before", "after", "--repo", repo, "--json", "--output", str(tmp_path / "diff.json")) == 0
    result = json.loads((tmp_path / "diff.json").read_text())
    assert result["head"].startswith("after (")
    ndcg = next(c for c in result["comparisons"] if c["metric"] == "nDCG@10")
    assert ndcg["delta"] == pytest.approx(0.05) and ndcg["low"] > 0
    assert ndcg["p_adjusted"] < 0.01
    assert (ndcg["improved"], ndcg["tied"], ndcg["regressed"]) == (20, 40, 0)
    assert [(s["system"], s["value"]) for s in result["slices"]] == [("reranker", "ko")]
    moved = result["agreement"]["compared"]["reranker"]
    assert moved["queries"] == 60 and moved["changed"]["mean"] == pytest.approx(20 / 60)
    assert moved["overlap"]["mean"] == 1.0 and moved["tau"]["mean"] == pytest.approx((40 + 20 * 0.8) / 60)
    assert result["agreement"]["identical"] == ["fusion"]

    assert diff("after", "before", "--repo", repo, "--output", str(tmp_path / "back.md"),
                "--fail-on-regression") == 1

    shutil.rmtree(two_revisions / ".dvc" / "cache")
    with pytest.raises(ValueError, match=r"revision before \(\w+\): data/eval/per_query.parquet is not in the local "
                                         r"DVC cache, and no DVC remote is configured .*; then, on a checkout of "
                                         r"before .*run `dvc push`"):
        diff("before", "--repo", repo)
    with pytest.raises(ValueError, match="unknown git revision 'nope'"):
        diff("nope", "--repo", repo)


# --------------------------------------------------------------------------- a fresh clone, its outputs on a remote


def dvc(repo, *args):
    run(repo, sys.executable, "-m", "dvc", *args)


@pytest.fixture
def pushed(two_revisions, tmp_path):
    """The repo with every commit's outputs pushed to a local-directory remote, which .dvc/config names only after
    both tags (as for history older than the setting): the push takes it from .dvc/config.local, which applies to
    every revision, and the clone from the committed .dvc/config."""
    for where in ("--local", "--project"):
        dvc(two_revisions, "remote", "add", where, "--default", "shared", str(tmp_path / "remote"))
    run(two_revisions, "git", "commit", "--quiet", "-am", "the shared remote")
    dvc(two_revisions, "push", "--quiet", "--all-commits")
    return two_revisions


def test_a_fresh_clone_diffs_revisions_from_the_remote(pushed, tmp_path):
    clone = tmp_path / "clone"
    run(tmp_path, "git", "clone", "--quiet", str(pushed), str(clone))
    assert not (clone / ".dvc" / "cache").exists()

    assert diff("before", "after", "--repo", str(clone), "--json", "--output", str(tmp_path / "diff.json")) == 0
    ndcg = next(c for c in json.loads((tmp_path / "diff.json").read_text())["comparisons"] if c["metric"] == "nDCG@10")
    assert ndcg["delta"] == pytest.approx(0.05)


def test_a_remote_without_the_revision_says_what_to_push_and_exits_2(pushed, tmp_path, capsys):
    clone = tmp_path / "clone"
    run(tmp_path, "git", "clone", "--quiet", str(pushed), str(clone))
    (tmp_path / "empty").mkdir()
    dvc(clone, "remote", "modify", "--local", "shared", "url", str(tmp_path / "empty"))

    assert cli(["diff", "before", "after", "--repo", str(clone)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("rerankeval diff: error: revision before (") and "Traceback" not in error
    assert (f"the DVC remote 'shared' ({tmp_path / 'empty'}) lacks data/eval/per_query.parquet of that revision"
            in error)
    assert ("To fix: on a checkout of before whose DVC outputs are in its cache (where `dvc repro` made them), run "
            f"`dvc push -r shared` (that revision's .dvc/config predates the remote: first `dvc remote add --local "
            f"shared {tmp_path / 'empty'}` there)." in error)


def test_the_projects_default_remote_is_a_folder_in_the_users_cache(tmp_path):
    """`dvc push` with the project's .dvc/config works out of the box: into ~/.cache/rerankeval/dvc-remote."""
    repo = tmp_path / "repo"
    repo.mkdir()
    run(repo, "git", "init", "--quiet")
    dvc(repo, "init", "--quiet")
    shutil.copy(Path(__file__).parents[1] / ".dvc" / "config", repo / ".dvc" / "config")
    (repo / "numbers.txt").write_text("0.5\n")
    dvc(repo, "add", "--quiet", "numbers.txt")
    home = tmp_path / "home"
    run(repo, "env", f"HOME={home}", sys.executable, "-m", "dvc", "push", "--quiet")
    assert [path.name for path in (home / ".cache" / "rerankeval" / "dvc-remote").rglob("*") if path.is_file()]


@pytest.fixture
def s3_endpoint(monkeypatch):
    """An S3-compatible server (moto) on a free port of 127.0.0.1 with an empty bucket `outputs`; stopped after."""
    import boto3
    from moto.server import ThreadedMotoServer

    for name, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="outputs")
        yield endpoint
    finally:
        server.stop()


def test_an_s3_remote_takes_the_push_gives_the_pull_and_serves_the_diff(two_revisions, s3_endpoint, tmp_path):
    for where in ("--local", "--project"):
        dvc(two_revisions, "remote", "add", where, "--default", "s3", "s3://outputs/rerankeval")
        dvc(two_revisions, "remote", "modify", where, "s3", "endpointurl", s3_endpoint)
    run(two_revisions, "git", "commit", "--quiet", "-am", "the s3 remote")
    dvc(two_revisions, "push", "--quiet", "--all-commits")

    clone = tmp_path / "clone"
    run(tmp_path, "git", "clone", "--quiet", str(two_revisions), str(clone))
    dvc(clone, "pull", "--quiet")
    assert (clone / "data/eval/per_query.parquet").read_bytes() == \
        (two_revisions / "data/eval/per_query.parquet").read_bytes()
    assert diff("before", "--repo", str(clone), "--output", str(tmp_path / "diff.md")) == 0
    assert "- `systems.reranker.boost`: `0.0` → `0.15`" in (tmp_path / "diff.md").read_text()


def test_a_prs_regression_is_decided_by_the_family_whose_adjusted_p_is_printed():
    """Three changed systems: one worse, one better, one unmoved. What counts as regressed is the primary metric's
    simultaneous interval, and it excludes 0 exactly when the printed adjusted p is below alpha."""
    rng = np.random.default_rng(3)
    before = {name: rng.uniform(0.2, 0.6, 60) for name in ("worse", "better", "same")}
    after = {"worse": before["worse"] - 0.08 + rng.normal(0, 0.05, 60),
             "better": before["better"] + 0.08 + rng.normal(0, 0.05, 60),
             "same": before["same"] + rng.normal(0, 0.05, 60)}
    result = diff_revisions(revision("base", before), revision("head", after), SETTINGS, "nDCG@10").model_dump()
    primary = [row for row in result["comparisons"] if row["metric"] == "nDCG@10"]
    assert {row["family"] for row in primary} == {"changed systems on nDCG@10"}
    for row in primary:
        assert (row["low"] > 0 or row["high"] < 0) == (row["p_adjusted"] < 0.05), row
    assert result["regressions"] == ["worse"]
