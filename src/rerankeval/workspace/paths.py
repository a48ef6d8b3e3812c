"""Where the pipeline's artefacts live: the folders and files once, in dvc.yaml's ``vars`` (``paths``), read from
there; every name derived from them (a system's run, the reports' files) once, here, in ``PipelinePaths``."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import yaml

from ..core.config import check_name
from ..core.errors import ConfigError

DVC_YAML = Path("dvc.yaml")
SYSTEM_PLACEHOLDER = "{system}"
"""Given as the system, a per-system method of ``PipelinePaths`` gives the pattern of every system's file."""

PER_QUERY_FILE, DEPTH_CURVE_FILE, FIRST_STAGE_FILE = "per_query.parquet", "depth_curve.parquet", "first_stage.parquet"
PER_QUERY_SEEDS_FILE = "per_query_seeds.parquet"
"""The files of the evaluate stage's output folder (``paths.eval``); per_query_seeds holds each training seed's
per-query measures of the systems built on a seed set (their rows in per_query are the mean over seeds)."""
COMPARE_FILE = "compare.json"
"""The comparison in ``paths.reports`` (``rerankeval diff`` reads it from other revisions too)."""


def _system(system: str) -> str:
    """A system's name as it enters a file name: a safe name (no path can leave its folder) or the placeholder."""
    return system if system == SYSTEM_PLACEHOLDER else check_name(system, "system")


def pipeline_paths(dvc_yaml_text: str, where: str = str(DVC_YAML)) -> dict[str, str]:
    """The ``paths`` mapping among the ``vars`` of a dvc.yaml (any revision's: keys may differ between them)."""
    document = yaml.safe_load(dvc_yaml_text) or {}
    for entry in document.get("vars") or []:
        if isinstance(entry, dict) and isinstance(entry.get("paths"), dict):
            return {key: str(value) for key, value in entry["paths"].items()}
    raise ConfigError(f"{where}: no `vars: - paths: {{...}}` block; rerankeval reads its artefact paths from there.")


