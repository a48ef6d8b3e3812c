"""Stage `compare`: every system against the baseline, with paired CIs, corrected p-values and a verdict."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..core.io import read_json, read_table, table_metadata, write_json
from ..core.privacy import redact_values, redactor
from ..data.snapshot import Snapshot
from ..policies.config import frontier_measure
from ..policies.frontier import frontier_points, latency_resolution, own_points, settings_held_elsewhere
from ..rerank.cost import depth_costs, end_to_end_latency, on_measured_scale, system_costs
from ..rerank.latency import cold_seconds, model_seconds, summarise_latency, timed_queries
from ..serving.measure import verdict_latencies, verdict_times_by_query
from ..stats.agreement import agreement_summary, score_parity
from ..stats.caveats import generator_caveat, generator_sanity, language_caveats
from ..stats.analysis import PipelineRecords, RankingEvidence, analyze
from ..stats.comparison import relevant_doc_type
from ..stats.decisions import RunFacts, finite
from ..stats.guardrails import invalid_output_record
from ..stats.run_checks import ParityEvidence
from ..stats.sanity import first_stage_sanity, identical_to_baseline, positive_only_reason, reduced_to_baseline
from ..stats.variants import mean_interval, precision_variant, twins
from ..systems.base import SKIPPED
from ..systems.roles import KindTraits, floor_system
from ..workspace.paths import (DEPTH_CURVE_FILE, FIRST_STAGE_FILE, PER_QUERY_FILE, PER_QUERY_SEEDS_FILE,
                               SYSTEM_PLACEHOLDER, PipelinePaths)
from ..workspace.runs import load_latencies, load_runs, load_traits, system_file
from .judging import write_judging_queue
from .params import Params

# The first-stage measure the sanity check uses when the primary metric is not among the first stage's measures.
FIRST_STAGE_FALLBACK_METRIC = "nDCG@10"


def run(params: Params, paths: PipelinePaths) -> None:
    """The verdict's latency check reads each system's dedicated measurement (stage `latency`) or the load test's
    p95 for the system it served, and ``verdicts.json`` says which it read."""
    settings, split = params.compare.for_systems(params.system_names), params.dataset.eval_split
    for system in params.compare.inactive_claims(params.system_names):
        print(f"compare: note: the claim for {system} decides nothing: this run does not configure {system} or the "
              "system it is compared with (compare.release.claims)")
    rule = settings.release.model_copy(update={"critical_slices": params.dataset.critical_slices})
    snapshot = Snapshot(paths.snapshot)
    per_query = read_table(paths.eval / PER_QUERY_FILE).to_pandas()
    queries = snapshot.queries_of(split).set_index("query_id")
    qrels = snapshot.table("qrels").to_pandas()
    slices = queries[snapshot.slice_columns].copy()
    doc_type = relevant_doc_type(qrels, snapshot.table("corpus").to_pandas().set_index("doc_id")["metadata"])
    if doc_type is not None:
        slices["relevant_doc_type"] = doc_type.reindex(slices.index)

    query_ids = sorted(per_query.loc[per_query["system"] == settings.baseline, "query_id"])
    runs = load_runs(paths.run(SYSTEM_PLACEHOLDER), params.system_names)
    traits = load_traits(paths.run(SYSTEM_PLACEHOLDER), params.system_names)
    latency_frames = load_latencies(paths.run_latency(SYSTEM_PLACEHOLDER), params.system_names)
    latency = {system: summarise_latency(frame, params.evaluation.warmup_queries)
               for system, frame in latency_frames.items()}
    first_stage = check_first_stage(params, per_query, read_table(paths.eval / FIRST_STAGE_FILE).to_pandas(),
                                    rule.primary_metric, traits)
    generator, language, caveats = check_caveats(params, paths, per_query, traits, slices, query_ids,
                                                 rule.primary_metric)
    latency_p95_ms, sources, untrusted = verdict_latencies(str(paths.measurement(SYSTEM_PLACEHOLDER)),
                                                           paths.loadtest, params.system_names)
    latency_by_query = verdict_times_by_query(str(paths.measurement(SYSTEM_PLACEHOLDER)), paths.loadtest,
                                              params.system_names)
    invalid = invalid_outputs(latency_frames, settings.resampling())
    parity = served_parity(params, runs)
    identical = identical_to_baseline(runs, settings.baseline, query_ids)
    facts = RunFacts(
        latency_p95_ms=latency_p95_ms, latency_untrusted=untrusted,
        fallbacks={system: (summary["fallbacks"], summary["queries"]) for system, summary in latency.items()},
        timeouts={system: summary["timeouts"] for system, summary in latency.items()},
        identical_to_baseline=identical, identical_because=identical_because(paths, identical, settings.baseline),
        baseline_flag=first_stage["flag"], positive_only=positive_only_reason(qrels, query_ids),
        cost_seconds={system: timed_cold_seconds(frame, params.evaluation.warmup_queries)
                      for system, frame in latency_frames.items()}, caveats=caveats,
        reference_systems=frozenset(system for system, found in traits.items() if found.reference),
        coverage=run_coverage(paths, params.system_names), latency_by_query=latency_by_query,
        invalid_outputs={system: (found["invalid"], found["calls"]) for system, found in invalid.items()},
        served_parity={system: ParityEvidence(found["reference"], found["parity"]["pairs"],
                                              found["parity"]["max_diff"], found["parity"]["tolerance"],
                                              _where(found["parity"]["at"])) for system, found in parity.items()})
    costs = cost_analysis(params, paths, per_query, runs, latency_frames, traits,
                          {system: None if p95 is None else finite(p95) for system, p95 in latency_p95_ms.items()})
    records = PipelineRecords(
        split=split, systems=params.system_names, first_stage=first_stage, generator_sanity=generator,
        language_check=language, latency_source=sources,
        # Beside the guardrails: evaluated queries a system answered with no document at all (every candidate removed
        # by the access filter, or none retrieved). A reranker only permutes, so this is the candidates' rate, shown
        # per system (an access_filter: false system differs), not a check that could fail.
        empty_results={system: {"empty": int(len(set(query_ids) - set(run["query_id"]))), "queries": len(query_ids)}
                       for system, run in runs.items()},
        inactive_claims=params.compare.inactive_claims(params.system_names), served_parity=parity,
        variants=variant_statistics(params, per_query, latency_frames, traits, rule.primary_metric, runs,
                                    latency_by_query),
        costs=costs, rankings=RankingEvidence(runs, qrels, queries["text"].to_dict()), invalid_outputs=invalid,
        weights=queries["weight"] if "weight" in queries.columns else None)
    analysis = analyze(per_query, slices, settings, rule, facts,
                       read_table(paths.eval / PER_QUERY_SEEDS_FILE).to_pandas(), records)
    # Written for people as well as programs: personal data in query texts is redacted (core.privacy); costs.json
    # holds numbers and names only.
    redact = redactor(params.privacy)
    queued = write_judging_queue(params, paths, runs, traits, qrels, queries, snapshot, redact)
    files = analysis.files()
    write_json(paths.compare, redact_values(files["compare"], redact))
    write_json(paths.verdicts, redact_values(files["verdicts"], redact))
    write_json(paths.costs, files["costs"])
    for flag in (first_stage["flag"], generator["flag"]):
        if flag:
            print(f"compare: warning: {flag}")
    print(f"compare: {paths.judging_queue}: {queued} unjudged pairs to judge next")
    decided = analysis.verdicts
    for reference, found in {settings.baseline: decided.verdicts, **(decided.verdicts_by_baseline or {})}.items():
        for system, verdict in found.items():
            print(f"compare: {system:>12} vs {reference}: {verdict.decision} ({verdict.decided_by})")


def cost_analysis(params: Params, paths: PipelinePaths, per_query: pd.DataFrame, runs: dict[str, pd.DataFrame],
                  latency_frames: dict[str, pd.DataFrame], traits: dict[str, KindTraits],
                  verdict_p95_ms: dict[str, float | None]) -> dict:
    """What each system costs and the quality-cost frontier (costs.json): latency percentiles, tokens and
    cost per 1k queries per system (``rerank.cost``), each system at each evaluated depth, each sweep setting, and
    every configuration's point with the Pareto frontier marked (``policies.frontier``), the served point included.
    Every p95 is on the scale of the measurement the verdict reads (``rerank.cost.latency_scales``), so a system has
    one p95 on every page and plot; cost is the quality run's machine time, as a claim's saving reads it."""
    evaluation = params.evaluation
    price, warmup = evaluation.hourly_price_usd, evaluation.warmup_queries
    measure = frontier_measure(params.policies.measure, evaluation.depth_measures,
                               params.compare.release.primary_metric)
    costs = system_costs({system: params.systems[system] for system in params.system_names}, runs, latency_frames,
                         price, warmup, verdict_p95_ms)
    scales = {system: record["latency_scale"] for system, record in costs.items()}
    curve_means = read_table(paths.eval / DEPTH_CURVE_FILE).to_pandas() \
        .groupby(["system", "depth", "measure"], as_index=False)["value"].mean().rename(columns={"value": "mean"})
    depths = depth_costs(curve_means, measure, runs, latency_frames, price, warmup, scales)
    own = own_points(params.system_names, per_query, measure, costs, verdict_p95_ms)
    sweeps = settings_held_elsewhere(on_measured_scale(read_table(paths.sweep_points).to_pandas(), scales), depths,
                                     own, {system: params.systems[system] for system in params.system_names})
    loadtest = read_json(paths.loadtest) if paths.loadtest.exists() else None
    resolution = latency_resolution({system: read_json(paths.measurement(system))["p95_ms_by_round"]
                                     for system in params.system_names if paths.measurement(system).exists()})
    points = frontier_points(depths, traits, own, sweeps, loadtest, resolution)
    return {"hourly_price_usd": price, "warmup_queries": warmup, "measure": measure,
            "latency_resolution": resolution,
            "systems": {system: _finite(record) for system, record in costs.items()},
            "depths": [_finite(row) for row in depths.to_dict("records")],
            "sweeps": [_finite(row) for row in sweeps.to_dict("records")],
            "frontier": [_finite(row) for row in points.to_dict("records")],
            "end_to_end": {system: _finite(end_to_end_latency(latency_frames[system],
                                                              read_table(paths.timing(system)).to_pandas(), warmup,
                                                              scales[system]))
                           for system in params.system_names if paths.timing(system).exists()},
            "bounds": {row.system: float(row.quality) for row in own.itertuples()
                       if traits[row.system].bound and np.isfinite(row.quality)}}


def _finite(record: dict) -> dict:
    """``record`` with NumPy scalars as Python's and NaN as None (JSON has no NaN)."""
    plain = {}
    for key, value in record.items():
        if isinstance(value, np.generic):
            value = value.item()
        plain[key] = None if isinstance(value, float) and not np.isfinite(value) else value
    return plain


