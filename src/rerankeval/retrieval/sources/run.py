"""``retrieval.source: run``: the team's first stage as a TREC run file (``retrieval.run``).

Each query's top ``top_n`` of the run, in trec_eval's order (``eval.TIE_BREAK_RULE``: score descending, compared as
32-bit floats, equal scores by doc id descending), with the run's score kept as ``fused_score`` and that order as
``fused_rank``; the texts are the snapshot's corpus passages (``retrieval.text.passage_text``). A line naming a query
the snapshot lacks, a document its corpus lacks, or a document twice for one query is refused with the file and the
line; queries the run gives no document are reported (they score 0). The run ranks no corpus here: nothing is
encoded, and the BM25 and dense columns are null.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...core.errors import CollectionError, ConfigError
from ...core.hashing import sha256_text
from ...data.beir import utf8_lines
from ...data.snapshot import Snapshot
from ...data.trec import read_trec_run
from ...eval.ranks import assign_ranks
from ..candidates import passages_table
from ..config import RunConfig
from ..text import passage_text
from .base import (FrozenSet, candidate_table, empty_first_stage, file_provenance, queries_without_candidates,
                   sampled_out, without_candidates_line)

NAME = "run"
"""The candidate source's name in reports and metrics (``first stage (run)``)."""


def freeze_run(snapshot: Snapshot, config: RunConfig) -> FrozenSet:
    path = Path(config.run)
    if not path.is_file():
        raise ConfigError(f"retrieval.run: {path} is not a file. Fix: set retrieval.run (`-S retrieval.run=PATH`) to "
                          "the TREC run file of your first stage.")
    try:
        run = read_trec_run(path)
    except ValueError as err:
        raise CollectionError(f"retrieval.run: {err}") from None
    query_ids = pa.array(sorted(snapshot.table("queries").column("query_id").to_pylist()), pa.string())
    skipped, sample = 0, sampled_out(snapshot)
    if sample:
        inside = pc.is_in(pa.array(run["query_id"]), value_set=query_ids).to_numpy(zero_copy_only=False)
        skipped, run = int((~inside).sum()), run[inside].reset_index(drop=True)
    corpus = snapshot.table("corpus").select(["doc_id", "parent_id", "title", "text"])
    _check_rows(path, pa.Table.from_pandas(run, preserve_index=False), query_ids, corpus.column("doc_id"))

    try:
        ranked = assign_ranks(run)
    except ValueError:  # the engine refuses a repeated (query, document); find its line
        _refuse_repeated(path, run)
        raise
    kept = pa.Table.from_pandas(ranked[ranked["rank"] <= config.top_n], preserve_index=False).sort_by(
        [("query_id", "ascending"), ("rank", "ascending")])
    scores, tied = _scores_in_their_order(kept)
    # Each document's text built and hashed once, however many queries it is a candidate of.
    used = pc.unique(kept.column("doc_id"))
    documents = corpus.take(pc.index_in(used, value_set=corpus.column("doc_id")))
    texts = [passage_text(title, text) for title, text in
             zip(documents.column("title").to_pylist(), documents.column("text").to_pylist())]
    digests = pa.array([sha256_text(text) for text in texts], pa.string())
    rows = pc.index_in(kept.column("doc_id"), value_set=used)
    candidates = candidate_table({
        "query_id": kept.column("query_id"), "doc_id": kept.column("doc_id"),
        "parent_id": documents.column("parent_id").take(rows), "passage_sha256": digests.take(rows),
        "fused_score": pa.array(scores, pa.float64()), "fused_rank": pc.cast(kept.column("rank"), pa.int32())})

    missing = queries_without_candidates(query_ids.to_pylist(), set(pc.unique(kept.column("query_id")).to_pylist()))
    beyond = int(len(ranked) - kept.num_rows)
    record = {"name": NAME, "first_stage_columns": False, "rows": int(len(run)), "beyond_top_n": beyond,
              "queries_without_candidates": len(missing), "scores_at_float32": tied,
              **({"rows_outside_sample": skipped} if sample else {})}
    log = [f"{path}: {len(run)} rows for {len(query_ids) - len(missing)} queries; each query's top {config.top_n} in "
           f"trec_eval's order kept, {beyond} rows below it not frozen"]
    if skipped:
        log.append(f"{skipped} rows of queries {sample} skipped")
    if tied:
        log.append(f"{tied} queries hold scores that differ only beyond 32-bit precision, which trec_eval ties (doc "
                   "id descending): their scores are stored as 32-bit floats, so the run's own order stays theirs")
    if missing:
        log.append(without_candidates_line(missing, snapshot, str(path)))
    return FrozenSet(candidates, passages_table(digests.to_pylist(), texts), empty_first_stage(),
                     file_provenance(snapshot, config, path, record), log)


