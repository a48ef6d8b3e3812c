"""Stage `shadow`: one production query log under ``online.shadows``, replayed without judgments through the frozen
first stage (the hybrid source with the fusion weights the freeze stage recorded, and the access filter by each logged
user's groups) and through the systems, then measured by ``rerankeval.online.shadow``; written as JSON, as its page
and as the log's judging queue."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from ..core.errors import ConfigError
from ..core.hashing import sha256_file
from ..core.io import table_metadata, write_json, write_text
from ..core.privacy import redact_values, redactor
from ..data.access import AccessLabels
from ..data.snapshot import Snapshot
from ..online.shadow import (expand_arrivals, judging_priority, queue_latency, read_query_log,
                             segment_guardrails)
from ..report.online import shadow_page
from ..rerank.driver import rerank, settings_of
from ..rerank.latency import cold_seconds
from ..retrieval.candidates import candidate_source
from ..retrieval.config import HybridConfig
from ..retrieval.freeze import freeze
from ..stats.agreement import run_agreement, summarize_agreement
from ..serving.loadtest import Endpoint, Request, replay_arrivals
from ..serving.server import free_port, served as served_endpoint
from ..systems.base import FUSION_FALLBACK, Query
from ..systems.http_rerank import api_key
from ..systems.registry import BuildContext, build_system
from ..systems.splits import heads, split_candidates
from ..workspace.paths import SYSTEM_PLACEHOLDER, PipelinePaths
from ..workspace.runs import load_traits
from .params import Params
from .system_configs import first_seed_configs, seeded_configs, system_configs


def run(params: Params, paths: PipelinePaths, name: str) -> None:
    shadows = params.online.shadows
    if name not in shadows:
        raise ConfigError(f"{params.source}: no query log {name!r} under online.shadows (configured: "
                          f"{', '.join(shadows) or 'none'})")
    config, baseline = shadows[name], params.compare.baselines[0]
    log = read_query_log(config.log, max_queries=config.max_queries, seed=params.online.seed,
                         window_arrivals=config.window_arrivals)
    queries = log.queries
    snapshot = Snapshot(paths.snapshot)
    candidates, access = _freeze(params, paths, snapshot, queries)
    systems = config.systems or _default_systems(params, paths, baseline)
    if baseline not in systems:
        raise ConfigError(f"online.shadows.{name}.systems: the baseline {baseline!r} (compare.baselines[0]) must be "
                          "among them: every other system is measured against it")
    runs, latencies = _replay(params, paths, snapshot, systems, candidates, queries)
    arrivals = log.arrivals
    found = measure(runs, latencies, arrivals, log.traffic, baseline, config, params)
    if config.served is not None:
        found["served"] = served_replay(params, config, candidates, queries, arrivals, latencies)
    queue = judging_priority(log.traffic, {system: 1.0 - entry["per_query_rbo"]
                                        for system, entry in found.pop("_per_query").items()})
    queue = queue.merge(queries[["query_id", "text"]], on="query_id").head(config.queue_rows)
    record = {"name": name, "log": config.log, "log_sha256": sha256_file(config.log), "synthetic": config.synthetic,
              "lines": log.lines,
              "out_of_order": log.out_of_order, "queries": log.distinct, "replayed": int(len(queries)),
              "sampled": log.sampled, "seed": log.seed, "max_queries": config.max_queries,
              "replayed_arrivals": int(arrivals["count"].sum()), "window_arrivals": config.window_arrivals,
              "window_lines": log.window_lines, "after_window": log.after_window,
              "span_s": float(arrivals["seconds"].max()), "speed": config.speed, "baseline": baseline,
              "k": config.k, "p": config.p, "candidates": access, **found,
              "queue": {"path": str(paths.shadow_queue(name)), "rows": int(len(queue))}}
    # Written for people as well as programs: personal data in the logged texts is redacted (core.privacy).
    redact = redactor(params.privacy)
    record = redact_values(record, redact)
    queue["text"] = queue["text"].map(redact)
    write_json(paths.shadow(name), record)
    write_text(paths.shadow(name).with_suffix(".md"), shadow_page(record))
    write_text(paths.shadow_queue(name), queue[["query_id", "traffic", "disagreement", "priority", "text"]].to_csv(
        sep="\t", index=False, float_format="%.6f", lineterminator="\n"))
    print(f"shadow@{name}: {record['replayed']} logged queries"
          + (f" (a seeded sample of more than {config.max_queries})" if log.sampled else "")
          + f", {record['replayed_arrivals']} arrivals over {record['span_s']:.0f} s, replayed through {len(systems)} "
            f"systems; judging queue: {len(queue)} queries")


def _freeze(params: Params, paths: PipelinePaths, snapshot: Snapshot,
            queries: pd.DataFrame) -> tuple[dict[bool, pd.DataFrame], dict]:
    """The logged queries' candidates as the freeze stage made the evaluated ones: the hybrid source with the RRF
    weights it recorded, then the access filter by each logged user's groups; by whether the filter applies (a
    system with ``access_filter: false`` reads the unfiltered ones, as its rerank stage reads the withheld file)."""
    metadata = table_metadata(paths.candidates)
    source = candidate_source(metadata)
    retrieval = params.retrieval
    if source["kind"] != "hybrid" or not isinstance(retrieval, HybridConfig):
        raise ConfigError(f"online.shadows: the candidates come from the {source['name']!r} source, which cannot "
                          "retrieve for queries it has not seen; a shadow replay needs retrieval.source: hybrid "
                          "(BM25 and dense over the corpus)")
    weights = metadata["fusion"]["weights"]
    hybrid = retrieval.model_copy(update={"fusion": retrieval.fusion.model_copy(update={"weights": weights})})
    table = pa.table({"query_id": queries["query_id"].tolist(), "text": queries["text"].tolist()})
    frozen = freeze(snapshot.table("corpus"), table, hybrid)
    candidates = frozen.candidates.to_pandas()
    passages = dict(zip(frozen.passages.column("passage_sha256").to_pylist(),
                        frozen.passages.column("passage").to_pylist()))
    groups = pa.table({"query_id": queries["query_id"].tolist(),
                       "user_groups": pa.array(queries["user_groups"].tolist(), pa.list_(pa.string()))})
    labels = AccessLabels(snapshot.table("corpus"), groups, retrieval.access.queries_without_groups)
    visible = np.ones(len(candidates), dtype=bool)
    if retrieval.access.filter and labels.restricts:
        for query, rows in candidates.groupby("query_id", sort=False).indices.items():
            visible[rows] = labels.may_see(query, candidates["doc_id"].iloc[rows].tolist())
    candidates["passage"] = candidates["passage_sha256"].map(passages)
    kept = candidates[visible].copy()
    kept["fused_rank"] = kept.groupby("query_id").cumcount() + 1
    answered = int(kept["query_id"].nunique())
    return ({True: kept.reset_index(drop=True), False: candidates},
            {"rows": int(len(kept)), "removed_by_access": int((~visible).sum()),
             "queries_without_candidates": int(len(queries) - answered)})


def _default_systems(params: Params, paths: PipelinePaths, baseline: str) -> list[str]:
    traits = load_traits(paths.run(SYSTEM_PLACEHOLDER), params.system_names)
    return [baseline, *(system for system in params.system_names
                        if system != baseline and traits[system].role == "reranker")]


def _replay(params: Params, paths: PipelinePaths, snapshot: Snapshot, systems: list[str],
            candidates: dict[bool, pd.DataFrame],
            queries: pd.DataFrame) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """Each system's run and latency table on the logged queries, built as its rerank stage builds it (its first
    training seed's model)."""
    configs = system_configs(params)
    unknown = [system for system in systems if system not in configs]
    if unknown:
        raise ConfigError(f"online.shadows: no system {', '.join(map(repr, unknown))} under `systems` (configured: "
                          f"{', '.join(configs)})")
    views = {qid: Query(qid, text) for qid, text in zip(queries["query_id"], queries["text"])}
    candidates_of = split_candidates(params, snapshot, paths.candidates, paths.fallback)
    qrels = snapshot.table("qrels").to_pandas()
    # A logged query has no as-of date: what has a later version is outdated (``outdated: demote``).
    labels = AccessLabels(snapshot.table("corpus"), pa.table({"query_id": queries["query_id"].tolist()}))
    runs, latencies = {}, {}
    for system in systems:
        per_seed = seeded_configs(params, configs, system)
        typed = per_seed[next(iter(per_seed))] if per_seed else configs
        context = BuildContext(qrels=qrels, systems=typed, candidates_of=candidates_of,
                               evaluated_split=params.dataset.eval_split, stale=labels.stale)
        settings = settings_of(typed[system], labels.stale, f"systems.{system}")
        runs[system], latencies[system] = rerank(candidates[typed[system].access_filter], views,
                                                 build_system(system, typed[system], context), settings)
    return runs, latencies


