"""A tiny project a stage runs on: the tiny collection's snapshot, frozen candidates and first stage, and params."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from rerankeval.core.io import write_table
from rerankeval.data.beir import load_beir
from rerankeval.data.snapshot import Snapshot, retrieval_inputs, write_snapshot
from rerankeval.workspace.paths import PipelinePaths
from rerankeval.retrieval.candidates import write_candidates
from rerankeval.retrieval.config import HybridConfig
from rerankeval.retrieval.freeze import freeze
from tests.test_params import composed
from tests.test_retrieval import FakeRetriever, PriorRetriever

REPO = Path(__file__).resolve().parents[1]


def tiny_paths(folder: Path) -> PipelinePaths:
    """dvc.yaml's artefact paths moved into ``folder`` (data/candidates.parquet -> folder/candidates.parquet, ...)."""
    paths = PipelinePaths.load(REPO / "dvc.yaml")
    return PipelinePaths(**{field.name: folder / getattr(paths, field.name).name for field in fields(paths)})


def frozen_tiny_project(folder: Path, collection: Path) -> dict:
    """Writes the snapshot, candidates, passages and first stage (5 candidates a query) where ``tiny_paths(folder)``
    has them; returns the composed params with the dataset set, for the caller to add its systems to."""
    paths = tiny_paths(folder)
    write_snapshot(load_beir(collection), paths.snapshot, source={})
    snapshot = Snapshot(paths.snapshot)
    config = HybridConfig(top_n=5, fusion_depth=5)
    frozen = freeze(snapshot.table("corpus"), snapshot.table("queries"), config, snapshot.table("qrels"),
                    lexical_retriever=FakeRetriever, dense_retriever=PriorRetriever)
    provenance = {"snapshot": retrieval_inputs(snapshot), "retrieval": config.settings(), "fusion": frozen.fusion}
    write_candidates(paths.candidates, paths.passages, frozen.candidates, frozen.passages, provenance)
    write_table(paths.first_stage, frozen.first_stage, provenance)
    params = composed()
    params["dataset"] = {"name": "tiny", "path": str(collection)}
    return params
