"""Queued DVC sweeps as the README runs them: `.venv/bin/dvc` from a shell without the venv on PATH, experiments in
temp copies sharing the workspace's caches and compiled kernels, run files that do not record where a cache is, and
no form of a key that a rerank API echoes back in anything a sweep records, the DVC cache and git objects included."""

import csv
import io
import os
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from rerankeval.core.caches import CACHE_DIR_ENV, cache_dir
from rerankeval.pipeline import rerank
from rerankeval.pipeline.params import load_params
from rerankeval.systems.pair_scoring import PairBatch
from rerankeval.systems.pairs import PairScorerConfig, register_pair_scorer
from tests.stage_fixtures import frozen_tiny_project, tiny_paths
from tests.test_http_client import ECHO_FORMS, KEY_ENV, SECRET, api, leaked  # noqa: F401  (the fixture)
from tests.test_pipeline import DVC_TIMEOUT_S

REPO = Path(__file__).resolve().parents[1]
VENV = Path(sys.executable).parents[1]


def test_a_relative_cache_folder_is_the_main_checkouts(monkeypatch, tmp_path):
    monkeypatch.delenv(CACHE_DIR_ENV, raising=False)
    monkeypatch.delenv("DVC_ROOT", raising=False)
    assert cache_dir(None) == Path("data/score_cache")
    monkeypatch.setenv("DVC_ROOT", str(tmp_path / "main"))
    assert cache_dir(None) == tmp_path / "main" / "data" / "score_cache"
    assert cache_dir("data/generation_cache") == tmp_path / "main" / "data" / "generation_cache"
    assert cache_dir(str(tmp_path / "elsewhere")) == tmp_path / "elsewhere"
    monkeypatch.setenv(CACHE_DIR_ENV, "moved")
    assert cache_dir("data/score_cache") == tmp_path / "main" / "moved"


class Overlap:
    """Word overlap, two pairs a batch."""

    def __init__(self, config: PairScorerConfig):
        self.config = config

    def fingerprint(self) -> dict:
        return {"scorer": "sweep_overlap/v1"}

    def score_batches(self, query: str, passages: list[str]):
        for start in range(0, len(passages), 2):
            indices = np.arange(start, min(start + 2, len(passages)))
            yield PairBatch(indices, np.array([len(set(query.split()) & set(passages[i].split())) for i in indices],
                                              dtype=float))

    def describe(self) -> dict:
        return {"scorer": "word overlap"}


register_pair_scorer("test_sweep_overlap", PairScorerConfig)(lambda config, context: Overlap(config))


def test_a_run_file_does_not_depend_on_where_the_cache_lives(tmp_path, tiny_beir, monkeypatch):
    params = frozen_tiny_project(tmp_path, tiny_beir)
    params["systems"] = {"fusion": params["systems"]["fusion"],
                         "overlap": {"kind": "test_sweep_overlap", "depth": 5, "depends_on": "tests"}}
    params["system_names"] = list(params["systems"])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    monkeypatch.delenv("DVC_ROOT", raising=False)
    runs = []
    for place in ("here", "there"):
        monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / place))
        paths = replace(tiny_paths(tmp_path), runs=tmp_path / f"runs_{place}")
        rerank.run(load_params(tmp_path / "params.yaml"), paths, "overlap")
        assert (tmp_path / place).is_dir()
        runs.append(paths.run("overlap").read_bytes())
    assert runs[0] == runs[1]


def temp_copy(tmp_path: Path, edit_kernel: bool = False) -> Path:
    """What DVC's temp copy of a clone holds: the tracked files, so no compiled kernels."""
    copy = tmp_path / "copy"
    for name in ("stages", "src", "setup.py", "pyproject.toml"):
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        else:
            shutil.copy(source, copy / name)
    if edit_kernel:
        with open(copy / "src" / "rerankeval" / "eval" / "_strings.c", "a", encoding="utf-8") as handle:
            handle.write("\n/* edited in the experiment */\n")
    return copy


