"""Where the on-disk caches live (pair scores, embeddings, responses): one folder, movable with one environment
variable, and a subfolder per tenant when the run names one."""

from __future__ import annotations

import os
from pathlib import Path

from .hashing import sha256_text

DEFAULT_CACHE_DIR = "data/score_cache"
CACHE_DIR_ENV = "RERANKEVAL_CACHE_DIR"
CACHE_TENANT_ENV = "RERANKEVAL_CACHE_TENANT"
"""Overrides ``privacy.tenant`` for one process (a CLI command, a benchmark)."""

_tenant: str | None = None
_refusal: str | None = None


def use_tenant(label: str | None) -> None:
    """This process's tenant (``privacy.tenant``, set by the pipeline's entry point for a stage that declares it):
    its caches live in a folder of their own, so two tenants never share an entry (a cached score or reply tells that
    a query was asked). The folder is named by the label's hash, not the label."""
    global _tenant, _refusal
    _tenant, _refusal = label, None


def refuse_caches(reason: str) -> None:
    """Make opening a cache a programming error in this process: a stage that does not declare ``privacy.tenant``
    cannot know its tenant, so a cache it opened could mix tenants."""
    global _refusal
    _refusal = reason


def cache_dir(configured: str | None = None) -> Path:
    """RERANKEVAL_CACHE_DIR, else the configured folder, else data/score_cache, in the tenant's subfolder when there is
    one (RERANKEVAL_CACHE_TENANT, else ``use_tenant``'s); a relative folder is the main checkout's (DVC_ROOT, which DVC
    sets to it even in a queued experiment's temp copy), so experiments share the workspace's caches, else the current
    folder's."""
    if _refusal is not None:
        raise AssertionError(_refusal)
    folder = Path(os.environ.get(CACHE_DIR_ENV) or configured or DEFAULT_CACHE_DIR)
    tenant = os.environ.get(CACHE_TENANT_ENV) or _tenant
    if tenant:
        folder = folder / f"tenant-{sha256_text(tenant)[:16]}"
    return Path(os.environ.get("DVC_ROOT") or ".") / folder
