"""Stage `latency`: every system's per-query latency measured on its own (``rerankeval.serving.measure``), and the
load test of ``serving.loadtest.system`` when it is enabled (``rerankeval.pipeline.loadtest``).

One stage for all systems, after the rerank stages: it depends on their runs, which change whenever a system's model
or config does, so a system is re-measured when it changes (with the others, which are cheap but for the learned
ones); one process keeps the pipeline's stage count, and its start-up time, low.
"""

from __future__ import annotations

from pathlib import Path

from ..core.io import write_json
from ..serving.measure import measure_latency
from ..systems import BuildContext, build_system, parse_system_config
from . import loadtest
from .eval_queries import eval_queries, heads
from .params import load_params


def run(params_path: str | Path, snapshot_dir: str | Path, candidates_path: str | Path, run_pattern: str,
        out_dir: str | Path, loadtest_path: str | Path) -> None:
    params = load_params(params_path)
    settings = params.serving.latency
    snapshot, candidates, queries = eval_queries(params, snapshot_dir, candidates_path,
                                                 settings.queries + settings.warmup_queries)
    context = BuildContext(qrels=snapshot.table("qrels").to_pandas(), systems=params.systems)
    for name in params.system_names:
        depth = parse_system_config(name, params.systems[name]).depth
        result = {"system": name, "depth": depth,
                  **measure_latency(build_system(name, params.systems[name], context), heads(candidates, queries, depth),
                                    settings)}
        write_json(Path(out_dir) / f"{name}.json", result)
        print(f"latency[{name}]: p95 {result['p95_ms']:.1f} ms, {result['queries']} queries x {result['repeats']} "
              f"rounds (p95 by round {', '.join(f'{v:.1f}' for v in result['p95_ms_by_round'])}; load average "
              f"{result['load_average_1m']['before']} -> {result['load_average_1m']['after']})")
    loadtest.run(params_path, snapshot_dir, candidates_path, loadtest_path, run_pattern)
