"""Stage `select@<system>`: the context each query's answer is generated from, chosen from the system's ranking."""

from __future__ import annotations

import time

from ..core.hashing import sha256_file
from ..core.io import write_table
from ..data.access import AccessLabels
from ..data.snapshot import Snapshot
from ..rag.passages import load_passages
from ..rag.select import context_table
from ..rag.similarity import dense_similarity
from ..workspace.paths import SYSTEM_PLACEHOLDER, PipelinePaths
from ..workspace.runs import load_runs
from .params import Params


def run(params: Params, paths: PipelinePaths, system: str) -> None:
    config = params.rag.select
    snapshot = Snapshot(paths.snapshot)
    ranked = load_runs(paths.run(SYSTEM_PLACEHOLDER), [system], paths.candidates)[system]
    ranked = ranked[["query_id", "doc_id", "parent_id", "rank"]]
    started = time.perf_counter()
    passages = load_passages(snapshot, paths.candidates)
    similarity = None
    if config.mmr_lambda is not None and config.similarity == "dense":
        pool = sorted(set(ranked.loc[ranked["rank"] <= config.pool_depth, "doc_id"]))
        similarity = dense_similarity(passages, pool, params.retrieval, paths.candidates)
    labels = AccessLabels.of_candidates(snapshot, paths.candidates, params.retrieval.access.queries_without_groups)
    # A system configured with access_filter: false ignores access here too (systems.registry.SystemConfig).
    filtered = (labels.restricts and params.retrieval.access.filter
                and params.systems[system].get("access_filter", True) is not False)
    table = context_table(ranked, passages, config, similarity, labels.may_see_one if filtered else None)
    write_table(paths.context(system), table, {"system": system, "select": config.to_dict(),
                                               "split": params.dataset.eval_split,
                                               "run_sha256": sha256_file(paths.run(system))})
    queries = len(set(table.column("query_id").to_pylist()))
    print(f"select[{system}]: {table.num_rows} passages for {queries} queries "
          f"in {time.perf_counter() - started:.2f}s")
