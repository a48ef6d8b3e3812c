"""Stage `freeze`: BM25 + dense first stage fused with RRF; the top-N per query frozen with exact passage text."""

from __future__ import annotations

import time
from pathlib import Path

from ..core.io import write_table
from ..data.snapshot import Snapshot, retrieval_inputs
from ..retrieval.freeze import freeze
from .params import load_params


def run(params_path: str | Path, snapshot_dir: str | Path, candidates_path: str | Path,
        first_stage_path: str | Path) -> None:
    config = load_params(params_path).retrieval
    snapshot = Snapshot(snapshot_dir)
    started = time.perf_counter()
    candidates, first_stage = freeze(snapshot.table("corpus"), snapshot.table("queries"), config)
    # Candidates depend on the corpus and queries only: a qrels change does not re-freeze them.
    provenance = {"snapshot": retrieval_inputs(snapshot), "retrieval": config.to_dict()}
    write_table(candidates_path, candidates, provenance)
    write_table(first_stage_path, first_stage, provenance)
    print(f"freeze: {candidates.num_rows} candidates for {snapshot.table('queries').num_rows} queries "
          f"in {time.perf_counter() - started:.1f}s")
