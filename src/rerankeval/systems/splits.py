"""What systems read: a split's queries, qrels and frozen candidates, for what is fitted on another split than the
evaluated one (the cross-encoder's training, a blend's weight), and the evaluated split as requests to a system (the
latency stage, the load test). A dataset without a fitting split (most BEIR sets have a test split only) reads the
same split of ``train.fallback_path`` instead, frozen by the same first stage, and says so in ``source``.

``params`` is the typed params.yaml (``rerankeval.pipeline.params.Params``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from ..core.errors import CollectionError, ConfigError
from ..core.io import table_metadata
from ..data.beir import load_beir
from ..data.snapshot import Snapshot, check_provenance, retrieval_inputs
from ..retrieval.candidates import load_candidates
from ..retrieval.config import HybridConfig
from ..retrieval.freeze import freeze
from .base import Query, QueryCandidates, SplitCandidates


def split_candidates(params, snapshot: Snapshot,
                     candidates_path: str | Path) -> Callable[[str], SplitCandidates]:
    """``candidates_of(split)``: that split's candidates (texts verified against their hashes, fused order), query
    views and qrels; from ``train.fallback_path`` when the snapshot lacks the split (frozen once per process)."""
    frozen_fallbacks: dict[str, SplitCandidates] = {}

    def candidates_of(split: str) -> SplitCandidates:
        if split not in snapshot.splits:
            if split not in frozen_fallbacks:
                frozen_fallbacks[split] = fallback_split(params, snapshot, split)
            return frozen_fallbacks[split]
        queries = snapshot.queries_of(split)
        query_ids = queries["query_id"].tolist()
        candidates = load_candidates(candidates_path, query_ids=query_ids)
        qrels = snapshot.table("qrels").to_pandas()
        labels = [column for column in snapshot.slice_columns if column in queries.columns]
        return SplitCandidates(candidates, _views(queries, labels), qrels[qrels["query_id"].isin(set(query_ids))],
                               {"dataset": params.dataset.name, "path": params.dataset.path, "split": split,
                                "fallback": False})

    return candidates_of


def fallback_split(params, snapshot: Snapshot, split: str) -> SplitCandidates:
    """``split`` of ``train.fallback_path``, frozen with the evaluated dataset's retrieval settings."""
    path = params.train.fallback_path
    if path is None:
        raise ConfigError(f"{params.dataset.path}: no {split!r} split (splits: {snapshot.splits}) and "
                          "train.fallback_path is not set. Fix: set train.fallback_path to a BEIR folder with "
                          f"a {split!r} split (e.g. datasets/demo), or use another split (train.split, fit.split).")
    try:
        collection = load_beir(path, [split])
    except CollectionError as err:
        raise CollectionError(f"train.fallback_path: {err}") from None
    # A run or replay file holds the evaluated dataset's candidates only: the fallback's come from the hybrid source.
    hybrid = params.retrieval if params.retrieval.source == "hybrid" else HybridConfig(top_n=params.retrieval.top_n)
    frozen = freeze(collection.corpus, collection.queries, hybrid, collection.qrels)
    passages = frozen.passages.to_pydict()
    texts = dict(zip(passages["passage_sha256"], passages["passage"]))
    candidates = frozen.candidates.to_pandas()
    candidates["passage"] = candidates["passage_sha256"].map(texts)
    queries = collection.queries.to_pandas().sort_values("query_id", ignore_index=True)
    return SplitCandidates(candidates, _views(queries, []), collection.qrels.to_pandas(),
                           {"dataset": Path(path).name, "path": path, "split": split, "fallback": True,
                            "reason": f"{params.dataset.path} has no split {split!r}"
                                      + ("" if hybrid is params.retrieval else
                                         f"; its candidates from the hybrid source (retrieval.source "
                                         f"{params.retrieval.source} covers {params.dataset.name} only)")})


def eval_queries(params, snapshot_dir: str | Path, candidates_path: str | Path,
                 limit: int | None = None) -> tuple[Snapshot, pd.DataFrame, dict[str, Query]]:
    """The evaluated split's candidates (fused order) and queries; the first ``limit`` query ids when given."""
    snapshot = Snapshot(snapshot_dir)
    check_provenance(candidates_path, table_metadata(candidates_path).get("snapshot", {}), retrieval_inputs(snapshot))
    queries = snapshot.queries_of(params.dataset.eval_split).sort_values("query_id")
    if limit is not None:
        queries = queries.head(limit)
    candidates = load_candidates(candidates_path, query_ids=queries["query_id"].tolist())  # texts verified
    candidates = candidates.sort_values(["query_id", "fused_rank"], kind="stable")
    labels = [column for column in snapshot.slice_columns if column in queries.columns]
    return snapshot, candidates, _views(queries, labels)


def heads(candidates: pd.DataFrame, queries: dict[str, Query], depth: int) -> list[QueryCandidates]:
    """Each query's top ``depth`` candidates, in query id order: what one request to the system holds."""
    return [QueryCandidates(queries[query_id], frame.head(depth).reset_index(drop=True))
            for query_id, frame in candidates.groupby("query_id", sort=True)]


def _views(queries: pd.DataFrame, labels: list[str]) -> dict[str, Query]:
    return {row["query_id"]: Query(row["query_id"], row["text"], {column: row[column] for column in labels})
            for row in queries.to_dict("records")}
