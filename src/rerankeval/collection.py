"""Read a BEIR-layout collection, refuse bad input, and turn it into hashed snapshot tables.

Layout: ``corpus.jsonl`` ({"_id", "title", "text", "metadata"?}), ``queries.jsonl`` (+ ``queries_<split>.jsonl``)
({"_id", "text", "metadata"?}) and ``qrels/<split>.tsv`` (header ``query-id corpus-id score``). A query's split is
the qrels file that judges it; queries that no selected qrels file judges are left out (and counted).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from .io import canonical_json, sha256_text

CORPUS_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),
        ("title", pa.string()),
        ("text", pa.string()),
        ("parent_id", pa.string()),
        ("metadata", pa.string()),
        ("text_sha256", pa.string()),
        ("row_sha256", pa.string()),
    ]
)
QUERIES_BASE_SCHEMA = pa.schema(
    [("query_id", pa.string()), ("text", pa.string()), ("split", pa.string()), ("row_sha256", pa.string())]
)
QRELS_SCHEMA = pa.schema([("query_id", pa.string()), ("doc_id", pa.string()), ("relevance", pa.int32())])

MAX_SLICE_VALUES = 50
"""A query metadata key becomes a slice column when it is scalar and takes at most this many distinct values."""


class CollectionError(ValueError):
    """Bad input in a collection file; the message names the file, the line and the fix."""


@dataclass
class Collection:
    corpus: pa.Table
    queries: pa.Table
    qrels: pa.Table
    slice_columns: list[str]
    notes: list[str] = field(default_factory=list)


def _read_jsonl(path: Path):
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise CollectionError(f"{path}:{line_no}: not valid JSON ({err.msg}). Fix: one JSON object per line.")
            if not isinstance(record, dict) or "_id" not in record:
                raise CollectionError(f"{path}:{line_no}: expected an object with an \"_id\" field.")
            yield line_no, record


def _as_id(value: Any, path: Path, line_no: int) -> str:
    if not isinstance(value, (str, int)) or isinstance(value, bool) or str(value) == "":
        raise CollectionError(f"{path}:{line_no}: \"_id\" must be a non-empty string or integer, got {value!r}.")
    return str(value)


def read_corpus(path: Path) -> pa.Table:
    seen: dict[str, int] = {}
    rows: dict[str, list] = {name: [] for name in CORPUS_SCHEMA.names}
    for line_no, record in _read_jsonl(path):
        doc_id = _as_id(record["_id"], path, line_no)
        if doc_id in seen:
            raise CollectionError(f"{path}:{line_no}: duplicate document id {doc_id!r} (first on line {seen[doc_id]}). "
                                  "Fix: give every document a unique _id.")
        seen[doc_id] = line_no
        title, text = record.get("title") or "", record.get("text") or ""
        if not isinstance(title, str) or not isinstance(text, str):
            raise CollectionError(f"{path}:{line_no}: \"title\" and \"text\" must be strings.")
        metadata = record.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise CollectionError(f"{path}:{line_no}: \"metadata\" must be an object.")
        parent_id = str(metadata.get("parent_id", doc_id))
        metadata_json = canonical_json(metadata)
        rows["doc_id"].append(doc_id)
        rows["title"].append(title)
        rows["text"].append(text)
        rows["parent_id"].append(parent_id)
        rows["metadata"].append(metadata_json)
        rows["text_sha256"].append(sha256_text(text))
        rows["row_sha256"].append(sha256_text(canonical_json([doc_id, title, text, parent_id, metadata_json])))
    if not seen:
        raise CollectionError(f"{path}: no documents. Fix: point dataset.path at a BEIR folder with a corpus.")
    return pa.table(rows, schema=CORPUS_SCHEMA)


def read_qrels_file(path: Path, split: str) -> list[tuple[str, str, int, str, int]]:
    """Rows (query_id, doc_id, grade, split, line_no) of one BEIR qrels TSV."""
    rows = []
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            parts = line.rstrip("\n").rstrip("\r").split("\t")
            if line_no == 1 and parts[:2] == ["query-id", "corpus-id"]:
                continue
            if not line.strip():
                continue
            if len(parts) != 3:
                raise CollectionError(f"{path}:{line_no}: expected 3 tab-separated fields (query-id, corpus-id, "
                                      f"score), got {len(parts)}.")
            query_id, doc_id, grade_text = parts
            try:
                grade = int(grade_text)
            except ValueError:
                raise CollectionError(f"{path}:{line_no}: grade {grade_text!r} is not an integer. "
                                      "Fix: use integer relevance grades (0 = judged non-relevant).") from None
            rows.append((query_id, doc_id, grade, split, line_no))
    return rows


def _read_queries(folder: Path, splits: list[str]) -> dict[str, tuple[Path, int, dict]]:
    files = [folder / "queries.jsonl"] + [folder / f"queries_{split}.jsonl" for split in splits]
    records: dict[str, tuple[Path, int, dict]] = {}
    for path in files:
        if not path.exists():
            continue
        for line_no, record in _read_jsonl(path):
            query_id = _as_id(record["_id"], path, line_no)
            if query_id in records:
                first_path, first_line, _ = records[query_id]
                raise CollectionError(f"{path}:{line_no}: duplicate query id {query_id!r} (first at "
                                      f"{first_path.name}:{first_line}). Fix: give every query a unique _id.")
            text = record.get("text")
            if not isinstance(text, str) or not text.strip():
                raise CollectionError(f"{path}:{line_no}: query {query_id!r} has empty text. "
                                      "Fix: remove the query or give it text.")
            records[query_id] = (path, line_no, record)
    if not records:
        raise CollectionError(f"{folder / 'queries.jsonl'}: no queries found.")
    return records


def available_splits(folder: Path) -> list[str]:
    return sorted(path.stem for path in (folder / "qrels").glob("*.tsv"))


def load_beir(folder: str | Path, splits: list[str] | None = None) -> Collection:
    """Load and validate a BEIR folder; ``splits`` = the qrels files to use (default: all in ``qrels/``)."""
    folder = Path(folder)
    if not (folder / "corpus.jsonl").exists():
        raise CollectionError(f"{folder}: no corpus.jsonl here. Fix: set dataset.path to a BEIR-layout folder.")
    splits = list(splits) if splits else available_splits(folder)
    for split in splits:
        if not (folder / "qrels" / f"{split}.tsv").exists():
            raise CollectionError(f"{folder / 'qrels' / (split + '.tsv')}: missing; available splits: "
                                  f"{available_splits(folder)}. Fix: set dataset.splits accordingly.")
    corpus = read_corpus(folder / "corpus.jsonl")
    doc_ids = set(corpus.column("doc_id").to_pylist())
    query_records = _read_queries(folder, splits)

    judgments: dict[tuple[str, str], tuple[int, str, str]] = {}
    query_split: dict[str, tuple[str, str]] = {}
    notes = []
    for split in splits:
        path = folder / "qrels" / f"{split}.tsv"
        duplicates = 0
        for query_id, doc_id, grade, _, line_no in read_qrels_file(path, split):
            where = f"{path}:{line_no}"
            if query_id not in query_records:
                raise CollectionError(f"{where}: query {query_id!r} is not in the queries files. "
                                      "Fix: add the query or remove its judgments.")
            if doc_id not in doc_ids:
                raise CollectionError(f"{where}: document {doc_id!r} is not in corpus.jsonl. "
                                      "Fix: add the document or remove the judgment.")
            previous = judgments.get((query_id, doc_id))
            if previous is not None:
                if previous[0] != grade:
                    raise CollectionError(f"{where}: ({query_id}, {doc_id}) is judged {grade} here but {previous[0]} "
                                          f"at {previous[2]}. Fix: keep one judgment per pair.")
                duplicates += 1
                continue
            if query_id in query_split and query_split[query_id][0] != split:
                raise CollectionError(f"{where}: query {query_id!r} is also judged in split "
                                      f"{query_split[query_id][0]!r} ({query_split[query_id][1]}). "
                                      "Fix: a query belongs to one split.")
            query_split.setdefault(query_id, (split, where))
            judgments[(query_id, doc_id)] = (grade, split, where)
        if duplicates:
            notes.append(f"{path}: {duplicates} identical duplicate judgments ignored")

    unjudged = len(query_records) - len(query_split)
    if unjudged:
        notes.append(f"{unjudged} queries without judgments in splits {splits} left out")
    query_ids = sorted(query_split)
    metadata = {qid: query_records[qid][2].get("metadata") or {} for qid in query_ids}
    slice_columns = _slice_columns(metadata)
    columns: dict[str, list] = {"query_id": query_ids, "text": [], "split": [], "row_sha256": []}
    for column in slice_columns:
        columns[column] = []
    for query_id in query_ids:
        text = query_records[query_id][2]["text"]
        split = query_split[query_id][0]
        slices = {column: _slice_value(metadata[query_id].get(column)) for column in slice_columns}
        columns["text"].append(text)
        columns["split"].append(split)
        columns["row_sha256"].append(sha256_text(canonical_json([query_id, text, split, slices])))
        for column in slice_columns:
            columns[column].append(slices[column])
    schema = pa.schema(list(QUERIES_BASE_SCHEMA) + [(column, pa.string()) for column in slice_columns])
    queries = pa.table(columns, schema=schema)

    ordered = sorted(judgments.items())
    qrels = pa.table(
        {
            "query_id": [key[0] for key, _ in ordered],
            "doc_id": [key[1] for key, _ in ordered],
            "relevance": [value[0] for _, value in ordered],
        },
        schema=QRELS_SCHEMA,
    )
    return Collection(corpus=corpus, queries=queries, qrels=qrels, slice_columns=slice_columns, notes=notes)


def _slice_value(value: Any) -> str | None:
    return None if value is None else str(value)


def _slice_columns(metadata: dict[str, dict]) -> list[str]:
    """Scalar metadata keys with few distinct values (categorical labels), except the reserved column names."""
    values: dict[str, set] = {}
    for record in metadata.values():
        for key, value in record.items():
            if isinstance(value, (str, int, bool)):
                values.setdefault(key, set()).add(str(value))
    reserved = set(QUERIES_BASE_SCHEMA.names)
    return sorted(
        key for key, seen in values.items()
        if key not in reserved and 1 < len(seen) <= MAX_SLICE_VALUES and len(seen) < len(metadata)
    )
