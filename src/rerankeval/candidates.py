"""Freeze first-stage candidates: the fused top-N per query with the exact passage text every system will see."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from .io import ContractError, sha256_text
from .retrieval import Bm25Retriever, DenseRetriever, first_stage, fused_ranks, passage_text, rrf_scores

CANDIDATES_SCHEMA = pa.schema(
    [
        ("query_id", pa.string()),
        ("doc_id", pa.string()),
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
QUERY_CHUNK = 256
"""Queries scored at a time: bounds memory to QUERY_CHUNK x corpus size per score matrix."""


@dataclass(frozen=True)
class RetrievalConfig:
    top_n: int = 100
    fusion_depth: int = 100
    rrf_k: int = 60
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    bm25_method: str = "lucene"
    dense_model: str = "minilm"
    dense_max_length: int = 256
    dense_batch_size: int = 64

    @classmethod
    def from_params(cls, params: dict) -> "RetrievalConfig":
        bm25, dense = params["bm25"], params["dense"]
        return cls(top_n=int(params["top_n"]), fusion_depth=int(params["fusion_depth"]), rrf_k=int(params["rrf_k"]),
                   bm25_k1=float(bm25["k1"]), bm25_b=float(bm25["b"]), bm25_method=str(bm25["method"]),
                   dense_model=str(dense["model"]), dense_max_length=int(dense["max_length"]),
                   dense_batch_size=int(dense["batch_size"]))

    def __post_init__(self):
        if self.top_n < 1 or self.fusion_depth < 1 or self.rrf_k < 0:
            raise ValueError(f"retrieval: top_n and fusion_depth must be >= 1 and rrf_k >= 0, got {self}")


def freeze(corpus: pa.Table, queries: pa.Table, config: RetrievalConfig, *,
           lexical_retriever=Bm25Retriever, dense_retriever=DenseRetriever) -> tuple[pa.Table, pa.Table]:
    """Return (candidates, first_stage): the fused top-N, and BM25's and dense's own top-N, for every query."""
    order = np.argsort(np.array(corpus.column("doc_id").to_pylist(), dtype=object), kind="stable")
    corpus = corpus.take(pa.array(order))  # doc-id order, so column index breaks first-stage ties by doc id
    doc_ids = np.array(corpus.column("doc_id").to_pylist(), dtype=object)
    passages = [passage_text(title, text) for title, text in
                zip(corpus.column("title").to_pylist(), corpus.column("text").to_pylist())]
    passage_hashes = np.array([sha256_text(passage) for passage in passages], dtype=object)
    query_ids = queries.column("query_id").to_pylist()
    query_texts = queries.column("text").to_pylist()
    top_n = min(config.top_n, len(passages))

    lexical = lexical_retriever(passages, k1=config.bm25_k1, b=config.bm25_b, method=config.bm25_method)
    dense = dense_retriever(passages, model=config.dense_model, max_length=config.dense_max_length,
                            batch_size=config.dense_batch_size)

    candidate_parts, first_stage_parts = [], []
    for start in range(0, len(query_ids), QUERY_CHUNK):
        rows = slice(start, start + QUERY_CHUNK)
        chunk_ids = np.array(query_ids[rows], dtype=object)
        bm25 = first_stage(lexical.scores(query_texts[rows]))
        dense_ranking = first_stage(dense.scores(query_texts[rows]))
        fused = rrf_scores([bm25, dense_ranking], k=config.rrf_k, depth=config.fusion_depth)
        fused_rank = fused_ranks(fused, [bm25, dense_ranking])
        top = np.argsort(fused_rank, axis=1)[:, :top_n]
        query_rows = np.repeat(np.arange(len(chunk_ids)), top_n)
        doc_cols = top.ravel()

        def pick(matrix):
            return matrix[query_rows, doc_cols]

        candidate_parts.append(pa.table({
            "query_id": chunk_ids[query_rows],
            "doc_id": doc_ids[doc_cols],
            "passage": [passages[col] for col in doc_cols],
            "passage_sha256": passage_hashes[doc_cols],
            "bm25_score": pick(bm25.scores),
            "bm25_rank": pick(bm25.ranks).astype(np.int32),
            "dense_score": pick(dense_ranking.scores),
            "dense_rank": pick(dense_ranking.ranks).astype(np.int32),
            "fused_score": pick(fused),
            "fused_rank": pick(fused_rank).astype(np.int32),
        }, schema=CANDIDATES_SCHEMA))
        for name, ranking in (("bm25", bm25), ("dense", dense_ranking)):
            own_top = np.argsort(ranking.ranks, axis=1)[:, :top_n].ravel()
            first_stage_parts.append(pa.table({
                "retriever": np.full(len(query_rows), name, dtype=object),
                "query_id": chunk_ids[query_rows],
                "doc_id": doc_ids[own_top],
                "score": ranking.scores[query_rows, own_top],
                "rank": ranking.ranks[query_rows, own_top].astype(np.int32),
            }, schema=FIRST_STAGE_SCHEMA))
    candidates = pa.concat_tables(candidate_parts).sort_by([("query_id", "ascending"), ("fused_rank", "ascending")])
    own_runs = pa.concat_tables(first_stage_parts).sort_by(
        [("retriever", "ascending"), ("query_id", "ascending"), ("rank", "ascending")])
    return candidates, own_runs


def verify_passages(candidates: pd.DataFrame, path: object) -> None:
    """Refuse candidates whose passage text no longer matches the hash frozen with it."""
    for query_id, doc_id, passage, digest in zip(candidates["query_id"], candidates["doc_id"], candidates["passage"],
                                                 candidates["passage_sha256"]):
        if sha256_text(passage) != digest:
            raise ContractError(f"{path}: the passage of ({query_id}, {doc_id}) does not match its sha256; the file "
                                "was altered after it was frozen. Fix: `dvc repro --force freeze`.")
