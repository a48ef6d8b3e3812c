"""The machine and library versions a model ran on, for the report's environment block."""

from __future__ import annotations

import platform
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
    import sentence_transformers
    import torch
    import transformers

    return {"cpu_model": cpu_model(), "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
            "transformers": transformers.__version__, "sentence_transformers": sentence_transformers.__version__,
            "python": platform.python_version()}
