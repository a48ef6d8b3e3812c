"""Freeze first-stage candidates: the fused top-N per query, referring to the exact passage text every system sees.

Retriever scores are stored at the declared precision (core.precision) and every rank is computed from the stored
value, so the frozen file is the same on any machine whose arithmetic agrees to that precision.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.hashing import sha256_text
from ..core.precision import SCORE_DECIMALS, stored_scores
from .candidates import CANDIDATES_SCHEMA, FIRST_STAGE_SCHEMA, passages_table
from .config import AUTO, EQUAL_SHARE, FusionConfig, HybridConfig
from .dense import DenseRetriever
from .fusion import rrf_top, top_k
from .fusion_fit import fit_share, ranked_rows, share_weights
from .language import auto_model
from .lexical import Bm25Retriever
from .text import passage_text

RETRIEVERS = ("bm25", "dense")
SCORE_CELLS = 1 << 25
"""Queries are scored in chunks of at most this many (query, document) scores per retriever (256 MiB)."""


@dataclass
class Frozen:
    candidates: pa.Table
    """One row per (query, candidate), in (query, fused rank) order; passages by sha256 (CANDIDATES_SCHEMA)."""
    passages: pa.Table
    """Each distinct passage text once (candidates.PASSAGES_SCHEMA)."""
    first_stage: pa.Table
    """BM25's and dense's own top-N per query (FIRST_STAGE_SCHEMA)."""
    dense: dict[str, Any] = field(default_factory=dict)
    """Which encoder dense used and why: provenance, recorded in the outputs' metadata."""
    encoding: str = ""
    """What encoding cost (cache hits, texts encoded, rate): for the log only, it varies with the cache."""
    fusion: dict[str, Any] = field(default_factory=dict)
    """The RRF weights and, when fitted, the fit's record (retrieval.fusion_fit): provenance."""


