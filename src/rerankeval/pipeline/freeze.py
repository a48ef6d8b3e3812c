"""Stage `freeze`: the candidate source's top-N per query (``retrieval.sources``), each passage text once."""

from __future__ import annotations

import time

from ..core.io import write_table
from ..data.snapshot import Snapshot
from ..retrieval.candidates import candidate_source, write_candidates
from ..retrieval.sources import freeze_candidates
from ..workspace.paths import PipelinePaths
from .params import Params


def run(params: Params, paths: PipelinePaths) -> None:
    snapshot = Snapshot(paths.snapshot)
    started = time.perf_counter()
    frozen = freeze_candidates(snapshot, params.retrieval)
    write_candidates(paths.candidates, paths.passages, frozen.candidates, frozen.passages, frozen.provenance,
                     (paths.withheld, frozen.withheld))
    write_table(paths.first_stage, frozen.first_stage, frozen.provenance)
    for line in frozen.log:
        print(f"freeze: {line}")
    print(f"freeze: {frozen.candidates.num_rows} candidates ({frozen.passages.num_rows} distinct passages) for "
          f"{snapshot.table('queries').num_rows} queries from {candidate_source(frozen.provenance)['name']} in "
          f"{time.perf_counter() - started:.1f}s")