@dataclass(frozen=True)
class PipelinePaths:
    """The folders and files of ``vars: paths`` (one field per key), and the names derived from them."""

    snapshot: Path
    candidates: Path
    passages: Path
    withheld: Path
    first_stage: Path
    fallback: Path
    code: Path
    runs: Path
    contexts: Path
    answers: Path
    calibration: Path
    eval: Path
    sweeps: Path
    latency: Path
    reports: Path

    @classmethod
    def parse(cls, dvc_yaml_text: str, where: str = str(DVC_YAML)) -> PipelinePaths:
        found = pipeline_paths(dvc_yaml_text, where)
        names = [field.name for field in fields(cls)]
        missing, unknown = [name for name in names if name not in found], sorted(set(found) - set(names))
        if missing or unknown:
            raise ConfigError(f"{where}: vars: paths must name exactly {', '.join(names)} "
                              f"(missing: {', '.join(missing) or 'none'}; unknown: {', '.join(unknown) or 'none'}).")
        return cls(**{name: Path(found[name]) for name in names})

    @classmethod
    def load(cls, dvc_yaml: Path = DVC_YAML) -> PipelinePaths:
        try:
            text = dvc_yaml.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"{dvc_yaml}: not found. Fix: run the stage from the project root.") from None
        return cls.parse(text, str(dvc_yaml))

    # Each system's files (the pattern of all of them with SYSTEM_PLACEHOLDER as the system).
    def run(self, system: str) -> Path:
        return self.runs / f"run_{_system(system)}.parquet"

    def seed_runs(self, system: str) -> Path:
        """Every training seed's ranking of a system built on a seed set (none for another: zero rows), the run file
        being the first seed's (stage rerank)."""
        return self.runs / f"seed_runs_{_system(system)}.parquet"

    def run_latency(self, system: str) -> Path:
        """The per-query timings of the system's quality run (stage rerank)."""
        return self.runs / f"latency_{_system(system)}.parquet"

    def measurement(self, system: str) -> Path:
        """The system's dedicated latency measurement (stage latency)."""
        return self.latency / f"{_system(system)}.json"

    def context(self, system: str) -> Path:
        return self.contexts / f"context_{_system(system)}.parquet"

    def answer(self, system: str) -> Path:
        return self.answers / f"answers_{_system(system)}.parquet"

    def timing(self, system: str) -> Path:
        """Per-query generation time of the system's answers."""
        return self.answers / f"timing_{_system(system)}.parquet"

    @property
    def sweep_points(self) -> Path:
        return self.sweeps / "points.parquet"

    @property
    def loadtest(self) -> Path:
        return self.reports / "loadtest.json"

    @property
    def metrics(self) -> Path:
        return self.reports / "metrics.json"

    @property
    def compare(self) -> Path:
        return self.reports / COMPARE_FILE

    @property
    def verdicts(self) -> Path:
        return self.reports / "verdicts.json"

    @property
    def costs(self) -> Path:
        """Latency, cost and the frontier (``stats.schema.Costs``): timings, kept apart from compare.json, whose bytes a
        rerun keeps."""
        return self.reports / "costs.json"

    @property
    def online(self) -> Path:
        """online.json: each challenger's online experiment sized before launch (``rerankeval.online``)."""
        return self.reports / "online.json"

    def readout(self, name: str) -> Path:
        """The readout of the online experiment ``name`` (``online.readouts``), as JSON; its page is beside it."""
        return self.reports / "online" / f"readout_{name}.json"

    def shadow(self, name: str) -> Path:
        """The shadow replay of the query log ``name`` (``online.shadows``), as JSON; its page and its judging queue
        (``.md``, ``_queue.tsv``) are beside it."""
        return self.reports / "online" / f"shadow_{name}.json"

    def shadow_queue(self, name: str) -> Path:
        return self.reports / "online" / f"shadow_{name}_queue.tsv"

    @property
    def judging_queue(self) -> Path:
        """The unjudged pairs worth judging next (``eval.judging``), a TSV."""
        return self.reports / "judging_queue.tsv"

    @property
    def report(self) -> Path:
        return self.reports / "report.md"

    @property
    def details(self) -> Path:
        """details.md: every table the decision page (report.md) leaves out."""
        return self.reports / "details.md"

    @property
    def record(self) -> Path:
        """evaluation.yaml: the report's numbers as data."""
        return self.reports / "evaluation.yaml"

    @property
    def plots(self) -> Path:
        return self.reports / "plots"

    @property
    def site(self) -> Path:
        """The static HTML site: decision page, a page per system, the query explorer (``report.site``)."""
        return self.reports / "site"

    def outputs(self, stage: str, system: str | None = None) -> list[Path]:
        """What ``stage`` writes (for a per-system stage: ``system``'s, or every system's as a pattern): its outs and
        metrics in dvc.yaml, but for the train stage's model folder, which params.yaml's ``train.out_dir`` names."""
        system = system or SYSTEM_PLACEHOLDER
        return {
            "code": [self.code],
            "fallback": [self.fallback],
            "snapshot": [self.snapshot],
            "freeze": [self.candidates, self.passages, self.withheld, self.first_stage],
            "train": [],
            "rerank": [self.run(system), self.run_latency(system), self.seed_runs(system)],
            "latency": [self.latency, self.loadtest],
            "calibrate": [self.calibration],
            "answer": [self.contexts, self.answers],
            "evaluate": [self.eval, self.metrics],
            "compare": [self.compare, self.verdicts, self.costs, self.judging_queue],
            "sweep": [self.sweeps],
            "online": [self.online],
            "readout": [self.readout(system), self.readout(system).with_suffix(".md")],
            "shadow": [self.shadow(system), self.shadow(system).with_suffix(".md"), self.shadow_queue(system)],
            "report": [self.report, self.details, self.record, self.plots, self.site],
        }[stage]
