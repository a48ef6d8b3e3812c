"""Stage `report`: reports/report.md (the decision page), details.md, evaluation.yaml, the PNG plots and the HTML site,
from the evaluate and compare outputs (the site's explorer also reads the frozen candidates, contexts and answers)."""

from __future__ import annotations

from pathlib import Path

import yaml

from ..core.io import read_json, read_table, table_metadata, write_text
from ..core.privacy import redactor
from ..data.snapshot import Snapshot
from ..eval.judging import read_queue_tsv
from ..report.answers import AnswerInputs
from ..rag.answers import ANSWERS_SCHEMA
from ..rag.select import CONTEXT_SCHEMA
from ..report.build import ReportInputs, ReportLinks, build_report
from ..report.site import SiteInputs, build_site
from ..retrieval.candidates import candidate_source, first_stage_filled, load_candidates, load_passages
from ..stats.analysis import read_analysis
from ..systems.roles import KindTraits
from ..training.config import MODEL_CARD
from ..workspace.paths import DEPTH_CURVE_FILE, PER_QUERY_FILE, SYSTEM_PLACEHOLDER, PipelinePaths
from ..workspace.runs import load_latencies, load_runs
from .params import Params


def answer_inputs(params: Params, paths: PipelinePaths) -> AnswerInputs:
    """The generator, select rule and calibration of the answers section (its latency is compare.json's)."""
    return AnswerInputs(generator=params.rag.generator, select=params.rag.select.to_dict(),
                        calibration=read_json(paths.calibration))


def run(params: Params, paths: PipelinePaths) -> None:
    systems = params.system_names
    snapshot = Snapshot(paths.snapshot)
    analysis = read_analysis(paths.compare, paths.verdicts, paths.costs)
    inputs = ReportInputs(
        params=params, manifest=snapshot.manifest,
        metrics=read_json(paths.metrics), compare=analysis.compare, verdicts=analysis.verdicts, costs=analysis.costs,
        per_query=read_table(paths.eval / PER_QUERY_FILE).to_pandas(),
        depth_curve=read_table(paths.eval / DEPTH_CURVE_FILE).to_pandas(),
        runs=load_runs(paths.run(SYSTEM_PLACEHOLDER), systems),
        latencies=load_latencies(paths.run_latency(SYSTEM_PLACEHOLDER), systems),
        run_metadata={system: table_metadata(paths.run(system)) for system in systems},
        latency_metadata={system: table_metadata(paths.run_latency(system)) for system in systems},
        latency_measurements={system: read_json(paths.measurement(system)) for system in systems},
        loadtest=read_json(paths.loadtest) if paths.loadtest.exists() else None,
        answers=answer_inputs(params, paths),
        model_card=_model_card(Path(params.train.out_dir)),
        qrels=snapshot.table("qrels").to_pandas(), queries=snapshot.queries_of(params.dataset.eval_split),
        sweep_pairs=table_metadata(paths.sweep_points).get("pairs", {}),
        judging_queue=read_queue_tsv(paths.judging_queue.read_text(encoding="utf-8"), str(paths.judging_queue)),
        judging_queue_path=str(paths.judging_queue), online=read_json(paths.online))
    folder = paths.report.parent  # report.md and details.md link from the same folder
    report = build_report(inputs, paths.plots, ReportLinks(
        plots=paths.plots.relative_to(folder).as_posix(), decision=paths.report.relative_to(folder).as_posix(),
        details=paths.details.relative_to(folder).as_posix(),
        explorer=(paths.site / "explorer.html").relative_to(folder).as_posix()))
    redact = redactor(params.privacy)  # what people read shows no personal data (core.privacy)
    write_text(paths.report, redact(report.decision))
    write_text(paths.details, redact(report.details))
    write_text(paths.record, redact(yaml.safe_dump(report.record, sort_keys=False, allow_unicode=True)))
    build_site(site_inputs(params, paths, inputs), {"dataset": params.dataset.name, "split": inputs.compare.split,
                                                   "queries": inputs.compare.queries},
               paths.site, paths.plots, [paths.report, paths.details], redact)
    print(f"report: {paths.report} (details: {paths.details}), site: {paths.site / 'index.html'}")


def site_inputs(params: Params, paths: PipelinePaths, inputs: ReportInputs) -> SiteInputs:
    """The report's inputs plus what only the explorer shows: the frozen candidates, contexts and answers."""
    systems = params.system_names
    metadata = table_metadata(paths.candidates)
    return SiteInputs(
        primary=params.compare.release.primary_metric, baseline=inputs.compare.baseline, systems=systems,
        compare=inputs.compare, verdicts=inputs.verdicts, per_query=inputs.per_query, runs=inputs.runs,
        candidates=load_candidates(paths.candidates, with_text=False),
        candidate_source=candidate_source(metadata)["name"], first_stage_filled=first_stage_filled(metadata),
        qrels=inputs.qrels, queries=inputs.queries, slice_columns=inputs.manifest.get("slice_columns", []),
        costs=inputs.costs.systems,
        max_candidates=params.evaluation.explorer_candidates,
        contexts={s: read_table(paths.context(s), CONTEXT_SCHEMA).to_pandas() for s in systems},
        answers={s: read_table(paths.answer(s), ANSWERS_SCHEMA).to_pandas() for s in systems},
        passages=load_passages(paths.candidates),
        reference=[s for s in systems if KindTraits.from_metadata(inputs.run_metadata[s].get("traits"),
                                                                  f"run of {s}").reference],
        access=inputs.metrics.get("access"))


def _model_card(model_dir: Path) -> dict | None:
    return read_json(model_dir / MODEL_CARD) if (model_dir / MODEL_CARD).exists() else None
