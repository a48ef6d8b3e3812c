"""Read a BEIR-layout collection, refuse bad input, and turn it into hashed snapshot tables.

Layout: ``corpus.jsonl`` ({"_id", "title", "text", "metadata"?}), ``queries.jsonl`` (+ ``queries_<split>.jsonl``)
({"_id", "text", "metadata"?}) and ``qrels/<split>.tsv`` (header ``query-id corpus-id score``). A query's split is
the qrels file that judges it; queries that no selected qrels file judges are left out (and counted).

Every fault is a ``CollectionError`` naming the file, the line and the fix; no input gives a traceback. What is legal
but suspicious (no judged non-relevant document, unjudged queries, a tiny split, ...) becomes a warning in
``Collection.warnings``: the snapshot stage prints them and ``rerankeval check-collection`` reports them.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import stat
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import pandas as pd
import pyarrow as pa

from ..core.errors import CollectionError
from ..core.hashing import canonical_json, sha256_text
from .access import (DOC_COLUMNS, QUERY_COLUMNS, RESERVED, LabelReader, check_successors, doc_labels_of, label_notes,
                     label_summary, label_warnings, used_columns)
from .traffic import WEIGHT_KEY, query_weights

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
QRELS_HEADER = ("query-id", "corpus-id", "score")
GRADE_RANGE = (-(2**31), 2**31 - 1)
"""Grades are stored as int32."""
INTEGER = re.compile(r"[+-]?[0-9]+")
"""A relevance grade as written: digits only (no exponent, decimal point or digit separator)."""

MAX_SLICE_VALUES = 50
"""A query metadata key becomes a slice column when it is scalar and takes at most this many distinct values."""
FEW_QUERIES = 30
"""A split with fewer queries gets a warning: its confidence intervals are wide and its slices tiny."""
EXAMPLES = 3
"""Ids quoted in a warning."""

ANSWER_FIELDS = {"answers": pa.list_(pa.string()), "answerable": pa.bool_()}
"""Typed query fields of a QA collection (``metadata.answers``: gold answer strings, any one counts;
``metadata.answerable``: false when the corpus cannot answer). They are columns of the snapshot's queries table when
any query carries them, never slice columns. A query with answers and no ``answerable`` is answerable."""


@dataclass
class Collection:
    corpus: pa.Table
    queries: pa.Table
    qrels: pa.Table
    slice_columns: list[str]
    notes: list[str] = field(default_factory=list)
    """What the reader did (e.g. identical duplicate judgments ignored)."""
    warnings: list[str] = field(default_factory=list)
    """What is legal but probably not what was meant."""

    @property
    def has_answers(self) -> bool:
        return "answers" in self.queries.schema.names


SIGNATURES = {
    b"\x1f\x8b": ("gzip", "gunzip -c"), b"BZh": ("bzip2", "bunzip2 -c"), b"\xfd7zXZ\x00": ("xz", "unxz -c"),
    b"(\xb5/\xfd": ("zstd", "unzstd -c"), b"PK\x03\x04": ("zip", "unzip -p"),
}
"""Leading bytes of the compressed formats a text file may arrive in, and the command that decompresses each."""
BOMS = {b"\xff\xfe": "utf-16", b"\xfe\xff": "utf-16", b"\xff\xfe\x00\x00": "utf-32", b"\x00\x00\xfe\xff": "utf-32"}
"""Byte-order marks of the wide Unicode encodings (Windows tools often write UTF-16)."""
HEAD_BYTES = 4096
"""How much of a file is looked at to tell binary data from text in another encoding."""


MAX_LINE_BYTES = 64 << 20
"""Longest line read (64 MiB, decompressed): a longer one is no record, and reading it whole would hold it in
memory."""


def refuse_irregular(path: Path) -> None:
    """Refuse what is not a regular file (a FIFO would block forever, a device such as /dev/zero never ends), links
    followed, naming the file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise CollectionError(f"{path}: not found. Fix: pass an existing file.") from None
    if not stat.S_ISREG(mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or
                stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "a directory" if stat.S_ISDIR(mode)
                else "not a regular file")
        raise CollectionError(f"{path}: {kind}, not a regular file: reading it could block or never end. Fix: "
                              "copy the data into a regular file and pass that.")