def served_replay(params: Params, config, candidates: dict[bool, pd.DataFrame], queries: pd.DataFrame,
                  arrivals: pd.DataFrame, latencies: dict[str, pd.DataFrame]) -> dict:
    """The first ``served.max_arrivals`` arrivals sent at their times (divided by ``speed``) to the served system, each
    request its query's top ``depth`` candidates; beside it, the simulated queue of the same arrivals from the
    system's in-process service times, so the simulation is checked against the served model."""
    served = config.served
    if served.system not in latencies:
        raise ConfigError(f"online.shadows: served.system {served.system!r} is not among the replayed systems "
                          f"({', '.join(latencies)})")
    system = first_seed_configs(params)[served.system]
    each = expand_arrivals(arrivals).sort_values("seconds", kind="stable").head(served.max_arrivals)
    views = {qid: Query(qid, text) for qid, text in zip(queries["query_id"], queries["text"])}
    wanted = candidates[system.access_filter]
    requests = {head.query_id: Request(head.query_text, head.passages, None)
                for head in heads(wanted[wanted["query_id"].isin(set(each["query_id"]))], views, system.depth)}
    sent = each[each["query_id"].isin(set(requests))]
    seconds = (sent["seconds"].to_numpy() - each["seconds"].iloc[0]) / config.speed
    schedule = [(float(at), requests[qid]) for at, qid in zip(seconds, sent["query_id"])]
    latency = latencies[served.system]
    service = cold_seconds(latency).set_axis(latency["query_id"])
    simulated = queue_latency(seconds, service.reindex(sent["query_id"]).fillna(0.0).to_numpy())
    if system.kind == "http_rerank":
        where = system.base_url
        endpoint = Endpoint(where, system.protocol, system.model, api_key(system, f"systems.{served.system}"))
        replayed = replay_arrivals(endpoint, schedule, served)
    else:
        where = "rerankeval serve (Ray Serve, this machine)"
        options = params.serving.serve.model_copy(update={"port": free_port(params.serving.serve.host)})
        with served_endpoint(served.system, params.systems, options) as url:
            replayed = replay_arrivals(Endpoint(url, model=served.system), schedule, served)
    return {"system": served.system, "endpoint": where, "arrivals": len(each),
            "without_candidates": len(each) - len(schedule), "speed": config.speed, "replayed": replayed,
            "simulated": simulated}


