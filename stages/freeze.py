"""DVC stage `freeze`: BM25 + dense first stage fused with RRF; the top-N per query frozen with exact passage text."""

import time

from rerankeval.candidates import RetrievalConfig, freeze
from rerankeval.io import write_table
from rerankeval.layout import CANDIDATES, FIRST_STAGE, SNAPSHOT_DIR, load_params
from rerankeval.snapshot import Snapshot, retrieval_inputs


def main() -> None:
    params = load_params()["retrieval"]
    config = RetrievalConfig.from_params(params)
    snapshot = Snapshot(SNAPSHOT_DIR)
    started = time.perf_counter()
    candidates, first_stage = freeze(snapshot.table("corpus"), snapshot.table("queries"), config)
    # Candidates depend on the corpus and queries only: a qrels change does not re-freeze them.
    provenance = {"snapshot": retrieval_inputs(snapshot), "retrieval": params}
    write_table(CANDIDATES, candidates, provenance)
    write_table(FIRST_STAGE, first_stage, provenance)
    print(f"freeze: {candidates.num_rows} candidates for {snapshot.table('queries').num_rows} queries "
          f"in {time.perf_counter() - started:.1f}s")


if __name__ == "__main__":
    main()
