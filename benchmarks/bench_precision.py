"""Precision variants of a learned system, measured together: speed ratio and quality delta against float32.

Loads one configured learned system (params.yaml) once per dtype (float32 and each of --dtypes) and scores the same
(query, candidate) pairs with each, query by query, rotating which dtype goes first, so the machine's load falls on
all of them alike. Nothing is read from or written to the pair-score cache: every pair is computed. Reports per
dtype: pairs/s, mean model seconds per query, the speed-up over float32 with a paired bootstrap CI over queries, the
quality (mean --measure) and its delta against float32 with a paired bootstrap CI, the largest score difference and
the share of queries whose top 10 is unchanged. Run it in a project where `dvc repro` has run (it reads the
snapshot, the frozen candidates and the model); on a shared machine note the load (`uptime`) beside the numbers.

    python benchmarks/bench_precision.py --system ce_minilm_ft --depth 100 --dtypes int8 bfloat16 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np  # noqa: E402

from rerankeval.data.snapshot import Snapshot  # noqa: E402
from rerankeval.eval.engine import evaluate  # noqa: E402
from rerankeval.pipeline.params import load_params  # noqa: E402
from rerankeval.systems.splits import split_candidates  # noqa: E402
from rerankeval.stats.resampling import bootstrap_ci, bootstrap_means  # noqa: E402
from rerankeval.systems.registry import SYSTEM_KINDS, BuildContext, parse_system_config  # noqa: E402
from rerankeval.systems.composite.components import Rankings  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--snapshot", default="data/snapshot")
    parser.add_argument("--candidates", default="data/candidates.parquet")
    parser.add_argument("--system", default="ce_minilm_ft", help="a learned system in params.yaml (float32)")
    parser.add_argument("--dtypes", nargs="+", default=["int8"], help="variants to compare with float32")
    parser.add_argument("--depth", type=int, help="candidates per query (default: the system's depth)")
    parser.add_argument("--queries", type=int, help="first N evaluated queries (default: all)")
    parser.add_argument("--measure", default="nDCG@10")
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--smoke", action="store_true", help="a tiny input: checks that the script runs")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(depth=4, queries=2, samples=50)
    return args


def main() -> None:
    args = parse_args()
    params = load_params(args.params)
    snapshot = Snapshot(args.snapshot)
    split = split_candidates(params, snapshot, args.candidates, None)(params.dataset.eval_split)
    candidates, queries = split.candidates, split.queries
    base = dict(params.systems[args.system])
    depth = args.depth or base["depth"]
    frames = {qid: frame.sort_values("fused_rank").reset_index(drop=True)
              for qid, frame in candidates.groupby("query_id", sort=True)}
    query_ids = list(frames)[: args.queries] if args.queries else list(frames)
    dtypes = ["float32", *args.dtypes]
    context = BuildContext(qrels=snapshot.table("qrels").to_pandas(), systems=params.systems)
    scorers = {}
    for dtype in dtypes:  # the PairScorer alone: no cache, every pair computed
        config = parse_system_config(args.system, {**base, "dtype": dtype, "depth": depth})
        factory = SYSTEM_KINDS.get(config.kind).build
        scorers[dtype] = factory(config, context).scorer
    seconds = {dtype: [] for dtype in dtypes}
    scores: dict[str, dict[str, np.ndarray]] = {dtype: {} for dtype in dtypes}
    for number, qid in enumerate(query_ids):
        head = frames[qid].iloc[:depth]
        for dtype in dtypes[number % len(dtypes):] + dtypes[: number % len(dtypes)]:  # rotate who goes first
            started = time.perf_counter()
            values = np.empty(len(head))
            for batch in scorers[dtype].score_batches(queries[qid].text, head["passage"].tolist()):
                values[batch.indices] = batch.scores
            seconds[dtype].append(time.perf_counter() - started)
            scores[dtype][qid] = values
    qrels = snapshot.table("qrels").to_pandas()
    quality, rankings = {}, Rankings([frames[qid] for qid in query_ids])
    for dtype in dtypes:
        run = rankings.run([scores[dtype][qid] for qid in query_ids])
        quality[dtype] = evaluate(run, qrels, [args.measure], queries=query_ids, no_relevant="drop")[args.measure]
    pairs = sum(min(depth, len(frames[qid])) for qid in query_ids)
    results = {"system": args.system, "depth": depth, "queries": len(query_ids), "pairs": pairs,
               "load_average": os.getloadavg(), "cpu_count": os.cpu_count(), "dtypes": {}}
    reference = np.array(seconds["float32"])
    for dtype in dtypes:
        timing = np.array(seconds[dtype])
        entry = {"pairs_per_s": pairs / timing.sum(), "ms_per_query": 1000 * timing.mean(),
                 "quality": float(quality[dtype].mean())}
        if dtype != "float32":
            replicates = bootstrap_means(np.column_stack([reference, timing]), n_samples=args.samples, seed=17)
            ratios = replicates[:, 0] / replicates[:, 1]
            delta = bootstrap_ci((quality[dtype] - quality["float32"]).to_numpy(), n_samples=args.samples, seed=17)
            top = [np.array_equal(np.argsort(-scores[dtype][q], kind="stable")[:10],
                                  np.argsort(-scores["float32"][q], kind="stable")[:10]) for q in query_ids]
            entry.update({"speedup": reference.sum() / timing.sum(),
                          "speedup_ci": [float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975))],
                          "delta": float(delta.mean[0]), "delta_ci": [float(delta.low[0]), float(delta.high[0])],
                          "max_abs_score_diff": float(max(np.abs(scores[dtype][q] - scores["float32"][q]).max()
                                                          for q in query_ids)),
                          "same_top10": float(np.mean(top))})
        results["dtypes"][dtype] = entry
    print(f"{args.system} at depth {depth}: {len(query_ids)} queries, {pairs} pairs per dtype, "
          f"load average {results['load_average'][0]:.1f} on {results['cpu_count']} CPUs")
    for dtype, entry in results["dtypes"].items():
        line = f"  {dtype:>9}: {entry['pairs_per_s']:7.1f} pairs/s, {entry['ms_per_query']:7.1f} ms/query, " \
               f"{args.measure} {entry['quality']:.4f}"
        if dtype != "float32":
            line += (f", speed-up {entry['speedup']:.2f}x [{entry['speedup_ci'][0]:.2f}, {entry['speedup_ci'][1]:.2f}]"
                     f", Δ {entry['delta']:+.4f} [{entry['delta_ci'][0]:+.4f}, {entry['delta_ci'][1]:+.4f}]"
                     f", max |Δscore| {entry['max_abs_score_diff']:.3f}, same top 10 {entry['same_top10']:.0%}")
        print(line)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
