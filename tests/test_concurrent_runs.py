"""Two `dvc exp run` at once in one workspace: the second is refused before it rewrites params.yaml, naming the
first, and the first finishes with its own settings (``rerankeval.workspace.concurrency``, loaded by DVC through
hydra_plugins/ before it composes)."""

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from rerankeval.workspace.concurrency import composing_experiment, other_runs, reproduces_here

REPO = Path(__file__).resolve().parents[1]
DVC = str(Path(sys.executable).parent / "dvc")


@pytest.mark.parametrize("argv, reproduces", [
    (["/v/bin/python", "/v/bin/dvc", "exp", "run", "-S", "x=2"], True),
    (["/v/bin/python", "/v/bin/dvc", "-q", "repro"], True),
    (["/v/bin/dvc", "exp", "run", "--queue", "-S", "x=2"], False),  # queued: nothing reproduced yet
    (["/v/bin/dvc", "exp", "run", "--run-all"], False),  # in temporary copies
    (["/v/bin/dvc", "exp", "show"], False),
    (["python", "-m", "pytest", "repro"], False),
])
def test_which_command_lines_reproduce_in_their_folder(argv, reproduces):
    assert reproduces_here(argv) is reproduces


def test_only_a_composing_dvc_exp_run_checks():
    assert composing_experiment(["/v/bin/dvc", "exp", "run", "--queue", "-S", "x=1"])
    assert not composing_experiment(["/v/bin/pytest", "tests"]) and not composing_experiment(["/v/bin/dvc", "repro"])
    assert other_runs(REPO, proc=REPO / "no-proc-here") == []  # elsewhere than Linux: nothing is checked


@pytest.mark.slow
def test_a_second_experiment_is_refused_before_it_rewrites_the_first_ones_params(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "config.yaml").write_text("x: 1\n")
    (tmp_path / "params.yaml").write_text("x: 1\n")
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump(
        {"stages": {"slow": {"cmd": "sleep 6 && echo done > out.txt", "params": ["x"], "outs": ["out.txt"]}}}))
    (tmp_path / ".gitignore").write_text("out.txt\n__pycache__/\n")
    shutil.copytree(REPO / "hydra_plugins", tmp_path / "hydra_plugins", ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    for command in (["git", "init", "-q"], [DVC, "init", "-q"], ["git", "add", "-A"], [*git, "commit", "-qm", "x"]):
        subprocess.run(command, cwd=tmp_path, check=True, capture_output=True)
    with open(tmp_path / ".dvc" / "config", "a") as config:
        config.write("[hydra]\n    enabled = true\n[core]\n    analytics = false\n")
    first = subprocess.Popen([DVC, "exp", "run", "-S", "x=2"], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(100):  # until the first is reproducing
            if (tmp_path / ".dvc" / "tmp" / "rwlock").exists() and "x: 2" in (tmp_path / "params.yaml").read_text():
                break
            time.sleep(0.1)
        second = subprocess.run([DVC, "exp", "run", "-S", "x=3"], cwd=tmp_path, capture_output=True, text=True,
                                timeout=120)
        assert second.returncode != 0
        assert "another DVC run reproduces stages in this workspace (PID " in second.stderr + second.stdout
        assert f"PID {first.pid}" in second.stderr + second.stdout
        assert yaml.safe_load((tmp_path / "params.yaml").read_text()) == {"x": 2}  # untouched
    finally:
        output, _ = first.communicate(timeout=120)
    assert first.returncode == 0, output
    assert yaml.safe_load((tmp_path / "dvc.lock").read_text())["stages"]["slow"]["params"]["params.yaml"] == {"x": 2}
