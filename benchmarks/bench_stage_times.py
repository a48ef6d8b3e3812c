"""What each stage of the last pipeline run took, and their sum: the wall time every stage logs when it runs
(``logs/stage_times.jsonl``, ``rerankeval.pipeline.__main__``), the latest run of each stage. Run by hand after a
`dvc repro` (or `make demo`) that ran every stage; nothing here is asserted.

    .venv/bin/python benchmarks/bench_stage_times.py
    .venv/bin/python benchmarks/bench_stage_times.py record --commit C --command ... --conditions ... \\
        --out results/benchmarks/stage_times.yaml
    .venv/bin/python benchmarks/bench_stage_times.py --smoke    # a log written here: checks that the script runs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from tempfile import TemporaryDirectory


from rerankeval.report.results_data import add_provenance_arguments, print_benchmark

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "logs" / "stage_times.jsonl"


def latest_times(log: Path) -> dict[str, dict]:
    """Each stage's latest logged run (``stage@system`` for per-system stages), in the order they last ran."""
    if not log.is_file():
        sys.exit(f"{log}: no stage has logged its time here yet. Run `dvc repro` (or `make demo`) first.")
    latest: dict[str, dict] = {}
    for number, line in enumerate(log.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            entry = json.loads(line)
            latest.pop(entry["stage"], None)
            latest[entry["stage"]] = entry
        except (ValueError, KeyError, TypeError):
            sys.exit(f"{log}:{number}: not a stage-time line ({line[:80]!r}). Fix: delete the log and rerun.")
    return latest


def pipeline_stages(params: Path) -> set[str]:
    """The stages the pipeline has now (``stage@item`` for each item of a per-system stage): a stage a log names that
    the pipeline no longer has (renamed, merged, a system removed) is not summed."""
    from rerankeval.pipeline.params import configured_items
    from rerankeval.pipeline.table import STAGES

    names = set()
    for stage in STAGES:
        if stage.per_system:
            names |= {f"{stage.name}@{item}" for item in configured_items(stage.each, params)}
        else:
            names.add(stage.name)
    return names


def times_table(latest: dict[str, dict]) -> dict:
    by_stage: dict[str, float] = {}
    for name, entry in latest.items():
        stage = name.split("@")[0]
        by_stage[stage] = by_stage.get(stage, 0.0) + entry["seconds"]
    rows = [[stage, round(seconds, 1)] for stage, seconds in by_stage.items()]
    rows.append(["total", round(sum(by_stage.values()), 1)])
    return {"title": "Wall time of each stage's latest run, per-system stages summed over their systems (seconds)",
            "columns": ["stage", "seconds"], "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="a log written here: checks that the script runs")
    steps = parser.add_subparsers(dest="step")
    add_provenance_arguments(steps.add_parser("record", help="write the results YAML"))
    args = parser.parse_args()
    if args.smoke:
        with TemporaryDirectory() as folder:
            log = Path(folder) / "stage_times.jsonl"
            log.write_text("".join(json.dumps({"stage": name, "seconds": seconds, "exit": 0}) + "\n" for name, seconds
                                   in (("snapshot", 1.5), ("rerank@a", 2.0), ("rerank@b", 3.0), ("snapshot", 1.0))))
            table = times_table(latest_times(log))
    else:
        stages = pipeline_stages(ROOT / "params.yaml")
        table = times_table({name: entry for name, entry in latest_times(LOG).items() if name in stages})
    print_benchmark(args, "each stage's wall time in the last pipeline run, and their sum", [], [table])


if __name__ == "__main__":
    main()
