"""Stage `report`: reports/report.md, evaluation.yaml and the PNG plots, from the evaluate and compare outputs."""

from __future__ import annotations

from pathlib import Path

import yaml

from ..core.io import read_json, read_table, table_metadata, write_text
from ..data.snapshot import Snapshot
from ..report.answers import AnswerInputs
from ..report.build import ReportInputs, build_report
from ..training.config import MODEL_CARD
from .params import Params
from .paths import DEPTH_CURVE_FILE, PER_QUERY_FILE, SYSTEM_PLACEHOLDER, PipelinePaths
from .runs import load_latencies, load_runs


def answer_inputs(params: Params, paths: PipelinePaths) -> AnswerInputs:
    """The generator, select rule, calibration and per-query generation timing of the answers section."""
    timing = {system: read_table(paths.timing(system)).to_pandas() for system in params.system_names}
    return AnswerInputs(generator=params.rag.generator, select=params.rag.select.to_dict(),
                        calibration=read_json(paths.calibration), timing=timing)


def run(params: Params, paths: PipelinePaths) -> None:
    systems = params.system_names
    snapshot = Snapshot(paths.snapshot)
    inputs = ReportInputs(
        params=params, manifest=snapshot.manifest,
        metrics=read_json(paths.metrics), compare=read_json(paths.compare), verdicts=read_json(paths.verdicts),
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
        sweeps=read_table(paths.sweep_points).to_pandas(),
        sweep_pairs=table_metadata(paths.sweep_points).get("pairs", {}))
    markdown, record = build_report(inputs, paths.plots, plots_link=paths.plots.relative_to(
        paths.report.parent).as_posix())
    write_text(paths.report, markdown)
    write_text(paths.record, yaml.safe_dump(record, sort_keys=False, allow_unicode=True))
    print(f"report: {paths.report}")


def _model_card(model_dir: Path) -> dict | None:
    return read_json(model_dir / MODEL_CARD) if (model_dir / MODEL_CARD).exists() else None
