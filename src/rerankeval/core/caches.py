"""Where the on-disk caches live (pair scores, embeddings, responses): one folder, movable with one environment
variable."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_CACHE_DIR = "data/score_cache"
CACHE_DIR_ENV = "RERANKEVAL_CACHE_DIR"


def cache_dir(configured: str | None = None) -> Path:
    """RERANKEVAL_CACHE_DIR, else the configured folder, else data/score_cache; a relative folder is the main
    checkout's (DVC_ROOT, which DVC sets to it even in a queued experiment's temp copy), so experiments share the
    workspace's caches, else the current folder's."""
    folder = Path(os.environ.get(CACHE_DIR_ENV) or configured or DEFAULT_CACHE_DIR)
    return Path(os.environ.get("DVC_ROOT") or ".") / folder
