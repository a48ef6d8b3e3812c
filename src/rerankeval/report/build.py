"""The report from the evaluate and compare outputs: the decision page (report.md), the details page with every other
table, their plots and evaluation.yaml."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel

from ..eval.funnel import HEADROOM_PREFIX, ORACLE_PREFIX
from ..rerank.assemble import TIE_BREAK
from ..stats.sanity import needs_negative_judgments
from ..stats.schema import Compare, Costs, DepthCost, FrontierPoint, SweepPoint, Verdicts
from ..systems.roles import KindTraits
from ..systems.run_coverage import coverage_cut, coverage_text
from . import configurations, decision, frontier, llm, moved, online, precision, serving, weighted
from . import markdown as md
from . import plots
from .answers import AnswerInputs, answers_section
from .caveats import language_warnings
from .judging import judging_section, power_section
from .seeds import seeds_section
from .training import training_section


@dataclass(frozen=True)
class ReportInputs:
    params: Any
    manifest: Mapping[str, Any]
    metrics: Mapping[str, Any]
    compare: Compare
    verdicts: Verdicts
    costs: Costs
    """The compare stage's analysis (``stats.analysis.Analysis``): the comparison, the decision and what quality costs
    (latency, cost and the frontier)."""
    per_query: pd.DataFrame
    depth_curve: pd.DataFrame
    runs: Mapping[str, pd.DataFrame]
    latencies: Mapping[str, pd.DataFrame]
    run_metadata: Mapping[str, Mapping[str, Any]]
    latency_metadata: Mapping[str, Mapping[str, Any]]
    latency_measurements: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Each system's dedicated latency measurement (stage `latency`)."""
    loadtest: Mapping[str, Any] | None = None
    answers: AnswerInputs = AnswerInputs()
    model_card: Mapping[str, Any] | None = None
    """The train stage's model card (what the fine-tuned reranker was trained on), when there is one."""
    qrels: pd.DataFrame | None = None
    queries: pd.DataFrame | None = None
    """The evaluated split's queries (query_id, text, slice columns)."""
    sweep_pairs: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """The pairs each policy sweep needed (the sweep stage's points' metadata); the points are costs.json's."""
    judging_queue: pd.DataFrame | None = None
    """The compare stage's judging queue (``eval.judging``), read from its TSV; ``judging_queue_path`` names it."""
    judging_queue_path: str = ""
    online: Mapping[str, Any] | None = None
    """The online stage's sizing of each challenger's online experiment (``online.json``)."""


def _slice_rows(compare: Compare, primary: str) -> pd.DataFrame:
    return pd.DataFrame([
        {"challenger": c.challenger, "slice": f"{column}={row.value}", "delta": c.delta, "low": c.low,
         "high": c.high, "too_small": c.too_small}
        for column, rows in compare.slices.items() for row in rows for c in row.comparisons
        if c.metric == primary])


def _frame(rows: Sequence[BaseModel], model: type[BaseModel]) -> pd.DataFrame:
    """A table of costs.json rows, one column per field of their model (none when there is no row)."""
    return pd.DataFrame([row.model_dump() for row in rows], columns=list(model.model_fields))


def _not_applicable(inputs: ReportInputs) -> list[str]:
    """The evaluated measures that mean nothing on these qrels (unjudged-based ones on positive-only qrels)."""
    if inputs.compare.unjudged.get("applicable", True):
        return []
    names = next(iter(inputs.metrics["systems"].values()))
    return [name for name in names if not name.startswith((ORACLE_PREFIX, HEADROOM_PREFIX))
            and needs_negative_judgments(name)]