def run_coverage(paths: PipelinePaths, systems: list[str]) -> dict[str, tuple[int, int]]:
    """Per external run (``systems.baselines.run_coverage`` in its rerank stage's metadata): (reranked queries whose
    run rows name at least one of their candidates, reranked queries)."""
    found = {}
    for system in systems:
        coverage = table_metadata(system_file(paths.run(SYSTEM_PLACEHOLDER), system)).get("describe", {}).get(
            "run_coverage")
        if coverage and "ranked_queries" in coverage:
            found[system] = (coverage["ranked_queries"], coverage["queries"])
    return found


def invalid_outputs(latency_frames: dict[str, pd.DataFrame], boot) -> dict[str, dict]:
    """Per LLM reranker (``systems.llm``): its invalid outputs in total and per query with a CI, from the per-query
    counts its rerank stage recorded (``timings``: ``invalid_outputs`` of ``llm_calls``)."""
    found = {}
    for system, frame in latency_frames.items():
        timings = [dict(t) if t is not None else {} for t in frame["timings"]]
        if not any("llm_calls" in t for t in timings):
            continue
        found[system] = invalid_output_record(np.array([t.get("invalid_outputs", 0.0) for t in timings]),
                                              np.array([t.get("llm_calls", 0.0) for t in timings]), boot)
    return found


