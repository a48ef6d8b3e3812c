"""Stage `rerank@<system>`: one system permutes the frozen candidates of the evaluation split's queries."""

from __future__ import annotations

import resource
import time

from ..core.hashing import sha256_file
from ..core.io import table_metadata, write_table
from ..data.snapshot import Snapshot, check_provenance, retrieval_inputs
from ..rerank.assemble import TIE_BREAK, run_table
from ..rerank.driver import RerankSettings, rerank
from ..rerank.latency import latency_table
from ..systems import builtin  # noqa: F401  (registers the built-in kinds)
from ..systems.base import FUSION_FALLBACK
from ..systems.run_coverage import coverage_text
from ..systems.composite.components import pair_counts
from ..systems.learned.kinds import LearnedModel
from ..systems.registry import SYSTEM_KINDS, BuildContext, build_system
from ..systems.splits import split_candidates
from .params import Params
from .paths import PipelinePaths
from .system_configs import check_first_stage_reads, system_configs


def run(params: Params, paths: PipelinePaths, system_name: str) -> None:
    configs = system_configs(params)
    config = configs[system_name]
    split = params.dataset.eval_split
    snapshot = Snapshot(paths.snapshot)
    candidates_metadata = table_metadata(paths.candidates)
    check_provenance(paths.candidates, candidates_metadata.get("snapshot", {}), retrieval_inputs(snapshot))
    check_first_stage_reads(params, configs, candidates_metadata)

    candidates_of = split_candidates(params, snapshot, paths.candidates)
    candidates, query_views, _, _ = candidates_of(split)

    started = time.perf_counter()
    context = BuildContext(qrels=snapshot.table("qrels").to_pandas(), systems=configs, candidates_of=candidates_of,
                           evaluated_split=split)
    system = build_system(system_name, config, context)
    load_s = time.perf_counter() - started
    run_frame, latency = rerank(candidates, query_views, system, RerankSettings(config.depth, config.deadline_s))
    described = system.describe()
    if isinstance(getattr(system, "scorer", None), LearnedModel):  # can its model read the collection's language?
        described["language_check"] = check = system.scorer.language_check(query_views, candidates, config.depth)
        for value in check.get("unreadable", []):
            where = f"{check['column']}={value}" if check["column"] else "this collection"
            share = check["slices"][value][check["decided_on"]]
            print(f"rerank[{system_name}]: warning: its model cannot read {where}: {share:.1%} of the characters "
                  "map to unknown, byte or split pieces")
    metadata = {"system": system_name, "config": params.systems[system_name], "split": split,
                "candidates_sha256": sha256_file(paths.candidates), "snapshot": snapshot.hashes,
                "tie_break": TIE_BREAK, "describe": described,
                "traits": SYSTEM_KINDS.get(config.kind).traits.to_metadata()}
    write_table(paths.run(system_name), run_table(run_frame), metadata)
    # Timing-dependent facts live with the latency table, so the run file stays byte-identical across reruns.
    write_table(paths.run_latency(system_name), latency_table(latency), {
        "system": system_name, "load_s": round(load_s, 3), "composite_pairs": pair_counts(context).to_dict(),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
    fallbacks = int((latency["mode"] == FUSION_FALLBACK).sum())
    # An external run's rows the candidates leave out are said here, not dropped silently.
    coverage = f", {coverage_text(described['run_coverage'])}" if "run_coverage" in described else ""
    print(f"rerank[{system_name}]: {len(latency)} queries, depth {config.depth}, {fallbacks} fallbacks, "
          f"{int(latency['cache_hits'].sum())} cache hits, {latency['wall_s'].sum():.1f}s{coverage}")
