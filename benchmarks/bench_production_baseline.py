"""The README's "my new reranker against the one in production" recipe, worked on the demo: the compare stage's own
code (``rerankeval.pipeline.compare.run``) on this workspace's outputs with ``compare.baselines=[PRODUCTION]``, as
`dvc exp run -S 'compare.baselines=[PRODUCTION]' compare` would run it, its files written to a temporary folder
(the workspace's reports/ are left alone). The table is every decision against production: Δ of the primary metric
with its interval in the stated family, the adjusted p, the decision and what decided it. Run by hand after
`make demo`; nothing here is asserted.

    .venv/bin/python benchmarks/bench_production_baseline.py                       # production = ce_minilm_ft
    .venv/bin/python benchmarks/bench_production_baseline.py record --commit C --command ... --conditions ... \\
        --out results/benchmarks/production_baseline.yaml
    .venv/bin/python benchmarks/bench_production_baseline.py --smoke   # few resamples: checks that the script runs
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from dataclasses import replace
from pathlib import Path
from tempfile import TemporaryDirectory

import yaml

from rerankeval.pipeline import compare as compare_stage
from rerankeval.pipeline.params import Params
from rerankeval.report.results_data import add_provenance_arguments, print_benchmark
from rerankeval.workspace.paths import PipelinePaths

ROOT = Path(__file__).resolve().parents[1]


def against_production(production: str, smoke: bool) -> tuple[dict, list[str]]:
    """verdicts.json of the compare stage run with ``production`` as the only baseline, and its printed lines."""
    settings = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    settings["compare"]["baselines"] = [production]
    if smoke:  # the stage's code as it is, with fewer resamples
        settings["compare"].update(samples=200, permutations=200)
        settings["compare"]["simulation"] = {"trials": 20, "samples": 100}
    params = Params.parse(settings, "params.yaml with compare.baselines=[" + production + "]")
    with TemporaryDirectory() as folder:
        paths = replace(PipelinePaths.load(ROOT / "dvc.yaml"), reports=Path(folder))
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            compare_stage.run(params, paths)
        return json.loads(paths.verdicts.read_text(encoding="utf-8")), printed.getvalue().splitlines()


def decisions_table(verdicts: dict) -> dict:
    primary = verdicts["rule"]["primary_metric"]
    rows = []
    for system, found in verdicts["verdicts"].items():
        low, high = found["ci"]
        rows.append([f"`{system}`", found["family"], f"{found['delta']:+.4f} [{low:+.4f}, {high:+.4f}]",
                     "n/a" if found["p_adjusted"] is None else f"{found['p_adjusted']:.4f}", found["decision"],
                     found["decided_by"]])
    return {"title": f"Every system against `{verdicts['baseline']}` as production ({primary}, "
                     f"{verdicts['verdict_queries']} queries; the interval and p of each row's family)",
            "columns": ["system", "family", f"Δ {primary} [{verdicts['rule']['confidence']:.0%} CI]", "p (adjusted)",
                        "decision", "decided by"],
            "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--production", default="ce_minilm_ft", help="the system in production (the baseline)")
    parser.add_argument("--smoke", action="store_true", help="few resamples: checks that the script runs")
    steps = parser.add_subparsers(dest="step")
    add_provenance_arguments(steps.add_parser("record", help="write the results YAML"))
    args = parser.parse_args()
    if not (ROOT / "data" / "eval").is_dir():
        sys.exit("no pipeline outputs here: run `make demo` first")
    verdicts, _ = against_production(args.production, args.smoke)
    notes = [f"`.venv/bin/dvc exp run -S 'compare.baselines=[{args.production}]'` decides every other system against "
             f"`{args.production}`: {verdicts['inference']['release_family']}; reference systems alone."]
    print_benchmark(args, f"the README's production-baseline recipe on the demo ({args.production} as production)",
                    notes, [decisions_table(verdicts)])


if __name__ == "__main__":
    main()
