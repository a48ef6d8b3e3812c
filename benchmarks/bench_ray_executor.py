"""Ray Data executor vs the local executor on the same pairs, and the scale plan that follows from the numbers.

Run from a project whose pipeline has run up to the candidates and the model (e.g. a scratch clone after
`make demo`, with the dataset switched to SciFact and `dvc repro freeze`):

    python benchmarks/bench_ray_executor.py --project /tmp/x --model /tmp/demo/data/models/ce-minilm-ft \
        --depth 100 --queries 300 --max-length 96 --out ray_vs_local.json

Both executors score every pair from an empty pair-score cache (a temporary folder each). Reported: wall time and
pairs/s of each (Ray's includes starting Ray and its actors, which each load the model once), the Ray overhead ratio
(Ray wall / local wall), pairs/s per worker (pairs / the actors' summed compute seconds: one actor = one CPU), the
largest score difference, and the machine's load average before and after: on a shared machine, say so with the
numbers. The scale plan divides a workload by the per-worker rate, inflated by Ray's overhead.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

BEIR_TEST_QUERIES = {
    "msmarco (dev)": 6980, "trec-covid": 50, "nfcorpus": 323, "nq": 3452, "hotpotqa": 7405, "fiqa": 648,
    "arguana": 1406, "webis-touche2020": 49, "cqadupstack": 13145, "quora": 10000, "dbpedia-entity": 400,
    "scidocs": 1000, "fever": 6666, "climate-fever": 1535, "scifact": 300}
"""Test queries of the 15 publicly downloadable BEIR sets (Thakur et al. 2021, table 1)."""


def rerank_with(executor: str, project: Path, model: str, depth: int, queries: int, max_length: int, batch_size: int):
    from rerankeval.systems.splits import eval_queries
    from rerankeval.pipeline.params import load_params
    from rerankeval.rerank.driver import RerankSettings, rerank
    from rerankeval.systems.registry import BuildContext, build_system

    params = load_params(project / "params.yaml")
    _, candidates, views = eval_queries(params, project / "data/snapshot", project / "data/candidates.parquet",
                                        queries)
    with tempfile.TemporaryDirectory() as cache:
        config = {"kind": "cross_encoder", "model": model, "depth": depth, "max_length": max_length,
                  "batch_size": batch_size, "executor": executor, "cache_dir": cache}
        os.environ.pop("RERANKEVAL_CACHE_DIR", None)
        started = time.perf_counter()
        system = build_system("bench", config, BuildContext(qrels=candidates.iloc[:0]))
        run, latency = rerank(candidates, views, system, RerankSettings(depth=depth))
        wall_s = time.perf_counter() - started
    pairs = int(latency["n_pairs"].sum())
    return run, {"executor": executor, "queries": len(latency), "pairs": pairs, "wall_s": wall_s,
                 "pairs_per_s": pairs / wall_s, "compute_s": float(latency["compute_s"].sum()),
                 "fallbacks": int((latency["mode"] == "FUSION_FALLBACK").sum())}


def pairs_per_cpu_second(project: Path, model: str, depth: int, queries: int, max_length: int,
                         batch_size: int) -> dict:
    """Pairs scored per CPU second by one torch thread: what one worker on one dedicated core does, measured in CPU
    time, so other processes competing for the cores do not change it (as they change wall time)."""
    import torch

    from rerankeval.systems.splits import eval_queries, heads
    from rerankeval.pipeline.params import load_params
    from rerankeval.systems.registry import BuildContext, build_system

    torch.set_num_threads(1)
    params = load_params(project / "params.yaml")
    _, candidates, views = eval_queries(params, project / "data/snapshot", project / "data/candidates.parquet",
                                        queries + 1)
    with tempfile.TemporaryDirectory() as cache:
        system = build_system("bench", {"kind": "cross_encoder", "model": model, "depth": depth,
                                        "max_length": max_length, "batch_size": batch_size, "cache_dir": cache},
                              BuildContext(qrels=candidates.iloc[:0]))
        todo = heads(candidates, views, depth)
        for batch in system.scorer.score_batches(todo[0].query_text, todo[0].passages):  # warm-up
            pass
        cpu, wall, pairs = time.process_time(), time.perf_counter(), 0
        for query in todo[1:]:
            for batch in system.scorer.score_batches(query.query_text, query.passages):
                pairs += len(batch.indices)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"pairs": pairs, "cpu_s": cpu, "wall_s": wall, "pairs_per_cpu_s": pairs / cpu, "torch_threads": 1}


def scale_plan(per_worker: float, overhead: float, peak_factor: float, depth: int) -> dict:
    """Workers for 4M pairs a day (100k queries x 40 candidates) at a peak of ``peak_factor`` x the mean rate, and
    for one system over every public BEIR test set at ``depth`` in one hour."""
    effective = per_worker / overhead
    daily_pairs = 100_000 * 40
    mean_rate = daily_pairs / 86_400
    sweep_pairs = sum(BEIR_TEST_QUERIES.values()) * depth
    return {
        "pairs_per_s_per_worker": per_worker, "ray_overhead_ratio": overhead, "effective_per_worker": effective,
        "daily": {"pairs": daily_pairs, "mean_pairs_per_s": mean_rate, "peak_factor": peak_factor,
                  "workers_mean": math.ceil(mean_rate / effective),
                  "workers_peak": math.ceil(mean_rate * peak_factor / effective)},
        "beir_sweep": {"queries": sum(BEIR_TEST_QUERIES.values()), "depth": depth, "pairs": sweep_pairs,
                       "worker_hours": sweep_pairs / effective / 3600,
                       "workers_for_1_hour": math.ceil(sweep_pairs / effective / 3600)},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, default=Path("."),
                        help="project folder with data/snapshot, candidates (default: here)")
    parser.add_argument("--model", default="data/models/ce-minilm-ft", help="cross-encoder directory")
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--max-length", type=int, default=96)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--peak-factor", type=float, default=3.0, help="peak over mean request rate (assumption)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--per-core-only", action="store_true",
                        help="only the CPU-time rate of one thread (robust on a loaded machine), and its scale plan")
    parser.add_argument("--smoke", action="store_true", help="a tiny input: checks that the script runs")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(depth=4, queries=2, max_length=32)
    model = str(Path(args.model).resolve())
    load_before = os.getloadavg()[0]
    if args.per_core_only:
        rate = pairs_per_cpu_second(args.project, model, args.depth, args.queries, args.max_length, args.batch_size)
        result = {"per_core": rate, "load_average_1m": {"before": load_before, "after": os.getloadavg()[0]},
                  "scale_plan_without_ray_overhead": scale_plan(rate["pairs_per_cpu_s"], 1.0, args.peak_factor,
                                                                args.depth)}
        print(json.dumps(result, indent=2))
        if args.out:
            args.out.write_text(json.dumps(result, indent=2) + "\n")
        return 0
    local_run, local = rerank_with("local", args.project, model, args.depth, args.queries, args.max_length,
                                   args.batch_size)
    ray_run, ray = rerank_with("ray", args.project, model, args.depth, args.queries, args.max_length,
                               args.batch_size)
    keys = ["query_id", "doc_id"]
    joined = local_run.merge(ray_run, on=keys, suffixes=("_local", "_ray"))
    max_diff = float((joined["score_local"] - joined["score_ray"]).abs().max())
    per_worker = ray["pairs"] / ray["compute_s"]
    overhead = ray["wall_s"] / local["wall_s"]
    result = {"local": local, "ray": ray, "max_abs_score_diff": max_diff, "ray_overhead_ratio": overhead,
              "ray_pairs_per_s_per_worker": per_worker, "cpus": os.cpu_count(),
              "load_average_1m": {"before": load_before, "after": os.getloadavg()[0]},
              "scale_plan": scale_plan(per_worker, max(overhead, 1.0), args.peak_factor, args.depth)}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0 if max_diff <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
