"""Numeric precision of a local learned model: ``float32``, ``bfloat16``, ``float16`` or ``int8``.

``int8`` is PyTorch's dynamic quantization of the Linear layers (``torch.ao.quantization.quantize_dynamic``): weights
stored as int8 with one scale per tensor, activations quantized per batch at run time; embeddings, LayerNorm and the
softmax stay float32. It needs no calibration data, which is why it is the variant offered here. ``bfloat16`` runs at
native speed only on CPUs with bfloat16 instructions (AVX512-BF16 or AMX); elsewhere PyTorch emulates it, and the
run's metadata says so (``native_bf16``), so a slow emulated variant is never read as the format's cost.

The precision is part of the pair-score cache key (``LearnedModel.fingerprint``): a variant never reads another
variant's scores.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

Precision = Literal["float32", "bfloat16", "float16", "int8"]
INT8_SCHEME = "torch.ao dynamic quantization: Linear weights qint8 per tensor, activations per batch"


def apply_precision(network, dtype: str):
    """The network in ``dtype``; for ``int8`` a dynamically quantized copy of its float32 Linear layers."""
    import torch

    if dtype != "int8":
        return network.to(getattr(torch, dtype))
    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings():  # torch 2.13 flags torch.ao as moving to torchao; the kernels are unchanged
        warnings.simplefilter("ignore", category=DeprecationWarning)
        warnings.simplefilter("ignore", category=UserWarning)
        return quantize_dynamic(network.float(), {torch.nn.Linear}, dtype=torch.qint8)


def native_bf16() -> bool:
    """Whether this CPU has bfloat16 instructions (oneDNN's own check)."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def precision_key(dtype: str) -> dict[str, Any]:
    """What of the precision decides a raw score, for the cache key."""
    if dtype != "int8":
        return {"dtype": dtype}
    import torch

    return {"dtype": dtype, "quantization": INT8_SCHEME, "engine": torch.backends.quantized.engine}


def describe_precision(dtype: str) -> dict[str, Any]:
    described: dict[str, Any] = precision_key(dtype)
    if dtype == "bfloat16":
        described["native_bf16"] = native_bf16()
    return described
