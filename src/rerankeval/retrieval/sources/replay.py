"""``retrieval.source: replay``: a replay file (``retrieval.path``), and ``export_replay``, which writes one from any
frozen candidate set (``rerankeval export-candidates``).

A replay file is JSON Lines, one line per query (UTF-8, any order)::

    {"query_id": "q1", "candidate_source": "prod-bm25-v7", "corpus_version": "2024-06-01",
     "candidates": [{"document_id": "d7", "document_version": "sha256:<hex>", "text": "...",
                     "retrieval_rank": 1, "retrieval_score": 12.5}, ...]}

- The frozen text is the candidate's ``text``, byte for byte (its sha256 is the passage's key); ``document_version``
  (optional) of the form ``sha256:<hex>`` must be the sha256 of that text's UTF-8 bytes. Judgments still come from
  the snapshot's qrels, so ``document_id`` must be the qrels' id.
- Candidates are frozen in ``retrieval_rank`` order (distinct integers from 1; scores must not rise down the ranks,
  so a system ordering by score keeps that order), the first ``top_n`` of each query.
- Optional: a candidate's access and validity labels (``data.access``), for a document the corpus does not hold:
  ``acl`` (the groups that may see it), ``valid_from`` / ``valid_to``, ``superseded_by`` (a document of the corpus or
  of the file) and ``status``, with the corpus's rules. The corpus's own labels decide for a document it holds (a
  different label is counted and said). The freeze records the file's labels (the candidates' metadata
  ``source_labels``), so the access filter, Stale@k and StaleFirst read them as the corpus's.
- Optional, written by ``export_replay`` so that a set round-trips: a candidate's ``parent_id`` (default: its
  ``document_id``) and ``bm25_score``, ``bm25_rank``, ``dense_score``, ``dense_rank`` (all four on every candidate, or
  none); a line's ``first_stage`` (each retriever's own top list, ``{"bm25": [{"document_id", "score"}, ...], ...}``)
  and ``provenance`` (what ranked the candidates: ``dense``, ``fusion``), the same on every line.

``candidate_source`` (the same on every line) names the first stage in reports and metrics. Every problem is refused
naming the file and the line; a snapshot query without a line is reported (it scores 0). Nothing is encoded.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from ...core.errors import CollectionError, ConfigError, ContractError
from ...core.hashing import sha256_text
from ...core.io import atomic_write_text, read_table, table_metadata
from ...data.access import DOC_COLUMNS, MAX_GROUPS, SOURCE_LABELS, LabelReader
from ...data.beir import utf8_lines
from ...data.snapshot import Snapshot
from ..candidates import CANDIDATES_SCHEMA, FIRST_STAGE_SCHEMA, candidate_source, load_candidates, passages_table
from ..config import ReplayConfig
from .base import (FIRST_STAGE_COLUMNS, FrozenSet, candidate_table, file_provenance, queries_without_candidates,
                   sampled_out, without_candidates_line)

LINE_KEYS = {"query_id", "candidate_source", "corpus_version", "candidates", "first_stage", "provenance"}
REQUIRED_LINE_KEYS = ("query_id", "candidate_source", "candidates")
CANDIDATE_KEYS = frozenset({"document_id", "document_version", "text", "retrieval_rank", "retrieval_score",
                            "parent_id", *DOC_COLUMNS, *FIRST_STAGE_COLUMNS})
REQUIRED_CANDIDATE_KEYS = ("document_id", "text", "retrieval_rank", "retrieval_score")
REQUIRED, FIRST_STAGE_KEYS = frozenset(REQUIRED_CANDIDATE_KEYS), frozenset(FIRST_STAGE_COLUMNS)
RETRIEVERS = ("bm25", "dense")
CARRIED = ("dense", "fusion")
"""The provenance keys a replay file carries from the set it was exported from (what ranked its candidates)."""
LABEL_KEYS = frozenset(DOC_COLUMNS)
"""A candidate's optional access and validity labels, for a document the corpus does not hold."""
VERSION_PREFIX = "sha256:"
SHA256_LABEL = re.compile(r"\s*sha[-_ ]?256\s*:\s*(?P<digest>.*)", re.IGNORECASE | re.DOTALL)
"""A ``document_version`` that names a sha256 however its label is spelt: ``sha256:``, ``SHA-256:``, ``sha_256 :``,
spaces around; what follows is the hex digest it claims. (``SHA-256=<base64>``, HTTP's digest header form, is another
kind of version: not checked.)"""
CHUNK_LINES = 4096
"""Lines whose candidates are gathered as Python values before they become Arrow arrays (bounded memory)."""
FIX = "each line is {\"query_id\", \"candidate_source\", \"corpus_version\", \"candidates\": [...]} " \
      "(docs/data.md: \"Your own first stage\")"


