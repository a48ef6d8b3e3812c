"""DVC's stage commands run `sh stages/python`: the project's .venv when there is one (so `.venv/bin/dvc exp run`
works from a fresh shell), else the python3 on PATH, with the workspace's src/ first and models offline."""

import os
import stat
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
PROBE = 'echo "$0 | $PYTHONPATH | $HF_HUB_OFFLINE | $*"'


def fake_python(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{PROBE}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def launch(cwd: Path, **env) -> str:
    result = subprocess.run(["sh", str(REPO / "stages" / "python"), "stages/freeze.py", "--x"], cwd=cwd,
                            env={"PATH": env.pop("PATH", os.environ["PATH"]), **env}, capture_output=True, text=True,
                            timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_projects_venv_is_preferred_even_from_a_queued_experiments_copy(tmp_path):
    venv_python = fake_python(tmp_path / "main" / ".venv" / "bin" / "python")
    workspace = tmp_path / "exp-copy"  # DVC runs queued experiments in a copy and sets DVC_ROOT to the main checkout
    workspace.mkdir()
    assert launch(workspace, DVC_ROOT=str(tmp_path / "main")) == f"{venv_python} | {workspace}/src | 1 | stages/freeze.py --x"
    assert launch(tmp_path / "main", HF_HUB_OFFLINE="0").endswith(f" | {tmp_path / 'main'}/src | 0 | stages/freeze.py --x")


def test_without_a_venv_the_python3_on_path_runs(tmp_path):
    on_path = fake_python(tmp_path / "bin" / "python3")
    assert launch(tmp_path, PATH=f"{on_path.parent}:/usr/bin:/bin", PYTHONPATH="extra").startswith(
        f"{on_path} | {tmp_path}/src:extra | 1 |")


def test_every_stage_command_uses_the_launcher():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    commands = [stage.get("do", stage)["cmd"] for stage in stages.values()]
    assert len(commands) >= 7 and all(command.startswith("sh stages/python stages/") for command in commands)
