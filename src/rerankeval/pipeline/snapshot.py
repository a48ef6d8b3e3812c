"""Stage `snapshot`: the dataset (params `dataset`) to hashed Parquet tables and a manifest."""

from __future__ import annotations

from ..data.beir import load_beir, require_split
from ..data.sample import sample_collection
from ..data.snapshot import write_snapshot
from ..workspace.paths import PipelinePaths
from .params import Params


def run(params: Params, paths: PipelinePaths) -> None:
    dataset = params.dataset
    collection = load_beir(dataset.path, dataset.splits)
    require_split(collection, dataset.eval_split, dataset.path)
    sample = None
    if dataset.sample is not None:
        collection, sample = sample_collection(collection, dataset.sample, dataset.eval_split)
    manifest = write_snapshot(collection, paths.snapshot, source={"name": dataset.name, "path": dataset.path,
                                                            "splits": dataset.splits}, sample=sample)
    counts = {name: entry["rows"] for name, entry in manifest["tables"].items()}
    print(f"snapshot: {counts}, splits {manifest['splits']}, slices {manifest['slice_columns']}")
    for note in collection.notes:
        print(f"snapshot: note: {note}")
    for warning in collection.warnings:
        print(f"snapshot: warning: {warning}")
