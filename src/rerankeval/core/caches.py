"""Where the on-disk caches live (pair scores, embeddings, responses): one folder, movable with one environment
variable."""

from __future__ import annotations

import os
from pathlib import Path

from .hashing import sha256_text

DEFAULT_CACHE_DIR = "data/score_cache"
CACHE_DIR_ENV = "RERANKEVAL_CACHE_DIR"
CACHE_TENANT_ENV = "RERANKEVAL_CACHE_TENANT"
"""A run's tenant label: its caches live in a folder of their own, so two tenants never share an entry (a cached
score or reply tells that a query was asked). The folder is named by the label's hash, not the label."""


def cache_dir(configured: str | None = None) -> Path:
    """RERANKEVAL_CACHE_DIR, else the configured folder, else data/score_cache (in its tenant's subfolder when
    RERANKEVAL_CACHE_TENANT is set); a relative folder is the main
    checkout's (DVC_ROOT, which DVC sets to it even in a queued experiment's temp copy), so experiments share the
    workspace's caches, else the current folder's."""
    folder = Path(os.environ.get(CACHE_DIR_ENV) or configured or DEFAULT_CACHE_DIR)
    tenant = os.environ.get(CACHE_TENANT_ENV)
    if tenant:
        folder = folder / f"tenant-{sha256_text(tenant)[:16]}"
    return Path(os.environ.get("DVC_ROOT") or ".") / folder
