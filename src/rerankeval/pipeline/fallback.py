"""Stage `fallback`: the fitting splits the evaluated dataset lacks, read from ``train.fallback_path`` and frozen once.

Most BEIR sets have a test split only; what is fitted on another split (the cross-encoder's training, a blend's
weight, the generator's calibration) then reads that split of ``train.fallback_path``, frozen by the hybrid first stage
with the evaluated dataset's retrieval settings. This stage freezes every split of the fallback folder the snapshot
lacks, one folder each in ``paths.fallback`` (candidates, passages, queries, qrels) and ``manifest.json`` saying why;
the stages that fit read it (``systems.splits``) instead of freezing it again in each process. With no fallback
folder, or none of its splits missing, it writes the manifest alone.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from ..core.errors import CollectionError
from ..core.io import write_json, write_table
from ..data.beir import available_splits, load_beir
from ..data.snapshot import Snapshot
from ..retrieval.candidates import write_candidates
from ..retrieval.config import HybridConfig
from ..retrieval.freeze import freeze
from ..systems.splits import FALLBACK_MANIFEST, fallback_files
from ..workspace.paths import PipelinePaths
from .params import Params


def run(params: Params, paths: PipelinePaths) -> None:
    snapshot, folder = Snapshot(paths.snapshot), params.train.fallback_path
    missing = [] if folder is None else [split for split in available_splits(Path(folder))
                                         if split not in snapshot.splits]
    shutil.rmtree(paths.fallback, ignore_errors=True)
    paths.fallback.mkdir(parents=True)
    # A run or replay file holds the evaluated dataset's candidates only: the fallback's come from the hybrid source.
    retrieval = params.retrieval
    hybrid = retrieval if retrieval.source == "hybrid" else HybridConfig(top_n=retrieval.top_n)
    reason = f"{params.dataset.path} has no split {{split!r}}" + (
        "" if hybrid is retrieval else f"; its candidates from the hybrid source (retrieval.source {retrieval.source} "
                                       f"covers {params.dataset.name} only)")
    sources = {}
    for split in missing:
        started = time.perf_counter()
        try:
            collection = load_beir(folder, [split])
        except CollectionError as err:
            raise CollectionError(f"train.fallback_path: {err}") from None
        frozen = freeze(collection.corpus, collection.queries, hybrid, collection.qrels)
        files = fallback_files(paths.fallback, split)
        provenance = {"fallback_path": folder, "split": split, "retrieval": hybrid.settings(), "dense": frozen.dense,
                      "fusion": frozen.fusion}
        write_candidates(files["candidates"], files["passages"], frozen.candidates, frozen.passages, provenance)
        write_table(files["queries"], collection.queries)
        write_table(files["qrels"], collection.qrels)
        sources[split] = {"dataset": Path(folder).name, "path": folder, "split": split, "fallback": True,
                          "reason": reason.format(split=split)}
        print(f"fallback: {split} of {folder}: {collection.queries.num_rows} queries frozen in "
              f"{time.perf_counter() - started:.1f}s")
    write_json(paths.fallback / FALLBACK_MANIFEST, {"fallback_path": folder, "splits": sources})
    if not missing:
        why = "no train.fallback_path" if folder is None else f"the dataset has every split of {folder}"
        print(f"fallback: nothing to freeze ({why})")
