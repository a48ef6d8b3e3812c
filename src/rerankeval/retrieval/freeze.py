"""Freeze first-stage candidates: the fused top-N per query with the exact passage text every system will see."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
from pydantic import Field

from ..core.config import StrictConfig
from ..core.errors import ContractError
from ..core.hashing import sha256_text
from .dense import DenseRetriever
from .fusion import rrf_top, top_k
from .lexical import Bm25Retriever
from .text import passage_text

CANDIDATES_SCHEMA = pa.schema(
    [
        ("query_id", pa.string()),
        ("doc_id", pa.string()),
        ("parent_id", pa.string()),
        ("passage", pa.string()),
        ("passage_sha256", pa.string()),
        ("bm25_score", pa.float64()),
        ("bm25_rank", pa.int32()),
        ("dense_score", pa.float64()),
        ("dense_rank", pa.int32()),
        ("fused_score", pa.float64()),
        ("fused_rank", pa.int32()),
    ]
)
FIRST_STAGE_SCHEMA = pa.schema(
    [
        ("retriever", pa.string()),
        ("query_id", pa.string()),
        ("doc_id", pa.string()),
        ("score", pa.float64()),
        ("rank", pa.int32()),
    ]
)
RETRIEVERS = ("bm25", "dense")
SCORE_CELLS = 1 << 25
"""Queries are scored in chunks of at most this many (query, document) scores per retriever (256 MiB)."""


class Bm25Config(StrictConfig):
    k1: float = 1.2
    b: float = 0.75
    method: str = "lucene"


class DenseConfig(StrictConfig):
    model: str = "minilm"
    revision: str | None = None
    max_length: int = Field(256, ge=8)
    batch_size: int = Field(64, ge=1)


class RetrievalConfig(StrictConfig):
    top_n: int = Field(100, ge=1)
    fusion_depth: int = Field(100, ge=1)
    rrf_k: int = Field(60, ge=0)
    bm25: Bm25Config = Bm25Config()
    dense: DenseConfig = DenseConfig()


def freeze(corpus: pa.Table, queries: pa.Table, config: RetrievalConfig, *,
           lexical_retriever=Bm25Retriever, dense_retriever=DenseRetriever) -> tuple[pa.Table, pa.Table]:
    """Return (candidates, first_stage): the fused top-N, and BM25's and dense's own top-N, for every query."""
    order = np.argsort(np.array(corpus.column("doc_id").to_pylist(), dtype=object), kind="stable")
    corpus = corpus.take(pa.array(order))  # doc-id order, so column index breaks first-stage ties by doc id
    doc_ids = np.array(corpus.column("doc_id").to_pylist(), dtype=object)
    parent_ids = np.array(corpus.column("parent_id").to_pylist(), dtype=object)
    passages = [passage_text(title, text) for title, text in
                zip(corpus.column("title").to_pylist(), corpus.column("text").to_pylist())]
    passage_hashes = np.array([sha256_text(passage) for passage in passages], dtype=object)
    query_ids = queries.column("query_id").to_pylist()
    query_texts = queries.column("text").to_pylist()
    top_n = min(config.top_n, len(passages))
    depth = max(config.top_n, config.fusion_depth)

    lexical = lexical_retriever(passages, k1=config.bm25.k1, b=config.bm25.b, method=config.bm25.method)
    dense = dense_retriever(passages, model=config.dense.model, revision=config.dense.revision,
                            max_length=config.dense.max_length, batch_size=config.dense.batch_size)

    candidates: dict[str, list] = {name: [] for name in CANDIDATES_SCHEMA.names}
    own: dict[str, list] = {name: [] for name in FIRST_STAGE_SCHEMA.names}
    chunk = max(1, min(256, SCORE_CELLS // len(passages)))
    for start in range(0, len(query_ids), chunk):
        rows = slice(start, start + chunk)
        rankings = [top_k(lexical.scores(query_texts[rows]), depth), top_k(dense.scores(query_texts[rows]), depth)]
        for row, query_id in enumerate(query_ids[rows]):
            fused = rrf_top(rankings, row, k=config.rrf_k, depth=config.fusion_depth, top_n=top_n)
            columns = fused.columns
            candidates["query_id"] += [query_id] * len(columns)
            candidates["doc_id"] += doc_ids[columns].tolist()
            candidates["parent_id"] += parent_ids[columns].tolist()
            candidates["passage"] += [passages[column] for column in columns]
            candidates["passage_sha256"] += passage_hashes[columns].tolist()
            for name, ranking, ranks in zip(RETRIEVERS, rankings, fused.ranks):
                candidates[f"{name}_score"] += ranking.row_scores[row, columns].tolist()
                candidates[f"{name}_rank"] += ranks.tolist()
                own["retriever"] += [name] * top_n
                own["query_id"] += [query_id] * top_n
                own["doc_id"] += doc_ids[ranking.columns[row, :top_n]].tolist()
                own["score"] += ranking.scores[row, :top_n].tolist()
                own["rank"] += list(range(1, top_n + 1))
            candidates["fused_score"] += fused.scores.tolist()
            candidates["fused_rank"] += list(range(1, len(columns) + 1))
    candidates_table = pa.table(candidates, schema=CANDIDATES_SCHEMA).sort_by(
        [("query_id", "ascending"), ("fused_rank", "ascending")])
    own_table = pa.table(own, schema=FIRST_STAGE_SCHEMA).sort_by(
        [("retriever", "ascending"), ("query_id", "ascending"), ("rank", "ascending")])
    return candidates_table, own_table


def verify_passages(candidates: pd.DataFrame, path: object) -> None:
    """Refuse candidates whose passage text no longer matches the hash frozen with it."""
    for query_id, doc_id, passage, digest in zip(candidates["query_id"], candidates["doc_id"], candidates["passage"],
                                                 candidates["passage_sha256"]):
        if sha256_text(passage) != digest:
            raise ContractError(f"{path}: the passage of ({query_id}, {doc_id}) does not match its sha256; the file "
                                "was altered after it was frozen. Fix: `dvc repro --force freeze`.")
