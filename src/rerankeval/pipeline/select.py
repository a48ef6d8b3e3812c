"""Stage `select@<system>`: the context each query's answer is generated from, chosen from the system's ranking."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pyarrow as pa

from ..core.hashing import sha256_file
from ..core.io import write_table
from ..data.snapshot import Snapshot
from ..rag.config import SelectConfig
from ..rag.passages import Passages, load_passages
from ..rag.select import CONTEXT_SCHEMA, Ranked, Similarity, context_rows, select_context, token_similarity
from .params import load_params
from .runs import load_runs


def contexts(ranked: pd.DataFrame, passages: Passages, config: SelectConfig,
             similarity: Similarity | None = None) -> pa.Table:
    """CONTEXT_SCHEMA rows for every query of ``ranked`` (query_id, doc_id, parent_id, rank), in query-id order."""
    columns: dict[str, list] = {name: [] for name in CONTEXT_SCHEMA.names}
    similarity = similarity or token_similarity(passages)
    for query_id, frame in ranked.sort_values(["query_id", "rank"]).groupby("query_id", sort=True):
        ranking = [Ranked(d, p, int(r)) for d, p, r in zip(frame["doc_id"], frame["parent_id"], frame["rank"])]
        chosen = select_context(ranking, passages, config, similarity)
        for name, values in context_rows(query_id, chosen, passages, config.near_duplicate_jaccard).items():
            columns[name] += values
    return pa.table(columns, schema=CONTEXT_SCHEMA)


def dense_similarity(passages: Passages, doc_ids: list[str], retrieval, candidates_path: str | Path) -> Similarity:
    """Cosine of the frozen dense embeddings of the pool passages: the model the freeze stage used (recorded in the
    candidates' metadata), read from the embedding cache (encoded only if the cache no longer holds them)."""
    from ..core.io import table_metadata
    from ..retrieval.dense import DenseRetriever
    from ..retrieval.encoders import PASSAGE

    model = table_metadata(candidates_path).get("dense", {}).get("model", retrieval.dense.model)
    retriever = DenseRetriever([], model=model, revision=retrieval.dense.revision,
                               max_length=retrieval.dense.max_length, batch_size=retrieval.dense.batch_size)
    vectors = retriever.embed([passages.text[d] for d in doc_ids], PASSAGE)
    row = {doc_id: i for i, doc_id in enumerate(doc_ids)}
    return lambda a, b: float(vectors[row[a]].astype("float64") @ vectors[row[b]].astype("float64"))


def run(system: str, params_path: str | Path, snapshot_dir: str | Path, candidates_path: str | Path,
        run_pattern: str, context_path: str | Path) -> None:
    params = load_params(params_path)
    config = params.rag.select
    snapshot = Snapshot(snapshot_dir)
    ranked = load_runs(run_pattern, [system], str(candidates_path))[system][["query_id", "doc_id", "parent_id", "rank"]]
    started = time.perf_counter()
    passages = load_passages(snapshot, candidates_path)
    similarity = None
    if config.mmr_lambda is not None and config.similarity == "dense":
        pool = sorted(set(ranked.loc[ranked["rank"] <= config.pool_depth, "doc_id"]))
        similarity = dense_similarity(passages, pool, params.retrieval, candidates_path)
    table = contexts(ranked, passages, config, similarity)
    write_table(context_path, table, {"system": system, "select": config.to_dict(), "split": params.dataset.eval_split,
                                      "run_sha256": sha256_file(str(run_pattern).replace("{system}", system))})
    queries = len(set(table.column("query_id").to_pylist()))
    print(f"select[{system}]: {table.num_rows} passages for {queries} queries "
          f"in {time.perf_counter() - started:.2f}s")
