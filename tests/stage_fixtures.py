"""A tiny project a stage runs on: the tiny collection's snapshot, frozen candidates and first stage, and params."""

from __future__ import annotations

from pathlib import Path

from rerankeval.core.io import write_table
from rerankeval.data.beir import load_beir
from rerankeval.data.snapshot import Snapshot, retrieval_inputs, write_snapshot
from rerankeval.retrieval.candidates import write_candidates
from rerankeval.retrieval.freeze import RetrievalConfig, freeze
from tests.test_params import composed
from tests.test_retrieval import FakeRetriever, PriorRetriever


def frozen_tiny_project(folder: Path, collection: Path) -> dict:
    """Writes snapshot/, candidates.parquet, passages.parquet and first_stage.parquet (5 candidates a query) into
    ``folder``; returns the composed params with the dataset set, for the caller to add its systems to."""
    write_snapshot(load_beir(collection), folder / "snapshot", source={})
    snapshot = Snapshot(folder / "snapshot")
    config = RetrievalConfig(top_n=5, fusion_depth=5)
    frozen = freeze(snapshot.table("corpus"), snapshot.table("queries"), config, snapshot.table("qrels"),
                    lexical_retriever=FakeRetriever, dense_retriever=PriorRetriever)
    provenance = {"snapshot": retrieval_inputs(snapshot), "retrieval": config.to_dict(), "fusion": frozen.fusion}
    write_candidates(folder / "candidates.parquet", folder / "passages.parquet", frozen.candidates,
                     frozen.passages, provenance)
    write_table(folder / "first_stage.parquet", frozen.first_stage, provenance)
    params = composed()
    params["dataset"] = {"name": "tiny", "path": str(collection)}
    return params
