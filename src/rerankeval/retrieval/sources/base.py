"""What every candidate source produces, and the table building the sources that read a file share.

The provenance a source records (in the candidates', passages' and first stage's metadata) names it under
``source`` (``candidates.candidate_source``); the hybrid source records none, so its files keep the bytes they had
before sources existed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from ...core.hashing import sha256_file
from ...data.snapshot import Snapshot, retrieval_inputs
from ..candidates import CANDIDATES_SCHEMA, FIRST_STAGE_SCHEMA
from ..config import SourceConfig

FIRST_STAGE_COLUMNS = ("bm25_score", "bm25_rank", "dense_score", "dense_rank")
"""The candidates' columns only a source that ran BM25 and dense fills (null otherwise)."""
SHOWN = 5
"""Query ids a report line lists before it says how many more there are."""


@dataclass
class FrozenSet:
    candidates: pa.Table
    """One row per (query, candidate), in (query, fused rank) order; passages by sha256 (CANDIDATES_SCHEMA)."""
    passages: pa.Table
    """Each distinct passage text once (candidates.PASSAGES_SCHEMA)."""
    first_stage: pa.Table
    """The first-stage retrievers' own top-N per query (FIRST_STAGE_SCHEMA)."""
    provenance: dict[str, Any]
    """Recorded in the three files' metadata: the snapshot's hashes, the settings, the source."""
    log: list[str] = field(default_factory=list)
    """What the freeze stage prints (the dense model chosen, the fusion weights, what a source's file lacked)."""
    labels: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Access and validity labels the source gives its documents (a replay file's, ``data.access.DOC_COLUMNS``), for
    those the corpus does not hold."""
    withheld: pa.Table | None = None
    """The candidates the access filter removed, with their text (``retrieval.access.WITHHELD_SCHEMA``); None before
    the filter ran."""


def candidate_table(columns: Mapping[str, Sequence | pa.Array]) -> pa.Table:
    """The candidates from ``columns`` of CANDIDATES_SCHEMA (the first-stage columns null where absent), sorted by
    (query id, fused rank) as the hybrid source sorts them, so equal candidates give equal tables."""
    rows = len(columns["query_id"])
    arrays = [columns[name] if name in columns else pa.nulls(rows, CANDIDATES_SCHEMA.field(name).type)
              for name in CANDIDATES_SCHEMA.names]
    table = pa.Table.from_arrays([pa.array(array, type=CANDIDATES_SCHEMA.field(name).type)
                                  if not isinstance(array, (pa.Array, pa.ChunkedArray)) else array
                                  for name, array in zip(CANDIDATES_SCHEMA.names, arrays)], schema=CANDIDATES_SCHEMA)
    return table.sort_by([("query_id", "ascending"), ("fused_rank", "ascending")])


def empty_first_stage() -> pa.Table:
    return FIRST_STAGE_SCHEMA.empty_table()


def file_provenance(snapshot: Snapshot, config: SourceConfig, path: str | Path, record: Mapping[str, Any]) -> dict:
    """The provenance of candidates read from ``path``: the snapshot's hashes, the settings, and under ``source`` the
    source's kind, its name (``record["name"]``), the file and its sha256, and what ``record`` adds."""
    return {"snapshot": retrieval_inputs(snapshot), "retrieval": config.settings(),
            "source": {"kind": config.source, "file": str(path), "sha256": sha256_file(path), **record}}


def sampled_out(snapshot: Snapshot) -> str | None:
    """Why a query of the source's file may be missing from the snapshot legitimately: the snapshot holds a sample of
    the evaluated split (``dataset.sample``), so the file's other queries are skipped, not refused; else None."""
    sample = snapshot.manifest.get("sample")
    return f"outside the snapshot's dataset.sample ({sample['queries']} of {sample['of']} {sample['split']} queries)" \
        if sample else None


def queries_without_candidates(query_ids: Sequence[str], with_candidates: set[str]) -> list[str]:
    """The snapshot's queries that the source gave no candidate (they score 0 on every measure)."""
    return [query_id for query_id in query_ids if query_id not in with_candidates]


def without_candidates_line(missing: Sequence[str], snapshot: Snapshot, where: str) -> str:
    """The warning for queries without candidates, counted per split: an evaluated query scores 0 on every measure,
    a training query gives the fine-tuning no example."""
    queries = snapshot.table("queries").select(["query_id", "split"]).to_pandas()
    splits = queries[queries["query_id"].isin(set(missing))]["split"].value_counts().sort_index()
    per_split = ", ".join(f"{count} of split {split}" for split, count in splits.items())
    shown = ", ".join(missing[:SHOWN]) + (f" and {len(missing) - SHOWN} more" if len(missing) > SHOWN else "")
    return (f"warning: {len(missing)} of {len(queries)} queries have no candidates in {where} ({per_split}: "
            f"{shown}); a query of the evaluated split scores 0 on every measure, one of the training split gives "
            "the fine-tuning no example")
