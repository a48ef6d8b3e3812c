"""Where the on-disk caches live (pair scores, embeddings): one folder, movable with one environment variable."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_CACHE_DIR = "data/score_cache"
CACHE_DIR_ENV = "RERANKEVAL_CACHE_DIR"


def cache_dir(configured: str | None = None) -> Path:
    """RERANKEVAL_CACHE_DIR, else the configured folder, else data/score_cache."""
    return Path(os.environ.get(CACHE_DIR_ENV) or configured or DEFAULT_CACHE_DIR)
