"""Files with contracts: one atomic writer, and Parquet tables that carry their provenance in their schema.

Nothing is ever half-written: every writer here writes a temporary file beside the target and renames it over the
target once complete, so a reader (or an interrupted stage) sees the old file or the new one.

Nothing is read silently wrong either: ``write_table`` records in the file a sha256 of every column's values and of
its metadata, and writes Parquet page checksums; ``read_table`` and ``table_metadata`` verify them, so a truncated,
bit-flipped or edited file is refused naming its path, whichever stage reads it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import ContractError, UnwritableOutput
from .hashing import canonical_json

METADATA_KEY = b"rerankeval"
DIGEST_KEY = b"rerankeval.sha256"
"""Schema metadata key of the digests: {"metadata": sha256 of the METADATA_KEY value, "columns": {name: sha256}}."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _umask()


def atomic_write(path: str | Path, write: Callable[[str], None]) -> None:
    """Call ``write(tmp_path)`` and move the result into place, so readers never see a half-written file."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise _unwritable(path, err) from None
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp creates 0600; give the file the permissions open() would
        os.replace(tmp, path)
    except BaseException as err:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(err, OSError) and not isinstance(err, UnwritableOutput):
            raise _unwritable(path, err) from None
        raise


def _unwritable(path: Path, err: OSError) -> UnwritableOutput:
    return UnwritableOutput(f"{path}: cannot be written ({err.strerror or err}); nothing was left half-written. "
                            f"Fix: free disk space on the volume of {path.parent}, or make that folder writable "
                            "(or point the stage's output elsewhere), then re-run the stage.")


def atomic_write_text(path: str | Path, write: Callable[[TextIO], None]) -> None:
    """``atomic_write`` for text written through a handle (UTF-8, ``\\n`` line ends)."""

    def _write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8", newline="\n") as handle:
            write(handle)

    atomic_write(path, _write)


def write_text(path: str | Path, text: str) -> None:
    atomic_write_text(path, lambda handle: handle.write(text))


def write_json(path: str | Path, value: Any) -> None:
    write_text(path, json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_json(path: str | Path) -> Any:
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        raise ContractError(f"{path}: file not found; run the stage that produces it (`dvc repro`).") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ContractError(f"{path}: not valid JSON ({err}). Fix: re-run the stage that writes it "
                            "(`dvc repro --force <stage>`).") from None


def write_table(path: str | Path, table: pa.Table, metadata: Mapping[str, Any] | None = None) -> None:
    """Write a Parquet table atomically with ``metadata`` (JSON) in its schema metadata, its digests and page checksums.

    Statistics and page indexes are deterministic; no creation timestamps are written, so identical tables give
    identical bytes.
    """
    schema_metadata = dict(table.schema.metadata or {})
    if metadata is not None:
        schema_metadata = {METADATA_KEY: canonical_json(dict(metadata)).encode("utf-8")}
    schema_metadata[DIGEST_KEY] = canonical_json(_digests(table, schema_metadata.get(METADATA_KEY, b""))).encode()
    table = table.replace_schema_metadata(schema_metadata)
    atomic_write(path, lambda tmp: pq.write_table(table, tmp, compression="zstd", write_page_checksum=True))


def _digests(table: pa.Table, metadata: bytes) -> dict[str, Any]:
    return {"metadata": hashlib.sha256(metadata).hexdigest(),
            "columns": {name: column_sha256(table.column(name)) for name in table.column_names}}


def column_sha256(column: pa.ChunkedArray | pa.Array) -> str:
    """sha256 of a column's type, nulls and values, independent of its chunks and of how Parquet encodes it."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type) or pa.types.is_string_view(array.type):
        array = pc.cast(array, pa.large_string())
    elif pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type) or pa.types.is_binary_view(array.type):
        array = pc.cast(array, pa.large_binary())
    # Nested types are named by their kind: Parquet does not keep the names of their inner fields.
    flat = pa.types.is_primitive(array.type) or pa.types.is_large_string(array.type) or pa.types.is_large_binary(
        array.type)
    digest = hashlib.sha256((str(array.type) if flat else type(array.type).__name__).encode("utf-8"))
    digest.update(array.is_valid().to_numpy(zero_copy_only=False).tobytes())
    if pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type):
        filled = array.fill_null("" if pa.types.is_large_string(array.type) else b"")
        offsets = np.frombuffer(filled.buffers()[1], dtype=np.int64)[filled.offset:filled.offset + len(filled) + 1]
        digest.update(np.diff(offsets).tobytes())
        if len(filled):
            digest.update(memoryview(filled.buffers()[2])[offsets[0]:offsets[-1]])
    elif pa.types.is_primitive(array.type):  # numbers, booleans, dates and times
        filled = array.fill_null(pa.scalar(False if pa.types.is_boolean(array.type) else 0).cast(array.type))
        digest.update(filled.to_numpy(zero_copy_only=False).tobytes())
    else:  # nested and other types: rare and small here, hashed through their Python values
        digest.update(canonical_json(array.to_pylist()).encode("utf-8"))
    return digest.hexdigest()