def freeze_replay(snapshot: Snapshot, config: ReplayConfig) -> FrozenSet:
    path = Path(config.path)
    if not path.is_file():
        raise ConfigError(f"retrieval.path: {path} is not a file. Fix: set retrieval.path (`-S retrieval.path=PATH`) "
                          "to a replay file (`rerankeval export-candidates` writes one).")
    query_ids = sorted(snapshot.table("queries").column("query_id").to_pylist())
    reader = _Reader(path, set(query_ids), config.top_n, sampled_out(snapshot))
    for number, line in utf8_lines(path):
        if line.strip():
            reader.add(number, line)
    if not reader.first:
        raise CollectionError(f"{path}: no line of a query of the snapshot"
                              f"{' (' + reader.sample + ')' if reader.sample else ''}. Fix: {FIX}.")
    candidates, passages, first_stage = reader.tables()
    missing = queries_without_candidates(query_ids, reader.seen_queries)
    corpus = f"{VERSION_PREFIX}{snapshot.hashes['corpus']}"
    record = {"name": reader.first["candidate_source"], "first_stage_columns": bool(reader.scored_first_stage),
              "corpus_version": reader.first["corpus_version"],
              "lines": len(reader.lines_of), "beyond_top_n": reader.beyond, "queries_without_candidates": len(missing),
              **({"lines_outside_sample": reader.skipped} if reader.sample else {})}
    log = [f"{path}: {len(reader.lines_of)} queries, {candidates.num_rows} candidates from "
           f"{reader.first['candidate_source']!r}; each query's first {config.top_n} kept, {reader.beyond} below them "
           "not frozen"]
    if reader.skipped:
        log.append(f"{reader.skipped} lines of queries {reader.sample} skipped")
    if reader.first["corpus_version"] not in (None, corpus):
        log.append(f"corpus_version {reader.first['corpus_version']!r} is not this snapshot's corpus ({corpus}): the "
                   "texts are the replay file's, the judgments the snapshot's qrels")
    if missing:
        log.append(without_candidates_line(missing, snapshot, str(path)))
    provenance = {**file_provenance(snapshot, config, path, record), **reader.first.get("provenance", {})}
    unknown = reader.check_successors(snapshot)
    if unknown:
        log.append(f"{len(unknown)} documents name a successor (superseded_by) that neither the corpus nor the file "
                   f"holds (first: {unknown[0]!r}): each counts as outdated, its successor as in force")
    if reader.label_reader.zoneless:
        log.append(f"{reader.label_reader.zoneless} label date-times without a time zone read as UTC")
    return FrozenSet(candidates, passages, first_stage, provenance, log, labels=reader.labels)


def _given(labels: dict[str, Any]) -> str:
    return ", ".join(f"{key} {value!r}" for key, value in labels.items() if value is not None) or "none"


def _acl_valid(acl: Any) -> bool:
    return acl is None or (type(acl) is list and len(acl) <= MAX_GROUPS
                           and all(type(group) is str and group.strip() for group in acl))


