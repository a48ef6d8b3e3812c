"""The answer stage with the local LLM against the extractive generator, recorded from pipeline runs (run by hand;
nothing here is asserted).

Each run is one ``dvc exp run`` of a collection with one generator (``rag=extractive`` or ``rag=local_llm``), its
outputs copied aside into a folder: ``compare.json`` and ``metrics.json`` from reports/, and for an LLM run
``answers/`` (data/answers/, whose timing_<system>.parquet hold each query's generate seconds and cache hits).
``record`` turns the folders into results/benchmarks/local_llm.yaml:

- the generator sanity check of every run (oracle - random and fusion - random on the primary answer measure, with
  their paired CIs, and the flag compare.json raised or not);
- per system, the answer measures with their bootstrap CIs as compare.json computed them;
- the 2x2 ablation per collection: {the fused order, the best reranker by nDCG@10} x {extractive, LLM} on AnswerF1,
  with the paired Δ and CI compare.json holds for each generator;
- the answer stage's time: requests sent to the model (distinct question and context) and replayed from the cache.

    .venv/bin/python benchmarks/bench_local_llm.py record --run demo/extractive=DIR --run demo/llm=DIR ... \
        --commit C --command ... --conditions ... --out results/benchmarks/local_llm.yaml
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_SYSTEMS = ("oracle", "random")  # bounds, not challengers
FIRST_STAGE_SYSTEMS = ("fusion", "bm25", "dense")
ANSWER_MEASURES = ("AnswerEM", "AnswerF1", "Abstained", "CitationPrecision", "CitationRecall")


def load_run(folder: Path) -> dict:
    run = {name: json.loads((folder / f"{name}.json").read_text(encoding="utf-8")) for name in ("compare", "metrics")}
    run["answers"] = folder / "answers"
    return run


def interval(value: dict | None) -> str:
    if not value:
        return "n/a"
    mean = value.get("mean", value.get("delta"))
    return f"{mean:.3f} [{value['low']:.3f}, {value['high']:.3f}]"


def signed(value: dict) -> str:
    return f"{value['delta']:+.3f} [{value['low']:+.3f}, {value['high']:+.3f}]"


def best_reranker(run: dict) -> str | None:
    """The challenger with the highest nDCG@10 that is neither a bound nor a first-stage ordering (None: the run has
    none, as a run made for the generator's sanity check alone)."""
    systems = run["metrics"]["systems"]
    rerankers = [name for name in systems if name not in REFERENCE_SYSTEMS + FIRST_STAGE_SYSTEMS]
    return max(sorted(rerankers), key=lambda name: systems[name]["nDCG@10"]) if rerankers else None


def answer_delta(run: dict, challenger: str, measure: str = "AnswerF1") -> dict | None:
    baseline = run["compare"]["baseline"]
    for row in run["compare"]["comparisons"]:
        if (row["baseline"], row["challenger"], row["metric"]) == (baseline, challenger, measure):
            return row
    return None


def sanity_table(runs: dict[str, dict]) -> dict:
    rows = []
    for label, run in runs.items():
        sanity = run["compare"]["generator_sanity"]
        collection, generator = label.split("/")
        if sanity.get("skipped"):
            rows.append([collection, generator, str(run["compare"]["queries"]), "n/a", "n/a", sanity["skipped"]])
            continue
        rows.append([collection, generator, str(sanity["queries"]), signed(sanity["ceiling_vs_floor"]),
                     signed(sanity["baseline_vs_floor"]),
                     "cannot tell rankings apart" if sanity["flag"] else "tells rankings apart"])
    first = next(iter(runs.values()))["compare"]
    sanity = first["generator_sanity"]
    return {"title": f"Generator sanity check on {sanity['metric']} ({first['split']} split, "
                     f"paired {sanity['confidence']:.0%} bootstrap CI)",
            "columns": ["collection", "generator", "queries", "oracle - random", "fusion - random", "verdict"],
            "rows": rows}


def measures_table(label: str, run: dict) -> dict:
    systems = run["compare"]["systems"]
    means = run["metrics"]["systems"]
    rows = [[f"`{name}`", f"{means[name]['nDCG@10']:.4f}",
             *(interval(systems[name].get(measure)) for measure in ANSWER_MEASURES)] for name in systems]
    collection, generator = label.split("/")
    return {"title": f"{collection}, {generator} generator: answer measures per system "
                     f"({run['compare']['queries']} {run['compare']['split']} queries; mean "
                     f"[{run['compare']['method']['confidence']:.0%} bootstrap CI])",
            "columns": ["system", "nDCG@10", *ANSWER_MEASURES], "rows": rows}


def ablation_table(runs: dict[str, dict]) -> dict | None:
    rows = []
    collections = dict.fromkeys(label.split("/")[0] for label in runs)
    for collection in collections:
        pair = {generator: runs.get(f"{collection}/{generator}") for generator in ("extractive", "llm")}
        if not all(pair.values()):
            continue
        best = best_reranker(pair["llm"])
        if best is None:
            continue
        row = [collection, f"`{best}`"]
        for generator in ("extractive", "llm"):
            run = pair[generator]
            systems = run["compare"]["systems"]
            delta = answer_delta(run, best)
            row += [interval(systems["fusion"].get("AnswerF1")), interval(systems[best].get("AnswerF1")),
                    signed(delta) if delta else "n/a"]
        rows.append(row)
    if not rows:
        return None
    return {"title": "2x2 ablation on AnswerF1: the fused order and the best reranker (by nDCG@10), extractive "
                     "generator and local LLM",
            "columns": ["collection", "best reranker", "fusion, extractive", "best, extractive", "Δ extractive",
                        "fusion, LLM", "best, LLM", "Δ LLM"],
            "rows": rows}


def timing_table(runs: dict[str, dict]) -> dict | None:
    import pandas as pd

    rows = []
    for label, run in runs.items():
        # Only this run's systems: a workspace keeps the outputs of systems an earlier run had.
        files = [run["answers"] / f"timing_{name}.parquet" for name in run["metrics"]["systems"]]
        if not label.endswith("/llm") or not all(path.exists() for path in files):
            continue
        frame = pd.concat([pd.read_parquet(path) for path in files])
        sent = frame[~frame["cache_hit"]]
        rows.append([label.split("/")[0], str(len(files)), str(len(frame)), str(len(sent)),
                     str(int(frame["cache_hit"].sum())), f"{sent['generate_s'].sum() / 60:.1f}",
                     f"{sent['generate_s'].median():.1f}", f"{sent['generate_s'].quantile(0.95):.1f}"])
    if not rows:
        return None
    return {"title": "The answer stage with the local LLM: requests sent to the model and replayed from the cache",
            "columns": ["collection", "systems", "answers", "sent to the model", "from the cache", "model minutes",
                        "median s per request", "p95 s per request"],
            "rows": rows}


def record(runs: dict[str, dict]) -> list[dict]:
    tables = [table for table in (sanity_table(runs), ablation_table(runs)) if table]
    tables += [measures_table(label, run) for label, run in runs.items() if label.endswith("/llm")]
    timing = timing_table(runs)
    return tables + ([timing] if timing else [])


def parse_run(text: str) -> tuple[str, Path]:
    label, _, folder = text.partition("=")
    if label.count("/") != 1 or label.split("/")[1] not in ("extractive", "llm") or not folder:
        raise argparse.ArgumentTypeError(f"--run {text!r}: write COLLECTION/extractive=DIR or COLLECTION/llm=DIR")
    return label, Path(folder)


def main() -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from rerankeval.report.results_data import add_provenance_arguments, write_benchmark

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true",
                        help="the tables of the committed demo reports as an extractive run: checks that it runs")
    steps = parser.add_subparsers(dest="step")
    step = steps.add_parser("record", help="the results YAML from the saved outputs")
    step.add_argument("--run", type=parse_run, action="append", required=True,
                      help="COLLECTION/GENERATOR=DIR, GENERATOR extractive or llm; DIR as described above")
    add_provenance_arguments(step)
    args = parser.parse_args()
    if args.smoke:
        reports = {"compare": json.loads((ROOT / "reports" / "compare.json").read_text(encoding="utf-8")),
                   "metrics": json.loads((ROOT / "reports" / "metrics.json").read_text(encoding="utf-8")),
                   "answers": ROOT / "data" / "answers"}
        print(json.dumps(record({"demo/extractive": reports}), ensure_ascii=False, indent=1))
        return
    if args.step != "record":
        parser.error("choose a step: record")
    runs = {label: load_run(folder) for label, folder in args.run}
    print(write_benchmark(args, "the answer stage with the local LLM (rag=local_llm) against the extractive generator",
                          [], record(runs)))


if __name__ == "__main__":
    sys.exit(main())
