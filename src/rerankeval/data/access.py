"""Access and validity labels: who may see a document, when it is current, and who asks a query as of when.

Documents (``corpus.jsonl`` ``metadata``), all optional:

- ``acl``: the groups that may see the document (a list of strings); a document without ``acl`` is public; an empty
  list means nobody may see it.
- ``valid_from`` / ``valid_to``: when the document is current (ISO 8601 dates or date-times; the interval is
  ``[valid_from, valid_to)``).
- ``superseded_by``: the id of the document that replaces this one (it must be in the corpus).
- ``status``: ``current`` or ``outdated`` (outdated whatever the dates say).

Queries (``queries*.jsonl`` ``metadata``), optional:

- ``user_groups``: the groups of the user who asks (a list of strings);
- ``as_of``: when the query is asked (ISO 8601), against which validity is judged.

Dates: ``YYYY-MM-DD`` (midnight UTC) or ``YYYY-MM-DDTHH:MM[:SS[.f]]`` with ``Z`` or an offset (``+09:00``); a
date-time without a zone is read as UTC and counted in the collection's notes. Every value is stored normalised to
UTC (``YYYY-MM-DDTHH:MM:SSZ``), so dates written in different zones compare as instants. Any other spelling
(``03/04/2024``: day or month first?) is refused naming the file, the line and the field.

What "stale" means at a query's as-of date (``AccessLabels.stale``): the document's ``status`` is ``outdated``, or
the as-of date is outside ``[valid_from, valid_to)``, or its ``superseded_by`` successor is current then. A query
without ``as_of`` is judged on labels alone: ``status: outdated`` or a successor that is current at no stated date
(dates are not compared). What a query without ``user_groups`` may see is a policy
(``retrieval.access.queries_without_groups``): the public documents only, or a refusal to freeze.

The labels are columns of the snapshot's tables (``DOC_COLUMNS``, ``QUERY_COLUMNS``) when any record carries one, so
a collection without labels keeps its tables' bytes and hashes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..core.errors import CollectionError

DOC_COLUMNS = {"acl": pa.list_(pa.string()), "valid_from": pa.string(), "valid_to": pa.string(),
               "superseded_by": pa.string(), "status": pa.string()}
VALIDITY = ("valid_from", "valid_to", "superseded_by", "status")
"""The validity labels among ``DOC_COLUMNS`` (what Stale@k and StaleFirst read)."""
SOURCE_LABELS = "source_labels"
"""The frozen candidates' metadata key holding the labels their source gave documents outside the corpus."""
QUERY_COLUMNS = {"user_groups": pa.list_(pa.string()), "as_of": pa.string()}
RESERVED = frozenset(DOC_COLUMNS) | frozenset(QUERY_COLUMNS)
"""Metadata keys that are labels, never slice columns."""
STATUSES = ("current", "outdated")
MAX_GROUPS = 1000
"""Most groups one label lists: a longer list is a data export gone wrong (a whole directory), not an access rule."""
POLICIES = ("public", "refuse")
"""What a query without ``user_groups`` may see when documents carry ``acl``: the public documents, or nothing (the
freeze refuses)."""

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(?P<zone>Z|[+-]\d{2}:?\d{2})?")
DATE_FIX = "write it as ISO 8601: 2024-03-01, or 2024-03-01T09:30:00+09:00 (Z for UTC)"


def normalise_date(value: Any, where: str) -> tuple[str, bool]:
    """``value`` as UTC ``YYYY-MM-DDTHH:MM:SSZ``, and whether it had no zone (read as UTC); refused naming ``where``."""
    if not isinstance(value, str):
        raise CollectionError(f"{where}: a date must be a string, got {value!r}. Fix: {DATE_FIX}.")
    text = value.strip()
    match = _DATETIME.fullmatch(text)
    if not (_DATE.fullmatch(text) or match):
        raise CollectionError(f"{where}: {value!r} is not an ISO 8601 date. Fix: {DATE_FIX}.")
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00") if match else text)
    except ValueError as err:
        raise CollectionError(f"{where}: {value!r} is not a valid date ({err}). Fix: {DATE_FIX}.") from None
    naive = parsed.tzinfo is None
    if naive:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), naive and match is not None


