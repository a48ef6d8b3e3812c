"""The pipeline's loop on a checkout whose outputs are up to date: what a no-op costs (``dvc status`` against a
no-op ``dvc repro``, alternated, median of --repeats), the same two with DVC's per-stage read-write lock
(``dvc.rwlock.rwlock``, the ``.dvc/tmp/rwlock`` file each stage check edits) made a no-op in the process, which shows
how much of the gap between them is that lock's; where each command's time goes inside DVC's process (its functions
timed in place); what rewriting dvc.lock costs, which DVC does after every stage it runs; and how many deps each stage
names in dvc.yaml and how many code files its fingerprint lists. Run by hand
after ``make demo``; nothing here is asserted.

    .venv/bin/python benchmarks/bench_pipeline_loop.py --repeats 5
    .venv/bin/python benchmarks/bench_pipeline_loop.py --repeats 5 record --commit C --command ... --conditions ... \
        --out results/benchmarks/pipeline_loop.yaml
    .venv/bin/python benchmarks/bench_pipeline_loop.py --smoke    # `dvc status` of each kind: checks they run
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

from rerankeval.report.results_data import add_provenance_arguments, print_benchmark

ROOT = Path(__file__).resolve().parents[1]
DVC = str(Path(sys.executable).with_name("dvc"))


WITHOUT_RWLOCK = ("import contextlib, sys, dvc.rwlock; from dvc.cli import main; "
                  "dvc.rwlock.rwlock = lambda *args, **kwargs: contextlib.nullcontext(); sys.exit(main(sys.argv[1:]))")
"""DVC's command line with the per-stage lock a no-op (``dvc.stage.decorators.rwlocked`` imports ``rwlock`` from
``dvc.rwlock`` at each call, so the patched one is used): a diagnostic, never a way to run the pipeline."""
COMMANDS = {"dvc status": [DVC, "status"], "dvc repro": [DVC, "repro"],
            "dvc status, rwlock bypassed": [sys.executable, "-c", WITHOUT_RWLOCK, "status"],
            "dvc repro, rwlock bypassed": [sys.executable, "-c", WITHOUT_RWLOCK, "repro"]}


TIMED_INSIDE = """
import functools, importlib, json, os, sys, time
from dvc.cli import main
spent = {}
def timing(owner, name, label):
    original = getattr(owner, name)
    @functools.wraps(original)
    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - started
    setattr(owner, name, timed)
for module, owner, name, label in json.loads(os.environ["TIMED_PARTS"]):
    found = importlib.import_module(module)
    timing(getattr(found, owner) if owner else found, name, label)