@contextmanager
def open_binary(path: Path) -> Iterator[BinaryIO]:
    """A file's bytes; a ``*.gz`` file's decompressed, a damaged one refused naming the file; anything but a regular
    file refused (``refuse_irregular``)."""
    refuse_irregular(path)
    if path.suffix != ".gz":
        with open(path, "rb") as handle:
            yield handle
        return
    try:
        with gzip.open(path, "rb") as handle:
            yield handle
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:
        raise CollectionError(f"{path}: named *.gz but not a complete gzip file ({err}). Fix: compress it again "
                              f"(`gzip -c <plain file> > {path.name}`), or remove the .gz from its name if it is "
                              "plain text.") from None


def utf8_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of a UTF-8 file (``*.gz``: compressed), a leading byte-order mark dropped; undecodable
    bytes are refused, saying whether the file is compressed, binary or text in another encoding."""
    with open_binary(path) as handle:
        line_no = 0
        while raw := handle.readline(MAX_LINE_BYTES + 1):
            line_no += 1
            if len(raw) > MAX_LINE_BYTES:
                raise CollectionError(f"{path}:{line_no}: a line longer than {MAX_LINE_BYTES >> 20} MiB is no record "
                                      "(a file without line breaks, or binary data). Fix: pass one record per line.")
            if line_no == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                yield line_no, raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise CollectionError(_not_utf8(path, line_no, raw, err)) from None


def _not_utf8(path: Path, line_no: int, raw: bytes, err: UnicodeDecodeError) -> str:
    with open_binary(path) as handle:
        head = handle.read(HEAD_BYTES)
    name = path.name
    for signature, (kind, command) in SIGNATURES.items():
        if head.startswith(signature):
            return (f"{path}: {kind}-compressed, not a text file. Fix: decompress it (`{command} {name} > "
                    "<plain file>`) and pass that file; `rerankeval evaluate` and `compare` also read TREC and qrels "
                    "files named *.gz as they are.")
    for bom, encoding in sorted(BOMS.items(), key=lambda item: -len(item[0])):
        if head.startswith(bom):
            return (f"{path}: {encoding.upper()} text (byte-order mark {bom.hex(' ')}), not UTF-8. Fix: convert it "
                    f"(`iconv -f {encoding} -t utf-8 {name} > <utf-8 file>`).")
    controls = sum(byte < 0x20 and byte not in b"\t\n\r\f" for byte in head)
    if b"\x00" in head or controls > max(2, len(head) // 100):
        return (f"{path}: not a text file (its first bytes hold NUL or control characters: binary data). Fix: pass "
                f"the text file meant here (`file {name}` tells what this one is).")
    context = raw[max(0, err.start - 20):err.start + 10].decode("utf-8", errors="backslashreplace").rstrip("\r\n")
    return (f"{path}:{line_no}: byte {raw[err.start]:#04x} at column {err.start + 1} is not UTF-8. Fix: re-encode the "
            f"file as UTF-8 from the encoding it was written in (`iconv -f <its encoding> -t utf-8 {name} > <utf-8 "
            f"file>`; `file -i {name}` may name it). The byte is in '{context}'.")


LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""A surrogate code point: JSON decodes a valid escaped pair into one character, so any left is half a pair."""


def _lone_surrogate(record: dict) -> tuple[str, str] | None:
    """(field path, code point) of a key or string in a record that holds half a surrogate pair, or None."""
    pending: list[tuple[str, Any]] = [("", record)]
    while pending:  # iterative: records may be nested as deeply as json allows
        where, value = pending.pop()
        if isinstance(value, str):
            found = LONE_SURROGATE.search(value)
            if found:
                return where, found.group()
        elif isinstance(value, (dict, list)):
            for key, item in value.items() if isinstance(value, dict) else enumerate(value):
                inner = f"{where}.{key}" if where else str(key)
                pending += [(inner, item), (inner, key)]  # a key is a string too
    return None


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    for line_no, line in utf8_lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise CollectionError(f"{path}:{line_no}: not valid JSON ({err.msg}). Fix: one JSON object per line.")
        except RecursionError:
            raise CollectionError(f"{path}:{line_no}: JSON nested too deeply to read. Fix: flatten the record (BEIR "
                                  "records are flat objects with string fields).") from None
        except ValueError as err:  # a number beyond Python's digit limit for int()
            raise CollectionError(f"{path}:{line_no}: a number too long to read ({str(err).split(';')[0]}). Fix: "
                                  "write it as a string, or shorten it.") from None
        if "\\ud" in line.lower() and (lone := _lone_surrogate(record)) is not None:  # only an escape makes one
            where, code_point = lone
            raise CollectionError(f"{path}:{line_no}: field {where!r} holds the escape \\u{ord(code_point):04X}, half "
                                  "a surrogate pair (no character). Fix: write the character itself, or its full "
                                  "pair (e.g. \\ud83d\\ude00 for U+1F600).")
        if not isinstance(record, dict) or "_id" not in record:
            raise CollectionError(f"{path}:{line_no}: expected an object with an \"_id\" field. Fix: give each "
                                  "record its id.")
        yield line_no, record


