"""DVC's stage commands run `sh stages/python -m rerankeval.pipeline <stage> [<system>]`: the project's .venv when
there is one (so `.venv/bin/dvc exp run` works from a fresh shell), else the python3 on PATH, with the workspace's
src/ first and models offline; the one entry point refuses a bad stage or system with the list of stages."""

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from rerankeval.pipeline.__main__ import PER_SYSTEM, STAGES, main

REPO = Path(__file__).resolve().parents[1]
PROBE = 'echo "$0 | $PYTHONPATH | $HF_HUB_OFFLINE | $*"'


def fake_python(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{PROBE}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def launch(cwd: Path, **env) -> str:
    result = subprocess.run(["sh", str(REPO / "stages" / "python"), "-m", "rerankeval.pipeline", "freeze"], cwd=cwd,
                            env={"PATH": env.pop("PATH", os.environ["PATH"]), **env}, capture_output=True, text=True,
                            timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_projects_venv_is_preferred_even_from_a_queued_experiments_copy(tmp_path):
    venv_python = fake_python(tmp_path / "main" / ".venv" / "bin" / "python")
    workspace = tmp_path / "exp-copy"  # DVC runs queued experiments in a copy and sets DVC_ROOT to the main checkout
    workspace.mkdir()
    assert launch(workspace, DVC_ROOT=str(tmp_path / "main")) == (f"{venv_python} | {workspace}/src | 1 | "
                                                                   "-m rerankeval.pipeline freeze")
    assert launch(tmp_path / "main", HF_HUB_OFFLINE="0").endswith(f" | {tmp_path / 'main'}/src | 0 | "
                                                                  "-m rerankeval.pipeline freeze")


def test_without_a_venv_the_python3_on_path_runs(tmp_path):
    on_path = fake_python(tmp_path / "bin" / "python3")
    assert launch(tmp_path, PATH=f"{on_path.parent}:/usr/bin:/bin", PYTHONPATH="extra").startswith(
        f"{on_path} | {tmp_path}/src:extra | 1 |")


def test_every_stage_command_runs_its_stage_through_the_launcher_and_the_one_entry_point():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    commands = {name: stage.get("do", stage)["cmd"] for name, stage in stages.items()}
    assert set(commands) == set(STAGES)
    for name, command in commands.items():
        assert command == f"sh stages/python -m rerankeval.pipeline {name}" + (" ${key}" if name in PER_SYSTEM else "")
    assert not list((REPO / "stages").glob("*.py")), "stages/ holds the launcher only"


@pytest.mark.parametrize("argv, problem", [
    (["nope"], "pipeline: error: no stage 'nope'. Usage: python -m rerankeval.pipeline STAGE [SYSTEM]; stages: "),
    ([], "pipeline: error: no stage given. Usage: "),
    (["rerank"], "pipeline: error: stage rerank needs one system. Usage: "),
    (["snapshot", "fusion"], "pipeline: error: stage snapshot takes no system (got fusion). Usage: "),
])
def test_a_bad_stage_or_a_missing_system_names_the_stages(argv, problem, capsys):
    assert main(argv) == 2
    message = capsys.readouterr().err
    assert message.startswith(problem), message
    assert (f"stages: {', '.join(STAGES)} (rerank takes a system under `systems` in "
            "params.yaml; readout takes a name under `online.readouts`; shadow takes a name under "
            "`online.shadows`).") in message


def test_bad_input_is_the_stage_s_message_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["snapshot"]) == 2
    assert capsys.readouterr().err == ("snapshot: error: params.yaml: not found. Fix: run from the project root, or "
                                       "compose it with `dvc exp run`.\n")
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    assert main(["rerank", "nope"]) == 2
    message = capsys.readouterr().err
    assert message.startswith("rerank@nope: error: params.yaml: no system 'nope' under `systems` "
                              "(configured: "), message
    assert "Usage: python -m rerankeval.pipeline STAGE [SYSTEM]" in message


def test_the_launcher_runs_the_entry_point():
    result = subprocess.run(["sh", "stages/python", "-m", "rerankeval.pipeline", "nope"], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stderr.startswith("pipeline: error: no stage 'nope'."), result.stderr


def test_every_stage_run_logs_its_wall_time_and_outcome(tmp_path, monkeypatch):
    import json

    from rerankeval.core.errors import ConfigError
    from rerankeval.pipeline import __main__ as entry

    monkeypatch.setattr(entry, "STAGE_TIMES", tmp_path / "logs" / "stage_times.jsonl")
    assert entry.run_stage("snapshot", lambda: None) == 0

    def refused():
        raise ConfigError("bad")

    assert entry.run_stage("rerank@x", refused) == 2
    logged = [json.loads(line) for line in (tmp_path / "logs" / "stage_times.jsonl").read_text().splitlines()]
    assert [(entry["stage"], entry["exit"]) for entry in logged] == [("snapshot", 0), ("rerank@x", 2)]
    assert all(entry["seconds"] >= 0 and entry["finished"].endswith("+00:00") for entry in logged)


def test_a_stage_during_which_params_yaml_changed_fails_saying_so(tmp_path, monkeypatch):
    """Another `dvc exp run` stashes and restores params.yaml before the workspace guard refuses it: a stage that ran
    meanwhile fails (exit 2, and DVC records none of its outputs) instead of keeping outputs of other settings."""
    from rerankeval.core.errors import ConfigError
    from rerankeval.pipeline import __main__ as entry

    monkeypatch.setattr(entry, "PARAMS_FILE", tmp_path / "params.yaml")
    (tmp_path / "params.yaml").write_text("x: 1\n")
    monkeypatch.setattr(entry, "_run", lambda stage, system: None)
    entry.run("snapshot", [])  # unchanged: nothing to say
    monkeypatch.setattr(entry, "_run", lambda stage, system: (tmp_path / "params.yaml").write_text("x: 2\n"))
    with pytest.raises(ConfigError, match=r"params.yaml changed while stage snapshot ran .*Fix: let the other run"):
        entry.run("snapshot", [])
    monkeypatch.setattr(entry, "STAGE_TIMES", tmp_path / "stage_times.jsonl")
    monkeypatch.setattr(entry, "_run", lambda stage, system: (tmp_path / "params.yaml").write_text("x: 3\n"))
    assert entry.run_stage("snapshot", lambda: entry.run("snapshot", [])) == 2  # a message and exit 2
