"""Time rerankeval's metric engine against ranx and pytrec_eval, single-threaded.

Synthetic collection: Q queries x D documents each, in random order (documents shared across
queries from a 10M-document corpus); the first 12 documents of each list judged with grades 0-3,
plus 2 relevant documents per query that no run retrieves. Scores are a random permutation of
0/D .. (D-1)/D per query: distinct even as 32-bit floats, which is how trec_eval stores them
(random doubles collide there, and trec_eval then breaks the tie by docno descending).

Input scenarios (--scenarios, all by default), each the same collection in another form:

- a: rows grouped by query, distinct scores, ids as Arrow-backed strings (pandas' default str);
- b: run and qrels rows shuffled;
- c: tied scores: each score rounded down to a multiple of 0.1, so every query has ties
  (trec_eval, and rerankeval, then order by docno descending; ranx orders ties its own way,
  so its values are not compared there);
- d: ids as plain Python ``str`` objects (object dtype);
- e: b, c and d together.

Every tool computes the same per-query values (checked and printed first; ranx only where
scores are distinct) and is timed as the best of --repeats runs. What each row includes:
- rerankeval kernel: ``evaluate_matrix`` on a prebuilt GradeMatrix (numpy only).
- rerankeval build: ``grade_matrix`` from the DataFrames (validation, query-id coding,
  doc-id hashing with the duplicate checks and the join with the qrels, ranking by score)
  -- once per evaluate call, shared by all its measures.
- rerankeval end-to-end: ``evaluate`` from the DataFrames (build + kernel).
- ranx evaluate: ``ranx.evaluate`` on prebuilt Qrels/Run (numba JIT warmed on a small
  collection first; NUMBA_NUM_THREADS=1, threads=1). Includes ranx's own per-call conversion
  to typed lists.
- pytrec_eval evaluate: ``RelevanceEvaluator.evaluate`` on a prebuilt run dict (the
  evaluator, holding the qrels, is built once beforehand). pytrec_eval has no RR@k, so its
  RR row is recip_rank over the whole list.
- "input build" rows: turning the DataFrames into what ranx / pytrec_eval take; their
  end-to-end cost is input build + evaluate.

The last table gives, per scenario and measure, rerankeval end-to-end against ranx's and
pytrec_eval's evaluate step alone. --profile prints, per scenario, where one ``evaluate`` call
spends its time (cProfile: the compiled kernels and the numpy steps), the numbers the kernels'
comments quote. Then rerankeval alone on --big-queries x D (end-to-end,
build, kernel; scenario a) in a child process, with its peak memory.

    .venv/bin/python benchmarks/bench_metrics.py [--queries 100000 --depth 100 --big-queries 1000000 --repeats 3]
                                                 [--scenarios abcde]
"""

from __future__ import annotations

import os

# Single thread everywhere, set before numpy, pyarrow or numba load.
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
                  "POLARS_MAX_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402

from rerankeval.eval.engine import evaluate, evaluate_matrix  # noqa: E402
from rerankeval.eval.matrix import grade_matrix  # noqa: E402

pa.set_cpu_count(1)
pa.set_io_thread_count(1)