def measure(runs: dict[str, pd.DataFrame], latencies: dict[str, pd.DataFrame], arrivals: pd.DataFrame,
            traffic: pd.Series, baseline: str, config, params: Params) -> dict:
    """Per system: agreement with the baseline (its share of changed top k weighted by each query's ``traffic``),
    latency at the arrival pattern, machine time and guardrails."""
    boot = {"n_samples": params.compare.samples, "seed": params.compare.seed,
            "confidence": params.compare.confidence, "method": params.compare.ci_method}
    each = expand_arrivals(arrivals)
    found, per_query = {}, {}
    for system, run in runs.items():
        latency = latencies[system]
        service = cold_seconds(latency).set_axis(latency["query_id"])
        entry = {"latency": queue_latency(each["seconds"].to_numpy(),
                                          service.reindex(each["query_id"]).fillna(0.0).to_numpy(), config.speed),
                 "service_ms_mean": float(service.mean() * 1000) if len(service) else None,
                 "machine_s_per_1k": float(service.reindex(each["query_id"]).fillna(0.0).sum() / len(each) * 1000),
                 "guardrails": segment_guardrails(arrivals, latency, set(run["query_id"]), FUSION_FALLBACK)}
        if system != baseline:
            agreement = run_agreement(runs[baseline], run, k=config.k, p=config.p)
            entry["agreement"] = summarize_agreement(agreement, boot, k=config.k, p=config.p)
            weights = traffic.reindex(agreement.index).fillna(0)
            entry["top_k_changed_of_traffic"] = (float((agreement["changed"] * weights).sum() / weights.sum())
                                                 if weights.sum() else None)
            per_query[system] = {"per_query_rbo": agreement["rbo"]}
        found[system] = entry
    return {"systems": found, "_per_query": per_query}
