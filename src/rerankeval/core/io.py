"""Files with contracts: one atomic writer, and Parquet tables that carry their provenance in their schema.

Nothing is ever half-written: every writer here writes a temporary file beside the target and renames it over the
target once complete, so a reader (or an interrupted stage) sees the old file or the new one.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import ContractError
from .hashing import canonical_json

METADATA_KEY = b"rerankeval"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _umask()


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
    """Write a Parquet table atomically with ``metadata`` (JSON) in its schema metadata.

    Statistics and page indexes are deterministic; no creation timestamps are written, so identical tables give
    identical bytes.
    """
    if metadata is not None:
        table = table.replace_schema_metadata({METADATA_KEY: canonical_json(dict(metadata)).encode("utf-8")})
    atomic_write(path, lambda tmp: pq.write_table(table, tmp, compression="zstd"))


def _unreadable(path: Path, err: Exception) -> ContractError:
    return ContractError(f"{path}: not a readable Parquet file ({type(err).__name__}: {err}); it is truncated or "
                         "corrupted. Fix: re-run the stage that writes it (`dvc repro --force <stage>`).")


def read_table(path: str | Path, schema: pa.Schema | None = None) -> pa.Table:
    """Read a Parquet table, checking it has (at least) the columns and types of ``schema``."""
    path = Path(path)
    if not path.exists():
        raise ContractError(f"{path}: file not found; run the stage that produces it (`dvc repro`).")
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as err:
        raise _unreadable(path, err) from None
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
    if isinstance(path_or_table, pa.Table):
        schema = path_or_table.schema
    else:
        try:
            schema = pq.read_schema(path_or_table)
        except (pa.ArrowException, OSError) as err:
            raise _unreadable(Path(path_or_table), err) from None
    raw = (schema.metadata or {}).get(METADATA_KEY)
    return json.loads(raw) if raw else {}