def _examples(ids) -> str:
    ids = sorted(ids)
    return ", ".join(repr(i) for i in ids[:EXAMPLES]) + (", ..." if len(ids) > EXAMPLES else "")


def _case_hint(unknown: str, known) -> str:
    """A hint when an unknown id matches a known one but for letter case or surrounding spaces."""
    folded = unknown.strip().casefold()
    match = next((candidate for candidate in known if candidate.strip().casefold() == folded), None)
    return "" if match is None else f" (ids are compared exactly: did you mean {match!r}?)"


INVISIBLE = re.compile(r"[\s\u200b-\u200d\u2060\ufeff]*")
"""Whitespace and zero-width characters: text made only of them is empty to a reader and to a model."""
UNNAMEABLE = re.compile(r"[\t\n\r\x00]")
"""Characters that no qrels or TREC line can carry inside an id."""


def _as_id(value: Any, path: Path, line_no: int) -> str:
    if not isinstance(value, (str, int)) or isinstance(value, bool) or str(value) == "":
        raise CollectionError(f"{path}:{line_no}: \"_id\" must be a non-empty string or integer, got {value!r}.")
    if isinstance(value, str) and UNNAMEABLE.search(value):
        raise CollectionError(f"{path}:{line_no}: \"_id\" {value!r} holds a TAB, line break or NUL, so no qrels or "
                              "TREC line can name it. Fix: remove those characters from the id.")
    return str(value)


def read_corpus(path: Path, labels: LabelReader | None = None) -> pa.Table:
    """The corpus table; with the access and validity labels its documents carry (``data.access``) as columns after
    CORPUS_SCHEMA's, when any does."""
    labels = labels or LabelReader()
    seen: dict[str, int] = {}
    rows: dict[str, list] = {name: [] for name in CORPUS_SCHEMA.names}
    doc_labels: dict[str, dict] = {}
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
        doc_labels[doc_id] = labels.document(metadata, path, line_no)
        rows["doc_id"].append(doc_id)
        rows["title"].append(title)
        rows["text"].append(text)
        rows["parent_id"].append(parent_id)
        rows["metadata"].append(metadata_json)
        rows["text_sha256"].append(sha256_text(text))
        rows["row_sha256"].append(sha256_text(canonical_json([doc_id, title, text, parent_id, metadata_json])))
    if not seen:
        raise CollectionError(f"{path}: no documents. Fix: point dataset.path at a BEIR folder with a corpus.")
    check_successors(doc_labels, seen, path)
    # Label columns only when some document has them, so that other collections' tables are unchanged.
    columns = used_columns(list(doc_labels.values()), DOC_COLUMNS)
    for name in columns:
        rows[name] = [doc_labels[doc_id][name] for doc_id in rows["doc_id"]]
    return pa.table(rows, schema=pa.schema(list(CORPUS_SCHEMA) + [(name, DOC_COLUMNS[name]) for name in columns]))


