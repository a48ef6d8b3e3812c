"""Stage `train`: fine-tune a cross-encoder on the train split's queries (see rerankeval.training).

The queries come from the evaluated dataset's ``train.split``; a dataset without that split (most BEIR sets have a
test split only) trains on the same split of ``train.fallback_path`` instead, with candidates frozen there by the same
first stage. The model card records which (``source``) and the report states it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..core.errors import CollectionError, ConfigError
from ..data.beir import load_beir
from ..data.snapshot import Snapshot
from ..retrieval.candidates import load_candidates
from ..retrieval.freeze import freeze
from ..training.cross_encoder import mine_examples, train
from .params import Params, load_params

CANDIDATE_COLUMNS = ["query_id", "doc_id", "passage_sha256", "fused_rank"]


def run(params_path: str | Path, snapshot_dir: str | Path, candidates_path: str | Path) -> None:
    params = load_params(params_path)
    config = params.train
    if config.split == params.dataset.eval_split:
        raise ConfigError(f"{params_path}: train.split {config.split!r} is the evaluation split "
                          "(dataset.eval_split). Fix: train on another split.")
    snapshot = Snapshot(snapshot_dir)
    if config.split in snapshot.splits:
        queries, qrels = snapshot.table("queries").to_pandas(), snapshot.table("qrels").to_pandas()
        candidates = load_candidates(candidates_path, columns=CANDIDATE_COLUMNS)
        source = {"dataset": params.dataset.name, "path": params.dataset.path, "split": config.split,
                  "fallback": False}
    else:
        queries, qrels, candidates = _fallback(params, snapshot)
        source = {"dataset": Path(config.fallback_path).name, "path": config.fallback_path, "split": config.split,
                  "fallback": True, "reason": f"{params.dataset.path} has no split {config.split!r}"}
    print(f"train: on the {config.split!r} split of {source['path']}"
          + (f" (fallback: {source['reason']})" if source["fallback"] else ""))
    card = train(mine_examples(queries, qrels, candidates, config), config, source)
    print(json.dumps({key: card[key] for key in ("split", "train_queries", "data", "steps", "train_s",
                                                 "pairs_per_s")}, indent=1))


def _fallback(params: Params, snapshot: Snapshot) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Queries, qrels and candidates of ``train.split`` in ``train.fallback_path``, frozen like the evaluated ones."""
    config = params.train
    if config.fallback_path is None:
        raise ConfigError(f"{params.dataset.path}: no {config.split!r} split to train on (splits: {snapshot.splits})"
                          " and train.fallback_path is not set. Fix: set train.fallback_path to a BEIR folder with "
                          f"a {config.split!r} split (e.g. datasets/demo), or train on another split (train.split).")
    try:
        collection = load_beir(config.fallback_path, [config.split])
    except CollectionError as err:
        raise CollectionError(f"train.fallback_path: {err}") from None
    frozen = freeze(collection.corpus, collection.queries, params.retrieval)
    passages = frozen.passages.to_pydict()
    texts = dict(zip(passages["passage_sha256"], passages["passage"]))
    candidates = frozen.candidates.select(CANDIDATE_COLUMNS).to_pandas()
    candidates["passage"] = candidates["passage_sha256"].map(texts)
    return collection.queries.to_pandas(), collection.qrels.to_pandas(), candidates
