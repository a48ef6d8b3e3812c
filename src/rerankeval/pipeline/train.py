"""Stage `train`: fine-tune a cross-encoder on the train split's queries (see rerankeval.training)."""

from __future__ import annotations

import json
from pathlib import Path

from ..data.snapshot import Snapshot
from ..retrieval.candidates import load_candidates
from ..training.cross_encoder import mine_examples, train
from .params import load_params


def run(params_path: str | Path, snapshot_dir: str | Path, candidates_path: str | Path) -> None:
    config = load_params(params_path).train
    snapshot = Snapshot(snapshot_dir)
    candidates = load_candidates(candidates_path, columns=["query_id", "doc_id", "passage_sha256", "fused_rank"])
    training_set = mine_examples(snapshot.table("queries").to_pandas(), snapshot.table("qrels").to_pandas(),
                                 candidates, config)
    card = train(training_set, config)
    print(json.dumps({key: card[key] for key in ("split", "train_queries", "data", "steps", "train_s",
                                                 "pairs_per_s")}, indent=1))
