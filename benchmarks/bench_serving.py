"""Load test of a served model on the demo, printed as the report's table (rerankeval.serving.loadtest).

From a project where the demo pipeline has run (`make demo` in a scratch clone):

    cd /tmp/x && python <repo>/benchmarks/bench_serving.py --out loadtest.json

It starts `rerankeval serve` for `serving.loadtest.system` on a free port of 127.0.0.1 (Ray Serve, dynamic batching
as configured in `serving.serve`), first scores the same requests in-process, then replays the evaluated split's
frozen candidates at each concurrency level (default 1, 8, 32), and prints p50/p95/p99, requests/s, pairs/s, the
serving overhead ratio and the machine's load average (numbers from a shared machine are noisy: rerun on a quiet one).
Same as `rerankeval loadtest --out FILE`, plus the Markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> int:
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