started = time.perf_counter()
code = main(sys.argv[1:])
spent["main (after the imports)"] = time.perf_counter() - started
print("TIMED_INSIDE " + json.dumps(spent), file=sys.stderr)
sys.exit(code)
"""
"""DVC's command line with timers around the functions named in ``TIMED_PARTS`` (module, class or "", function,
label): a diagnostic, never a way to run the pipeline."""
PARTS = {"dvc status": [("dvc.repo.status", "", "_local_status", "_local_status: every stage's status, the index load"),
                        ("dvc.stage", "Stage", "status", "Stage.status, all stages")],
         "dvc repro": [("dvc.repo.reproduce", "", "collect_stages",
                        "collect_stages: dvc.yaml and dvc.lock loaded for the target"),
                       ("dvc.repo.reproduce", "", "_reproduce", "_reproduce: every stage's check"),
                       ("dvc.stage", "Stage", "changed",
                        "Stage.changed, all stages (its read-write lock edits included)")]}
"""Where a no-op spends its time in DVC 3.67 (``dvc.repo.reproduce.reproduce``, ``dvc.repo.status``)."""


def inside_table(repeats: int, commands: list[str]) -> dict:
    """Each command's time inside DVC's process, by function (median of ``repeats`` runs, alternated); what is not
    in a row is DVC's setup, the index's graph (repro) and the output."""
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(repeats):
        for name in commands:
            parts = PARTS[name]
            done = subprocess.run([sys.executable, "-c", TIMED_INSIDE, name.split()[1]], cwd=ROOT, capture_output=True,
                                  text=True, env={**os.environ, "TIMED_PARTS": json.dumps(parts)})
            found = [line for line in done.stderr.splitlines() if line.startswith("TIMED_INSIDE ")]
            if done.returncode != 0 or not found:
                sys.exit(f"{name}, timed inside, failed ({done.returncode}): {done.stderr[-2000:]}")
            if "Running stage" in done.stdout:
                sys.exit("`dvc repro` ran a stage: the outputs are not up to date. Run `dvc repro` first, then this.")
            for part, seconds in json.loads(found[-1].removeprefix("TIMED_INSIDE ")).items():
                times.setdefault((name, part), []).append(seconds)
    rows = [[name, part, round(statistics.median(values), 3)] for (name, part), values in times.items()]
    return {"title": f"Where each command's time goes inside DVC's process (seconds, median of {repeats})",
            "columns": ["command", "part", "median"], "rows": rows}


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}")
    if command[-1] == "repro" and "Running stage" in done.stdout:
        sys.exit("`dvc repro` ran a stage: the outputs are not up to date. Run `dvc repro` first, then this.")
    return seconds


def loop_table(repeats: int, commands: list[str]) -> dict:
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):  # alternated, so a change of the machine's load touches all alike
        for name in commands:
            times[name].append(timed(COMMANDS[name]))
    rows = [[name, repeats, round(statistics.median(values), 2), round(min(values), 2),
             round(max(values), 2)] for name, values in times.items()]
    return {"title": "A no-op on the demo, up to date (seconds)", "columns": ["command", "runs", "median", "min",
                                                                             "max"], "rows": rows}


def lock_rewrite_table(repeats: int) -> dict:
    """What DVC does to dvc.lock after every stage it runs (``dvc.dvcfile.Lockfile.dump_stages``: a round-trip parse
    of the whole file, then a dump), timed with DVC's own functions on the committed lock; and how much of the lock
    the stages' declared params take."""
    from io import StringIO

    from dvc.utils.serialize._yaml import _dump, parse_yaml_for_update

    text = (ROOT / "dvc.lock").read_text(encoding="utf-8")
    times: dict[str, list[float]] = {"parse": [], "dump": []}
    for _ in range(repeats):
        started = time.perf_counter()
        data = parse_yaml_for_update(text, "dvc.lock")
        parsed = time.perf_counter()
        _dump(data, StringIO())
        times["parse"].append(parsed - started)
        times["dump"].append(time.perf_counter() - parsed)
    stages = yaml.safe_load(text)["stages"]
    param_lines = sum(yaml.safe_dump(stage.get("params", {})).count("\n") for stage in stages.values())
    rows = [["stages", len(stages)], ["lines", text.count("\n")], ["bytes", len(text.encode("utf-8"))],
            ["lines of declared params' values", param_lines],
            [f"round-trip parse, s (median of {repeats})", round(statistics.median(times["parse"]), 3)],
            [f"dump, s (median of {repeats})", round(statistics.median(times["dump"]), 3)]]
    return {"title": "dvc.lock as DVC rewrites it after each stage it runs", "columns": ["what", "value"],
            "rows": rows}


def deps_table() -> dict:
    """Each stage's deps in dvc.yaml and the files its code fingerprint lists (a per-system stage's: its first
    instance's, by name)."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    code = ROOT / "data" / "code"
    rows = []
    for name, stage in stages.items():
        deps = stage.get("do", stage)["deps"]
        fingerprint = next(iter([code / f"{name}.json"] if (code / f"{name}.json").is_file()
                                else sorted(code.glob(f"{name}_*.json"))), None)
        files = len(json.loads(fingerprint.read_text(encoding="utf-8"))["code"]) if fingerprint else ""
        rows.append([name, len(deps), files])
    return {"title": "Deps each stage of dvc.yaml names, and the files its code fingerprint (data/code/) lists",
            "columns": ["stage", "deps in dvc.yaml", "code files fingerprinted"], "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="one `dvc status` of each kind: checks that they run")
    steps = parser.add_subparsers(dest="step")
    add_provenance_arguments(steps.add_parser("record", help="write the results YAML"))
    args = parser.parse_args()
    tables = [loop_table(1, ["dvc status", "dvc status, rwlock bypassed"]) if args.smoke
              else loop_table(args.repeats, list(COMMANDS)),
              inside_table(1, ["dvc status"]) if args.smoke else inside_table(args.repeats, list(PARTS)),
              lock_rewrite_table(1 if args.smoke else args.repeats), deps_table()]
    print_benchmark(args, "the no-op loop: dvc status against a no-op dvc repro, and each stage's deps", [], tables)


if __name__ == "__main__":
    main()