def read_qrels_tsv(path: str | Path, *, require_header: bool = False) -> pd.DataFrame:
    """A BEIR qrels TSV as qrels: query_id, doc_id, relevance (int64) and the line each judgment is on."""
    path = Path(path)
    rows = []
    for line_no, line in utf8_lines(path):
        parts = line.rstrip("\n").rstrip("\r").split("\t")
        if line_no == 1 and tuple(part.strip().lower() for part in parts[:2]) == QRELS_HEADER[:2]:
            continue
        if line_no == 1 and require_header:
            raise CollectionError(f"{path}:1: expected the header 'query-id<TAB>corpus-id<TAB>score', got "
                                  f"{line.rstrip()!r}. Fix: add that header line (BEIR qrels layout).")
        if not line.strip():
            continue
        if len(parts) != 3:
            raise CollectionError(f"{path}:{line_no}: expected 3 tab-separated fields (query-id, corpus-id, "
                                  f"score), got {len(parts)}. Fix: one judgment per line, e.g. 'q1<TAB>doc7<TAB>2'.")
        query_id, doc_id, grade_text = parts
        for name, value in (("query-id", query_id), ("corpus-id", doc_id)):
            if not value.strip():
                raise CollectionError(f"{path}:{line_no}: empty {name}. Fix: every judgment names a query and a "
                                      "document.")
        if not INTEGER.fullmatch(grade_text.strip()):
            raise CollectionError(f"{path}:{line_no}: grade {grade_text!r} is not an integer (column score). "
                                  "Fix: relevance grades must be integers (0 = judged non-relevant), e.g. "
                                  "'q1<TAB>doc7<TAB>2'.")
        grade = int(grade_text)
        if not GRADE_RANGE[0] <= grade <= GRADE_RANGE[1]:
            raise CollectionError(f"{path}:{line_no}: grade {grade} is out of range. Fix: use small integer grades "
                                  "(e.g. 0-3; 0 = judged non-relevant).")
        rows.append((query_id, doc_id, grade, line_no))
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance", "line"]).astype(
        {"query_id": "str", "doc_id": "str", "relevance": "int64", "line": "int64"})


def _query_text(record: dict, query_id: str, path: Path, line_no: int) -> str:
    text = record.get("text")
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        raise CollectionError(f"{path}:{line_no}: query {query_id!r} has a number as text ({text!r}). "
                              f"Fix: quote it (\"text\": \"{text}\").")
    if not isinstance(text, str) or INVISIBLE.fullmatch(text):
        raise CollectionError(f"{path}:{line_no}: query {query_id!r} has empty text. "
                              "Fix: remove the query or give it text.")
    return text


def _read_queries(folder: Path, splits: list[str], labels: LabelReader) -> dict[str, tuple[Path, int, dict]]:
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
                                      f"{first_path.name}:{first_line}). Fix: list every query once, in one file.")
            _query_text(record, query_id, path, line_no)
            _check_answer_fields(record, query_id, path, line_no)
            record["_labels"] = labels.query(record.get("metadata") or {}, path, line_no)
            records[query_id] = (path, line_no, record)
    if not records:
        raise CollectionError(f"{folder / 'queries.jsonl'}: no queries found.")
    return records


def _check_answer_fields(record: dict, query_id: str, path: Path, line_no: int) -> None:
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise CollectionError(f"{path}:{line_no}: query {query_id!r}: \"metadata\" must be an object.")
    answers, answerable = metadata.get("answers"), metadata.get("answerable")
    if answers is not None and (not isinstance(answers, list)
                                or not all(isinstance(a, str) and a.strip() for a in answers)):
        raise CollectionError(f"{path}:{line_no}: query {query_id!r}: metadata.answers must be a list of non-empty "
                              f"strings (gold answers, any one counts), got {answers!r}.")
    if answerable is not None and not isinstance(answerable, bool):
        raise CollectionError(f"{path}:{line_no}: query {query_id!r}: metadata.answerable must be true or false, got "
                              f"{answerable!r}.")
    if answerable is True and not answers:
        raise CollectionError(f"{path}:{line_no}: query {query_id!r} is answerable but has no metadata.answers. "
                              "Fix: list its gold answers, or set answerable to false.")


def require_split(collection: Collection, split: str, folder: str | Path) -> None:
    """Refuse a collection without judged queries in ``split`` (the split the pipeline evaluates)."""
    splits = sorted(set(collection.queries.column("split").to_pylist()))
    if split not in splits:
        raise CollectionError(f"{folder}: no judged queries in the evaluation split {split!r} (splits: {splits}). "
                              f"Fix: set dataset.eval_split to one of them (e.g. -S dataset.eval_split={splits[0]}).")