def freeze(corpus: pa.Table, queries: pa.Table, config: HybridConfig, qrels: pa.Table | None = None, *,
           lexical_retriever=Bm25Retriever, dense_retriever=DenseRetriever) -> Frozen:
    """The fused top-N, and BM25's and dense's own top-N, for every query. ``qrels`` (of the fit split, or all) are
    read only to fit the fusion weights (``retrieval.fusion.weights: fit``)."""
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

    model, dense_info = config.dense.model, {"configured": config.dense.model}
    if model == AUTO:
        model, shares = auto_model(passages, query_texts)
        dense_info["non_latin_share"] = shares
    dense_info["model"] = model
    lexical = lexical_retriever(passages, k1=config.bm25.k1, b=config.bm25.b, method=config.bm25.method)
    dense = dense_retriever(passages, model=model, revision=config.dense.revision,
                            max_length=config.dense.max_length, batch_size=config.dense.batch_size)

    chunk = max(1, min(256, SCORE_CELLS // len(passages)))

    def chunks(texts: list[str]):
        for start in range(0, len(texts), chunk):
            yield start, [top_k(stored_scores(retriever.scores(texts[start:start + chunk])), depth)
                          for retriever in (lexical, dense)]

    def fused_top(rankings, row, weights):
        return rrf_top(rankings, row, k=config.rrf_k, depth=config.fusion_depth, top_n=top_n, weights=weights)

    def fit_run(fit_ids: list[str], fit_texts: list[str]):
        """The fit queries' fused top-N under every BM25 share of the grid, ranking each query once. The main pass
        below scores these queries again (the weights are unknown until here) rather than keeping their full score
        rows in memory: the fit's cost is a few seconds of a warm freeze (docs/results.md#bench-timings)."""
        lists: dict[float, list] = {share: [] for share in config.fusion.grid}
        for start, rankings in chunks(fit_texts):
            for row in range(len(rankings[0].columns)):
                for share, docs in lists.items():
                    docs.append(doc_ids[fused_top(rankings, row, share_weights(share)).columns].tolist())
        return lambda share: ranked_rows(fit_ids, [d for docs in lists[share] for d in docs],
                                         [len(docs) for docs in lists[share]])

    weights, fusion_info = fusion_weights(config.fusion, queries, qrels, fit_run)
    candidates: dict[str, list] = {name: [] for name in CANDIDATES_SCHEMA.names}
    own: dict[str, list] = {name: [] for name in FIRST_STAGE_SCHEMA.names}
    for start, rankings in chunks(query_texts):
        for row, query_id in enumerate(query_ids[start:start + chunk]):
            fused = fused_top(rankings, row, weights)
            columns = fused.columns
            candidates["query_id"] += [query_id] * len(columns)
            candidates["doc_id"] += doc_ids[columns].tolist()
            candidates["parent_id"] += parent_ids[columns].tolist()
            candidates["passage_sha256"] += passage_hashes[columns].tolist()
            for name, ranking, ranks in zip(RETRIEVERS, rankings, fused.ranks):
                candidates[f"{name}_score"] += ranking.row_scores[row, columns].tolist()
                candidates[f"{name}_rank"] += ranks.tolist()
                own["retriever"] += [name] * top_n
                own["query_id"] += [query_id] * top_n
                own["doc_id"] += doc_ids[ranking.columns[row, :top_n]].tolist()
                own["score"] += ranking.scores[row, :top_n].tolist()
                own["rank"] += list(range(1, top_n + 1))
            # RRF scores are sums of weight / (k + rank) over integer ranks, in a fixed order: exact IEEE
            # operations, the same on every machine, so they are stored as computed.
            candidates["fused_score"] += fused.scores.tolist()
            candidates["fused_rank"] += list(range(1, len(columns) + 1))
    candidates_table = pa.table(candidates, schema=CANDIDATES_SCHEMA).sort_by(
        [("query_id", "ascending"), ("fused_rank", "ascending")])
    own_table = pa.table(own, schema=FIRST_STAGE_SCHEMA).sort_by(
        [("retriever", "ascending"), ("query_id", "ascending"), ("rank", "ascending")])
    used = sorted(set(candidates["passage_sha256"]))
    text_of = dict(zip(passage_hashes.tolist(), passages))
    dense_info["score_decimals"] = SCORE_DECIMALS
    if hasattr(dense, "encoder"):
        dense_info["encoder"] = dense.encoder.identity
    return Frozen(candidates_table, passages_table(used, [text_of[digest] for digest in used]), own_table,
                  dense_info, dense.stats.summary() if hasattr(dense, "stats") else "", fusion_info)


def fusion_weights(config: FusionConfig, queries: pa.Table, qrels: pa.Table | None,
                   fit_run) -> tuple[list[float], dict[str, Any]]:
    """(BM25, dense) RRF weights and their record: declared, or fitted on the fit split (retrieval.fusion_fit)."""
    if isinstance(config.weights, dict):
        weights = [float(config.weights[name]) for name in RETRIEVERS]
        return weights, {"weights": dict(zip(RETRIEVERS, weights)), "how": "declared"}
    equal = {"weights": dict(zip(RETRIEVERS, share_weights(EQUAL_SHARE))), "how": "equal"}
    if config.weights == "equal":
        return list(share_weights(EQUAL_SHARE)), equal
    split = queries.filter(pc.field("split") == config.fit_split) if "split" in queries.schema.names else None
    if qrels is None or split is None or split.num_rows == 0:
        return list(share_weights(EQUAL_SHARE)), {**equal, "how": "fit", "fit": {
            "split": config.fit_split, "share": EQUAL_SHARE,
            "reason": f"no {config.fit_split!r} queries to fit on: equal weights"}}
    fit_ids, fit_texts = split.column("query_id").to_pylist(), split.column("text").to_pylist()
    share, record = fit_share(config, fit_run(fit_ids, fit_texts), qrels.to_pandas(), fit_ids)
    return list(share_weights(share)), {"weights": dict(zip(RETRIEVERS, share_weights(share))), "how": "fit",
                                        "fit": record}
