"""The snapshot contract: three Parquet tables and a manifest of their hashes, checked by every later stage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..core.errors import ContractError
from ..core.hashing import sha256_file, sha256_text
from ..core.io import read_json, read_table, write_json, write_table
from .beir import CORPUS_SCHEMA, QRELS_SCHEMA, QUERIES_BASE_SCHEMA, Collection

TABLES = {"corpus": CORPUS_SCHEMA, "queries": QUERIES_BASE_SCHEMA, "qrels": QRELS_SCHEMA}
MANIFEST = "manifest.json"


def content_hash(table: pa.Table, name: str) -> str:
    """Hash of a table's content, independent of Parquet encoding: rows are hashed in their canonical order."""
    if name == "qrels":
        rows = zip(*(table.column(column).to_pylist() for column in ("query_id", "doc_id", "relevance")))
        return sha256_text("\n".join(f"{q}\t{d}\t{r}" for q, d, r in rows))
    return sha256_text("\n".join(table.column("row_sha256").to_pylist()))


def write_snapshot(collection: Collection, out_dir: str | Path, source: dict[str, Any],
                   sample: dict[str, Any] | None = None) -> dict[str, Any]:
    """``sample``: the record of the query sample the collection was cut to (``data.sample``); a snapshot of every
    query has no ``sample`` key, so its manifest is as before samples existed."""
    out_dir = Path(out_dir)
    tables = {"corpus": collection.corpus, "queries": collection.queries, "qrels": collection.qrels}
    manifest: dict[str, Any] = {"source": source, "slice_columns": collection.slice_columns,
                                "notes": collection.notes, "warnings": collection.warnings, "tables": {}}
    if sample is not None:
        manifest["sample"] = sample
    for name, table in tables.items():
        path = out_dir / f"{name}.parquet"
        write_table(path, table, {"table": name, "content_sha256": content_hash(table, name)})
        manifest["tables"][name] = {"file": path.name, "rows": table.num_rows, "file_sha256": sha256_file(path),
                                    "content_sha256": content_hash(table, name)}
    manifest["splits"] = {split: collection.queries.column("split").to_pylist().count(split)
                          for split in sorted(set(collection.queries.column("split").to_pylist()))}
    write_json(out_dir / MANIFEST, manifest)
    return manifest


class Snapshot:
    """A verified snapshot: the manifest, and its tables loaded on demand after their file hashes are checked."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        manifest_path = self.directory / MANIFEST
        if not manifest_path.exists():
            raise ContractError(f"{manifest_path}: missing; run the snapshot stage first (`dvc repro snapshot`).")
        self.manifest = read_json(manifest_path)
        self._tables: dict[str, pa.Table] = {}

    @property
    def hashes(self) -> dict[str, str]:
        """Content hashes of corpus, queries and qrels: what downstream files record as their provenance."""
        return {name: entry["content_sha256"] for name, entry in self.manifest["tables"].items()}

    @property
    def slice_columns(self) -> list[str]:
        return list(self.manifest["slice_columns"])

    @property
    def splits(self) -> list[str]:
        return sorted(self.manifest["splits"])

    @property
    def has_answers(self) -> bool:
        """Whether the queries carry gold answers (``metadata.answers``/``answerable``, see ``beir.ANSWER_FIELDS``)."""
        return "answers" in self.table("queries").schema.names

    def queries_of(self, split: str) -> pd.DataFrame:
        """The queries of one split (query_id, text, split, slice columns), sorted by query id."""
        queries = self.table("queries").filter(pc.field("split") == split).to_pandas()
        if queries.empty:
            raise ContractError(f"{self.directory}: no queries in split {split!r}. Fix: set dataset.eval_split to "
                                f"one of {self.splits}.")
        return queries.sort_values("query_id", ignore_index=True)

    def table(self, name: str) -> pa.Table:
        if name not in self._tables:
            entry = self.manifest["tables"][name]
            path = self.directory / entry["file"]
            actual = sha256_file(path) if path.exists() else "missing"
            if actual != entry["file_sha256"]:
                raise ContractError(f"{path}: sha256 {actual[:12]} does not match the manifest "
                                    f"({entry['file_sha256'][:12]}); the file changed after the snapshot was taken. "
                                    "Fix: re-run `dvc repro snapshot`.")
            self._tables[name] = read_table(path, TABLES[name])
        return self._tables[name]


def check_provenance(path: str | Path, recorded: dict[str, str], expected: dict[str, str]) -> None:
    """Refuse a file built from other inputs than the ones given now."""
    for name, value in expected.items():
        if recorded.get(name) != value:
            raise ContractError(f"{path}: built from {name} {str(recorded.get(name))[:12]}, but the current {name} is "
                                f"{value[:12]}. Fix: re-run the pipeline (`dvc repro`) so every stage sees the same "
                                "inputs.")


def retrieval_inputs(snapshot: Snapshot) -> dict[str, str]:
    """The hashes frozen candidates are built from: corpus and queries (not qrels, which retrieval never reads)."""
    return {name: snapshot.hashes[name] for name in ("corpus", "queries")}