# Our name: (ranx's, pytrec_eval's).
MEASURES = {
    "nDCG@10": ("ndcg@10", "ndcg_cut_10"),
    "AP@100": ("map@100", "map_cut_100"),
    "RR@10": ("mrr@10", "recip_rank"),
}
CORPUS = 10_000_000
JUDGED_PER_QUERY = 12
UNREACHABLE_PER_QUERY = 2


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=100_000,
                        help="queries in the comparison with ranx and pytrec_eval")
    parser.add_argument("--depth", type=int, default=100, help="documents per query")
    parser.add_argument("--big-queries", type=int, default=1_000_000, help="queries for rerankeval alone; 0 skips it")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scenarios", default="abcde", help="input scenarios to run, e.g. ac (see above)")
    parser.add_argument("--skip-baselines", action="store_true", help="time rerankeval only")
    parser.add_argument("--profile", action="store_true", help="also print where one evaluate call spends its time")
    parser.add_argument("--big-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="a tiny input: checks that the script runs")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(queries=200, depth=20, big_queries=0, repeats=1)
    return args


# ---------------------------------------------------------------------------------------------
# Synthetic data, built straight into Arrow buffers (formatting 100M ids in Python would take minutes)


def fixed_width_ids(prefix: str, numbers: np.ndarray, width: int, chunk: int = 10_000_000) -> pd.Series:
    """Strings prefix + zero-padded number, as a pandas str column backed by Arrow."""
    chunks = []
    for start in range(0, len(numbers), chunk):
        part = numbers[start:start + chunk]
        digits = (part[:, None] // 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)) % 10 + ord("0")
        data = np.concatenate([np.full((len(part), 1), ord(prefix)), digits], axis=1).astype(np.uint8)
        offsets = np.arange(len(part) + 1, dtype=np.int64) * (width + 1)
        chunks.append(pa.LargeStringArray.from_buffers(len(part), pa.py_buffer(offsets), pa.py_buffer(data.ravel())))
    return pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array(chunks, type=pa.large_string())), dtype="str")


def synthetic(n_queries: int, depth: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    query = np.repeat(np.arange(n_queries, dtype=np.int64), depth)
    slot = np.tile(np.arange(depth, dtype=np.int64), n_queries)
    # Distinct within a query, shared across queries.
    doc = (query * 7919 + slot * 104729) % CORPUS
    run = pd.DataFrame({
        "query_id": fixed_width_ids("q", query, 7),
        "doc_id": fixed_width_ids("d", doc, 8),
        "score": (rng.permuted(slot.reshape(n_queries, depth), axis=1) / depth).ravel(),
    })
    judged = np.flatnonzero(slot < JUDGED_PER_QUERY)
    extra_query = np.repeat(np.arange(n_queries, dtype=np.int64), UNREACHABLE_PER_QUERY)
    extra_slot = depth + np.tile(np.arange(UNREACHABLE_PER_QUERY, dtype=np.int64), n_queries)
    qrels = pd.DataFrame({
        "query_id": pd.concat([run["query_id"].iloc[judged], fixed_width_ids("q", extra_query, 7)], ignore_index=True),
        "doc_id": pd.concat([run["doc_id"].iloc[judged],
                             fixed_width_ids("d", (extra_query * 7919 + extra_slot * 104729) % CORPUS, 8)],
                            ignore_index=True),
        "relevance": np.concatenate([rng.choice(4, len(judged), p=[0.6, 0.2, 0.12, 0.08]),
                                     rng.integers(1, 4, len(extra_query))]).astype(np.int64),
    })
    return run, qrels


def nested_dicts(frame: pd.DataFrame, value: str, cast) -> dict[str, dict[str, float]]:
    """{query_id: {doc_id: value}}, the input of ranx and pytrec_eval."""
    ordered = frame.sort_values("query_id", kind="stable")
    queries = ordered["query_id"].tolist()
    docs = ordered["doc_id"].tolist()
    values = [cast(v) for v in ordered[value].tolist()]
    out: dict[str, dict[str, float]] = {}
    for query, doc, number in zip(queries, docs, values):
        inner = out.get(query)
        if inner is None:
            inner = out[query] = {}
        inner[doc] = number
    return out


# ---------------------------------------------------------------------------------------------
# Timing


def best_of(repeats: int, function) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def traced_peak(function) -> int:
    """Peak bytes of numpy arrays and Python objects allocated while function runs (not Arrow's pool)."""
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def max_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def current_rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.2f} GiB"


class Table:
    def __init__(self):
        self.rows: list[tuple[str, str, str, float]] = []

    def add(self, tool: str, measure: str, includes: str, seconds: float) -> None:
        self.rows.append((tool, measure, includes, seconds))
        print(f"  {tool:<12} {measure:<8} {seconds:8.3f} s  ({includes})", flush=True)

    def seconds(self, tool: str, measure: str, includes: str) -> float:
        return next(s for t, m, i, s in self.rows if (t, m, i) == (tool, measure, includes))

    def markdown(self) -> str:
        lines = ["| tool | measure | what is timed | seconds |", "|---|---|---|---:|"]
        lines += [f"| {t} | {m} | {i} | {s:.3f} |" for t, m, i, s in self.rows]
        return "\n".join(lines)