def import_kernels(copy: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DVC_ROOT": str(REPO)}
    return subprocess.run(["sh", "stages/python", "-c", "import rerankeval.eval._strings as k; print(k.__file__)"],
                          cwd=copy, env=env, capture_output=True, text=True, timeout=DVC_TIMEOUT_S)


def test_a_temp_copy_reuses_the_main_checkouts_kernels(tmp_path):
    copy = temp_copy(tmp_path)
    imported = import_kernels(copy)
    assert imported.returncode == 0, imported.stderr
    assert Path(imported.stdout.strip()).parent == copy / "src" / "rerankeval" / "eval"


@pytest.mark.slow
def test_a_temp_copy_with_other_kernel_sources_builds_its_own(tmp_path):
    copy = temp_copy(tmp_path, edit_kernel=True)
    imported = import_kernels(copy)
    assert imported.returncode == 0, imported.stderr
    built = Path(imported.stdout.strip())
    assert built.parent == copy / "src" / "rerankeval" / "eval"
    assert built.read_bytes() != (REPO / "src" / "rerankeval" / "eval" / built.name).read_bytes()


def fresh_shell() -> dict:
    """The environment of a new shell: no venv on PATH, nothing activated, no DVC variables."""
    path = [entry for entry in os.environ["PATH"].split(os.pathsep)
            if entry and Path(entry).resolve() != (VENV / "bin").resolve()]
    env = {name: value for name, value in os.environ.items()
           if name not in ("VIRTUAL_ENV", "PYTHONPATH", CACHE_DIR_ENV) and not name.startswith("DVC_")}
    return {**env, "PATH": os.pathsep.join(path), "DVC_NO_ANALYTICS": "1", KEY_ENV: SECRET}


def run_dvc(workdir: Path, *args: str, timeout: float = DVC_TIMEOUT_S, **options) -> subprocess.CompletedProcess:
    """The project's `dvc` as a new shell runs it (output captured unless ``options`` say where it goes)."""
    output = {"capture_output": True, "text": True} if "stdout" not in options else {}
    return subprocess.run([str(workdir / ".venv" / "bin" / "dvc"), *args], cwd=workdir, env=fresh_shell(),
                          timeout=timeout, **output, **options)


def dvc(workdir: Path, *args: str, timeout: float = DVC_TIMEOUT_S) -> str:
    result = run_dvc(workdir, *args, timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


QUEUE_POLL_S = 10
"""The queue is asked while its experiments run: each `dvc queue status` is a process of its own on a busy core."""
QUEUE_STATUS_TIMEOUT_S = 120
QUEUE_RESTART_POLLS = 3
NO_WORKER = "Worker status: 0 active, 0 idle"
"""What `dvc queue status` says when no worker runs."""
TASK_STATES = {"Queued", "Running", "Failed", "Success", "Unknown"}
"""The last column of a task's row in `dvc queue status`."""


def start_worker(workdir: Path) -> None:
    """`dvc queue start -j 1`, its output to a file beside the project: the worker it starts keeps the command's stdout
    and stderr, so over a pipe this call would wait until the worker stops, and a worker whose stopping thread died
    (treeverse/dvc#10428) never does: `dvc queue stop` in ``run_queue`` stops it once the queue is done."""
    log = workdir.parent / "queue_start.log"
    with open(log, "ab") as output:
        done = run_dvc(workdir, "queue", "start", "-j", "1", stdout=output, stderr=subprocess.STDOUT)
    assert done.returncode == 0, log.read_text(errors="replace")


def run_queue(workdir: Path, deadline_s: float = DVC_TIMEOUT_S) -> str:
    """Run every queued experiment on one worker and return the queue's status once none is queued or running.

    Not `dvc exp run --run-all`: it ends only when its worker does, and DVC 3's temporary worker stops itself from a
    monitor thread that dies when it reads a message of the filesystem broker while it is being written
    (``JSONDecodeError`` in the worker's log, treeverse/dvc#10428): the experiments all succeed and `--run-all` then
    waits forever (one CI run in four here). `dvc queue start` starts the same worker, as `dvc` from PATH. The same
    race can stop the worker itself with a task still queued (its log ends in ``JSONDecodeError``, then "done"): a task
    queued while no worker runs, for ``QUEUE_RESTART_POLLS`` polls in a row, starts one again, as a user would."""
    start_worker(workdir)
    status = "(no answer from `dvc queue status`)"
    deadline = time.monotonic() + deadline_s
    waiting_without_worker = 0
    while time.monotonic() < deadline:
        time.sleep(QUEUE_POLL_S)
        try:
            answer = run_dvc(workdir, "queue", "status", timeout=QUEUE_STATUS_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            continue
        status = answer.stdout + answer.stderr
        if answer.returncode != 0:  # it read a broker message while the worker wrote it (the same race): ask again
            continue
        states = {words[-1] for line in status.splitlines() if (words := line.split()) and words[-1] in TASK_STATES}
        if states and not {"Queued", "Running"} & states:
            dvc(workdir, "queue", "stop")
            return status
        stopped = NO_WORKER in status and "Queued" in states and "Running" not in states
        waiting_without_worker = waiting_without_worker + 1 if stopped else 0
        if waiting_without_worker == QUEUE_RESTART_POLLS:
            start_worker(workdir)
            waiting_without_worker = 0
    worker_logs = "\n".join(log.read_text(errors="replace")[-2000:]
                            for log in (workdir / ".dvc" / "tmp" / "exps" / "celery").glob("*.out"))
    raise AssertionError(f"the queue did not finish in {deadline_s:.0f} s:\n{status}\n{worker_logs}")


ECHOED = [f"form_{form}@{where}" for where in ("error", "result") for form in ECHO_FORMS] + ["echo_401"]
"""What the probe system's API answers, in turn: the key in each of its encoded forms, in an error body and as a
result, and the Authorization header echoed in a 401."""


@pytest.fixture
def sweep_project(tmp_path, tiny_beir, api):  # noqa: F811  (the fixture)
    """A git-committed project on the tiny collection, with the fused baseline, a tiny cross-encoder at depth 5 and
    ``probe``, a rerank API (``api``) that echoes its key back in every form (``ECHOED``, over and over); the venv
    linked in as `make` would leave it, the compiled kernels git-ignored as in a clone."""
    from tests.test_models import save_tiny_bert
    from tests.test_pipeline import compose_params, copy_checkout

    model = save_tiny_bert(tmp_path / "model", "BertForSequenceClassification")
    workdir = tmp_path / "project"
    workdir.mkdir()
    copy_checkout(("dvc.yaml", ".dvcignore", "stages", "conf", ".dvc", "src", "setup.py", "pyproject.toml",
                   ".gitignore"), workdir)
    (workdir / ".venv").symlink_to(VENV)
    # -S edits params.yaml as written here (DVC's Hydra composition would bring back the demo's conf/).
    (workdir / ".dvc" / "config").write_text("[core]\n    analytics = false\n    autostage = true\n")
    params = compose_params([
        "dataset=beir", f"dataset.path={tiny_beir}", f"train.fallback_path={tiny_beir}", "retrieval.top_n=10",
        "retrieval.fusion_depth=10",
        "serving.latency.queries=2", "serving.latency.warmup_queries=0", "serving.latency.repeats=1",
        "+system@systems.tiny=ce_minilm_ft", f"systems.tiny.model={model}", "systems.tiny.depth=5",
        "systems.tiny.max_length=32", "+system@systems.probe=cohere_rerank",
        f"systems.probe.base_url=http://127.0.0.1:{api.server_address[1]}", f"systems.probe.api_key_env={KEY_ENV}",
        "systems.probe.depth=5", "systems.probe.max_retries=0"])
    params["systems"] = {name: params["systems"][name] for name in ("fusion", "tiny", "probe")}
    api.script = ECHOED * 50
    params["system_names"] = list(params["systems"])
    (workdir / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q"], cwd=workdir, check=True)
    subprocess.run(["git", "add", "-A"], cwd=workdir, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "tiny"], cwd=workdir, check=True)
    assert not subprocess.run(["git", "ls-files", "*.so"], cwd=workdir, capture_output=True, text=True).stdout
    return workdir


def experiment_latencies(workdir: Path) -> dict[int, pd.DataFrame]:
    """Each experiment's latency table of the tiny system, by its depth (read from the experiment's commit)."""
    from dvc.api import open as open_output

    table = dvc(workdir, "exp", "show", "--csv", "--drop", ".*",
                "--keep", r"^Experiment$|^rev$|^State$|^systems.tiny.depth$")
    rows = [row for row in csv.DictReader(io.StringIO(table)) if row["Experiment"]]
    assert len(rows) == 2 and {row["State"] for row in rows} <= {"", "Success"}, table
    latencies = {}
    for row in rows:
        with open_output("data/runs/latency_tiny.parquet", repo=str(workdir), rev=row["rev"], mode="rb") as handle:
            latencies[int(row["systems.tiny.depth"])] = pd.read_parquet(io.BytesIO(handle.read()))
    return latencies


def recorded(workdir: Path):
    """Every file a run left in ``workdir`` (its DVC cache, the queue's logs and temp folders included; not the linked
    venv), and every git object (the experiments' commits), each as (where, its bytes)."""
    for folder, subfolders, files in os.walk(workdir):
        subfolders[:] = [name for name in subfolders if Path(folder, name) not in (workdir / ".venv", workdir / ".git")]
        for name in files:
            yield str(Path(folder, name).relative_to(workdir)), Path(folder, name).read_bytes()
    batch = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=workdir, capture_output=True,
                           check=True).stdout
    position = 0
    while position < len(batch):
        header_end = batch.index(b"\n", position)
        object_id, kind, size = batch[position:header_end].decode().split()
        position = header_end + 1 + int(size) + 1
        yield f"git {kind} {object_id}", batch[header_end + 1:position - 1]


@pytest.mark.slow
def test_a_queued_sweep_shares_the_workspace_caches_and_records_no_form_of_a_key(sweep_project, api):  # noqa: F811
    dvc(sweep_project, "repro", "latency")
    scored = pd.read_parquet(sweep_project / "data" / "runs" / "latency_tiny.parquet")
    assert scored["cache_hits"].sum() == 0 and scored["n_pairs"].sum() > 0
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "baseline"],
                   cwd=sweep_project, check=True)

    dvc(sweep_project, "exp", "run", "--queue", "-S", "systems.tiny.depth=4,3", "latency")
    # Without the venv's dvc on PATH the queue worker never starts and nothing runs: the deadline fails it.
    status = run_queue(sweep_project)
    assert status.count("Success") == 2, status

    latencies = experiment_latencies(sweep_project)
    assert sorted(latencies) == [3, 4]
    for depth, latency in latencies.items():
        # A shallower depth scores a subset of the workspace's pairs: every one is read from its cache.
        assert latency["n_pairs"].sum() > 0 and (latency["cache_hits"] == latency["n_pairs"]).all(), (depth, latency)

    # The probe's API echoed its key in every form, in the workspace's run and in both experiments' latency stages:
    # each echo degraded a query with its reason, redacted, and no form of the key reached any file, the DVC cache
    # and the experiments' git objects included.
    assert api.calls >= len(ECHOED), api.calls
    reasons = pd.read_parquet(sweep_project / "data" / "runs" / "latency_probe.parquet")["reason"].dropna()
    assert reasons.str.contains("[redacted]", regex=False).any(), reasons.tolist()
    scanned = list(recorded(sweep_project))
    assert any(where.startswith(".dvc/cache/") for where, _ in scanned)
    assert sum(where.startswith("git commit") for where, _ in scanned) >= 4  # the two experiments' commits too
    assert not {where: forms for where, data in scanned if (forms := leaked(data))}