def _groups(value: Any, where: str, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(group, str) and group.strip() for group in value):
        raise CollectionError(f"{where}: metadata.{key} must be a list of non-empty strings (group names), got "
                              f"{str(value)[:80]!r}. Fix: e.g. \"{key}\": [\"support-staff\"].")
    if len(value) > MAX_GROUPS:
        raise CollectionError(f"{where}: metadata.{key} lists {len(value)} groups, more than {MAX_GROUPS}. Fix: "
                              "list the groups that grant access (or that the user belongs to), not a whole "
                              "directory.")
    return sorted(set(value))


@dataclass
class LabelReader:
    """Reads the labels of one collection's records, counting what it read as a note."""

    zoneless: int = 0

    def document(self, metadata: Mapping[str, Any], path: Path, line_no: int) -> dict[str, Any]:
        """The document's labels (``DOC_COLUMNS``; None where absent)."""
        where = f"{path}:{line_no}"
        labels: dict[str, Any] = dict.fromkeys(DOC_COLUMNS)
        if metadata.get("acl") is not None:
            labels["acl"] = _groups(metadata["acl"], where, "acl")
        for key in ("valid_from", "valid_to"):
            if metadata.get(key) is not None:
                labels[key], zoneless = normalise_date(metadata[key], f"{where}: metadata.{key}")
                self.zoneless += zoneless
        if labels["valid_from"] and labels["valid_to"] and labels["valid_from"] >= labels["valid_to"]:
            raise CollectionError(f"{where}: metadata.valid_from {metadata['valid_from']!r} is not before valid_to "
                                  f"{metadata['valid_to']!r}. Fix: the document is current from valid_from up to "
                                  "(not including) valid_to.")
        successor = metadata.get("superseded_by")
        if successor is not None:
            if not isinstance(successor, (str, int)) or isinstance(successor, bool) or str(successor) == "":
                raise CollectionError(f"{where}: metadata.superseded_by must be a document id, got {successor!r}. "
                                      "Fix: the id of the document that replaces this one.")
            labels["superseded_by"] = str(successor)
        status = metadata.get("status")
        if status is not None:
            if status not in STATUSES:
                raise CollectionError(f"{where}: metadata.status must be one of {', '.join(STATUSES)}, got "
                                      f"{status!r}. Fix: outdated marks a document no longer in force; current, or "
                                      "no status, one that is.")
            labels["status"] = status
        return labels

    def query(self, metadata: Mapping[str, Any], path: Path, line_no: int) -> dict[str, Any]:
        """The query's labels (``QUERY_COLUMNS``; None where absent)."""
        where = f"{path}:{line_no}"
        labels: dict[str, Any] = dict.fromkeys(QUERY_COLUMNS)
        if metadata.get("user_groups") is not None:
            labels["user_groups"] = _groups(metadata["user_groups"], where, "user_groups")
        if metadata.get("as_of") is not None:
            labels["as_of"], zoneless = normalise_date(metadata["as_of"], f"{where}: metadata.as_of")
            self.zoneless += zoneless
        return labels

    def notes(self) -> list[str]:
        return ([f"{self.zoneless} date-times without a time zone read as UTC (metadata.valid_from, valid_to, as_of)"]
                if self.zoneless else [])


def used_columns(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, pa.DataType]) -> list[str]:
    """The label columns any row carries (the others are left out of the table)."""
    return [name for name in columns if any(row.get(name) is not None for row in rows)]


def check_successors(labels: Mapping[str, Mapping[str, Any]], lines: Mapping[str, int], path: Path) -> None:
    """Refuse a ``superseded_by`` that names no document, the document itself, or a cycle."""
    for doc_id, label in labels.items():
        successor = label.get("superseded_by")
        if successor is None:
            continue
        if successor not in labels:
            raise CollectionError(f"{path}:{lines[doc_id]}: metadata.superseded_by names {successor!r}, which is not "
                                  "in the corpus. Fix: name the id of the document that replaces this one, or drop "
                                  "the field.")
        seen, current = {doc_id}, successor
        while current is not None:
            if current in seen:
                raise CollectionError(f"{path}:{lines[doc_id]}: metadata.superseded_by of {doc_id!r} leads back to "
                                      f"{current!r} (a cycle). Fix: a chain of versions ends at the current one.")
            seen.add(current)
            current = labels[current].get("superseded_by")


