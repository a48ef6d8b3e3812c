"""The access filter: each query's candidates its user may not see are removed at freeze, before any system scores
anything, so that no reranker (a hosted API least of all) is ever sent an unauthorized text or id.

Whatever the candidate source, the filter runs on its frozen set (``retrieval.sources.freeze_candidates``): the
candidates keep their order with the fused ranks renumbered 1..n, the passages file keeps only the texts still
referred to, and each retriever's own top list (first_stage.parquet) loses the same documents. What was removed goes
to the withheld file with its text and its rank before the filter: only a system configured with
``access_filter: false`` reads it (to show what a pipeline without the filter would rank), nothing else does. The
record (the candidates' metadata ``access``) counts what was removed, from which retriever, and says when a source
cannot be filtered: documents without labels while queries name groups, or replay candidates outside the corpus.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..data.access import SOURCE_LABELS, VALIDITY, AccessLabels
from ..data.snapshot import Snapshot
from .candidates import candidate_source
from .config import AccessConfig
from .sources.base import FrozenSet

def filter_frozen(frozen: FrozenSet, snapshot: Snapshot, config: AccessConfig) -> FrozenSet:
    """The frozen set without what each query's user may not see, the removed rows as its ``withheld``; the record of
    what was removed goes into the provenance under ``access`` and a line into the log."""
    labels = AccessLabels.of(snapshot, config.queries_without_groups)
    candidates = frozen.candidates
    query_ids = candidates.column("query_id").to_pylist()
    doc_ids = candidates.column("doc_id").to_pylist()
    corpus = set(snapshot.table("corpus").column("doc_id").to_pylist())
    # The source's own labels (a replay file's) for documents outside the corpus; the corpus's decide the others.
    conflicts = sorted(doc for doc, given in frozen.labels.items() if doc in corpus and labels.differ(doc, given))
    source = {doc: given for doc, given in sorted(frozen.labels.items()) if doc not in corpus}
    labels.add_source_labels(source)
    known = corpus | {doc for doc, given in source.items() if given.get("acl") is not None}
    dated = corpus | {doc for doc, given in source.items() if any(given.get(key) is not None for key in VALIDITY)}
    undated = [doc_id not in dated for doc_id in doc_ids]  # outside the corpus without a validity label of its own
    visible = np.ones(len(doc_ids), dtype=bool)
    if config.filter and labels.restricts:
        starts = _group_starts(query_ids)
        for start, end in zip(starts, [*starts[1:], len(query_ids)]):
            visible[start:end] = labels.may_see(query_ids[start], doc_ids[start:end])
    record: dict[str, Any] = {"filter": config.filter, "queries_without_groups": config.queries_without_groups,
                              "labelled_documents": len(labels.acl)}
    outside = sum(doc_id not in known for doc_id in doc_ids)
    with_groups = sum(groups is not None for groups in labels.groups.values())
    if with_groups and not labels.restricts:
        record["cannot_filter"] = (f"{with_groups} queries name the user's groups but no document carries an acl: the "
                                   "candidates could not be filtered (every document counts as public)")
    elif outside and labels.restricts:
        record["cannot_filter"] = (f"{outside} candidates name documents outside the corpus, whose acl is unknown: "
                                   "they were kept as public")
    if labels.dated and (unknown := int(np.sum(np.asarray(undated, dtype=bool) & visible))):
        record["validity_unknown"] = (f"{unknown} candidates name documents outside the corpus, whose validity is "
                                      "unknown: Stale@k and StaleFirst count them as current")
    if conflicts:
        record["label_conflicts"] = len(conflicts)
    removed = ~visible
    record["removed"] = int(removed.sum())
    record["queries_with_removed"] = len({query_ids[i] for i in np.flatnonzero(removed)})
    # From each first-stage retriever's own top list; a source without them (a run, a replay) is its own first stage.
    record["removed_from"] = (_removed_per_retriever(frozen.first_stage, labels if config.filter else None)
                              if frozen.first_stage.num_rows else
                              {candidate_source(frozen.provenance)["name"]: record["removed"]})
    if not config.filter and labels.restricts:
        record["unfiltered"] = "retrieval.access.filter is false: every system sees what its user may not"
    withheld = _withheld(candidates, removed, frozen.passages)
    kept = candidates.filter(pa.array(visible))
    kept = kept.set_column(kept.schema.get_field_index("fused_rank"), "fused_rank",
                           _ranks_within(kept.column("query_id").to_pylist()))
    used = set(kept.column("passage_sha256").to_pylist())
    passages = frozen.passages.filter(pc.is_in(frozen.passages.column("passage_sha256"),
                                               value_set=pa.array(sorted(used), pa.string())))
    first_stage = _filtered_first_stage(frozen.first_stage, labels if config.filter else None)
    line = (f"access: removed {record['removed']} candidates the user may not see from {record['queries_with_removed']}"
            f" queries ({', '.join(f'{name} {count}' for name, count in record['removed_from'].items())})"
            if config.filter else "access: retrieval.access.filter is false: nothing removed")
    log = [line] + ([f"access: cannot filter: {record['cannot_filter']}"] if "cannot_filter" in record else [])
    if conflicts:
        log.append(f"access: {len(conflicts)} documents carry other labels in the source than in the corpus (first: "
                   f"{conflicts[0]!r}); the corpus's decide")
    without = sum(groups is None for groups in labels.groups.values())
    if labels.restricts and without:  # the policy, printed (under refuse, may_see stopped the freeze above)
        record["queries_without_groups_count"] = without
        log.append(f"access: {without} queries have no user_groups: they see the public documents only "
                   "(retrieval.access.queries_without_groups: public)")
    provenance = {**frozen.provenance, "access": record}
    if source:  # read back by AccessLabels.of_candidates: the later stages see the source's labels as the corpus's
        provenance[SOURCE_LABELS] = {doc: {key: value for key, value in given.items() if value is not None}
                                     for doc, given in source.items()}
    return replace(frozen, candidates=kept, passages=passages, first_stage=first_stage, provenance=provenance,
                   log=[*frozen.log, *log], withheld=withheld)


def _group_starts(keys: list[str]) -> np.ndarray:
    """Where each run of equal keys (strings) begins (the tables are sorted by them)."""
    values = np.array(keys, dtype=object)
    return np.flatnonzero(np.r_[True, values[1:] != values[:-1]]) if len(values) else np.array([], dtype=np.int64)


def _ranks_within(keys: list[str]) -> pa.Array:
    """Ranks 1..n within each run of equal keys, in the order the rows are in."""
    starts = _group_starts(keys)
    positions = np.arange(len(keys)) - np.repeat(starts, np.diff(np.r_[starts, len(keys)]).astype(np.int64))
    return pa.array(positions + 1, pa.int32())


def _withheld(candidates: pa.Table, removed: np.ndarray, passages: pa.Table) -> pa.Table:
    rows = candidates.filter(pa.array(removed))
    text = dict(zip(passages.column("passage_sha256").to_pylist(), passages.column("passage").to_pylist()))
    return rows.append_column("passage", pa.array([text[digest] for digest in rows.column("passage_sha256")
                                                  .to_pylist()], pa.string()))


def _visible_rows(table: pa.Table, labels: AccessLabels | None) -> np.ndarray:
    visible = np.ones(table.num_rows, dtype=bool)
    if labels is None or not labels.restricts:
        return visible
    query_ids = table.column("query_id").to_pylist()
    doc_ids = table.column("doc_id").to_pylist()
    for row, (query_id, doc_id) in enumerate(zip(query_ids, doc_ids)):
        if doc_id in labels.acl:
            visible[row] = bool(labels.may_see(query_id, [doc_id])[0])
    return visible


def _removed_per_retriever(first_stage: pa.Table, labels: AccessLabels | None) -> dict[str, int]:
    """Per first-stage retriever: how many of its own top-list entries the filter removes."""
    visible = _visible_rows(first_stage, labels)
    retrievers = first_stage.column("retriever").to_pylist()
    counts: dict[str, int] = {}
    for retriever, seen in zip(retrievers, visible):
        counts[retriever] = counts.get(retriever, 0) + int(not seen)
    return dict(sorted(counts.items()))


def _filtered_first_stage(first_stage: pa.Table, labels: AccessLabels | None) -> pa.Table:
    """Each retriever's own top list without what the user may not see, ranks renumbered 1..n."""
    kept = first_stage.filter(pa.array(_visible_rows(first_stage, labels)))
    keys = [f"{retriever}\x00{query_id}" for retriever, query_id in zip(kept.column("retriever").to_pylist(),
                                                                        kept.column("query_id").to_pylist())]
    return kept.set_column(kept.schema.get_field_index("rank"), "rank", _ranks_within(keys))
