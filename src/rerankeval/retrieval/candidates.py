"""The frozen candidates on disk: each distinct passage text stored once, candidates referring to it by hash.

``candidates.parquet`` holds one row per (query, candidate) with the passage's sha256 and no text; the passages file
beside it holds each distinct text once, keyed by that sha256 (full KorQuAD: every paragraph is a candidate of ~100
queries, so repeating the text per row made a 241 MB file). The candidates' metadata records the passages file's
name and sha256, so one cannot change without the other. ``load_candidates`` is the one reader: it checks the
passages file's hash and every text against its own hash, and returns the joined frame.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..core.errors import ContractError
from ..core.hashing import sha256_file, sha256_text
from ..core.io import read_table, table_metadata, write_table

CANDIDATES_SCHEMA = pa.schema(
    [
        ("query_id", pa.string()),
        ("doc_id", pa.string()),
        ("parent_id", pa.string()),
        ("passage_sha256", pa.string()),
        ("bm25_score", pa.float64()),
        ("bm25_rank", pa.int32()),
        ("dense_score", pa.float64()),
        ("dense_rank", pa.int32()),
        ("fused_score", pa.float64()),
        ("fused_rank", pa.int32()),
    ]
)
PASSAGES_SCHEMA = pa.schema([("passage_sha256", pa.string()), ("passage", pa.string())])
WITHHELD_SCHEMA = CANDIDATES_SCHEMA.append(pa.field("passage", pa.string()))
"""The withheld file: the candidates the access filter removed (``retrieval.access``), with their fused rank before
the filter and their text (kept out of the passages file every system reads)."""
FIRST_STAGE_SCHEMA = pa.schema(
    [
        ("retriever", pa.string()),
        ("query_id", pa.string()),
        ("doc_id", pa.string()),
        ("score", pa.float64()),
        ("rank", pa.int32()),
    ]
)
"""first_stage.parquet: each first-stage retriever's own top-N per query (BM25's and dense's for the hybrid source;
none for a source that ranked no corpus here)."""
HYBRID_SOURCE = {"kind": "hybrid", "name": "hybrid"}
"""The source of candidates whose metadata names none: the hybrid source records none, so its files keep the bytes
they had before sources existed."""


def passages_table(digests: Sequence[str], texts: Sequence[str]) -> pa.Table:
    """Each distinct (sha256, text) once, in hash order."""
    unique = dict(sorted(zip(digests, texts)))
    return pa.table({"passage_sha256": list(unique), "passage": list(unique.values())}, schema=PASSAGES_SCHEMA)


def write_candidates(candidates_path: str | Path, passages_path: str | Path, candidates: pa.Table,
                     passages: pa.Table, metadata: dict[str, Any], withheld: tuple[str | Path, pa.Table] | None = None
                     ) -> None:
    """Write the passages (and the withheld file, when given: its path and table), then the candidates recording each
    file's name (relative) and sha256."""
    candidates_path, passages_path = Path(candidates_path), Path(passages_path)
    write_table(passages_path, passages, metadata)
    relative = os.path.relpath(passages_path.resolve(), candidates_path.resolve().parent)
    files = {"passages": {"file": Path(relative).as_posix(), "sha256": sha256_file(passages_path),
                          "rows": passages.num_rows}}
    if withheld is not None:
        withheld_path, table = Path(withheld[0]), withheld[1]
        write_table(withheld_path, table, {key: value for key, value in metadata.items() if key != "access"})
        files["withheld"] = {"file": Path(os.path.relpath(withheld_path.resolve(), candidates_path.resolve().parent))
                             .as_posix(), "sha256": sha256_file(withheld_path), "rows": table.num_rows}
    write_table(candidates_path, candidates, {**metadata, **files})


def candidate_source(metadata: dict[str, Any]) -> dict[str, Any]:
    """Which source froze candidates with this metadata (``table_metadata``): its ``kind`` (``retrieval.source``) and
    ``name``, the first stage reports and metrics name (``hybrid``, ``run``, or a replay file's
    ``candidate_source``)."""
    return metadata.get("source") or HYBRID_SOURCE


def first_stage_filled(metadata: dict[str, Any]) -> bool:
    """Whether candidates with this metadata hold BM25's and dense's scores and ranks (the hybrid source's, or a
    replay file's that carries them)."""
    source = candidate_source(metadata)
    return source["kind"] == "hybrid" or bool(source.get("first_stage_columns"))


def passages_path_of(candidates_path: str | Path) -> Path:
    recorded = table_metadata(candidates_path).get("passages")
    if not recorded or "file" not in recorded:
        raise ContractError(f"{candidates_path}: no passages file is recorded in its metadata; it was written by an "
                            "older rerankeval. Fix: `dvc repro --force freeze`.")
    return Path(candidates_path).parent / recorded["file"]