def label_warnings(doc_labels: Mapping[str, Mapping[str, Any]], query_labels: Mapping[str, Mapping[str, Any]],
                   corpus_path: Path, queries_path: Path) -> list[str]:
    """What is legal but probably not meant: an acl nobody matches, groups no document grants, queries without
    groups or dates when documents carry them."""
    warnings = []
    with_acl = [doc_id for doc_id, label in doc_labels.items() if label.get("acl") is not None]
    nobody = sorted(doc_id for doc_id in with_acl if not doc_labels[doc_id]["acl"])
    if nobody:
        warnings.append(f"{corpus_path}: {len(nobody)} documents have an empty metadata.acl ({_shown(nobody)}): "
                        "nobody may see them, so they are removed from every query's candidates.")
    granted = {group for doc_id in with_acl for group in doc_labels[doc_id]["acl"]}
    asked = {group for label in query_labels.values() for group in label.get("user_groups") or ()}
    ungranted = sorted(asked - granted)
    if with_acl and ungranted:
        warnings.append(f"{queries_path}: metadata.user_groups names groups no document's acl grants "
                        f"({_shown(ungranted)}); a typo would leave those users the public documents only.")
    without_groups = sorted(qid for qid, label in query_labels.items() if label.get("user_groups") is None)
    if with_acl and without_groups:
        warnings.append(f"{queries_path}: {len(without_groups)} queries have no metadata.user_groups "
                        f"({_shown(without_groups)}) while documents carry acl; what they may see is "
                        "retrieval.access.queries_without_groups (public: the public documents only; refuse).")
    dated = any(label.get(key) for label in doc_labels.values() for key in ("valid_from", "valid_to"))
    undated = sorted(qid for qid, label in query_labels.items() if label.get("as_of") is None)
    if dated and undated:
        warnings.append(f"{queries_path}: {len(undated)} queries have no metadata.as_of ({_shown(undated)}) while "
                        "documents carry valid_from/valid_to; their staleness is judged on status and superseded_by "
                        "alone.")
    return warnings


def doc_labels_of(corpus: pa.Table) -> dict[str, dict[str, Any]]:
    """doc_id -> its labels (``DOC_COLUMNS``; None where absent) from a corpus table."""
    names = corpus.schema.names
    columns = {name: corpus.column(name).to_pylist() if name in names else None for name in DOC_COLUMNS}
    return {doc_id: {name: values[row] if values is not None else None for name, values in columns.items()}
            for row, doc_id in enumerate(corpus.column("doc_id").to_pylist())}


def label_summary(corpus: pa.Table, queries: pa.Table) -> list[str]:
    """What labels a collection carries, one line each (``check-collection``'s summary); none without labels."""
    lines = []
    documents = [f"{name} {corpus.num_rows - corpus.column(name).null_count}" for name in DOC_COLUMNS
                 if name in corpus.schema.names]
    if documents:
        lines.append(f"document labels: {', '.join(documents)} of {corpus.num_rows}")
    asked = [f"{name} {queries.num_rows - queries.column(name).null_count}" for name in QUERY_COLUMNS
             if name in queries.schema.names]
    if asked:
        lines.append(f"query labels: {', '.join(asked)} of {queries.num_rows}")
    return lines


def label_notes(doc_labels: Mapping[str, Mapping[str, Any]], corpus_path: Path) -> list[str]:
    """What the labels mean for the documents without one (said, not warned: public documents carry no acl)."""
    with_acl = sum(label.get("acl") is not None for label in doc_labels.values())
    if not with_acl or with_acl == len(doc_labels):
        return []
    return [f"{corpus_path}: {with_acl} of {len(doc_labels)} documents carry metadata.acl; the other "
            f"{len(doc_labels) - with_acl} are public (anyone may see them)"]


def _shown(ids: Sequence[str], count: int = 3) -> str:
    return ", ".join(repr(i) for i in ids[:count]) + (", ..." if len(ids) > count else "")


class AccessDenied(CollectionError):
    """A query may not be answered under the configured policy (``queries_without_groups: refuse``)."""