SCENARIOS = {
    "a": "grouped, distinct scores, Arrow str ids",
    "b": "rows shuffled",
    "c": "tied scores",
    "d": "ids as Python str objects",
    "e": "b + c + d",
}


def scenario(name: str, run: pd.DataFrame, qrels: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    shuffled, tied, objects = name in "be", name in "ce", name in "de"
    if shuffled:
        run = run.sample(frac=1, random_state=1).reset_index(drop=True)
        qrels = qrels.sample(frac=1, random_state=2).reset_index(drop=True)
    if tied:
        run = run.assign(score=np.floor(run["score"].to_numpy() * 10) / 10)
    if objects:
        ids = {"query_id": object, "doc_id": object}
        run, qrels = run.astype(ids), qrels.astype(ids)
    return run, qrels


class Scenarios:
    """Per scenario and measure: rerankeval end-to-end and the baselines' evaluate step."""

    def __init__(self):
        self.rows: list[tuple[str, str, float, float | None, float | None]] = []

    def add(self, name: str, measure: str, ours: float, ranx_seconds: float | None, trec_seconds: float | None):
        self.rows.append((name, measure, ours, ranx_seconds, trec_seconds))

    def markdown(self) -> str:
        lines = ["| scenario | measure | rerankeval end-to-end s | ranx evaluate s | pytrec_eval evaluate s "
                 "| vs ranx | vs pytrec_eval |", "|---|---|---:|---:|---:|---:|---:|"]
        for name, measure, ours, ranx_seconds, trec_seconds in self.rows:
            cells = [f"{x:.3f}" if x is not None else "-" for x in (ranx_seconds, trec_seconds)]
            ratios = [f"{x / ours:.1f}x" if x is not None else "-" for x in (ranx_seconds, trec_seconds)]
            lines.append(f"| {name}: {SCENARIOS[name]} | {measure} | {ours:.3f} | {' | '.join(cells)} "
                         f"| {' | '.join(ratios)} |")
        return "\n".join(lines)


def compare(args: argparse.Namespace) -> None:
    print(f"== {args.queries:,} queries x {args.depth} documents, best of {args.repeats}, single thread ==", flush=True)
    start = time.perf_counter()
    base_run, base_qrels = synthetic(args.queries, args.depth)
    print(f"synthetic data: {len(base_run):,} run rows, {len(base_qrels):,} qrels rows "
          f"({time.perf_counter() - start:.1f} s)")
    measures = list(MEASURES)
    summary = Scenarios()
    for name in args.scenarios:
        print(f"\n-- scenario {name}: {SCENARIOS[name]} --", flush=True)
        run, qrels = scenario(name, base_run, base_qrels)
        table = Table()
        build_seconds, matrix = best_of(args.repeats, lambda: grade_matrix(run, qrels, no_relevant="zero"))
        table.add("rerankeval", "(all)", "build: grade_matrix from DataFrames", build_seconds)
        ours = {}
        for measure in measures:
            seconds, values = best_of(args.repeats, lambda: evaluate_matrix(matrix, [measure]))
            ours[measure] = values[measure].to_numpy()
            table.add("rerankeval", measure, "kernel: evaluate_matrix on prebuilt matrix", seconds)
        matrix = None  # frees the matrix before the end-to-end runs
        for measure in measures:
            seconds, _ = best_of(args.repeats, lambda: evaluate(run, qrels, [measure], no_relevant="zero"))
            table.add("rerankeval", measure, "end-to-end: evaluate from DataFrames", seconds)
        seconds, _ = best_of(args.repeats, lambda: evaluate(run, qrels, measures, no_relevant="zero"))
        table.add("rerankeval", "all 3", "end-to-end: evaluate from DataFrames", seconds)
        if args.profile:
            profile(run, qrels)
        if not args.skip_baselines:
            baselines(args, run, qrels, measures, ours, table, compare_ranx=name in "abd")
        for measure in measures:
            baseline = [table.seconds(tool, measure, includes) if not args.skip_baselines else None
                        for tool, includes in (("ranx", "evaluate on prebuilt Qrels/Run"),
                                               ("pytrec_eval", "evaluate on prebuilt run dict"))]
            summary.add(name, measure, table.seconds("rerankeval", measure, "end-to-end: evaluate from DataFrames"),
                        *baseline)
        print("\n" + table.markdown())
    print("\nrerankeval end-to-end from DataFrames against the baselines' evaluate step alone "
          "(their seconds / ours):")
    print(summary.markdown())
    print(f"process peak RSS so far: {gib(max_rss())}")


def profile(run: pd.DataFrame, qrels: pd.DataFrame, top: int = 14) -> None:
    """The functions one evaluate call (after a warm-up call) spends the most time in, by own time."""
    import cProfile
    import io
    import pstats

    evaluate(run, qrels, ["nDCG@10"], no_relevant="zero")
    profiler = cProfile.Profile()
    profiler.runcall(evaluate, run, qrels, ["nDCG@10"], no_relevant="zero")
    report = io.StringIO()
    pstats.Stats(profiler, stream=report).sort_stats("tottime").print_stats(top)
    lines = report.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    print("  where one evaluate call spends its time (cProfile, own time in seconds):")
    print("\n".join("    " + line for line in lines[start:] if line.strip()))


def baselines(args, run, qrels, measures, ours, table, compare_ranx: bool) -> None:
    import warnings

    import pytrec_eval
    import ranx
    from numba.core.errors import NumbaTypeSafetyWarning

    warnings.simplefilter("ignore", NumbaTypeSafetyWarning)  # raised inside ranx's own code

    seconds, (run_dict, qrels_dict) = best_of(
        1, lambda: (nested_dicts(run, "score", float), nested_dicts(qrels, "relevance", int)))
    table.add("(both)", "(all)", "input build: DataFrames to nested dicts", seconds)

    # Numba compiles on first use: warm every code path up on a small collection, untimed.
    warm_run, warm_qrels = synthetic(50, 20, seed=1)
    for measure in measures:
        ranx.evaluate(ranx.Qrels.from_dict(nested_dicts(warm_qrels, "relevance", int)),
                      ranx.Run.from_dict(nested_dicts(warm_run, "score", float)), MEASURES[measure][0],
                      threads=1, save_results_in_run=False)
    seconds, (ranx_qrels, ranx_run) = best_of(
        1, lambda: (ranx.Qrels.from_dict(qrels_dict), ranx.Run.from_dict(run_dict)))
    table.add("ranx", "(all)", "input build: Qrels/Run from dicts", seconds)
    query_order = sorted(run_dict)
    for measure in measures:
        name = MEASURES[measure][0]
        # ranx computes every per-query value and returns their mean (ranx 0.3.21 cannot return
        # the per-query array for a single metric); the values are read once more, untimed, below.
        seconds, _ = best_of(args.repeats, lambda: ranx.evaluate(
            ranx_qrels, ranx_run, name, threads=1, save_results_in_run=False))
        table.add("ranx", measure, "evaluate on prebuilt Qrels/Run", seconds)
        if compare_ranx:
            ranx.evaluate(ranx_qrels, ranx_run, name, threads=1, save_results_in_run=True)
            check_agreement("ranx", measure, ours[measure], np.array([ranx_run.scores[name][q] for q in query_order]))

    seconds, evaluators = best_of(1, lambda: {
        m: pytrec_eval.RelevanceEvaluator(qrels_dict, {MEASURES[m][1]}) for m in measures})
    table.add("pytrec_eval", "(all)", "input build: evaluator (qrels) + run dict", seconds)
    for measure in measures:
        seconds, result = best_of(args.repeats, lambda: evaluators[measure].evaluate(run_dict))
        table.add("pytrec_eval", measure, "evaluate on prebuilt run dict", seconds)
        trec_values = np.array([result[q][MEASURES[measure][1]] for q in query_order])
        if measure != "RR@10":  # recip_rank has no cutoff
            check_agreement("pytrec_eval", measure, ours[measure], trec_values)


def check_agreement(tool: str, measure: str, ours: np.ndarray, theirs: np.ndarray) -> None:
    difference = np.max(np.abs(ours - theirs)) if len(ours) == len(theirs) else float("inf")
    print(f"    agreement with {tool} on {measure}: max |difference| per query = {difference:.2e}", flush=True)
    if difference > 1e-9:
        raise SystemExit(f"{tool} disagrees with rerankeval on {measure}: the comparison would not be fair")


def big(args: argparse.Namespace) -> None:
    """rerankeval alone on a large collection; run in a child process so its peak RSS is its own."""
    start = time.perf_counter()
    run, qrels = synthetic(args.big_queries, args.depth)
    generated = time.perf_counter() - start
    data_rss = current_rss()
    measures = list(MEASURES)
    end_to_end, _ = best_of(1, lambda: evaluate(run, qrels, measures, no_relevant="zero"))
    build, matrix = best_of(1, lambda: grade_matrix(run, qrels, no_relevant="zero"))
    kernel, _ = best_of(args.repeats, lambda: evaluate_matrix(matrix, measures))
    rss_peak = max_rss()
    matrix = None  # frees the matrix before the traced runs
    traced = traced_peak(lambda: evaluate(run, qrels, measures, no_relevant="zero"))
    traced_build = traced_peak(lambda: grade_matrix(run, qrels, no_relevant="zero"))
    print(json.dumps({"rows": len(run), "qrels": len(qrels), "generate": generated, "end_to_end": end_to_end,
                      "build": build, "kernel": kernel, "data_rss": data_rss, "peak_rss": rss_peak,
                      "traced_peak": traced, "traced_build": traced_build}))


def report_big(args: argparse.Namespace) -> None:
    print(f"\n== rerankeval alone: {args.big_queries:,} queries x {args.depth} documents, nDCG@10 + AP@100 + RR@10 ==",
          flush=True)
    child = subprocess.run(
        [sys.executable, __file__, "--big-child", "--big-queries", str(args.big_queries), "--depth", str(args.depth),
         "--repeats", str(args.repeats)],
        capture_output=True, text=True,
    )
    if child.returncode != 0:
        raise SystemExit(f"the large run failed:\n{child.stderr}")
    result = json.loads(child.stdout.strip().splitlines()[-1])
    print(f"{result['rows']:,} run rows, {result['qrels']:,} qrels rows (generated in {result['generate']:.1f} s)")
    print("| what is timed | seconds |\n|---|---:|")
    print(f"| end-to-end: evaluate from DataFrames (one run) | {result['end_to_end']:.2f} |")
    print(f"| build: grade_matrix from DataFrames (one run) | {result['build']:.2f} |")
    print(f"| kernel: evaluate_matrix, 3 measures (best of {args.repeats}) | {result['kernel']:.2f} |")
    print(f"peak RSS of the process: {gib(result['peak_rss'])}; RSS holding the input DataFrames: "
          f"{gib(result['data_rss'])}; so evaluate added at most {gib(result['peak_rss'] - result['data_rss'])}")
    print(f"peak traced memory (numpy + Python heap, tracemalloc; Arrow's pool not included): evaluate "
          f"{gib(result['traced_peak'])}, of which grade_matrix alone {gib(result['traced_build'])}")


def main() -> None:
    args = parse_args()
    if args.big_child:
        big(args)
        return
    print(f"Python {sys.version.split()[0]}, numpy {np.__version__}, pandas {pd.__version__}, "
          f"pyarrow {pa.__version__}; {os.cpu_count()} CPUs, one thread used")
    compare(args)
    if args.big_queries:
        report_big(args)


if __name__ == "__main__":
    main()
