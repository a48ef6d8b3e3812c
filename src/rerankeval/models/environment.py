"""The machine and library versions a model ran on, for the report's environment block."""

from __future__ import annotations

import platform
from importlib.metadata import version
from pathlib import Path
from typing import Any


def cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                 if line.startswith("model name")]
        if names:
            return names[0]
    return platform.processor() or platform.machine()


def describe_environment() -> dict[str, Any]:
    import torch

    # Versions from the installed distributions: importing sentence_transformers only to read its version costs
    # seconds, and a run served from the cache never imports it.
    return {"cpu_model": cpu_model(), "torch_threads": torch.get_num_threads(), "torch": version("torch"),
            "transformers": version("transformers"), "sentence_transformers": version("sentence-transformers"),
            "python": platform.python_version()}
