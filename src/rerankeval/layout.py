"""Where each stage reads and writes, relative to the repository root (where DVC runs every stage)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

PARAMS = Path("params.yaml")
SNAPSHOT_DIR = Path("data/snapshot")
CANDIDATES = Path("data/candidates.parquet")
FIRST_STAGE = Path("data/first_stage.parquet")
RUNS_DIR = Path("data/runs")
EVAL_DIR = Path("data/eval")
REPORTS_DIR = Path("reports")
PLOTS_DIR = REPORTS_DIR / "plots"


def run_path(system: str) -> Path:
    return RUNS_DIR / f"run_{system}.parquet"


def latency_path(system: str) -> Path:
    return RUNS_DIR / f"latency_{system}.parquet"


def load_params(path: str | Path = PARAMS) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)