class _Reader:
    """Checks each line and gathers its candidates column by column, a chunk of lines at a time."""

    def __init__(self, path: Path, query_ids: set[str], top_n: int, sample: str | None):
        self.path, self.query_ids, self.top_n, self.sample = path, query_ids, top_n, sample
        self.skipped = 0
        self.first: dict[str, Any] = {}
        self.lines_of: dict[str, int] = {}
        self.seen_queries: set[str] = set()
        self.scored_first_stage: bool | None = None
        self.beyond = 0
        self.texts: dict[str, str] = {}
        self.labels: dict[str, dict[str, Any]] = {}
        """The labels the file gives its documents (``data.access.DOC_COLUMNS``), by document id."""
        self.label_lines: dict[str, dict[str, int]] = {}
        """The line that first gave each document each of its labels."""
        self.label_reader = LabelReader()
        self.named: set[str] = set()
        """Every document id a line read names (below top_n too)."""
        self.columns: dict[str, list] = {name: [] for name in CANDIDATES_SCHEMA.names}
        self.chunks: list[pa.Table] = []
        self.first_stage: dict[str, list] = {name: [] for name in FIRST_STAGE_SCHEMA.names}
        self.pending = 0

    def refuse(self, number: int, problem: str, fix: str = FIX) -> None:
        raise CollectionError(f"{self.path}, line {number}: {problem}. Fix: {fix}.")

    def add(self, number: int, line: str) -> None:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as err:
            self.refuse(number, f"not valid JSON ({err})")
        if not isinstance(record, dict):
            self.refuse(number, f"expected a JSON object, got {type(record).__name__}")
        self._check_keys(number, record, LINE_KEYS, REQUIRED_LINE_KEYS, "the line")
        query_id = record["query_id"]
        if not isinstance(query_id, str) or not query_id:
            self.refuse(number, f"query_id must be a non-empty string, got {query_id!r}")
        if query_id not in self.query_ids:
            if self.sample:
                self.skipped += 1
                return
            self.refuse(number, f"query {query_id!r} is not a query of the snapshot",
                        "replay the candidates of the collection's own queries (dataset.path), or drop the line")
        if query_id in self.lines_of:
            self.refuse(number, f"query {query_id!r} again (first on line {self.lines_of[query_id]})",
                        "one line per query")
        self.lines_of[query_id] = number
        self._check_same_set(number, record)
        candidates = record["candidates"]
        if not isinstance(candidates, list):
            self.refuse(number, f"candidates must be a list, got {type(candidates).__name__}")
        kept, digests = self._ranked(number, candidates)
        for candidate in candidates:  # every candidate's labels, those below top_n too: a document has one label
            self.named.add(candidate["document_id"])
            if candidate.keys() & LABEL_KEYS:
                self._gather_labels(number, candidate)
        if kept:
            self.seen_queries.add(query_id)
        self._gather(query_id, kept, digests)
        self._gather_first_stage(number, query_id, record.get("first_stage"))
        self.pending += 1
        if self.pending == CHUNK_LINES:
            self._flush()

    def _check_keys(self, number: int, record: dict, known: set[str], required: tuple[str, ...], what: str) -> None:
        unknown = sorted(set(record) - known)
        if unknown:
            self.refuse(number, f"{what} has unknown key(s) {', '.join(map(repr, unknown))}; known: "
                                f"{', '.join(sorted(known))}")
        absent = [key for key in required if key not in record]
        if absent:
            self.refuse(number, f"{what} lacks {', '.join(map(repr, absent))}")

    def _check_same_set(self, number: int, record: dict) -> None:
        """One replay file is one candidate set: the same source, corpus version and provenance on every line."""
        source, version = record["candidate_source"], record.get("corpus_version")
        if not isinstance(source, str) or not source:
            self.refuse(number, f"candidate_source must be a non-empty string, got {source!r}")
        if version is not None and not isinstance(version, str):
            self.refuse(number, f"corpus_version must be a string or null, got {version!r}")
        provenance = record.get("provenance", {})
        if not isinstance(provenance, dict) or set(provenance) - set(CARRIED):
            self.refuse(number, f"provenance must be an object with keys among {', '.join(CARRIED)}")
        values = {"candidate_source": source, "corpus_version": version, "provenance": provenance}
        if not self.first:
            self.first.update(values, line=number)
            return
        for key, value in values.items():
            if value != self.first[key]:
                self.refuse(number, f"{key} differs from line {self.first['line']}'s",
                            "a replay file holds one candidate set; write one file per source")

    def _ranked(self, number: int, candidates: list) -> tuple[list[dict], list[str]]:
        """The line's candidates in rank order, the first ``top_n``, and the sha256 of their texts."""
        digests = self._checked(number, candidates)
        order = sorted(range(len(candidates)), key=lambda index: candidates[index]["retrieval_rank"])
        for above, below in zip(order, order[1:]):
            if candidates[below]["retrieval_score"] > candidates[above]["retrieval_score"]:
                above, below = candidates[above], candidates[below]
                self.refuse(number, f"candidate {below['document_id']!r} (retrieval_rank {below['retrieval_rank']}) "
                                    f"scores {below['retrieval_score']!r}, above {above['document_id']!r} at rank "
                                    f"{above['retrieval_rank']} ({above['retrieval_score']!r})",
                            "scores must not rise down the ranks (the fusion system orders by them): give the score "
                            "the ranks come from")
        self.beyond += max(0, len(order) - self.top_n)
        order = order[:self.top_n]
        return [candidates[index] for index in order], [digests[index] for index in order]

    def _checked(self, number: int, candidates: list) -> list[str]:
        """The sha256 of each candidate's text, the candidates checked all at once (millions of them: no per-candidate
        call); where that check fails, ``_explain`` finds the first bad candidate and refuses it."""
        try:
            ids = [candidate["document_id"] for candidate in candidates]
            texts = [candidate["text"] for candidate in candidates]
            ranks = [candidate["retrieval_rank"] for candidate in candidates]
            scores = [candidate["retrieval_score"] for candidate in candidates]
            valid = (all(type(candidate) is dict and REQUIRED <= candidate.keys() <= CANDIDATE_KEYS
                         for candidate in candidates)
                     and all(type(value) is str and value for value in ids) and len(set(ids)) == len(ids)
                     and all(type(text) is str for text in texts)
                     and all(type(rank) is int and rank >= 1 for rank in ranks) and len(set(ranks)) == len(ranks)
                     and all(type(score) in (int, float) and math.isfinite(score) for score in scores)
                     and all(type(parent) is str and parent
                             for parent in (candidate.get("parent_id", "-") for candidate in candidates))
                     and all(_acl_valid(candidate.get("acl")) for candidate in candidates)
                     and self._first_stage_columns_valid(candidates))
        except (KeyError, TypeError, OverflowError):  # OverflowError: an integer score no float holds
            valid = False
        if not valid:
            self._explain(number, candidates)
        digests = [sha256_text(text) for text in texts]
        for candidate, digest in zip(candidates, digests):
            version = candidate.get("document_version")
            if version is not None and (type(version) is not str or _claimed_digest(version) not in (None, digest)):
                self._explain(number, candidates)
        return digests

    def _first_stage_columns_valid(self, candidates: list[dict]) -> bool:
        present = [len(candidate.keys() & FIRST_STAGE_KEYS) for candidate in candidates]
        if not present:
            return True
        scored = present[0] == len(FIRST_STAGE_KEYS)
        if self.scored_first_stage is None:
            self.scored_first_stage = scored
        if any(count != (len(FIRST_STAGE_KEYS) if self.scored_first_stage else 0) for count in present):
            return False
        return not scored or all(
            type(candidate[key]) is int and candidate[key] >= 1 if key.endswith("_rank") else
            type(candidate[key]) in (int, float) and math.isfinite(candidate[key])
            for candidate in candidates for key in FIRST_STAGE_COLUMNS)

    def _explain(self, number: int, candidates: list) -> None:
        """Refuse the first candidate that breaks the format, saying how."""
        seen_docs: dict[str, int] = {}
        seen_ranks: dict[int, int] = {}
        for index, candidate in enumerate(candidates, 1):
            what = f"candidate {index}"
            if not isinstance(candidate, dict):
                self.refuse(number, f"{what} is not an object")
            self._check_keys(number, candidate, CANDIDATE_KEYS, REQUIRED_CANDIDATE_KEYS, what)
            document_id, text = candidate["document_id"], candidate["text"]
            if not isinstance(document_id, str) or not document_id:
                self.refuse(number, f"{what}: document_id must be a non-empty string, got {document_id!r}")
            what = f"candidate {index} ({document_id!r})"
            if document_id in seen_docs:
                self.refuse(number, f"{what} is candidate {seen_docs[document_id]} too", "list each document once")
            seen_docs[document_id] = index
            if not isinstance(text, str):
                self.refuse(number, f"{what}: text must be a string, got {type(text).__name__}")
            rank = candidate["retrieval_rank"]
            if not _integer(rank) or rank < 1:
                self.refuse(number, f"{what}: retrieval_rank must be an integer >= 1, got {rank!r}")
            if rank in seen_ranks:
                self.refuse(number, f"{what}: retrieval_rank {rank} is candidate {seen_ranks[rank]}'s too",
                            "give each candidate its own rank")
            seen_ranks[rank] = index
            if not _number(candidate["retrieval_score"]):
                shown = repr(candidate["retrieval_score"])
                self.refuse(number, f"{what}: retrieval_score must be a finite number, got "
                                    f"{shown if len(shown) <= 40 else shown[:40] + f'... ({len(shown)} characters)'}")
            self._check_version(number, what, candidate, sha256_text(text))
            self._check_first_stage_columns(number, what, candidate)
            parent = candidate.get("parent_id", document_id)
            if not isinstance(parent, str) or not parent:
                self.refuse(number, f"{what}: parent_id must be a non-empty string, got {parent!r}")
            if not _acl_valid(candidate.get("acl")):
                self.refuse(number, f"{what}: acl must be a list of at most {MAX_GROUPS} non-empty strings (the groups "
                                    f"that may see the document), got {str(candidate['acl'])[:80]!r}")
        raise AssertionError(f"{self.path}, line {number}: refused in bulk but no candidate explains why")

    def _check_version(self, number: int, what: str, candidate: dict, digest: str) -> None:
        version = candidate.get("document_version")
        if version is not None and not isinstance(version, str):
            self.refuse(number, f"{what}: document_version must be a string or null, got {version!r}")
        if isinstance(version, str) and _claimed_digest(version) not in (None, digest):
            self.refuse(number, f"{what}: document_version {version} is not the sha256 of its text "
                                f"({VERSION_PREFIX}{digest}): the text is not the version it names",
                        "replay the text of that version, or correct document_version")

    def _check_first_stage_columns(self, number: int, what: str, candidate: dict) -> None:
        present = [key for key in FIRST_STAGE_COLUMNS if key in candidate]
        if present and len(present) != len(FIRST_STAGE_COLUMNS):
            self.refuse(number, f"{what} has {', '.join(present)} but not all of {', '.join(FIRST_STAGE_COLUMNS)}")
        if self.scored_first_stage is None:
            self.scored_first_stage = bool(present)
        elif self.scored_first_stage != bool(present):
            self.refuse(number, f"{what} {'has' if present else 'lacks'} {', '.join(FIRST_STAGE_COLUMNS)}, unlike the "
                                "candidates before it", "give them on every candidate of the file, or on none")
        for key in present:
            value = candidate[key]
            rank = key.endswith("_rank")
            if not (_integer(value) and value >= 1 if rank else _number(value)):
                expected = "an integer >= 1" if rank else "a finite number"
                self.refuse(number, f"{what}: {key} must be {expected}, got {value!r}")

    def _gather_labels(self, number: int, candidate: dict) -> None:
        """The candidate's labels, read with the corpus's rules: a document's labels are those the file gives it, each
        kind on any of its lines (where one line gives none, another's holds); two lines may not give it two values."""
        document_id = candidate["document_id"]
        try:
            found = self.label_reader.document({key: candidate[key] for key in LABEL_KEYS
                                                if candidate.get(key) is not None}, self.path, number)
        except CollectionError as err:  # the corpus's message, about a replay candidate's key
            raise CollectionError(str(err).replace("metadata.", f"candidate {document_id!r}: ", 1)) from None
        found = {key: value for key, value in found.items() if value is not None}
        if not found:
            return
        earlier = self.labels.setdefault(document_id, {})
        differing = {key: value for key, value in found.items() if earlier.get(key, value) != value}
        if differing:
            self.refuse(number, f"document {document_id!r} has {_given(differing)} here but "
                                f"{_given({key: earlier[key] for key in differing})} on line "
                                f"{self.label_lines[document_id][next(iter(differing))]}",
                        "give a document one label of each kind throughout the file")
        earlier.update(found)
        lines = self.label_lines.setdefault(document_id, {})
        for key in found:
            lines.setdefault(key, number)

    def check_successors(self, snapshot: Snapshot) -> list[str]:
        """Refuse a ``superseded_by`` that leads back to its document (the corpus's chains are checked at its
        snapshot); the documents whose successor neither the corpus nor a line read names, for the log (a replay
        file is a view of the collection: the successor counts as in force, the document as outdated)."""
        corpus = snapshot.table("corpus")
        doc_ids = corpus.column("doc_id").to_pylist()
        known = set(doc_ids)
        chain = dict(zip(doc_ids, corpus.column("superseded_by").to_pylist())) \
            if "superseded_by" in corpus.schema.names else {}
        chain.update({doc: label.get("superseded_by") for doc, label in self.labels.items() if doc not in known})
        shown, unknown = known | self.named, []
        for doc_id, label in sorted(self.labels.items()):
            successor = label.get("superseded_by")
            if successor is None or doc_id in known:
                continue
            if successor not in shown:
                unknown.append(doc_id)
            where = f"document {doc_id!r}: superseded_by"
            seen, current = {doc_id}, successor
            while current is not None:
                if current in seen:
                    self.refuse(self.label_lines[doc_id]["superseded_by"], f"{where} leads back to {current!r} "
                                "(a cycle)", "a chain of versions ends at the current one")
                seen.add(current)
                current = chain.get(current)
        return unknown

    def _gather(self, query_id: str, kept: list[dict], digests: list[str]) -> None:
        columns, count = self.columns, len(kept)
        for candidate, digest in zip(kept, digests):
            self.texts.setdefault(digest, candidate["text"])
        columns["query_id"].extend([query_id] * count)
        columns["doc_id"].extend(candidate["document_id"] for candidate in kept)
        columns["parent_id"].extend(candidate.get("parent_id", candidate["document_id"]) for candidate in kept)
        columns["passage_sha256"].extend(digests)
        for key in FIRST_STAGE_COLUMNS:
            if self.scored_first_stage:
                columns[key].extend(candidate[key] for candidate in kept)
            else:
                columns[key].extend([None] * count)
        columns["fused_score"].extend(float(candidate["retrieval_score"]) for candidate in kept)
        columns["fused_rank"].extend(range(1, count + 1))

    def _gather_first_stage(self, number: int, query_id: str, lists: Any) -> None:
        if lists is None:
            return
        if not isinstance(lists, dict) or set(lists) - set(RETRIEVERS):
            self.refuse(number, f"first_stage must be an object with keys among {', '.join(RETRIEVERS)}")
        for retriever, entries in lists.items():
            if not isinstance(entries, list) or not all(
                    isinstance(entry, dict) and set(entry) == {"document_id", "score"}
                    and isinstance(entry["document_id"], str) and _number(entry["score"]) for entry in entries):
                self.refuse(number, f"first_stage.{retriever} must be a list of {{\"document_id\", \"score\"}} in "
                                    "rank order")
            for rank, entry in enumerate(entries[:self.top_n], 1):
                self.first_stage["retriever"].append(retriever)
                self.first_stage["query_id"].append(query_id)
                self.first_stage["doc_id"].append(entry["document_id"])
                self.first_stage["score"].append(float(entry["score"]))
                self.first_stage["rank"].append(rank)

    def _flush(self) -> None:
        self.chunks.append(pa.table({name: pa.array(values, CANDIDATES_SCHEMA.field(name).type)
                                     for name, values in self.columns.items()}, schema=CANDIDATES_SCHEMA))
        self.columns = {name: [] for name in CANDIDATES_SCHEMA.names}
        self.pending = 0

    def tables(self) -> tuple[pa.Table, pa.Table, pa.Table]:
        """The candidates (sorted as the hybrid source sorts them), the passages and the first stage's own lists."""
        self._flush()
        gathered = pa.concat_tables(self.chunks).combine_chunks()
        candidates = candidate_table({name: gathered.column(name) for name in CANDIDATES_SCHEMA.names})
        first_stage = pa.table(self.first_stage, schema=FIRST_STAGE_SCHEMA).sort_by(
            [("retriever", "ascending"), ("query_id", "ascending"), ("rank", "ascending")])
        return candidates, passages_table(list(self.texts), list(self.texts.values())), first_stage


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _claimed_digest(version: str) -> str | None:
    """The sha256 a ``document_version`` names (``sha256:<hex>``, the label spelt in any case or as ``sha-256``,
    ``sha_256``, spaces around ignored), or None for a version of another kind (``v3``), which is not checked."""
    found = SHA256_LABEL.fullmatch(version)
    return found["digest"].strip().lower() if found else None


