"""Stage `report`: reports/report.md, evaluation.yaml and the PNG plots, from the evaluate and compare outputs."""

from __future__ import annotations

from pathlib import Path

import yaml

from ..core.io import read_json, read_table, table_metadata, write_text
from ..data.snapshot import Snapshot
from ..report.answers import AnswerInputs
from ..report.build import ReportInputs, build_report
from ..training.cross_encoder import MODEL_CARD
from .params import load_params
from .paths import DEPTH_CURVE_FILE, PER_QUERY_FILE
from .runs import load_latencies, load_runs, system_file


def answer_inputs(params, answers_pattern: str | None, calibration_path: str | Path | None) -> AnswerInputs:
    """The generator, select rule, calibration and per-query generation timing of the answers section."""
    if not answers_pattern or not calibration_path:
        return AnswerInputs()
    timing = {system: read_table(system_file(answers_pattern.replace("answers_", "timing_"), system)).to_pandas()
              for system in params.system_names}
    return AnswerInputs(generator=params.rag.generator, select=params.rag.select.to_dict(),
                        calibration=read_json(calibration_path), timing=timing)


def run(params_path: str | Path, snapshot_dir: str | Path, eval_dir: str | Path, run_pattern: str,
        latency_pattern: str, metrics_path: str | Path, compare_path: str | Path, verdicts_path: str | Path,
        report_path: str | Path, record_path: str | Path, plots_dir: str | Path,
        measurement_pattern: str | None = None, loadtest_path: str | Path | None = None,
        answers_pattern: str | None = None, calibration_path: str | Path | None = None,
        sweeps_path: str | Path | None = None) -> None:
    params = load_params(params_path)
    systems = params.system_names
    eval_dir = Path(eval_dir)
    snapshot = Snapshot(snapshot_dir)
    inputs = ReportInputs(
        params=params, manifest=snapshot.manifest,
        metrics=read_json(metrics_path), compare=read_json(compare_path), verdicts=read_json(verdicts_path),
        per_query=read_table(eval_dir / PER_QUERY_FILE).to_pandas(),
        depth_curve=read_table(eval_dir / DEPTH_CURVE_FILE).to_pandas(),
        runs=load_runs(run_pattern, systems), latencies=load_latencies(latency_pattern, systems),
        run_metadata={system: table_metadata(system_file(run_pattern, system)) for system in systems},
        latency_metadata={system: table_metadata(system_file(latency_pattern, system)) for system in systems},
        latency_measurements={system: read_json(system_file(measurement_pattern, system)) for system in systems}
        if measurement_pattern else {},
        loadtest=read_json(loadtest_path) if loadtest_path and Path(loadtest_path).exists() else None,
        answers=answer_inputs(params, answers_pattern, calibration_path),
        model_card=_model_card(Path(params.train.out_dir)),
        qrels=snapshot.table("qrels").to_pandas(), queries=snapshot.queries_of(params.dataset.eval_split),
        sweeps=read_table(sweeps_path).to_pandas() if sweeps_path else None,
        sweep_pairs=table_metadata(sweeps_path).get("pairs", {}) if sweeps_path else {})
    markdown, record = build_report(inputs, Path(plots_dir), plots_link=Path(plots_dir).relative_to(
        Path(report_path).parent).as_posix())
    write_text(report_path, markdown)
    write_text(record_path, yaml.safe_dump(record, sort_keys=False, allow_unicode=True))
    print(f"report: {report_path}")


def _model_card(model_dir: Path) -> dict | None:
    return read_json(model_dir / MODEL_CARD) if (model_dir / MODEL_CARD).exists() else None
