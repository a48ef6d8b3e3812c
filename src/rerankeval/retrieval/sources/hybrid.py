"""``retrieval.source: hybrid``: BM25 and a dense encoder over the whole corpus, fused with RRF (``retrieval.freeze``).

Its provenance is the one the freeze stage recorded before sources existed (no ``source`` key), so its candidates,
passages and first stage keep their bytes.
"""

from __future__ import annotations

from ...data.snapshot import Snapshot, retrieval_inputs
from ..config import HybridConfig
from ..freeze import freeze
from .base import FrozenSet


def freeze_hybrid(snapshot: Snapshot, config: HybridConfig) -> FrozenSet:
    frozen = freeze(snapshot.table("corpus"), snapshot.table("queries"), config, snapshot.table("qrels"))
    # Candidates depend on the corpus and queries, and on the fit split's judgments only through the fusion weights
    # recorded here (never the evaluated split's).
    provenance = {"snapshot": retrieval_inputs(snapshot), "retrieval": config.settings(), "dense": frozen.dense,
                  "fusion": frozen.fusion}
    dense, fusion = frozen.dense, frozen.fusion
    log = [f"dense model {dense['model']} ({dense['configured']}"
           f"{', non-Latin letter share ' + str(dense['non_latin_share']) if 'non_latin_share' in dense else ''}"
           f"); {frozen.encoding}",
           f"RRF weights {fusion['weights']} ({fusion['how']}"
           + (f": {fusion['fit']['reason']}" if "fit" in fusion else "") + ")"]
    return FrozenSet(frozen.candidates, frozen.passages, frozen.first_stage, provenance, log)