def _run_coverage_warnings(run_metadata: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """A line per external run that the frozen candidates cut (``systems.baselines.run_coverage``)."""
    found = {system: metadata.get("describe", {}).get("run_coverage") for system, metadata in run_metadata.items()}
    return {system: f"{coverage_text(coverage)}: those rows were not used, so this run's scores only reorder the "
                    "frozen candidates (compare it as a reranker of them, not as the first stage it was)"
            for system, coverage in found.items() if coverage and coverage_cut(coverage)}


def _source_orders(source: str, retrieval: Mapping[str, Any], traits: Mapping[str, KindTraits]) -> dict[str, str]:
    """The `fusion`-kind systems (they reproduce the candidates' own order) under a run or replay source's name, so
    the systems table does not pass that first stage off as a BM25 + dense fusion; none for the hybrid."""
    if source == "hybrid":
        return {}
    return {system: md.first_stage_label(source, retrieval) for system, found in traits.items()
            if found.role == "first_stage" and found.retriever == "hybrid"}


@dataclass(frozen=True)
class ReportLinks:
    """Where the pages point, relative to the folder of report.md and details.md (the same folder)."""

    plots: str = "plots"
    decision: str = "report.md"
    details: str = "details.md"
    explorer: str = "site/explorer.html"


@dataclass(frozen=True)
class Report:
    decision: str
    """report.md: the decision page."""
    details: str
    """details.md: every other table, every reason, the capped per-query lists."""
    record: dict[str, Any]
    """evaluation.yaml."""


def build_report(inputs: ReportInputs, plots_dir: Path, links: ReportLinks = ReportLinks()) -> Report:
    """The decision page, the details page and the machine-readable evaluation record; writes the plots to
    ``plots_dir``."""
    plots_link = links.plots
    params, compare = inputs.params, inputs.compare
    evaluation = params.evaluation
    primary = params.compare.release.primary_metric
    top_n = params.retrieval.top_n
    systems = params.system_names

    traits = {system: KindTraits.from_metadata(inputs.run_metadata[system].get("traits"), f"run of {system}")
              for system in systems}
    reference = [s for s in systems if traits[s].reference]  # first-stage orders and bounds: not under test
    bounds = [s for s in systems if traits[s].bound]
    curve_means = inputs.depth_curve.groupby(["system", "depth", "measure"], as_index=False)["value"].mean() \
        .rename(columns={"value": "mean"})
    quality_measure = inputs.costs.measure
    plots.depth_curve(curve_means, quality_measure, plots_dir / "depth_curve.png", bounds)
    per_query = inputs.per_query
    baseline = per_query[per_query["system"] == compare.baseline].set_index("query_id")[primary]
    deltas = pd.concat([
        pd.DataFrame({"challenger": system, "delta": frame.set_index("query_id")[primary] - baseline})
        for system, frame in per_query.groupby("system") if system != compare.baseline]).dropna()
    plots.delta_distribution(deltas[~deltas["challenger"].isin(reference)], primary,
                             plots_dir / "delta_distribution.png")
    slice_rows = _slice_rows(compare, primary)
    critical = params.dataset.critical_slices
    plots.slice_deltas(slice_rows[~slice_rows["challenger"].isin(reference)] if len(slice_rows) else slice_rows,
                       primary, plots_dir / "slice_deltas.png", compare.method.confidence,
                       lambda label: any(spec.matches(*label.split("=", 1)) for spec in critical))

    analysed = inputs.costs  # latency, cost and the frontier: the compare stage's analysis (pipeline.compare)
    hourly_price = analysed.hourly_price_usd
    costs = {system: analysed.systems[system] for system in systems}  # the params' order (JSON sorts its keys)
    depth_costs = _frame(analysed.depths, DepthCost)
    pool_recall = {row.depth: row.candidate_recall for row in analysed.depths}  # the same for every system
    drawn = depth_costs[depth_costs["p95_ms"].notna() & ~depth_costs["system"].isin(bounds)]
    if len(drawn):  # none without evaluation.depths
        plots.depth_cost(drawn, quality_measure, plots_dir / "depth_cost.png")
    points = _frame(analysed.frontier, FrontierPoint)
    sweeps = _frame(analysed.sweeps, SweepPoint)
    serving.loadtest_plot(inputs.loadtest, plots_dir / "loadtest.png")
    latency_sources = inputs.verdicts.latency_source
    if len(points):
        frontier.plot_frontier(points, quality_measure, plots_dir / "pareto.png", {
            f"{system} ({traits[system].role})": quality for system, quality in analysed.bounds.items()})

    environments = {}
    for system in systems:
        described = inputs.run_metadata[system].get("describe", {})
        if "environment" in inputs.latency_metadata[system]:  # a model's machine, recorded with its timings
            environments[system] = {
                **inputs.latency_metadata[system]["environment"], "model": described["model"],
                "revision": described["revision"],
                "weights_sha256": (described["weights_sha256"] or "")[:12] or None, "dtype": described["dtype"],
                "peak_rss_mib": round(float(inputs.latency_metadata[system]["peak_rss_mib"]), 1)}
    variants = inputs.verdicts.variants
    precision_rows = precision.precision_rows(variants.get("precision", []),
                                              {s: m.get("describe", {}) for s, m in inputs.run_metadata.items()})
    tables = inputs.manifest["tables"]
    context = {"dataset": params.dataset.name, "split": compare.split, "queries": compare.queries,
               "ranked_queries": inputs.verdicts.verdict_queries,
               "no_relevant": evaluation.no_relevant, "sample": inputs.manifest.get("sample"),
               "snapshot": {name: entry["content_sha256"] for name, entry in tables.items()},
               "retrieval": params.retrieval.to_dict(), "tie_break": TIE_BREAK, "method": compare.method,
               "candidate_source": inputs.metrics.get("candidate_source", "hybrid")}
    decision_inputs = decision.DecisionInputs(
        verdicts=inputs.verdicts, compare=compare, traits=traits, costs=costs, hourly_price=hourly_price,
        generator=str(inputs.answers.generator.get("kind", "n/a")),
        swept=len(sweeps) > 0, access=inputs.metrics.get("access"))
    decision_text = md.render([decision.decision_page(md.decision_header(context), decision_inputs, plots_link,
                                                      links.details)])
    details = md.render([
        md.header_section(context, f"details ([decision page]({links.decision}))"),
        training_section(inputs.model_card, params.train.out_dir, params.systems),
        "## Release verdict: every reason\n\n" + "\n\n".join(md.verdict_reasons(inputs.verdicts, folded=False)),
        power_section(inputs.verdicts),
        moved.moved_section(inputs.runs, inputs.qrels, inputs.queries, inputs.manifest.get("slice_columns", []),
                            compare.baseline, systems, reference, params.compare.worst_n, links.explorer)
        if inputs.qrels is not None else "",
        md.first_stage_section(inputs.metrics["first_stage"], top_n, compare.first_stage,
                              inputs.metrics.get("fusion"), context["retrieval"]),
        md.systems_section(compare, inputs.metrics, params.compare.metrics, evaluation.oracle_measures, top_n,
                           {**_run_coverage_warnings(inputs.run_metadata),
                            **language_warnings(inputs.run_metadata)},
                           _source_orders(context["candidate_source"], context["retrieval"], traits)),
        md.deltas_section(compare),
        seeds_section(compare),
        weighted.weighted_section(compare.weighted, primary),
        configurations.configurations_section(
            systems, params.systems, traits, inputs.run_metadata, inputs.latencies, inputs.latency_metadata, per_query,
            compare, inputs.queries, primary, inputs.verdicts.latency_p95_ms, hourly_price,
            variants.get("composites", {}),
            params.compare.worst_n),
        llm.llm_section(systems, inputs.run_metadata, inputs.verdicts.invalid_outputs),
        md.depth_section(curve_means, quality_measure, pool_recall, plots_link, on_decision_page=True),
        md.slices_section(compare, primary, plots_link, on_decision_page=True),
        answers_section(compare, inputs.answers, analysed.end_to_end, plots_dir, plots_link, reference),
        md.unjudged_section(compare),
        judging_section(inputs.judging_queue, primary, params.compare.unjudged.measure, compare.baseline,
                        inputs.judging_queue_path),
        md.regressions_section(compare, primary, bounds, links.explorer),
        md.cost_section(costs, hourly_price, inputs.verdicts.latency_p95_ms),
        serving.latency_section(inputs.latency_measurements, latency_sources, inputs.verdicts.latency_untrusted),
        serving.loadtest_section(inputs.loadtest, plots_link),
        md.depth_cost_section(depth_costs, quality_measure, plots_link),
        online.online_section(inputs.online, plots_dir, plots_link),
        online.logged_section(list(params.online.readouts), list(params.online.shadows)),
        frontier.frontier_section(points, sweeps, inputs.sweep_pairs, quality_measure, plots_link,
                                  on_decision_page=True, resolution=analysed.latency_resolution),
        precision.precision_section(precision_rows, primary, params.compare.confidence),
        precision.served_parity_section(inputs.verdicts.served_parity),
        md.environment_section(environments),
        md.all_metrics_section(inputs.metrics, _not_applicable(inputs)),
    ])
    record = md.evaluation_record(params, inputs.manifest, compare, inputs.metrics)
    record["efficiency"] = serving.efficiency_record(inputs.latency_measurements, latency_sources, inputs.loadtest)
    return Report(decision=decision_text, details=details, record=record)