def served_parity(params: Params, runs: dict[str, pd.DataFrame]) -> dict[str, dict]:
    """Per served system of ``compare.served_parity`` that this run configures with its reference: its score parity
    (``stats.agreement.score_parity``) and how far its ranking agrees with the reference's (``agreement_summary``)."""
    boot = params.compare.resampling()
    found = {}
    for declared in params.compare.served_parity:
        if declared.system not in runs or declared.reference not in runs:
            print(f"compare: note: served parity of {declared.system} against {declared.reference} decides nothing: "
                  "this run does not configure both (compare.served_parity)")
            continue
        found[declared.system] = {
            "reference": declared.reference, "agreement": agreement_summary(runs[declared.reference],
                                                                            runs[declared.system], boot),
            "parity": score_parity(runs[declared.reference], runs[declared.system], declared.tolerance,
                                   declared.reference_transform)}
    return found


def _where(at: dict | None) -> str:
    return "" if at is None else f"query {at['query_id']}, document {at['doc_id']}"


def timed_cold_seconds(latency: pd.DataFrame, warmup: int) -> pd.Series:
    """A system's cold seconds of each timed query (cost per query at any machine price), by query id: a claim's
    cost saving pairs two systems on them (``stats.saving``)."""
    timed = timed_queries(latency, warmup)
    return cold_seconds(timed).set_axis(timed["query_id"].to_numpy())


MEASURED = "the latency stage's measurement"
"""A precision variant's speed-up timed as its verdict's latency is: both sides in the dedicated measurement."""


