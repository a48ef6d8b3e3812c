"""Load test of a served model on the demo, printed as the report's table (rerankeval.serving.loadtest).

From a project where the demo pipeline has run (`make demo` in a scratch clone):

    cd /tmp/x && python <repo>/benchmarks/bench_serving.py --out loadtest.json

It starts `rerankeval serve` for `serving.loadtest.system` on a free port of 127.0.0.1 (Ray Serve, dynamic batching
as configured in `serving.serve`), first scores the same requests in-process, then replays the evaluated split's
frozen candidates at each concurrency level (default 1, 8, 32), and prints p50/p95/p99, requests/s, pairs/s, the
serving overhead ratio and the machine's load average (numbers from a shared machine are noisy: rerun on a quiet one).
Same as `rerankeval loadtest --out FILE`, plus the Markdown table. The load test also checks served parity: the
replies' scores against the same model's in-process scores, with the two rankings' agreement. Then

    python <repo>/benchmarks/bench_serving.py record --loadtest loadtest.json --commit C --command ... \
        --conditions ... --out results/benchmarks/serving.yaml

writes its figures as the results YAML.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def record(argv: list[str]) -> int:
    from rerankeval.report.results_data import add_provenance_arguments, write_benchmark

    parser = argparse.ArgumentParser(description="write a load test's figures (its JSON) as the results YAML")
    parser.add_argument("--loadtest", type=Path, required=True, help="the JSON `--out` wrote")
    add_provenance_arguments(parser)
    args = parser.parse_args(argv)
    found = json.loads(args.loadtest.read_text())
    levels = {"title": f"load test of the served {found['system']} at depth {found['depth']}",
              "columns": ["concurrency", "p50 ms", "p95 ms", "p99 ms", "requests/s", "pairs/s", "server time p50 ms"],
              "rows": [[level["concurrency"], round(level["p50_ms"]), round(level["p95_ms"]), round(level["p99_ms"]),
                        round(level["requests_per_s"], 2), round(level["pairs_per_s"], 1),
                        None if level["server_compute_p50_ms"] is None else round(level["server_compute_p50_ms"])]
                       for level in found["levels"]]
              + ([["in-process, 1 at a time", round(local["p50_ms"]), round(local["p95_ms"]), round(local["p99_ms"]),
                   "", round(local["pairs_per_s"], 1), ""]] if (local := found.get("in_process")) else [])}
    parity, agreement = found["parity"], found["parity"]["agreement"]

    def cell(name):
        interval = agreement[name]
        return f"{interval['mean']:.4f} [{interval['low']:.4f}, {interval['high']:.4f}]"

    served = {"title": f"served parity: {found['system']} served against the same model in-process, on the measured "
                       "requests",
              "columns": ["requests", "pairs", "largest score difference", "tolerance", "parity",
                          "requests ranked otherwise",
                          f"RBO@{agreement['k']} (p={agreement['p']:g})", f"tau@{agreement['k']}",
                          f"overlap@{agreement['k']}", f"top {agreement['k']} changed"],
              "rows": [[parity["requests"], parity["pairs"], float(f"{parity['max_abs_diff']:.3g}"),
                        parity["tolerance"], "held" if parity["passed"] else "failed", parity["requests_reordered"],
                        cell("rbo"), cell("tau"), cell("overlap"), cell("changed")]]}
    overhead, machine = found["overhead"], found["machine"]
    notes = [f"Serving overhead at concurrency {overhead['concurrency']}: p50 {overhead['p50_ratio']:.2f}x and p95 "
             f"{overhead['p95_ratio']:.2f}x the in-process latency of the same requests; best served throughput "
             f"{overhead['best_throughput_ratio']:.2f}x in-process; server peak memory "
             f"{found['server_peak_rss_mib']:.0f} MiB; load average {machine['before']['load_average_1m']} before, "
             f"{machine['after']['load_average_1m']} after, on {machine['before']['cpus']} CPUs."]
    print(write_benchmark(args, "load test and served parity of the served cross-encoder (benchmarks/bench_serving.py)",
                          notes, [levels, served]))
    return 0


def main() -> int:
    if sys.argv[1:2] == ["record"]:
        return record(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--system", default=None)
    parser.add_argument("--requests", type=int, default=None, help="measured requests per level")
    parser.add_argument("--warmup", type=int, default=None, help="warm-up requests per level")
    parser.add_argument("--concurrency", type=int, action="append", default=None)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--smoke", action="store_true", help="a tiny input: checks that the script runs")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(requests=2, warmup=1, concurrency=[1])
    from rerankeval.pipeline.loadtest import run
    from rerankeval.pipeline.params import load_params
    from rerankeval.workspace.paths import SYSTEM_PLACEHOLDER, PipelinePaths
    from rerankeval.report.serving import loadtest_section

    overrides = {key: value for key, value in (("system", args.system), ("requests", args.requests),
                                               ("warmup_requests", args.warmup), ("concurrency", args.concurrency))
                 if value is not None}
    if args.concurrency:  # the level the report's Pareto point reads must be one of the measured levels
        overrides["pareto_concurrency"] = max(args.concurrency)
    paths = PipelinePaths.load()
    run(load_params(args.params), paths.snapshot, paths.candidates, args.out, paths.run(SYSTEM_PLACEHOLDER),
        overrides=overrides, force=True)
    print(loadtest_section(json.loads(args.out.read_text()), "plots"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
