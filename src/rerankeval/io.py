"""Files with contracts: atomic writes, content hashes, Parquet tables that carry their provenance."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

METADATA_KEY = b"rerankeval"
_UMASK = os.umask(0)
os.umask(_UMASK)


class ContractError(ValueError):
    """An input file breaks a contract (hash mismatch, wrong schema, bad row). The message names the file and the fix."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the form that is hashed."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def atomic_write(path: str | Path, write: Callable[[str], None]) -> None:
    """Call ``write(tmp_path)`` and move the result into place, so readers never see a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp creates 0600; give the file the permissions open() would
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_text(path: str | Path, text: str) -> None:
    def _write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)

    atomic_write(path, _write)


def write_json(path: str | Path, value: Any) -> None:
    write_text(path, json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_json(path: str | Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def write_table(path: str | Path, table: pa.Table, metadata: Mapping[str, Any] | None = None) -> None:
    """Write a Parquet table atomically with ``metadata`` (JSON) in its schema metadata.

    Statistics and page indexes are deterministic; no creation timestamps are written, so identical tables give
    identical bytes.
    """
    if metadata is not None:
        table = table.replace_schema_metadata({METADATA_KEY: canonical_json(dict(metadata)).encode("utf-8")})
    atomic_write(path, lambda tmp: pq.write_table(table, tmp, compression="zstd"))


def read_table(path: str | Path, schema: pa.Schema | None = None) -> pa.Table:
    """Read a Parquet table, checking it has (at least) the columns and types of ``schema``."""
    path = Path(path)
    if not path.exists():
        raise ContractError(f"{path}: file not found; run the stage that produces it (`dvc repro`).")
    table = pq.read_table(path)
    if schema is not None:
        for field in schema:
            if field.name not in table.schema.names:
                raise ContractError(f"{path}: column {field.name!r} is missing; the file was not written by this "
                                    f"version of rerankeval. Re-run `dvc repro --force` on its stage.")
            actual = table.schema.field(field.name).type
            if actual != field.type:
                raise ContractError(f"{path}: column {field.name!r} has type {actual}, expected {field.type}.")
    return table


def table_metadata(path_or_table: str | Path | pa.Table) -> dict[str, Any]:
    """The rerankeval metadata stored in a Parquet file's schema."""
    schema = path_or_table.schema if isinstance(path_or_table, pa.Table) else pq.read_schema(path_or_table)
    raw = (schema.metadata or {}).get(METADATA_KEY)
    return json.loads(raw) if raw else {}
