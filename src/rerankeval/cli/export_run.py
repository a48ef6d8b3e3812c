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
    ],
)
def _export_run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ..workspace.paths import PipelinePaths

    paths = PipelinePaths.load()
    summary = export_run(replace(paths, runs=Path(args.runs)) if args.runs else paths, args.system, args.out)
    print(f"export-run: {args.out}: {summary['rows']} rows of {summary['queries']} queries from {summary['run']}; "
          f"the run's own scores, {summary['nudged']} nudged where trec_eval would break a tie otherwise, "
          f"{summary['unscored']} rows the system did not score (fused order) as whole numbers below the scored ones")
    return 0


def export_run(paths, system: str, out: str | Path) -> dict:
    """Write ``system``'s run (``paths``: the ``PipelinePaths``; its digests checked) to ``out``; return what was
    written."""
    from ..core.errors import ContractError
    from ..data.trec import write_trec_run
    from ..workspace.paths import SYSTEM_PLACEHOLDER
    from ..workspace.runs import load_runs
    from ..systems.base import RERANKED

    path = paths.run(system)
    if not path.exists():
        found = sorted(file.stem.removeprefix("run_") for file in paths.runs.glob("run_*.parquet"))
        raise ContractError(f"{path}: no run of system {system!r}. Fix: pass --system one of "
                            f"{', '.join(found) or '(none: run the pipeline first, `dvc repro`)'}.")
    run = load_runs(paths.run(SYSTEM_PLACEHOLDER), [system])[system]
    scored = run["mode"] == RERANKED
    nudged = write_trec_run(run.assign(score=run["score"].where(scored)), out, tag=system)
    return {"run": str(path), "rows": len(run), "queries": int(run["query_id"].nunique()), "nudged": nudged,
            "unscored": int((~scored).sum())}
