"""Stage `train`: fine-tune a cross-encoder on the train split's queries (see rerankeval.training).

The queries come from the evaluated dataset's ``train.split``; a dataset without that split (most BEIR sets have a
test split only) trains on the same split of ``train.fallback_path`` instead, with candidates frozen there by the same
first stage (``systems.splits``). The model card records which (``source``) and the report states it.
One model per seed of ``train.seeds`` (``rerankeval.training.seeds``).
"""

from __future__ import annotations

import json
import shutil

import pandas as pd

from ..core.errors import ConfigError
from ..data.snapshot import Snapshot
from ..systems.splits import split_candidates
from ..training.cross_encoder import mine_examples, train
from ..training.seeds import write_seed_set
from ..workspace.paths import PipelinePaths
from .params import Params

CANDIDATE_COLUMNS = ["query_id", "doc_id", "passage_sha256", "bm25_rank", "fused_rank", "passage"]


def run(params: Params, paths: PipelinePaths) -> None:
    config = params.train
    if config.split == params.dataset.eval_split:
        raise ConfigError(f"{params.source}: train.split {config.split!r} is the evaluation split "
                          "(dataset.eval_split). Fix: train on another split.")
    split = split_candidates(params, Snapshot(paths.snapshot), paths.candidates, paths.fallback)(config.split)
    candidates = split.candidates[CANDIDATE_COLUMNS]
    source = dict(split.source)
    rank_column = "bm25_rank"
    if len(candidates) and candidates["bm25_rank"].isna().all():  # a run or replay source ran no BM25 here
        rank_column = "fused_rank"
        source["negatives"] = "the candidate source's own order (no BM25 ranking: retrieval.source is not hybrid)"
    queries = pd.DataFrame({"query_id": list(split.queries), "text": [q.text for q in split.queries.values()],
                            "split": config.split})
    print(f"train: on the {config.split!r} split of {source['path']}"
          + (f" (fallback: {source['reason']})" if source["fallback"] else ""))
    dirs = config.seed_dirs()
    if len(dirs) > 1:  # a seed set replaces whatever out_dir held (one model, or another set)
        shutil.rmtree(config.out_dir, ignore_errors=True)
    for seed in dirs:
        seeded = config.for_seed(seed)
        card = train(mine_examples(queries, split.qrels, candidates, seeded, rank_column), seeded, source)
        print(json.dumps({"seed": seed, **{key: card[key] for key in ("split", "train_queries", "data", "steps",
                                                                      "train_s", "pairs_per_s")}}, indent=1))
    if len(dirs) > 1:
        write_seed_set(config.out_dir, dirs)
