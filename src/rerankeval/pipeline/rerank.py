"""Stage `rerank@<system>`: one system permutes the frozen candidates of the evaluation split's queries."""

from __future__ import annotations

import resource
import time
from pathlib import Path

from ..core.errors import ConfigError
from ..core.hashing import sha256_file
from ..core.io import table_metadata, write_table
from ..data.snapshot import Snapshot, check_provenance, retrieval_inputs
from ..rerank.assemble import TIE_BREAK, run_table
from ..rerank.driver import RerankSettings, rerank
from ..rerank.latency import latency_table
from ..systems import BuildContext, build_system
from ..systems.base import FUSION_FALLBACK
from ..systems.composite.components import pair_counts
from .params import load_params
from ..systems.splits import split_candidates


def run(system_name: str, params_path: str | Path, snapshot_dir: str | Path, candidates_path: str | Path,
        run_path: str | Path, latency_path: str | Path) -> None:
    params = load_params(params_path)
    mapping = params.systems.get(system_name)
    if mapping is None:
        raise ConfigError(f"{params_path}: no system {system_name!r} under `systems` (configured: "
                          f"{', '.join(params.systems)}).")
    config = params.system_configs[system_name]
    split = params.dataset.eval_split
    snapshot = Snapshot(snapshot_dir)
    check_provenance(candidates_path, table_metadata(candidates_path).get("snapshot", {}), retrieval_inputs(snapshot))

    candidates_of = split_candidates(params, snapshot, candidates_path)
    candidates, query_views, _, _ = candidates_of(split)

    started = time.perf_counter()
    context = BuildContext(qrels=snapshot.table("qrels").to_pandas(), systems=params.system_configs,
                           candidates_of=candidates_of)
    system = build_system(system_name, config, context)
    load_s = time.perf_counter() - started
    run_frame, latency = rerank(candidates, query_views, system, RerankSettings(config.depth, config.deadline_s))
    metadata = {"system": system_name, "config": mapping, "split": split,
                "candidates_sha256": sha256_file(candidates_path), "snapshot": snapshot.hashes,
                "tie_break": TIE_BREAK, "describe": system.describe()}
    write_table(run_path, run_table(run_frame), metadata)
    # Timing-dependent facts live with the latency table, so the run file stays byte-identical across reruns.
    write_table(latency_path, latency_table(latency), {
        "system": system_name, "load_s": round(load_s, 3), "composite_pairs": pair_counts(context).to_dict(),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
    fallbacks = int((latency["mode"] == FUSION_FALLBACK).sum())
    print(f"rerank[{system_name}]: {len(latency)} queries, depth {config.depth}, {fallbacks} fallbacks, "
          f"{int(latency['cache_hits'].sum())} cache hits, {latency['wall_s'].sum():.1f}s")