def _check_rows(path: Path, run: pa.Table, query_ids: pa.Array, doc_ids: pa.ChunkedArray) -> None:
    """Refuse, with the line, a query the snapshot lacks or a document its corpus lacks."""
    unknown_query = pc.invert(pc.is_in(run.column("query_id"), value_set=query_ids))
    if pc.any(unknown_query).as_py():
        row = run.filter(unknown_query).slice(0, 1).to_pylist()[0]
        raise CollectionError(
            f"{path}, line {_line_of(path, row['query_id'], row['doc_id'])}: query {row['query_id']!r} is not a query "
            f"of the snapshot ({pc.sum(unknown_query).as_py()} rows name such queries). Fix: run the first stage on "
            "the collection's queries.jsonl, or remove those rows.")
    missing = pc.invert(pc.is_in(run.column("doc_id"), value_set=doc_ids))
    if pc.any(missing).as_py():
        row = run.filter(missing).slice(0, 1).to_pylist()[0]
        raise CollectionError(
            f"{path}, line {_line_of(path, row['query_id'], row['doc_id'])}: document {row['doc_id']!r} is not in the "
            f"snapshot's corpus ({pc.sum(missing).as_py()} rows, "
            f"{len(pc.unique(run.filter(missing).column('doc_id')))} documents). The run's texts come from the "
            "corpus. Fix: use the corpus the run was made on (dataset.path), or `retrieval=replay` with the "
            "candidates' own texts (docs/data.md: \"Your own first stage\").")


def _refuse_repeated(path: Path, run: pd.DataFrame) -> None:
    """Refuse the first document a query lists twice, with the line of its second occurrence (on the error path)."""
    repeated = run.duplicated(["query_id", "doc_id"])
    if repeated.any():
        row = run[repeated].iloc[0]
        raise CollectionError(
            f"{path}, line {_line_of(path, row['query_id'], row['doc_id'], occurrence=2)}: document {row['doc_id']!r} "
            f"appears a second time for query {row['query_id']!r}. Fix: keep one line per (query, document).")


def _scores_in_their_order(kept: pa.Table) -> tuple[np.ndarray, int]:
    """The run's scores (float64; ``kept`` in (query, rank) order), but for the queries where two of them differ only
    beyond 32-bit precision: there trec_eval ties them (and orders by doc id), so those queries' scores are stored as
    32-bit floats and a system ordering by score, fused rank breaking ties, keeps the run's order. Returns the scores
    and those queries' count."""
    scores = kept.column("score").to_numpy().astype(np.float64)
    query_ids = kept.column("query_id")
    same_query = pc.equal(query_ids.slice(1), query_ids.slice(0, max(len(query_ids) - 1, 0))).to_numpy(
        zero_copy_only=False) if len(query_ids) > 1 else np.zeros(0, dtype=bool)
    rising = same_query & (scores[1:] > scores[:-1])
    if not rising.any():
        return scores, 0
    tied = pc.unique(query_ids.slice(1).filter(pa.array(rising)))
    affected = pc.is_in(query_ids, value_set=tied).to_numpy(zero_copy_only=False)
    scores[affected] = scores[affected].astype(np.float32)
    return scores, len(tied)


def _line_of(path: Path, query_id: str, doc_id: str, occurrence: int = 1) -> int:
    """The number of the line holding ``query_id``'s ``doc_id`` (its ``occurrence``-th one): on the error path only."""
    seen = 0
    for number, line in utf8_lines(path):
        fields = line.split()
        if len(fields) > 2 and fields[0] == query_id and fields[2] == doc_id:
            seen += 1
            if seen == occurrence:
                return number
    raise AssertionError(f"{path}: no line for query {query_id!r}, document {doc_id!r}")
