"""What systems read: a split's queries, qrels and frozen candidates, for what is fitted on another split than the
evaluated one (the cross-encoder's training, a blend's weight), and the evaluated split as requests to a system (the
latency stage, the load test). A dataset without a fitting split (most BEIR sets have a test split only) reads the
same split of ``train.fallback_path`` instead, frozen once by the ``fallback`` stage, and says so in ``source``.

``params`` is the typed params.yaml (``rerankeval.pipeline.params.Params``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from ..core.errors import ConfigError
from ..core.io import read_json, read_table, table_metadata
from ..data.snapshot import Snapshot, check_provenance, retrieval_inputs
from ..retrieval.candidates import load_candidates
from .base import Query, QueryCandidates, SplitCandidates


FALLBACK_MANIFEST = "manifest.json"


def fallback_files(folder: Path, split: str) -> dict[str, Path]:
    """Where the ``fallback`` stage writes ``split`` of ``train.fallback_path`` frozen, in its output folder."""
    return {name: folder / split / f"{name}.parquet" for name in ("candidates", "passages", "queries", "qrels")}


def split_candidates(params, snapshot: Snapshot, candidates_path: str | Path,
                     fallback_dir: str | Path | None, unfiltered: bool = False) -> Callable[[str], SplitCandidates]:
    """``candidates_of(split)``: that split's candidates (texts verified against their hashes, fused order), query
    views and qrels; from the ``fallback`` stage's output (``fallback_dir``; None: the evaluated split only) when the
    snapshot lacks the split. ``unfiltered``: the evaluated split's candidates as before the access filter, for a
    system configured with ``access_filter: false`` (``retrieval.candidates.load_candidates``)."""

    def candidates_of(split: str) -> SplitCandidates:
        if split not in snapshot.splits:
            if fallback_dir is None:
                raise ConfigError(f"{params.dataset.path}: no {split!r} split (splits: {snapshot.splits}).")
            return fallback_split(params, snapshot, split, Path(fallback_dir))
        queries = snapshot.queries_of(split)
        query_ids = queries["query_id"].tolist()
        candidates = load_candidates(candidates_path, query_ids=query_ids,
                                     unfiltered=unfiltered and split == params.dataset.eval_split)
        qrels = snapshot.table("qrels").to_pandas()
        labels = [column for column in snapshot.slice_columns if column in queries.columns]
        return SplitCandidates(candidates, _views(queries, labels), qrels[qrels["query_id"].isin(set(query_ids))],
                               {"dataset": params.dataset.name, "path": params.dataset.path, "split": split,
                                "fallback": False})

    return candidates_of


def fallback_split(params, snapshot: Snapshot, split: str, fallback_dir: Path) -> SplitCandidates:
    """``split`` of ``train.fallback_path`` as the ``fallback`` stage froze it."""
    source = read_json(fallback_dir / FALLBACK_MANIFEST)["splits"].get(split)
    if source is None:
        folder = params.train.fallback_path
        fallback = "train.fallback_path is not set" if folder is None else f"train.fallback_path ({folder}) has none"
        raise ConfigError(f"{params.dataset.path}: no {split!r} split (splits: {snapshot.splits}) and {fallback}. "
                          f"Fix: set train.fallback_path to a BEIR folder with a {split!r} split (e.g. datasets/demo), "
                          "or use another split (train.split, fit.split).")
    files = fallback_files(fallback_dir, split)
    queries = read_table(files["queries"]).to_pandas().sort_values("query_id", ignore_index=True)
    return SplitCandidates(load_candidates(files["candidates"]), _views(queries, []),
                           read_table(files["qrels"]).to_pandas(), source)


def eval_queries(params, snapshot_dir: str | Path, candidates_path: str | Path, limit: int | None = None,
                 unfiltered: bool = False) -> tuple[Snapshot, pd.DataFrame, dict[str, Query]]:
    """The evaluated split's candidates (fused order) and queries; the first ``limit`` query ids when given;
    ``unfiltered``: as before the access filter (a system with ``access_filter: false``)."""
    snapshot = Snapshot(snapshot_dir)
    check_provenance(candidates_path, table_metadata(candidates_path).get("snapshot", {}), retrieval_inputs(snapshot))
    queries = snapshot.queries_of(params.dataset.eval_split).sort_values("query_id")
    if limit is not None:
        queries = queries.head(limit)
    candidates = load_candidates(candidates_path, query_ids=queries["query_id"].tolist(),  # texts verified
                                 unfiltered=unfiltered)
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
