"""Stage `answer`: steps 3 and 4 of the funnel for every system. The context each query's answer is generated from,
chosen from each system's ranking (``rag.select``); then the answer one fixed generator, prompt and context budget
writes from it for every system (``rag.generators``). Contexts and answers are byte-identical across reruns; what took
how long goes to a separate timing table per system (``rag.answers``).

One stage for all systems, not one per system: selection is a fraction of a second per system and the extractive
generator about as much, while each DVC stage costs seconds of bookkeeping to run (its locks, its lock-file rewrite, a
process) and some milliseconds on every no-op ``dvc repro`` and ``dvc status``. The generator is built (a local
server started) once, not once per system. A changed run re-selects and re-answers every system; an LLM generator's
response cache (``rag.generators``) answers the systems whose contexts did not move without a call.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pyarrow as pa

from ..core.hashing import sha256_file
from ..core.errors import ContractError
from ..core.io import read_json, read_table, table_metadata, write_table
from ..data.access import AccessLabels
from ..data.snapshot import Snapshot
from ..rag.answers import ANSWERS_SCHEMA, TIMING_SCHEMA, answer_row
from ..rag.claims import count_supported, sentences
from ..rag.generators import BuildContext, build_generator
from ..rag.generators.base import Generator
from ..rag.passages import Passages, corpus_texts, load_passages
from ..rag.select import CONTEXT_SCHEMA, context_lists, context_table
from ..rag.similarity import dense_similarity
from ..workspace.paths import SYSTEM_PLACEHOLDER, PipelinePaths
from ..workspace.runs import load_runs
from .params import Params


def run(params: Params, paths: PipelinePaths) -> None:
    snapshot = Snapshot(paths.snapshot)
    passages = load_passages(snapshot, paths.candidates)  # both steps read them: loaded once
    select(params, paths, params.system_names, snapshot, passages)
    generate(params, paths, params.system_names, snapshot, passages)


def select(params: Params, paths: PipelinePaths, systems: list[str], snapshot: Snapshot | None = None,
           passages: Passages | None = None) -> None:
    """The context of each query of the evaluated split, chosen from each system's ranking: its run file."""
    config = params.rag.select
    snapshot = Snapshot(paths.snapshot) if snapshot is None else snapshot
    passages = load_passages(snapshot, paths.candidates) if passages is None else passages
    labels = AccessLabels.of_candidates(snapshot, paths.candidates, params.retrieval.access.queries_without_groups)
    runs = load_runs(paths.run(SYSTEM_PLACEHOLDER), systems, paths.candidates)
    for system in systems:
        started = time.perf_counter()
        ranked = runs[system][["query_id", "doc_id", "parent_id", "rank"]]
        similarity = None
        if config.mmr_lambda is not None and config.similarity == "dense":
            pool = sorted(set(ranked.loc[ranked["rank"] <= config.pool_depth, "doc_id"]))
            similarity = dense_similarity(passages, pool, params.retrieval, paths.candidates)
        filtered = labels.restricts and params.retrieval.access.filter and not _ignores_access(paths.run(system))
        table = context_table(ranked, passages, config, similarity, labels.may_see_one if filtered else None)
        write_table(paths.context(system), table, {"system": system, "select": config.to_dict(),
                                                   "split": params.dataset.eval_split,
                                                   "run_sha256": sha256_file(paths.run(system))})
        queries = len(set(table.column("query_id").to_pylist()))
        print(f"select[{system}]: {table.num_rows} passages for {queries} queries "
              f"in {time.perf_counter() - started:.2f}s")


def _ignores_access(run: Path) -> bool:
    """Whether the system of ``run`` was configured with ``access_filter: false`` (systems.registry.SystemConfig), as
    its run records the settings it was made with: it then ignores access here too."""
    config = table_metadata(run).get("config")
    if not isinstance(config, dict):
        raise ContractError(f"{run}: records no system settings (written by an older rerank stage). Fix: `dvc repro "
                            "--force` the rerank stage of its system.")
    return config.get("access_filter", True) is False


def generate(params: Params, paths: PipelinePaths, systems: list[str], snapshot: Snapshot | None = None,
             passages: Passages | None = None) -> None:
    """The answers of the evaluated split's queries from each system's contexts (its context file), by one generator
    built once."""
    snapshot = Snapshot(paths.snapshot) if snapshot is None else snapshot
    for system in systems:
        context_meta = table_metadata(paths.context(system))
        if context_meta.get("system") != system:
            raise ContractError(f"{paths.context(system)}: written for system {context_meta.get('system')!r}, not "
                                f"{system!r}. Fix: `dvc repro --force answer`.")
    calibration = read_json(paths.calibration)
    context = BuildContext(corpus_texts=corpus_texts(snapshot), calibration=calibration.get("result", {}))
    passages = load_passages(snapshot, paths.candidates) if passages is None else passages
    with build_generator(params.rag.generator, context) as generator:  # stops a server the generator started
        for system in systems:
            _answer(params, paths, system, generator, snapshot, passages)


def _answer(params: Params, paths: PipelinePaths, system: str, generator: Generator, snapshot: Snapshot,
            passages: Passages) -> None:
    rag = params.rag
    context_path = paths.context(system)
    chosen = context_lists(read_table(context_path, CONTEXT_SCHEMA))
    judge = getattr(generator, "chat", None) if rag.claims.judge == "llm" else None
    rows, timing = [], []
    started = time.perf_counter()
    for query in snapshot.queries_of(params.dataset.eval_split).itertuples():
        doc_ids = chosen.get(query.query_id, [])
        texts = [passages.text[d] for d in doc_ids]
        began = time.perf_counter()
        generated = generator.generate(query.text, texts)
        # A cache hit replays the seconds the request originally took; otherwise what this call took.
        seconds = generated.seconds if generated.cache_hit else time.perf_counter() - began
        claims = [] if generated.abstained or generated.failed else sentences(generated.answer)
        cited = [texts[i] for i in generated.citations]
        supported = count_supported(claims, cited, rag.claims.support_threshold, judge)
        rows.append(answer_row(query.query_id, generated, doc_ids, len(claims), supported))
        timing.append({"query_id": query.query_id, "generate_s": seconds,
                       "cache_hit": generated.cache_hit, "attempts": generated.attempts})
    answers = pa.Table.from_pylist(rows, schema=ANSWERS_SCHEMA)
    write_table(paths.answer(system), answers, {"system": system, "generator": generator.describe(),
                                                "claims": rag.claims.to_dict(), "split": params.dataset.eval_split,
                                                "context_sha256": sha256_file(context_path)})
    write_table(paths.timing(system), pa.Table.from_pylist(timing, schema=TIMING_SCHEMA), {"system": system})
    frame = pd.DataFrame(rows)
    print(f"generate[{system}]: {len(frame)} queries, {int(frame['abstained'].sum())} abstained, "
          f"{int(frame['failed'].sum())} failed, {sum(t['cache_hit'] for t in timing)} cached, "
          f"{time.perf_counter() - started:.2f}s")