def variant_statistics(params: Params, per_query: pd.DataFrame, latencies: dict[str, pd.DataFrame],
                       traits: dict[str, KindTraits], metric: str, runs: dict[str, pd.DataFrame],
                       measured_ms: Mapping[str, pd.Series]) -> dict:
    """What the report's precision and configurations tables state with a CI: each precision variant against its
    float32 twin (quality, speed and how far their rankings agree, ``stats.agreement``), each composed system's cold
    seconds per query and skip rate (``stats.variants``).

    A variant's speed-up pairs the per-query times of the dedicated latency measurement (``measured_ms``: the
    verdict round's, by query id), taken in one process one after the other, where both sides have them: the times
    a latency claim against the twin reads, so one page states one speed-up. Otherwise (a side the load test decided)
    the quality run's model seconds, which a cache hit replays as measured when the pair was first scored."""
    settings, warmup = params.compare, params.evaluation.warmup_queries
    boot = settings.resampling()
    systems = {system: params.systems[system] for system in params.system_names}
    quality = per_query.pivot(index="query_id", columns="system", values=metric)
    compared = settings.for_systems(systems).references(systems)  # the pairs the analysis compares on ``metric``
    precision = []
    for variant, twin in twins(systems, {name for name, found in traits.items() if found.learned}):
        if twin in measured_ms and variant in measured_ms:
            seconds = pd.concat([measured_ms[s].rename(s) / 1000 for s in (twin, variant)], axis=1)
            timed = MEASURED
        else:
            seconds = pd.concat([model_seconds(timed_queries(latencies[s], warmup).set_index("query_id")).rename(s)
                                 for s in (twin, variant)], axis=1)
            timed = " / ".join(_quality_run_timing(latencies[s]) for s in (twin, variant))
        found = precision_variant(variant, twin, quality, seconds, boot, compared=variant in compared.get(twin, []))
        found["timed"] = timed
        found["agreement"] = agreement_summary(runs[twin], runs[variant], boot)
        precision.append(found)
    composites = {}
    for system in systems:
        if traits[system].composite:
            latency = latencies[system]
            composites[system] = {
                "cold_seconds": mean_interval(cold_seconds(timed_queries(latency, warmup)).to_numpy(), boot),
                "skipped": mean_interval((latency["mode"] == SKIPPED).to_numpy(dtype=np.float64), boot)}
    return {"metric": metric, "precision": precision, "composites": composites}


def _quality_run_timing(latency: pd.DataFrame) -> str:
    measured, replayed = latency["compute_s"].sum(), latency["replayed_s"].sum()
    return "the quality run" if measured >= replayed else "the quality run, replayed from the cache"


def check_caveats(params: Params, paths: PipelinePaths, per_query: pd.DataFrame, traits: dict[str, KindTraits],
                  slices: pd.DataFrame, query_ids: list[str], primary: str) -> tuple[dict, dict, dict]:
    """The generator sanity check, each learned system's language check (its rerank stage recorded it in the run's
    metadata), and the caveats they put on each challenger's verdict (``stats.caveats``)."""
    settings = params.compare
    ceiling = next((name for name, found in traits.items() if found.role == "ceiling"), None)
    generator = generator_sanity(per_query, settings.generator_check.metric, ceiling, floor_system(traits),
                                 settings.baseline, **settings.resampling(with_method=False))
    on_every_system = [caveat for caveat in [generator_caveat(generator, primary)] if caveat is not None]
    language = {system: table_metadata(paths.run(system)).get("describe", {}).get("language_check")
                for system in params.system_names if traits[system].learned}
    language = {system: check for system, check in language.items() if check}
    caveats = {system: (*on_every_system, *language_caveats(language.get(system), slices, query_ids))
               for system in params.system_names}
    return generator, language, caveats


def identical_because(paths: PipelinePaths, identical: Mapping[str, int], baseline: str) -> dict[str, str]:
    """Why each system identical to the baseline ranks as it does, where its run says its own settings reduce it to
    the baseline (``describe.reduces_to``: a blend at weight 0 or 1)."""
    return reduced_to_baseline({system: table_metadata(paths.run(system)).get("describe", {}).get("reduces_to")
                                for system in identical}, baseline)


def check_first_stage(params: Params, per_query: pd.DataFrame, first_stage: pd.DataFrame, primary: str,
                      traits: dict[str, KindTraits]) -> dict:
    """``stats.sanity.first_stage_sanity`` on the evaluated first stage, against the first floor-kind system."""
    settings = params.compare
    metric = primary if primary in first_stage.columns else FIRST_STAGE_FALLBACK_METRIC
    random = floor_system(traits)
    floor = None
    if random is not None and metric in per_query.columns:
        floor = per_query[per_query["system"] == random].set_index("query_id")[metric]
    return first_stage_sanity(first_stage, floor, metric, settings.baseline, traits[settings.baseline].retriever,
                              **settings.resampling())
