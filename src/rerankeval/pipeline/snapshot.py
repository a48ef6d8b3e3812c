"""Stage `snapshot`: the dataset (params `dataset`) to hashed Parquet tables and a manifest."""

from __future__ import annotations

from pathlib import Path

from ..data.beir import load_beir, require_split
from ..data.snapshot import write_snapshot
from .params import load_params


def run(params_path: str | Path, out_dir: str | Path) -> None:
    dataset = load_params(params_path).dataset
    collection = load_beir(dataset.path, dataset.splits)
    require_split(collection, dataset.eval_split, dataset.path)
    manifest = write_snapshot(collection, out_dir, source={"name": dataset.name, "path": dataset.path,
                                                            "splits": dataset.splits})
    counts = {name: entry["rows"] for name, entry in manifest["tables"].items()}
    print(f"snapshot: {counts}, splits {manifest['splits']}, slices {manifest['slice_columns']}")
    for note in collection.notes:
        print(f"snapshot: note: {note}")
    for warning in collection.warnings:
        print(f"snapshot: warning: {warning}")
