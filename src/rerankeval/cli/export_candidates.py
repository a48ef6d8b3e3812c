"""``rerankeval export-candidates``: any frozen candidate set as a replay file (``retrieval.sources.replay``), which
``-S retrieval=replay -S retrieval.path=FILE`` freezes back into the same candidate, passage and first-stage tables."""

from __future__ import annotations

import argparse

from .registry import argument, subcommand


@subcommand(
    "export-candidates",
    "write the frozen candidates (texts, ranks, scores, first-stage lists) as a replay file "
    "(JSONL, one line per query)",
    [
        argument("--out", required=True, metavar="FILE", help="the replay file to write"),
        argument("--candidates", metavar="FILE",
                 help="the frozen candidates (default: dvc.yaml's paths.candidates, data/candidates.parquet)"),
        argument("--first-stage", metavar="FILE", dest="first_stage",
                 help="the first stage's own lists frozen with them (default: dvc.yaml's paths.first_stage)"),
    ],
)
def run_export_candidates(args: argparse.Namespace) -> int:
    from ..workspace.paths import PipelinePaths
    from ..retrieval.sources.replay import export_replay

    paths = PipelinePaths.load() if args.candidates is None or args.first_stage is None else None
    candidates = args.candidates or paths.candidates
    first_stage = args.first_stage or paths.first_stage
    counts = export_replay(candidates, first_stage, args.out)
    print(f"export-candidates: {counts['candidates']} candidates of {counts['lines']} queries from {candidates} "
          f"written to {args.out}")
    return 0