def _unreadable(path: Path, err: Exception) -> ContractError:
    return ContractError(f"{path}: not a readable Parquet file ({type(err).__name__}: {err}); it is truncated or "
                         "corrupted. Fix: re-run the stage that writes it (`dvc repro --force <stage>`).")


def _altered(path: Path, what: str) -> ContractError:
    return ContractError(f"{path}: {what} does not match the sha256 recorded when the file was written; the file was "
                         "corrupted or edited since. Fix: re-run the stage that writes it (`dvc repro --force "
                         "<stage>`, or `dvc checkout` to restore the cached copy).")


def _recorded(path: Path, schema: pa.Schema) -> tuple[dict[str, Any], bytes]:
    """The digests a file records and its metadata bytes, the metadata checked against its digest."""
    raw = schema.metadata or {}
    try:
        digests = json.loads(raw[DIGEST_KEY])
        metadata_sha256, columns = digests["metadata"], digests["columns"]
    except (KeyError, TypeError, ValueError):
        raise ContractError(f"{path}: records no valid content digest; it was not written by this version of "
                            "rerankeval, or its footer is corrupted. Fix: re-run the stage that writes it "
                            "(`dvc repro --force <stage>`).") from None
    metadata = raw.get(METADATA_KEY, b"")
    if hashlib.sha256(metadata).hexdigest() != metadata_sha256 or not isinstance(columns, dict):
        raise _altered(path, "its metadata")
    return columns, metadata


def read_table(path: str | Path, schema: pa.Schema | None = None, columns: list[str] | None = None) -> pa.Table:
    """Read a Parquet table written by ``write_table`` (all columns or ``columns``), verifying its page checksums and
    column digests and checking it has (at least) the columns and types of ``schema``."""
    path = Path(path)
    if not path.exists():
        raise ContractError(f"{path}: file not found; run the stage that produces it (`dvc repro`).")
    try:
        table = pq.read_table(path, columns=columns, page_checksum_verification=True)
    except (pa.ArrowException, OSError) as err:
        raise _unreadable(path, err) from None
    recorded, _ = _recorded(path, table.schema)
    if columns is None and sorted(recorded) != sorted(table.column_names):
        raise _altered(path, f"its columns {table.column_names}")
    for name in table.column_names:
        if recorded.get(name) != column_sha256(table.column(name)):
            raise _altered(path, f"column {name!r}")
    if schema is not None:
        for field in schema:
            if columns is not None and field.name not in columns:
                continue
            if field.name not in table.schema.names:
                raise ContractError(f"{path}: column {field.name!r} is missing; the file was not written by this "
                                    f"version of rerankeval. Re-run `dvc repro --force` on its stage.")
            actual = table.schema.field(field.name).type
            if actual != field.type:
                raise ContractError(f"{path}: column {field.name!r} has type {actual}, expected {field.type}.")
    return table


def table_metadata(path_or_table: str | Path | pa.Table) -> dict[str, Any]:
    """The rerankeval metadata stored in a Parquet file's schema."""
    if isinstance(path_or_table, pa.Table):
        raw = (path_or_table.schema.metadata or {}).get(METADATA_KEY)
        return json.loads(raw) if raw else {}
    path = Path(path_or_table)
    if not path.exists():
        raise ContractError(f"{path}: file not found; run the stage that produces it (`dvc repro`).")
    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError) as err:
        raise _unreadable(path, err) from None
    _, raw = _recorded(path, schema)
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        raise _altered(path, "its metadata") from None
