"""The shadow replay's served check: the demo's query log sent at its own arrival times (open loop) to a system served
by ``rerankeval serve``, beside the queue the shadow stage simulates from the same arrivals' in-process service times.
Run by hand after `make demo` (the ``serve`` extra installed), nothing else running: it takes the arrivals' span in
real time. Nothing here is asserted.

    .venv/bin/python benchmarks/bench_shadow_served.py --system ce_minilm_ft --arrivals 300
    .venv/bin/python benchmarks/bench_shadow_served.py ... record --commit C --command ... --conditions ... \\
        --out results/benchmarks/shadow_served.yaml
    .venv/bin/python benchmarks/bench_shadow_served.py --smoke   # 5 arrivals to a stand-in endpoint: checks it runs
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from tempfile import TemporaryDirectory

import yaml

from rerankeval.pipeline import shadow
from rerankeval.pipeline.params import Params
from rerankeval.report.results_data import add_provenance_arguments, print_benchmark
from rerankeval.workspace.paths import PipelinePaths

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def stand_in(cache_dir: str):
    """An ``http_rerank`` system's settings, its endpoint (tests/fake_rerank_api.py) on 127.0.0.1 for the block."""
    sys.path.insert(0, str(ROOT))
    from tests.fake_rerank_api import rerank_api

    with rerank_api() as url:
        yield {"kind": "http_rerank", "base_url": url, "model": "stand-in", "depth": 10, "cache_dir": cache_dir}


def measure(log_name: str, system: str, arrivals: int, speed: float, extra: dict | None = None) -> dict:
    """The shadow stage on ``log_name``, replaying the baseline and ``system`` with its ``served`` check on, written
    to a temporary folder; its JSON. ``extra``: ``system``'s settings when params.yaml has none (the smoke run's)."""
    data = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    if extra is not None:
        data["systems"][system] = extra
        data["system_names"] = list(data["systems"])
    entry = data["online"]["shadows"][log_name]
    baseline = data["compare"]["baselines"][0]
    entry.update(speed=speed, systems=list(dict.fromkeys([baseline, system])),
                 served={"system": system, "max_arrivals": arrivals})
    with TemporaryDirectory() as folder:
        paths = replace(PipelinePaths.load(ROOT / "dvc.yaml"), reports=Path(folder))
        shadow.run(Params.parse(data), paths, log_name)
        return json.loads(paths.shadow(log_name).read_text(encoding="utf-8"))


def table(found: dict) -> dict:
    served = found["served"]
    replayed, simulated = served["replayed"], served["simulated"]
    sent = served["arrivals"] - served["without_candidates"]
    return {"title": f"`{served['system']}` at the first {served['arrivals']} arrivals of the log `{found['name']}` "
                     f"({replayed['span_s']:.0f} s at {served['speed']:g}x its pace): served, open loop, against "
                     "the simulated queue (ms)",
            "columns": ["latency", "requests", "p50", "p95", "p99", "timeout rate", "error rate", "utilisation"],
            "rows": [[f"served, open loop ({served['endpoint']})", replayed["requests"], round(replayed["p50_ms"], 1),
                      round(replayed["p95_ms"], 1), round(replayed["p99_ms"], 1), round(replayed["timeout_rate"], 4),
                      round(replayed["error_rate"], 4), ""],
                     ["simulated (in-process service times, one FIFO server)", sent, round(simulated["p50_ms"], 1),
                      round(simulated["p95_ms"], 1), round(simulated["p99_ms"], 1), "", "",
                      round(simulated["utilisation"], 3)]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", default="demo_traffic", help="a log under online.shadows (default: the demo's)")
    parser.add_argument("--system", default="ce_minilm_ft")
    parser.add_argument("--arrivals", type=int, default=300)
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--smoke", action="store_true", help="5 arrivals, 50x faster, to a stand-in endpoint")
    steps = parser.add_subparsers(dest="step")
    add_provenance_arguments(steps.add_parser("record", help="write the results YAML"))
    args = parser.parse_args()
    if args.smoke:
        with TemporaryDirectory() as cache, stand_in(cache) as settings:
            found = measure(args.log, "stand_in", 5, 50.0, settings)
    else:
        found = measure(args.log, args.system, args.arrivals, args.speed)
    result = table(found)
    notes = [f"send lag: the client sent at most {found['served']['replayed']['max_send_lag_ms']:.0f} ms after a "
             f"scheduled arrival; {found['served']['without_candidates']} arrivals found no candidate and sent nothing"]
    print_benchmark(args, "shadow replay: the served system at the log's arrival pattern", notes, [result])


if __name__ == "__main__":
    main()