def load_passages(candidates_path: str | Path) -> dict[str, str]:
    """sha256 -> text, after checking the passages file against the hash the candidates recorded and every text
    against its own sha256."""
    path = passages_path_of(candidates_path)
    recorded = table_metadata(candidates_path)["passages"]
    if not path.exists():
        raise ContractError(f"{path}: not found, but {candidates_path} refers to it. Fix: `dvc repro freeze` (or "
                            "`dvc checkout`) restores both.")
    if sha256_file(path) != recorded.get("sha256"):
        raise ContractError(f"{path}: its sha256 is not the one {candidates_path} recorded; the file was altered or "
                            "replaced after it was frozen. Fix: `dvc repro --force freeze`.")
    table = read_table(path, PASSAGES_SCHEMA)
    texts = dict(zip(table.column("passage_sha256").to_pylist(), table.column("passage").to_pylist()))
    for digest, text in texts.items():
        if sha256_text(text) != digest:
            raise ContractError(f"{path}: a passage does not match its sha256 {digest[:12]}; the file was altered "
                                "after it was frozen. Fix: `dvc repro --force freeze`.")
    return texts


def load_candidates(path: str | Path, *, query_ids: Sequence[str] | None = None,
                    columns: Sequence[str] | None = None, with_text: bool = True,
                    unfiltered: bool = False) -> pd.DataFrame:
    """The frozen candidates as one frame (``columns`` of CANDIDATES_SCHEMA, all by default), restricted to
    ``query_ids`` when given, with each row's verified ``passage`` text when ``with_text``. ``unfiltered``: with the
    candidates the access filter withheld back in their places (their fused ranks as before the filter), for a
    system configured with ``access_filter: false`` only."""
    if unfiltered:
        return _unfiltered(path, query_ids, columns, with_text)
    table = read_table(path, CANDIDATES_SCHEMA)
    if query_ids is not None:
        table = table.filter(pc.is_in(table.column("query_id"), value_set=pa.array(list(query_ids), pa.string())))
    wanted = list(columns or CANDIDATES_SCHEMA.names)
    if with_text and "passage_sha256" not in wanted:
        wanted.append("passage_sha256")
    frame = table.select(wanted).to_pandas()
    if with_text:
        texts = load_passages(path)
        frame["passage"] = frame["passage_sha256"].map(texts)
        unknown = frame["passage"].isna().to_numpy()
        if np.any(unknown):
            digest = frame.loc[unknown, "passage_sha256"].iloc[0]
            raise ContractError(f"{path}: {int(unknown.sum())} candidates refer to passages that "
                                f"{passages_path_of(path)} does not hold (first: {digest[:12]}). Fix: "
                                "`dvc repro --force freeze`.")
    return frame


def _unfiltered(path: str | Path, query_ids: Sequence[str] | None, columns: Sequence[str] | None,
                with_text: bool) -> pd.DataFrame:
    """The candidates with the withheld ones merged back: each query's fused ranks as the source gave them."""
    kept = load_candidates(path, query_ids=query_ids, with_text=with_text)
    recorded = table_metadata(path).get("withheld")
    if not recorded:
        raise ContractError(f"{path}: no withheld file is recorded in its metadata; it was frozen by an older "
                            "rerankeval. Fix: `dvc repro --force freeze`.")
    withheld_path = Path(path).parent / recorded["file"]
    if not withheld_path.exists() or sha256_file(withheld_path) != recorded.get("sha256"):
        raise ContractError(f"{withheld_path}: missing, or not the file {path} recorded. Fix: `dvc repro --force "
                            "freeze` (or `dvc checkout`) restores both.")
    table = read_table(withheld_path, WITHHELD_SCHEMA)
    if query_ids is not None:
        table = table.filter(pc.is_in(table.column("query_id"), value_set=pa.array(list(query_ids), pa.string())))
    withheld = table.to_pandas()
    for digest, text in zip(withheld["passage_sha256"], withheld["passage"]):
        if sha256_text(text) != digest:
            raise ContractError(f"{withheld_path}: a passage does not match its sha256 {digest[:12]}; the file was "
                                "altered after it was frozen. Fix: `dvc repro --force freeze`.")
    if not with_text:
        withheld = withheld.drop(columns="passage")
    # Each query's original positions: the withheld rows keep theirs, the kept rows fill the others in their order.
    kept = kept.sort_values(["query_id", "fused_rank"], kind="stable").reset_index(drop=True)
    taken = withheld.groupby("query_id")["fused_rank"].apply(set).to_dict()
    original = []
    for query_id, count in kept.groupby("query_id", sort=False).size().items():
        used = taken.get(query_id, set())
        free = (rank for rank in range(1, count + len(used) + 1) if rank not in used)
        original += [next(free) for _ in range(count)]
    kept["fused_rank"] = np.array(original, dtype=np.int32)
    merged = pd.concat([kept, withheld[kept.columns]], ignore_index=True)
    merged = merged.sort_values(["query_id", "fused_rank"], kind="stable").reset_index(drop=True)
    wanted = list(columns or CANDIDATES_SCHEMA.names) + (["passage_sha256", "passage"] if with_text else [])
    return merged[list(dict.fromkeys(wanted))]