def summary(collection: Collection) -> list[str]:
    """What a collection holds, one line per table: documents, queries per split, judgments per grade."""
    splits = collection.queries.column("split").to_pylist()
    queries = {split: splits.count(split) for split in sorted(set(splits))}
    split_of = dict(zip(collection.queries.column("query_id").to_pylist(), splits))
    grades: dict[str, dict[int, int]] = {}
    for query_id, grade in zip(collection.qrels.column("query_id").to_pylist(),
                               collection.qrels.column("relevance").to_pylist()):
        counts = grades.setdefault(split_of[query_id], {})
        counts[grade] = counts.get(grade, 0) + 1
    return [f"documents: {collection.corpus.num_rows}",
            "queries: " + ", ".join(f"{split} {count}" for split, count in queries.items()),
            "judgments: " + "; ".join(f"{split} {sum(counts.values())} (grade: count "
                                      + ", ".join(f"{g}: {n}" for g, n in sorted(counts.items())) + ")"
                                      for split, counts in sorted(grades.items())),
            f"slice columns: {', '.join(collection.slice_columns) or 'none'}",
            *label_summary(collection.corpus, collection.queries)]


def available_splits(folder: Path) -> list[str]:
    return sorted(path.stem for path in (folder / "qrels").glob("*.tsv"))


def load_beir(folder: str | Path, splits: list[str] | None = None) -> Collection:
    """Load and validate a BEIR folder; ``splits`` = the qrels files to use (default: all in ``qrels/``)."""
    folder = Path(folder)
    if not (folder / "corpus.jsonl").exists():
        raise CollectionError(f"{folder}: no corpus.jsonl here. Fix: set dataset.path to a BEIR-layout folder.")
    splits = list(splits) if splits else available_splits(folder)
    if not splits:
        raise CollectionError(f"{folder / 'qrels'}: no qrels files (<split>.tsv). Fix: add the relevance judgments, "
                              "e.g. qrels/test.tsv with the header 'query-id<TAB>corpus-id<TAB>score'.")
    for split in splits:
        if not (folder / "qrels" / f"{split}.tsv").exists():
            raise CollectionError(f"{folder / 'qrels' / (split + '.tsv')}: missing; available splits: "
                                  f"{available_splits(folder)}. Fix: set dataset.splits accordingly.")
    labels = LabelReader()
    corpus = read_corpus(folder / "corpus.jsonl", labels)
    doc_ids = set(corpus.column("doc_id").to_pylist())
    query_records = _read_queries(folder, splits, labels)
    judgments, query_split, notes = _judgments(folder, splits, query_records, doc_ids)
    notes += labels.notes()

    query_ids = sorted(query_split)
    if not query_ids:
        raise CollectionError(f"{folder / 'qrels'}: the qrels judge no query. Fix: check the query ids in the qrels "
                              "files against queries.jsonl.")
    weights = query_weights(folder, query_ids, query_records)
    notes += label_notes(doc_labels_of(corpus), folder / "corpus.jsonl")
    return Collection(corpus=corpus, queries=_queries_table(query_ids, query_records, query_split, weights),
                      qrels=_qrels_table(judgments), slice_columns=_slice_columns(
                          {qid: query_records[qid][2].get("metadata") or {} for qid in query_ids}), notes=notes,
                      warnings=_warnings(folder, splits, corpus, query_records, query_split, judgments)
                      + _label_warnings(folder, corpus, query_records, query_ids))


def _label_warnings(folder: Path, corpus: pa.Table, query_records: dict, query_ids: list[str]) -> list[str]:
    query_labels = {query_id: query_records[query_id][2]["_labels"] for query_id in query_ids}
    return label_warnings(doc_labels_of(corpus), query_labels, folder / "corpus.jsonl", folder / "queries.jsonl")


