"""``rerankeval export-run``: a pipeline run (``data/runs/run_<system>.parquet``) as a TREC run file.

The file carries each reranked row's own score, so trec_eval rebuilds the run's order from it; scores are changed
only where trec_eval would order otherwise (``data.trec.trec_eval_scores``): a tie it breaks the other way is
nudged by the smallest step, and rows the system did not score (beyond its depth, a degraded or skipped query: the
fused order) get whole numbers below the scored rows.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .registry import argument, subcommand


@subcommand(
    "export-run",
    "write a pipeline run (data/runs/run_<system>.parquet) as a TREC run file with its real scores",
    [
        argument("--system", required=True, metavar="NAME", help="a system of the pipeline (its rerank@NAME stage)"),
        argument("--out", required=True, metavar="FILE", help="the TREC run file to write"),
        argument("--runs", metavar="DIR", help="the folder of the runs (default: paths.runs in ./dvc.yaml)"),
        argument("--ir-metadata", action="store_true",
                 help="start the file with an ir_metadata record (YAML in # comment lines, which trec_eval 10 skips): "
                      "the system's settings, model, what a blend at weight 0 or 1 reduces to (rerankeval compare "
                      "reads it), the snapshot, the code's commit, the platform and libraries"),
    ],
)
def _export_run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ..workspace.paths import PipelinePaths

    paths = PipelinePaths.load()
    summary = export_run(replace(paths, runs=Path(args.runs)) if args.runs else paths, args.system, args.out,
                         ir_metadata=args.ir_metadata)
    print(f"export-run: {args.out}: {summary['rows']} rows of {summary['queries']} queries from {summary['run']}; "
          f"the run's own scores, {summary['nudged']} nudged where trec_eval would order them otherwise, "
          f"{summary['unscored']} rows the system did not score (fused order) as whole numbers below the scored row "
          "above them")
    return 0


def export_run(paths, system: str, out: str | Path, ir_metadata: bool = False) -> dict:
    """Write ``system``'s run (``paths``: the ``PipelinePaths``; its digests checked) to ``out``, with an ir_metadata
    header when asked; return what was written."""
    from ..core.errors import ContractError
    from ..core.io import table_metadata
    from ..data.trec import write_trec_run
    from ..workspace.paths import SYSTEM_PLACEHOLDER
    from ..workspace.runs import load_latencies, load_runs
    from ..systems.base import RERANKED

    path = paths.run(system)
    if not path.exists():
        found = sorted(file.stem.removeprefix("run_") for file in paths.runs.glob("run_*.parquet"))
        raise ContractError(f"{path}: no run of system {system!r}. Fix: pass --system one of "
                            f"{', '.join(found) or '(none: run the pipeline first, `dvc repro`)'}.")
    run = load_runs(paths.run(SYSTEM_PLACEHOLDER), [system])[system]
    scored = run["mode"] == RERANKED
    header = ""
    if ir_metadata:
        latency_path = paths.run_latency(system)
        latency = load_latencies(paths.run_latency(SYSTEM_PLACEHOLDER), [system])[system] if latency_path.exists() \
            else None
        header = ir_metadata_header(system, table_metadata(path), latency,
                                    table_metadata(latency_path) if latency_path.exists() else None)
    nudged = write_trec_run(run.assign(score=run["score"].where(scored)), out, tag=system, header=header)
    return {"run": str(path), "rows": len(run), "queries": int(run["query_id"].nunique()), "nudged": nudged,
            "unscored": int((~scored).sum())}


def ir_metadata_header(system: str, metadata: dict, latency=None, latency_metadata: dict | None = None) -> str:
    """An ir_metadata record (Breuer et al., SIGIR 2022; what TIREx reads) for a run, as # comment lines between
    ``ir_metadata.start`` and ``ir_metadata.end``: what ran (the system's settings and model, its weights' sha256),
    on what (the snapshot's content hashes, the split), from which code (the git commit), where (the CPU and the
    libraries its timing table recorded, ``latency_metadata``) and how long it took (``resources``: from ``latency``,
    the run's per-query timings, when it has them)."""
    import platform
    import subprocess

    import yaml

    from ..data.trec import IR_METADATA_END, IR_METADATA_START

    describe = metadata.get("describe", {})
    environment = (latency_metadata or {}).get("environment", {})  # the machine a model ran on, beside its timings
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip() or None
    record = {
        "tag": system,
        "research goal": {"description": "a reranker evaluated by rerankeval"},
        "platform": {"hardware": {"cpu": {"model": environment.get("cpu_model") or platform.processor() or None,
                                          "architecture": platform.machine()}},
                     "operating system": {"kernel": platform.release()},
                     "software": {"libraries": {"python": sorted(f"{name} {version}" for name, version
                                                                in environment.items()
                                                                if name not in ("cpu_model", "torch_threads"))}}},
        "implementation": {"source": {"repository": "rerankeval", "commit": commit}},
        "method": {"automatic": True, "retrieval": {"reranker": {
            key: describe.get(key) for key in ("kind", "model", "revision", "weights_sha256", "dtype", "max_length",
                                                "truncation") if describe.get(key) is not None}
            # what its settings reduce it to (a blend at weight 0 or 1), for `rerankeval compare` to say why
            | ({"reduces to": describe["reduces_to"]} if describe.get("reduces_to") else {}),
            "settings": metadata.get("config", {})}},
        "data": {"test collection": {"split": metadata.get("split"), "snapshot": metadata.get("snapshot"),
                                     "candidates sha256": metadata.get("candidates_sha256")}},
    }
    if latency is not None:
        record["resources"] = {"runtime": run_timings(latency)}
    text = yaml.safe_dump(record, sort_keys=True, allow_unicode=True)
    return "".join(f"# {line}\n" for line in [IR_METADATA_START, *text.splitlines(), IR_METADATA_END])


def run_timings(latency) -> dict:
    """What the run's rerank stage timed (``latency_<system>.parquet``, one row per query): the queries, the wall and
    model seconds in all, the seconds replayed from the pair-score cache, and each query's wall time's median and
    95th percentile in milliseconds (the quality run's: the verdict's latency is the latency stage's own)."""
    import numpy as np

    wall_ms = latency["wall_s"].to_numpy() * 1000
    return {"queries": len(latency), "wallclock s": round(float(latency["wall_s"].sum()), 3),
            "model s": round(float(latency["compute_s"].sum()), 3),
            "replayed from the cache s": round(float(latency["replayed_s"].sum()), 3),
            "per query wall ms": {"p50": round(float(np.percentile(wall_ms, 50)), 1),
                                  "p95": round(float(np.percentile(wall_ms, 95)), 1)} if len(latency) else None}