def _number(value: Any) -> bool:
    """A finite number a float holds (an integer of 400 digits is none: ``float`` would overflow)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def export_replay(candidates_path: str | Path, first_stage_path: str | Path, out: str | Path) -> dict[str, int]:
    """Write the frozen candidates at ``candidates_path`` (with the first stage's own lists, when it has them) as a
    replay file that freezes back into the same tables. Returns the lines and candidates written."""
    metadata = table_metadata(candidates_path)
    first_stage_metadata = table_metadata(first_stage_path)
    if first_stage_metadata.get("snapshot") != metadata.get("snapshot") \
            or first_stage_metadata.get("retrieval") != metadata.get("retrieval"):
        raise ContractError(f"{first_stage_path}: not frozen with {candidates_path} (their provenance differs). Fix: "
                            "`dvc repro freeze` (or `dvc checkout`) restores both.")
    source = candidate_source(metadata)
    frame = load_candidates(candidates_path).sort_values(["query_id", "fused_rank"], kind="stable")
    own = read_table(first_stage_path, FIRST_STAGE_SCHEMA).to_pandas()
    lists = {query_id: group for query_id, group in own.groupby("query_id", sort=True)}
    version = source.get("corpus_version") if source["kind"] == "replay" else \
        f"{VERSION_PREFIX}{metadata['snapshot']['corpus']}"
    provenance = {key: metadata[key] for key in CARRIED if key in metadata}
    scored = bool(len(frame)) and bool(frame["bm25_rank"].notna().all())
    labels = metadata.get(SOURCE_LABELS, {})  # what a replayed source said of documents the corpus lacks, kept
    counts = {"lines": 0, "candidates": 0}

    def lines() -> Iterator[str]:
        for query_id, group in frame.groupby("query_id", sort=True):
            line: dict[str, Any] = {"query_id": query_id, "candidate_source": source["name"],
                                    "corpus_version": version, "candidates": list(_candidates(group, scored, labels))}
            if query_id in lists:
                line["first_stage"] = {retriever: [{"document_id": doc_id, "score": score} for doc_id, score in
                                                   zip(rows["doc_id"].tolist(), rows["score"].tolist())]
                                       for retriever, rows in lists[query_id].sort_values("rank").groupby(
                                           "retriever", sort=True)}
            if provenance:
                line["provenance"] = provenance
            counts["lines"] += 1
            counts["candidates"] += len(group)
            yield json.dumps(line, ensure_ascii=False) + "\n"

    atomic_write_text(out, lambda handle: handle.writelines(lines()))
    return counts


def _candidates(group, scored: bool, labels: dict[str, dict[str, Any]]) -> Iterator[dict[str, Any]]:
    columns = ["doc_id", "passage_sha256", "passage", "fused_rank", "fused_score", "parent_id"]
    if scored:
        columns += list(FIRST_STAGE_COLUMNS)
    for row in zip(*(group[column].tolist() for column in columns)):
        values = dict(zip(columns, row))
        candidate = {"document_id": values["doc_id"], "document_version": f"{VERSION_PREFIX}{values['passage_sha256']}",
                     "text": values["passage"], "retrieval_rank": int(values["fused_rank"]),
                     "retrieval_score": float(values["fused_score"])}
        if values["parent_id"] != values["doc_id"]:
            candidate["parent_id"] = values["parent_id"]
        if scored:
            candidate.update({key: int(values[key]) if key.endswith("_rank") else float(values[key])
                              for key in FIRST_STAGE_COLUMNS})
        candidate.update(labels.get(values["doc_id"], {}))
        yield candidate