class AccessLabels:
    """The labels of a snapshot's corpus and queries, answering per query and document: may the user see it, and is
    it stale as of the query's date. Built from the snapshot's tables; a collection without labels gives a value
    under which every document is public and current (``labelled`` False)."""

    def __init__(self, corpus: pa.Table, queries: pa.Table, queries_without_groups: str = "public"):
        if queries_without_groups not in POLICIES:
            raise ValueError(f"queries_without_groups must be one of {POLICIES}, got {queries_without_groups!r}")
        self.policy = queries_without_groups
        names = corpus.schema.names
        doc_ids = corpus.column("doc_id").to_pylist()
        column = {name: corpus.column(name).to_pylist() if name in names else [None] * len(doc_ids)
                  for name in DOC_COLUMNS}
        self.acl = {doc_id: frozenset(acl) for doc_id, acl in zip(doc_ids, column["acl"]) if acl is not None}
        self.valid_from = {d: v for d, v in zip(doc_ids, column["valid_from"]) if v is not None}
        self.valid_to = {d: v for d, v in zip(doc_ids, column["valid_to"]) if v is not None}
        self.successor = {d: v for d, v in zip(doc_ids, column["superseded_by"]) if v is not None}
        self.outdated = {d for d, v in zip(doc_ids, column["status"]) if v == "outdated"}
        qnames = queries.schema.names
        query_ids = queries.column("query_id").to_pylist()
        groups = queries.column("user_groups").to_pylist() if "user_groups" in qnames else [None] * len(query_ids)
        as_of = queries.column("as_of").to_pylist() if "as_of" in qnames else [None] * len(query_ids)
        self.groups = {q: None if g is None else frozenset(g) for q, g in zip(query_ids, groups)}
        self.as_of = dict(zip(query_ids, as_of))

    @classmethod
    def of(cls, snapshot: Any, queries_without_groups: str = "public") -> AccessLabels:
        """The labels of a ``data.snapshot.Snapshot``'s corpus and queries."""
        return cls(snapshot.table("corpus"), snapshot.table("queries"), queries_without_groups)

    @classmethod
    def of_candidates(cls, snapshot: Any, candidates: str | Path, queries_without_groups: str = "public"
                      ) -> AccessLabels:
        """The snapshot's labels and those the frozen candidates' source gave documents outside the corpus (a replay
        file's, recorded at freeze as the candidates' metadata ``source_labels``)."""
        from ..core.io import table_metadata

        labels = cls.of(snapshot, queries_without_groups)
        labels.add_source_labels(table_metadata(candidates).get(SOURCE_LABELS, {}))
        return labels

    def add_source_labels(self, labels: Mapping[str, Mapping[str, Any]]) -> None:
        """A candidate source's labels (``DOC_COLUMNS`` per document) for documents the corpus does not hold, read
        as the corpus's own."""
        for doc_id, label in labels.items():
            if label.get("acl") is not None:
                self.acl[doc_id] = frozenset(label["acl"])
            for key, found in (("valid_from", self.valid_from), ("valid_to", self.valid_to),
                               ("superseded_by", self.successor)):
                if label.get(key) is not None:
                    found[doc_id] = label[key]
            if label.get("status") == "outdated":
                self.outdated.add(doc_id)

    def differ(self, doc_id: str, given: Mapping[str, Any]) -> bool:
        """Whether a source's labels ``given`` for a document of the corpus differ from the corpus's (each label the
        source gives, compared with the corpus's of that kind)."""
        mine = {"acl": sorted(self.acl[doc_id]) if doc_id in self.acl else None,
                "valid_from": self.valid_from.get(doc_id), "valid_to": self.valid_to.get(doc_id),
                "superseded_by": self.successor.get(doc_id),
                "status": "outdated" if doc_id in self.outdated else "current"}  # no status: current
        return any(value is not None and value != mine.get(key) for key, value in given.items())

    @property
    def restricts(self) -> bool:
        """Whether any document carries an acl (else nothing is ever removed)."""
        return bool(self.acl)

    @property
    def dated(self) -> bool:
        """Whether any document carries a validity label (else nothing is ever stale)."""
        return bool(self.valid_from or self.valid_to or self.successor or self.outdated)

    def may_see(self, query_id: str, doc_ids: Sequence[str]) -> np.ndarray:
        """Per document: whether the user asking ``query_id`` may see it (AccessDenied under the refuse policy for a
        query without groups while documents carry acl)."""
        groups = self.groups.get(query_id)
        if groups is None and self.restricts and self.policy == "refuse":
            raise AccessDenied(f"query {query_id!r} has no metadata.user_groups while documents carry acl, and "
                               "retrieval.access.queries_without_groups is refuse. Fix: give the query the asking "
                               "user's groups, or set queries_without_groups: public (it sees the public documents).")
        groups = groups or frozenset()
        return np.fromiter((doc_id not in self.acl or bool(self.acl[doc_id] & groups) for doc_id in doc_ids),
                           dtype=bool, count=len(doc_ids))

    def may_see_one(self, query_id: str, doc_id: str) -> bool:
        return bool(self.may_see(query_id, [doc_id])[0])

    def in_force(self, doc_id: str, as_of: str | None) -> bool:
        """Whether ``doc_id`` is not marked outdated and, at ``as_of`` (None: any date), has started and not expired."""
        if doc_id in self.outdated:
            return False
        if as_of is None:
            return True
        return not (doc_id in self.valid_from and as_of < self.valid_from[doc_id]
                    or doc_id in self.valid_to and as_of >= self.valid_to[doc_id])

    def current(self, doc_id: str, as_of: str | None) -> bool:
        """Whether ``doc_id`` is in force at ``as_of`` and no later version of it is (without a date: it has no
        later version)."""
        if not self.in_force(doc_id, as_of):
            return False
        later = self.successor.get(doc_id)
        while later is not None:
            if as_of is None or self.in_force(later, as_of):
                return False
            later = self.successor.get(later)
        return True

    def stale(self, query_id: str, doc_ids: Sequence[str]) -> np.ndarray:
        """Per document: outdated at the query's as-of date."""
        as_of = self.as_of.get(query_id)
        return np.fromiter((not self.current(doc_id, as_of) for doc_id in doc_ids), dtype=bool, count=len(doc_ids))

    def stale_first(self, query_id: str, doc_ids: Sequence[str]) -> np.ndarray:
        """Per rank (``doc_ids`` in rank order): a stale document that has a later version (its successor, that
        one's, ...) none of which is ranked above it, an absent one included: the user reads the outdated version
        first, whether the ranking put the current one below it or left it out (the access filter removes a version
        the user may not see, so it counts as absent). A stale document without a successor is ``stale``, not this."""
        stale = self.stale(query_id, doc_ids)
        position = {doc_id: rank for rank, doc_id in enumerate(doc_ids)}
        flags = np.zeros(len(doc_ids), dtype=bool)
        for rank, doc_id in enumerate(doc_ids):
            successor = self.successor.get(doc_id)
            if not stale[rank] or successor is None:
                continue
            later = []
            while successor is not None:
                later.append(successor)
                successor = self.successor.get(successor)
            flags[rank] = not any(position.get(version, len(doc_ids)) < rank for version in later)
        return flags


def guardrail_flags(run: pd.DataFrame, labels: AccessLabels) -> pd.DataFrame:
    """Per query of ``run`` (query_id, doc_id, rank): the ``forbidden``, ``stale`` and ``stale_first`` flags of its
    documents in rank order (``eval.measures.guardrails``' input), indexed by query id."""
    rows = {}
    for query_id, frame in run.sort_values(["query_id", "rank"], kind="stable").groupby("query_id", sort=True):
        doc_ids = frame["doc_id"].tolist()
        groups = labels.groups.get(query_id) or frozenset()
        forbidden = np.fromiter((doc_id in labels.acl and not labels.acl[doc_id] & groups for doc_id in doc_ids),
                                dtype=bool, count=len(doc_ids))
        rows[query_id] = {"forbidden": forbidden, "stale": labels.stale(query_id, doc_ids),
                          "stale_first": labels.stale_first(query_id, doc_ids)}
    return pd.DataFrame.from_dict(rows, orient="index", columns=["forbidden", "stale", "stale_first"])
