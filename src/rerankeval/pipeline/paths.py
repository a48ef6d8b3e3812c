"""Where the pipeline's artefacts live: defined once, in dvc.yaml's ``vars`` (``paths``), and read from there."""

from __future__ import annotations

from pathlib import Path

import yaml

from ..core.errors import ConfigError

DVC_YAML = Path("dvc.yaml")


def pipeline_paths(dvc_yaml_text: str, where: str = str(DVC_YAML)) -> dict[str, str]:
    """The ``paths`` mapping among the ``vars`` of a dvc.yaml."""
    document = yaml.safe_load(dvc_yaml_text) or {}
    for entry in document.get("vars") or []:
        if isinstance(entry, dict) and isinstance(entry.get("paths"), dict):
            return {key: str(value) for key, value in entry["paths"].items()}
    raise ConfigError(f"{where}: no `vars: - paths: {{...}}` block; rerankeval reads its artefact paths from there.")


PER_QUERY_FILE, DEPTH_CURVE_FILE, FIRST_STAGE_FILE = "per_query.parquet", "depth_curve.parquet", "first_stage.parquet"
"""The files of the evaluate stage's output folder (``paths.eval``)."""
