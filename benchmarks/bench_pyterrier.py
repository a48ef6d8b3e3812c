"""PyTerrier's pt.Experiment beside rerankeval on the demo: each system's frozen-candidates pipeline
(``candidates_source() >> Reranker``, or the candidates alone for the fused order) evaluated by pt.Experiment, against
rerankeval's own per-query evaluation of the pipeline's run, under PyTerrier's convention (a query without a relevant
document scores 0) and under the pipeline's (``evaluation.no_relevant: drop``), with the compare stage's paired CI.
Run by hand after ``make demo`` (with the pyterrier extra); nothing here is asserted (tests/test_pyterrier.py asserts).

    .venv/bin/python benchmarks/bench_pyterrier.py
    .venv/bin/python benchmarks/bench_pyterrier.py --smoke   # the first 20 queries: checks that it runs
    .venv/bin/python benchmarks/bench_pyterrier.py record --commit C --command ... --conditions ... \
        --out results/benchmarks/pyterrier.yaml
"""

from __future__ import annotations

import argparse
import json
import time

import pandas as pd
import pyterrier as pt

from rerankeval.data.snapshot import Snapshot
from rerankeval.eval.engine import evaluate
from rerankeval.interop.pyterrier import Reranker, candidates_source
from rerankeval.report.results_data import add_provenance_arguments, print_benchmark
from rerankeval.workspace.paths import PipelinePaths

SYSTEMS = ("fusion", "ce_minilm_ft", "ce_minilm_ft_int8")
MEASURE = "nDCG@10"


def side_by_side(limit: int | None = None) -> dict:
    paths = PipelinePaths.load()
    snapshot = Snapshot(paths.snapshot)
    queries = snapshot.queries_of("test").sort_values("query_id").head(limit)
    topics = pd.DataFrame({"qid": queries["query_id"], "query": queries["text"]})
    qrels = snapshot.table("qrels").to_pandas()
    source = candidates_source()
    pipelines = [source if name == "fusion" else source >> Reranker.from_params(name) for name in SYSTEMS]
    started = time.perf_counter()
    experiment = pt.Experiment(pipelines, topics, qrels.rename(columns={"query_id": "qid", "doc_id": "docno",
                                                                        "relevance": "label"}),
                               ["ndcg_cut_10"], names=list(SYSTEMS), baseline=0)
    seconds = time.perf_counter() - started
    compare = json.loads(paths.compare.read_text(encoding="utf-8"))
    intervals = {c["challenger"]: c for c in compare["comparisons"] if c["metric"] == MEASURE}
    rows, ids = [], sorted(queries["query_id"])
    for number, name in enumerate(SYSTEMS):
        run = pd.read_parquet(paths.run(name))
        zero = evaluate(run, qrels, [MEASURE], queries=ids, no_relevant="zero")[MEASURE]
        drop = evaluate(run, qrels, [MEASURE], queries=ids, no_relevant="drop")[MEASURE]
        found = intervals.get(name)
        rows.append([name, round(float(experiment["ndcg_cut_10"].iloc[number]), 4),
                     None if number == 0 else float(f"{experiment['ndcg_cut_10 p-value'].iloc[number]:.3g}"),
                     round(float(zero.mean()), 4), round(float(drop.mean()), 4), int(drop.notna().sum()),
                     None if found is None else f"{found['delta']:+.4f} [{found['low']:+.4f}, {found['high']:+.4f}]"])
    return {"title": f"pt.Experiment and rerankeval on the demo's {len(ids)} test queries ({MEASURE}; "
                     f"pt.Experiment took {seconds:.1f} s, every pair from the pair-score cache)",
            "columns": ["system", "pt.Experiment ndcg_cut_10", "pt.Experiment p (t-test vs fusion)",
                        "rerankeval, no_relevant zero", "rerankeval, no_relevant drop (the pipeline's)",
                        "queries with a relevant document", "rerankeval Δ vs fusion [95% CI] (compare.json)"],
            "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="the first 20 queries only: checks that the script runs")
    steps = parser.add_subparsers(dest="step")
    add_provenance_arguments(steps.add_parser("record", help="write the results YAML"))
    args = parser.parse_args()
    tables = [side_by_side(20 if args.smoke else None)]
    notes = ["pt.Experiment averages over every topic, a query without a relevant document scoring 0; the pipeline "
             "leaves those out (evaluation.no_relevant: drop) and says how many it left; under the same convention, "
             "and where no scores tie, the two agree to the last digit (tests/test_pyterrier.py). rerankeval adds "
             "the paired bootstrap CI, the release family's correction and the verdict (reports/report.md)."]
    print_benchmark(args, "PyTerrier's pt.Experiment beside rerankeval on the demo", notes, tables)


if __name__ == "__main__":
    main()
