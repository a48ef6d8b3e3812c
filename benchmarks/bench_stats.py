"""Time the statistics of one evaluation run end to end.

Default family: 10 system pairs × 10 metrics = 100 comparisons over 1,000 queries, with 10,000
bootstrap resamples (percentile CIs) and 10,000 sign flips (randomisation test), plus paired
t-tests and Holm adjustment of both. Prints the best and median wall time per stage over
``--repeat`` runs, then the peak memory of one extra traced run.

    .venv/bin/python benchmarks/bench_stats.py [--queries 1000 --metrics 10 --pairs 10 ...]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
import tracemalloc

import numpy as np

from rerankeval.stats.defaults import DEFAULT_N_SAMPLES
from rerankeval.stats.resampling import bootstrap_ci, slice_ci
from rerankeval.stats.significance import adjust_pvalues, randomisation_pvalues, ttest_pvalues


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--metrics", type=int, default=10)
    parser.add_argument("--pairs", type=int, default=10, help="challenger vs baseline pairs")
    parser.add_argument("--samples", type=int, default=DEFAULT_N_SAMPLES)
    parser.add_argument("--permutations", type=int, default=DEFAULT_N_SAMPLES)
    parser.add_argument("--method", choices=["percentile", "bca"], default="percentile")
    parser.add_argument("--slices", type=int, default=0, help="also time slice CIs over K slices")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="a tiny input: checks that the script runs")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(queries=30, metrics=2, pairs=2, samples=100, permutations=100, slices=2, repeat=1)
    return args


def synthetic_deltas(n_queries: int, n_comparisons: int) -> np.ndarray:
    """Bounded per-query deltas, correlated across comparisons like metrics of one system."""
    rng = np.random.default_rng(0)
    baseline = rng.beta(2, 5, size=(n_queries, 1))
    challenger = np.clip(baseline + rng.normal(0.02, 0.1, size=(n_queries, n_comparisons)), 0, 1)
    return challenger - baseline


def run_once(deltas: np.ndarray, labels: np.ndarray | None, args) -> dict[str, float]:
    """One end-to-end pass; returns seconds per stage."""
    timings = {}
    start = time.perf_counter()
    bootstrap_ci(deltas, n_samples=args.samples, method=args.method)
    timings[f"bootstrap CI ({args.method})"] = time.perf_counter() - start

    mark = time.perf_counter()
    p_randomisation = randomisation_pvalues(deltas, n_permutations=args.permutations)
    timings["randomisation test"] = time.perf_counter() - mark

    mark = time.perf_counter()
    p_ttest = ttest_pvalues(deltas)
    timings["paired t-tests"] = time.perf_counter() - mark

    mark = time.perf_counter()
    adjust_pvalues(p_randomisation, "holm")
    adjust_pvalues(p_ttest, "holm")
    timings["Holm (both tests)"] = time.perf_counter() - mark

    if labels is not None:
        mark = time.perf_counter()
        slice_ci(deltas, labels, n_samples=args.samples, method=args.method)
        timings[f"slice CIs ({args.slices} slices)"] = time.perf_counter() - mark

    timings["total"] = time.perf_counter() - start
    return timings


def blas_threads() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl not installed)"
    pools = threadpool_info()
    return ", ".join(f"{p['internal_api']} {p['num_threads']}" for p in pools) or "none found"


def main() -> None:
    args = parse_args()
    comparisons = args.metrics * args.pairs
    deltas = synthetic_deltas(args.queries, comparisons)
    labels = np.arange(args.queries) % args.slices if args.slices else None

    print(
        f"{args.queries} queries x {comparisons} comparisons ({args.pairs} pairs x "
        f"{args.metrics} metrics), {args.samples} resamples, {args.permutations} sign flips; "
        f"numpy {np.__version__}, BLAS threads: {blas_threads()}"
    )
    runs = [run_once(deltas, labels, args) for _ in range(args.repeat)]

    print(f"\n{'stage':<28}{'best s':>10}{'median s':>10}")
    for stage in runs[0]:
        seconds = [run[stage] for run in runs]
        print(f"{stage:<28}{min(seconds):>10.3f}{statistics.median(seconds):>10.3f}")

    tracemalloc.start()
    run_once(deltas, labels, args)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    max_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"\npeak traced allocations (numpy + Python) in one run: {traced_peak / 2**20:.1f} MiB")
    print(f"process max RSS: {max_rss_mib:.1f} MiB (input deltas {deltas.nbytes / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()
