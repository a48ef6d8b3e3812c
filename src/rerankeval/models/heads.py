"""Refuse checkpoints without a trained classification head: their scores would be noise around one value."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import RerankevalError


class UntrainedHeadError(RerankevalError, ValueError):
    """The checkpoint has no trained classification head."""


class UnsafeCheckpointError(RerankevalError, ValueError):
    """A pickled checkpoint that safe loading refuses (code in the pickle, or not a tensor file)."""


def _checkpoint_keys(directory: Path) -> set[str]:
    """Tensor names stored in a checkpoint, read without loading the tensors."""
    keys: set[str] = set()
    for path in directory.glob("*.safetensors"):
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as handle:
            keys.update(handle.keys())
    if not keys:
        import torch

        for path in directory.glob("*.bin"):
            keys.update(_pickled_state_dict(torch, path).keys())
    return keys


def _pickled_state_dict(torch, path: Path) -> dict:
    """A pickled checkpoint's tensors, loaded safely (``weights_only``): refused with the file and fix otherwise."""
    import pickle

    try:
        try:
            return torch.load(path, map_location="meta", weights_only=True, mmap=True)
        except RuntimeError as err:  # the legacy (pre-zip) torch.save format cannot be memory-mapped
            if "mmap" not in str(err):
                raise
            return torch.load(path, map_location="meta", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError) as err:
        raise UnsafeCheckpointError(
            f"{path}: not a plain tensor checkpoint ({type(err).__name__}: {str(err).splitlines()[0][:200]}); "
            "safe loading refuses pickled code, and the file may be corrupted or malicious. Fix: use the model's "
            "*.safetensors weights (use_safetensors: true), or convert this file to safetensors on a machine you "
            "trust.") from None


def check_trained_head(directory: Path, *, trust_remote_code: bool) -> None:
    """Refuse a checkpoint whose sequence-classification head would be freshly initialised on load.

    A backbone or bi-encoder directory loads as a cross-encoder without complaint, with a random head that gives
    every pair about the same score. The checkpoint is refused when its config does not declare a
    ``*ForSequenceClassification`` architecture, or when the head's tensors are missing from its weight files.
    """
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification

    config = AutoConfig.from_pretrained(directory, trust_remote_code=trust_remote_code)
    architectures = config.architectures or []
    if not any(name.endswith("ForSequenceClassification") for name in architectures):
        raise UntrainedHeadError(
            f"{directory}: the checkpoint is a {architectures or 'model without declared architecture'}, not a "
            "sequence-classification cross-encoder; loading it as one adds an untrained head whose scores are "
            "meaningless. Fix: use a trained reranker, fine-tune one (the train stage), or score this model with "
            "kind bi_encoder.")
    if config.num_labels != 1:
        raise UntrainedHeadError(f"{directory}: the head has {config.num_labels} labels; a reranker here must "
                                 "output one relevance logit (num_labels = 1).")
    with torch.device("meta"):
        skeleton = AutoModelForSequenceClassification.from_config(config, trust_remote_code=trust_remote_code)
    prefix = skeleton.base_model_prefix + "."
    head = [name for name in skeleton.state_dict() if not name.startswith(prefix)]
    stored = _checkpoint_keys(directory)
    missing = [name for name in head if name not in stored]
    if missing:
        raise UntrainedHeadError(f"{directory}: classification-head tensors {missing} are not in the checkpoint, so "
                                 "they would be randomly initialised. Fix: point the config at a trained reranker.")