def _warnings(folder: Path, splits: list[str], corpus: pa.Table, query_records: dict, query_split: dict,
              judgments: dict) -> list[str]:
    """What is legal but suspicious in a loaded collection, one sentence each."""
    warnings = []
    empty = [doc_id for doc_id, title, text in zip(*(corpus.column(c).to_pylist() for c in ("doc_id", "title", "text")))
             if not (title.strip() or text.strip())]
    if empty:
        warnings.append(f"{folder / 'corpus.jsonl'}: {len(empty)} documents have neither title nor text "
                        f"({_examples(empty)}); no retriever can find them.")
    wordless = sorted(query_id for query_id, (_, _, record) in query_records.items()
                      if not any(char.isalnum() for char in record["text"]))
    if wordless:
        path, line_no, _ = query_records[wordless[0]]
        warnings.append(f"{path}: {len(wordless)} queries hold no letter or digit, only punctuation or symbols (first: "
                        f"{wordless[0]!r} on line {line_no}); no retriever can match them, so they measure nothing "
                        "but the order of ties.")
    unjudged = set(query_records) - set(query_split)
    if unjudged:
        warnings.append(f"{len(unjudged)} queries have no judgment in splits {splits} and are left out "
                        f"({_examples(unjudged)}).")
    misplaced: dict[tuple[Path, str], list[tuple[int, str]]] = {}
    for query_id, (split, _) in query_split.items():
        path, line_no, _ = query_records[query_id]
        if path.stem.startswith("queries_") and path.stem.removeprefix("queries_") != split:
            misplaced.setdefault((path, split), []).append((line_no, query_id))
    for (path, split), lines in sorted(misplaced.items()):
        line_no, query_id = min(lines)
        warnings.append(f"{path}: {len(lines)} queries listed for split {path.stem.removeprefix('queries_')!r} are "
                        f"judged in split {split!r} (first: {query_id!r} on line {line_no}); they count as {split!r}.")
    grades_by_query: dict[str, list[int]] = {}
    for (query_id, _), (grade, _, _) in judgments.items():
        grades_by_query.setdefault(query_id, []).append(grade)
    for split in splits:
        path = folder / "qrels" / f"{split}.tsv"
        queries = [query_id for query_id, (judged_in, _) in query_split.items() if judged_in == split]
        if not queries:
            warnings.append(f"{path}: no judgments; split {split!r} is empty.")
            continue
        if len(queries) < FEW_QUERIES:
            warnings.append(f"split {split!r} has only {len(queries)} queries: its confidence intervals will be wide "
                            "and its slices tiny.")
        grades = [grade for query_id in queries for grade in grades_by_query[query_id]]
        if min(grades) >= 1:
            warnings.append(f"{path}: every judgment is relevant (no grade <= 0): judged non-relevant documents "
                            "cannot be told from unjudged ones, so Bpref and [judged_only=true] measure nothing.")
        no_relevant = [query_id for query_id in queries if max(grades_by_query[query_id]) < 1]
        if no_relevant:
            warnings.append(f"{path}: {len(no_relevant)} queries have no relevant document ({_examples(no_relevant)})"
                            "; evaluation drops them or scores them 0 (evaluation.no_relevant).")
    return warnings


def _judgments(folder: Path, splits: list[str], query_records: dict, doc_ids: set[str]):
    judgments: dict[tuple[str, str], tuple[int, str, str]] = {}
    query_split: dict[str, tuple[str, str]] = {}
    notes = []
    for split in splits:
        path = folder / "qrels" / f"{split}.tsv"
        duplicates = 0
        for query_id, doc_id, grade, line_no in read_qrels_tsv(path).itertuples(index=False):
            where = f"{path}:{line_no}"
            if query_id not in query_records:
                raise CollectionError(f"{where}: query {query_id!r} is not in the queries files"
                                      f"{_case_hint(query_id, query_records)}. "
                                      "Fix: add the query or remove its judgments.")
            if doc_id not in doc_ids:
                raise CollectionError(f"{where}: document {doc_id!r} is not in corpus.jsonl"
                                      f"{_case_hint(doc_id, doc_ids)}. "
                                      "Fix: add the document or remove the judgment.")
            previous = judgments.get((query_id, doc_id))
            if previous is not None:
                if previous[0] != grade:
                    raise CollectionError(
                        f"{where}: ({query_id}, {doc_id}) is judged {grade} here but {previous[0]} at {previous[2]}. "
                        "Fix: keep one judgment per pair, or select one qrels file per split with "
                        "`dataset.splits` (e.g. -S 'dataset.splits=[test]').")
                duplicates += 1
                continue
            if query_id in query_split and query_split[query_id][0] != split:
                raise CollectionError(f"{where}: query {query_id!r} is also judged in split "
                                      f"{query_split[query_id][0]!r} ({query_split[query_id][1]}). "
                                      "Fix: a query belongs to one split.")
            if grade >= 1 and (query_records[query_id][2].get("metadata") or {}).get("answerable") is False:
                raise CollectionError(f"{where}: query {query_id!r} is marked answerable: false but judges {doc_id!r} "
                                      f"relevant ({grade}). Fix: judge it 0, or mark the query answerable.")
            query_split.setdefault(query_id, (split, where))
            judgments[(query_id, doc_id)] = (grade, split, where)
        if duplicates:
            notes.append(f"{path}: {duplicates} identical duplicate judgments ignored")
    return judgments, query_split, notes


