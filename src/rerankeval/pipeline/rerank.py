"""Stage `rerank@<system>`: one system permutes the frozen candidates of the evaluation split's queries.

A system built on a seed set (``train.seeds``; itself or a system it is composed of) is built and run once per
training seed: every seed's ranking goes to its seed-runs file (which the evaluate stage averages over), the first
seed's is also its run file (what select and generate read, and what is timed)."""

from __future__ import annotations

import resource
import time

from ..core.hashing import sha256_file
from ..core.io import table_metadata, write_table
from ..data.access import AccessLabels
from ..data.snapshot import Snapshot, check_provenance, retrieval_inputs
from ..models.environment import describe_environment
from ..rerank.assemble import TIE_BREAK, run_table
from ..rerank.driver import rerank, settings_of
from ..rerank.latency import latency_table
from ..systems.base import FUSION_FALLBACK
from ..systems.pair_counts import pair_counts
from ..systems.run_coverage import coverage_text
from ..systems.registry import SYSTEM_KINDS, BuildContext, build_system
from ..systems.splits import split_candidates
from ..workspace.paths import PipelinePaths
from ..workspace.runs import seed_runs_table
from .params import Params
from .system_configs import check_first_stage_reads, seeded_configs, system_configs


def run(params: Params, paths: PipelinePaths, system_name: str) -> None:
    configs = system_configs(params)
    config = configs[system_name]
    split = params.dataset.eval_split
    snapshot = Snapshot(paths.snapshot)
    candidates_metadata = table_metadata(paths.candidates)
    check_provenance(paths.candidates, candidates_metadata.get("snapshot", {}), retrieval_inputs(snapshot))
    check_first_stage_reads(params, configs, candidates_metadata)

    candidates_of = split_candidates(params, snapshot, paths.candidates, paths.fallback,
                                     unfiltered=not config.access_filter)
    candidates, query_views, _, _ = candidates_of(split)
    per_seed = seeded_configs(params, configs, system_name)
    seeds = list(per_seed)
    labels = AccessLabels.of_candidates(snapshot, paths.candidates) if config.outdated == "demote" else None
    if labels is not None and not labels.dated:
        print(f"rerank[{system_name}]: warning: outdated: demote, but no document carries a validity label "
              "(valid_to, superseded_by, status): nothing is demoted")
    stale = labels.stale if labels is not None else None
    settings = settings_of(config, stale, f"systems.{system_name}")

    started = time.perf_counter()
    qrels = snapshot.table("qrels").to_pandas()
    context = BuildContext(qrels=qrels, systems=per_seed[seeds[0]] if seeds else configs,
                           candidates_of=candidates_of, evaluated_split=split, stale=stale)
    system = build_system(system_name, context.systems[system_name], context)
    load_s = time.perf_counter() - started
    run_frame, latency = rerank(candidates, query_views, system, settings)
    seed_runs = {seeds[0]: run_frame} if seeds else {}
    for seed in seeds[1:]:  # a fresh context: each seed builds its own components, reading that seed's model
        seed_context = BuildContext(qrels=qrels, systems=per_seed[seed], candidates_of=candidates_of,
                                    evaluated_split=split, stale=stale)
        seed_runs[seed], _ = rerank(candidates, query_views,
                                    build_system(system_name, per_seed[seed][system_name], seed_context), settings)
    described = system.describe()
    learned = hasattr(getattr(system, "scorer", None), "language_check")  # a model this process ran (needs torch)
    if learned:  # can it read the collection's language?
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
    if labels is not None:  # how many of its rows the rule put below the current ones
        flagged = [labels.stale(query_id, frame["doc_id"].tolist())
                   for query_id, frame in run_frame.groupby("query_id", sort=True)]
        metadata["outdated"] = {"rule": "demote", "rows": int(sum(flags.sum() for flags in flagged)),
                                "queries": int(sum(bool(flags.any()) for flags in flagged))}
    if seeds:  # the run file is one ranking: downstream stages (select, generate) read the first seed's
        metadata.update(seeds=seeds, answers_from_seed=seeds[0])
    write_table(paths.run(system_name), run_table(run_frame), metadata)
    write_table(paths.seed_runs(system_name), seed_runs_table(seed_runs),
                {"system": system_name, "seeds": seeds, "candidates_sha256": metadata["candidates_sha256"]})
    # Timing-dependent and machine facts (a model's CPU, threads and libraries) live with the latency table, so the
    # run file stays byte-identical across reruns and across machines whose scores agree: DVC's cache entries of the
    # runs, and all a diff reads from them, are then shared.
    machine = {"environment": describe_environment()} if learned else {}
    write_table(paths.run_latency(system_name), latency_table(latency), {
        "system": system_name, "load_s": round(load_s, 3), "composite_pairs": pair_counts(context).to_dict(),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **machine})
    fallbacks = int((latency["mode"] == FUSION_FALLBACK).sum())
    # An external run's rows the candidates leave out are said here, not dropped silently.
    coverage = f", {coverage_text(described['run_coverage'])}" if "run_coverage" in described else ""
    seeded = f", {len(seeds)} training seeds (timed: seed {seeds[0]})" if seeds else ""
    if not config.access_filter:
        print(f"rerank[{system_name}]: warning: access_filter is false: it reranked the candidates its users may not "
              "see too (a demonstration of the ACLViolation guardrail, never a release)")
    print(f"rerank[{system_name}]: {len(latency)} queries, depth {config.depth}, {fallbacks} fallbacks, "
          f"{int(latency['cache_hits'].sum())} cache hits, {latency['wall_s'].sum():.1f}s{coverage}{seeded}")
