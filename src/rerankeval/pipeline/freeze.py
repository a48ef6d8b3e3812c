"""Stage `freeze`: BM25 + dense first stage fused with RRF; the top-N per query frozen, each passage text once."""

from __future__ import annotations

import time
from pathlib import Path

from ..core.io import write_table
from ..data.snapshot import Snapshot, retrieval_inputs
from ..retrieval.candidates import write_candidates
from ..retrieval.freeze import freeze
from .params import load_params


def run(params_path: str | Path, snapshot_dir: str | Path, candidates_path: str | Path,
        first_stage_path: str | Path, passages_path: str | Path) -> None:
    config = load_params(params_path).retrieval
    snapshot = Snapshot(snapshot_dir)
    started = time.perf_counter()
    frozen = freeze(snapshot.table("corpus"), snapshot.table("queries"), config, snapshot.table("qrels"))
    # Candidates depend on the corpus and queries, and on the fit split's judgments only through the fusion weights
    # recorded here (never the evaluated split's).
    provenance = {"snapshot": retrieval_inputs(snapshot), "retrieval": config.to_dict(), "dense": frozen.dense,
                  "fusion": frozen.fusion}
    write_candidates(candidates_path, passages_path, frozen.candidates, frozen.passages, provenance)
    write_table(first_stage_path, frozen.first_stage, provenance)
    print(f"freeze: dense model {frozen.dense['model']} ({frozen.dense['configured']}"
          f"{', non-Latin letter share ' + str(frozen.dense['non_latin_share']) if 'non_latin_share' in frozen.dense else ''}"
          f"); {frozen.encoding}")
    print(f"freeze: RRF weights {frozen.fusion['weights']} ({frozen.fusion['how']}"
          + (f": {frozen.fusion['fit']['reason']}" if "fit" in frozen.fusion else "") + ")")
    print(f"freeze: {frozen.candidates.num_rows} candidates ({frozen.passages.num_rows} distinct passages) for "
          f"{snapshot.table('queries').num_rows} queries in {time.perf_counter() - started:.1f}s")