def _queries_table(query_ids: list[str], query_records: dict, query_split: dict,
                   weights: list[float] | None = None) -> pa.Table:
    metadata = {qid: query_records[qid][2].get("metadata") or {} for qid in query_ids}
    slice_columns = _slice_columns(metadata)
    # Answer fields only when the collection has them, so that other collections' rows (and hashes) are unchanged.
    has_gold = any("answers" in record or "answerable" in record for record in metadata.values())
    answer_fields = list(ANSWER_FIELDS) if has_gold else []
    label_fields = used_columns([query_records[qid][2]["_labels"] for qid in query_ids], QUERY_COLUMNS)
    columns: dict[str, list] = {"query_id": query_ids, "text": [], "split": [], "row_sha256": []}
    for column in [*slice_columns, *answer_fields, *label_fields]:
        columns[column] = []
    for position, query_id in enumerate(query_ids):
        text = query_records[query_id][2]["text"]
        split = query_split[query_id][0]
        slices = {column: _slice_value(metadata[query_id].get(column)) for column in slice_columns}
        columns["text"].append(text)
        columns["split"].append(split)
        hashed: list = [query_id, text, split, slices] + ([] if weights is None else [weights[position]])
        if answer_fields:
            gold = _gold(metadata[query_id])
            hashed.append(gold)
            for name in answer_fields:
                columns[name].append(gold[name])
        if label_fields:  # hashed only when present, so unlabelled collections keep their hashes
            labels = query_records[query_id][2]["_labels"]
            hashed.append({name: labels[name] for name in label_fields})
            for name in label_fields:
                columns[name].append(labels[name])
        columns["row_sha256"].append(sha256_text(canonical_json(hashed)))
        for column in slice_columns:
            columns[column].append(slices[column])
    schema = pa.schema(list(QUERIES_BASE_SCHEMA) + [(column, pa.string()) for column in slice_columns]
                       + [(name, ANSWER_FIELDS[name]) for name in answer_fields]
                       + [(name, QUERY_COLUMNS[name]) for name in label_fields])
    if weights is not None:  # traffic weights (data.traffic), hashed with the row
        columns[WEIGHT_KEY] = weights
        schema = schema.append(pa.field(WEIGHT_KEY, pa.float64()))
    return pa.table(columns, schema=schema)


def _gold(metadata: dict) -> dict:
    """answers (None: no gold for this query) and answerable (None: not stated and no answers)."""
    answers = metadata.get("answers")
    answerable = metadata.get("answerable")
    if answerable is None and answers:
        answerable = True
    return {"answers": list(answers) if answers is not None else None, "answerable": answerable}


def _qrels_table(judgments: dict) -> pa.Table:
    ordered = sorted(judgments.items())
    return pa.table({"query_id": [key[0] for key, _ in ordered], "doc_id": [key[1] for key, _ in ordered],
                     "relevance": [value[0] for _, value in ordered]}, schema=QRELS_SCHEMA)


def _slice_value(value: Any) -> str | None:
    return None if value is None else str(value)


def _slice_columns(metadata: dict[str, dict]) -> list[str]:
    """Scalar metadata keys with few distinct values (categorical labels), except the reserved column names."""
    values: dict[str, set] = {}
    for record in metadata.values():
        for key, value in record.items():
            if isinstance(value, (str, int, bool)):
                values.setdefault(key, set()).add(str(value))
    reserved = set(QUERIES_BASE_SCHEMA.names) | {WEIGHT_KEY} | set(ANSWER_FIELDS) | RESERVED
    return sorted(
        key for key, seen in values.items()
        if key not in reserved and 1 < len(seen) <= MAX_SLICE_VALUES and len(seen) < len(metadata)
    )
