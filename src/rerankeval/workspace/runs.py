"""Reading the rerank stage's outputs back: each system's run and latency table, checked against their contracts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd
import pyarrow as pa

from ..core.errors import ContractError
from ..core.hashing import sha256_file
from ..core.io import read_table, table_metadata
from ..rerank.assemble import RUN_SCHEMA, run_table
from ..rerank.latency import LATENCY_SCHEMA
from ..systems.roles import KindTraits
from .paths import SYSTEM_PLACEHOLDER

SEED_RUNS_SCHEMA = RUN_SCHEMA.append(pa.field("seed", pa.int64()))
"""A seed-runs file (``PipelinePaths.seed_runs``): every training seed's run, one after the other."""


def system_file(pattern: str | Path, system: str) -> str:
    """The file of one system from a path pattern such as ``data/runs/run_{system}.parquet``."""
    pattern = str(pattern)
    if SYSTEM_PLACEHOLDER not in pattern:
        raise ContractError(f"path pattern {pattern!r} has no {SYSTEM_PLACEHOLDER} placeholder (see dvc.yaml)")
    return pattern.replace(SYSTEM_PLACEHOLDER, system)


def load_runs(pattern: str | Path, systems: Iterable[str], candidates_path: str | Path | None = None, *,
              schema: pa.Schema = RUN_SCHEMA) -> dict[str, pd.DataFrame]:
    """Every system's run (or, with ``SEED_RUNS_SCHEMA``, seed runs); each must name its system and, when given,
    the candidates it reranked."""
    candidates_sha256 = sha256_file(candidates_path) if candidates_path else None
    runs = {}
    for system in systems:
        path = system_file(pattern, system)
        metadata = table_metadata(path)
        if metadata.get("system") != system:
            raise ContractError(f"{path}: this run was written for system {metadata.get('system')!r}, not {system!r} "
                                "(a file copied over another?). Fix: `dvc repro --force rerank@" + system + "`.")
        recorded = metadata.get("candidates_sha256")
        if candidates_sha256 is not None and recorded != candidates_sha256:
            raise ContractError(f"{path}: reranked candidates {str(recorded)[:12]}, but {candidates_path} is now "
                                f"{candidates_sha256[:12]}. Fix: `dvc repro` re-runs the stale rerank stages.")
        runs[system] = read_table(path, schema).to_pandas()
    return runs


def seed_runs_table(runs: Mapping[int, pd.DataFrame]) -> pa.Table:
    """Each seed's run (``run_table``'s columns) with its seed; no seeds, no rows."""
    tables = [run_table(run).append_column("seed", pa.array([seed] * len(run), pa.int64()))
              for seed, run in runs.items()]
    return pa.concat_tables(tables) if tables else SEED_RUNS_SCHEMA.empty_table()


def load_seed_runs(pattern: str | Path, systems: Iterable[str],
                   candidates_path: str | Path | None = None) -> dict[str, dict[int, pd.DataFrame]]:
    """Each training seed's run of every system built on a seed set (the others have none and are left out), checked
    like ``load_runs``'s."""
    found = {}
    for system, frame in load_runs(pattern, systems, candidates_path, schema=SEED_RUNS_SCHEMA).items():
        if len(frame):
            found[system] = {int(seed): run.drop(columns="seed").reset_index(drop=True)
                             for seed, run in frame.groupby("seed", sort=False)}
    return found


def load_latencies(pattern: str | Path, systems: Iterable[str]) -> dict[str, pd.DataFrame]:
    return {system: read_table(system_file(pattern, system), LATENCY_SCHEMA).to_pandas() for system in systems}


def load_traits(pattern: str | Path, systems: Iterable[str]) -> dict[str, KindTraits]:
    """Each system's traits (role, composite, learned...) as its rerank stage recorded them: what the comparison and
    the report need to know of a kind without importing its code."""
    traits = {}
    for system in systems:
        path = system_file(pattern, system)
        traits[system] = KindTraits.from_metadata(table_metadata(path).get("traits"), path)
    return traits
