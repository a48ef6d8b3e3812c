"""How often `rerankeval compare` wrongly decides some challenger when five challengers are no better and no worse
than the baseline (a true Δ of 0 for each), run through the CLI as a user runs it.

Each trial draws a collection (graded qrels over a candidate pool per query) and six runs from one noisy ranker: the
first is the baseline, the other five the challengers, so every challenger's true Δ on any measure is exactly 0. A
trial is a family-wise error when any challenger is ACCEPTed or REJECTed. Seeded; resumable (each finished trial is
appended to the output's cache file, and a re-run skips them).

    python benchmarks/bench_family_error.py --trials 200                # writes results/benchmarks/family_error.yaml
    python benchmarks/bench_family_error.py --trials 200 --label before # the same on an older checkout
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
import yaml

QUERIES, POOL, CHALLENGERS = 100, 30, 5


def write_trial(folder: Path, seed: int) -> list[str]:
    """The qrels and six runs of one trial; returns the CLI's arguments."""
    rng = np.random.default_rng(seed)
    grades = rng.choice([0, 0, 0, 1, 2], size=(QUERIES, POOL))
    grades[np.arange(QUERIES), rng.integers(0, POOL, QUERIES)] = 2  # every query has a relevant document
    with open(folder / "qrels.txt", "w") as handle:
        for q in range(QUERIES):
            for d in range(POOL):
                handle.write(f"q{q} 0 d{q}_{d} {grades[q, d]}\n")
    skill = rng.uniform(0.2, 1.5, QUERIES)  # how well the ranker separates grades on each query
    arguments = ["compare", "--qrels", str(folder / "qrels.txt"), "--json", "--samples", "2000", "--trials", "20",
                 "--seed", str(seed)]
    for k in range(CHALLENGERS + 1):
        path = folder / f"run{k}.txt"
        with open(path, "w") as handle:
            for q in range(QUERIES):
                scores = skill[q] * grades[q] + rng.normal(0, 1, POOL)
                for rank, d in enumerate(np.argsort(-scores), start=1):
                    handle.write(f"q{q} Q0 d{q}_{d} {rank} {-rank} run{k}\n")
        arguments += ["--baseline" if k == 0 else "--run", f"{'base' if k == 0 else f'c{k}'}={path}"]
    return arguments


def one_trial(seed: int) -> dict:
    from rerankeval.cli.main import main

    with TemporaryDirectory() as folder:
        arguments = write_trial(Path(folder), seed)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(arguments)
    if code != 0:
        raise SystemExit(f"rerankeval compare exited {code} on trial {seed}")
    decided = {name: found["decision"] for name, found in json.loads(out.getvalue())["challengers"].items()}
    return {"seed": seed, "accept": sum(d == "ACCEPT" for d in decided.values()),
            "reject": sum(d == "REJECT" for d in decided.values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--label", default="after")
    parser.add_argument("--out", default="results/benchmarks/family_error.yaml")
    parser.add_argument("--smoke", action="store_true", help="two trials into a temporary folder (tests)")
    args = parser.parse_args()
    if args.smoke:
        smoke = TemporaryDirectory()
        args.trials, args.out = 2, str(Path(smoke.name) / "family_error.yaml")
    cache = Path(args.out).with_suffix(f".{args.label}.jsonl")
    done = [json.loads(line) for line in cache.read_text().splitlines()] if cache.exists() else []
    seen = {found["seed"] for found in done}
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    with open(cache, "a") as handle:
        for seed in range(args.trials):
            if seed not in seen:
                found = {**one_trial(seed), "commit": head}  # the code each trial ran, for the record
                done.append(found)
                handle.write(json.dumps(found) + "\n")
                handle.flush()
    done = [found for found in done if found["seed"] < args.trials]
    trials = len(done)
    any_accept = sum(found["accept"] > 0 for found in done) / trials
    any_reject = sum(found["reject"] > 0 for found in done) / trials
    any_error = sum(found["accept"] + found["reject"] > 0 for found in done) / trials
    commit = ", ".join(sorted({found["commit"] for found in done}))
    record = {"trials": trials, "any_false_accept": round(any_accept, 4), "any_false_reject": round(any_reject, 4),
              "any_error": round(any_error, 4),
              "monte_carlo_se": round(float(np.sqrt(any_error * (1 - any_error) / trials)), 4), "commit": commit,
              "command": f"python benchmarks/bench_family_error.py --trials {args.trials} --label {args.label}"}
    path = Path(args.out)
    runs = (yaml.safe_load(path.read_text()) or {}).get("runs", {}) if path.exists() else {}
    runs[args.label] = record
    conditions = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, one trial at a time"
    path.write_text(yaml.safe_dump({
        "benchmark": f"family-wise error of rerankeval compare: {CHALLENGERS} challengers with a true delta of 0",
        "provenance": {"how": "measured", "commit": ", ".join(f"{found['commit']} ({label})"
                                                             for label, found in sorted(runs.items())),
                       "command": "; ".join(found["command"] for _, found in sorted(runs.items())),
                       "conditions": conditions},
        "notes": [f"Each trial: {QUERIES} queries, {POOL} graded candidates each, six runs drawn from one noisy ranker "
                  f"(the first the baseline), through `rerankeval compare --json --samples 2000 --trials 20`; an error "
                  "is a trial in which any challenger is ACCEPTed or REJECTed. Per label the commit its trials ran "
                  "at; the finished trials are cached beside this file (family_error.<label>.jsonl, each with its "
                  "commit) and a re-run resumes."],
        "tables": [{"title": "Share of null trials with some challenger wrongly decided",
                    "columns": ["label", "commit", "trials", "any false ACCEPT", "any false REJECT", "any error",
                                "Monte Carlo se"],
                    "rows": [[label, found["commit"], found["trials"], found["any_false_accept"],
                              found["any_false_reject"], found["any_error"], found["monte_carlo_se"]]
                             for label, found in sorted(runs.items())]}],
        "runs": runs}, sort_keys=False, allow_unicode=True))
    print(yaml.safe_dump({args.label: record}, sort_keys=True))


if __name__ == "__main__":
    sys.exit(main())
