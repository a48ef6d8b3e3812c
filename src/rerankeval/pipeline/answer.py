"""Stage `answer@<system>`: steps 3 and 4 of the funnel for one system. The context each query's answer is generated
from, chosen from the system's ranking (``rag.select``); then the answer one fixed generator, prompt and context
budget writes from it for every system (``rag.generators``). Contexts and answers are byte-identical across reruns;
what took how long goes to a separate timing table (``rag.answers``).

One stage, not two: a no-op ``dvc repro`` pays DVC's per-stage bookkeeping twice per stage (its locks, its checks)
where ``dvc status`` pays it once, and the two steps of a system always ran together.
"""

from __future__ import annotations

import time

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
from ..rag.passages import Passages, corpus_texts, load_passages
from ..rag.select import CONTEXT_SCHEMA, context_lists, context_table
from ..rag.similarity import dense_similarity
from ..workspace.paths import SYSTEM_PLACEHOLDER, PipelinePaths
from ..workspace.runs import load_runs
from .params import Params


def run(params: Params, paths: PipelinePaths, system: str) -> None:
    select(params, paths, system)
    generate(params, paths, system)


def select(params: Params, paths: PipelinePaths, system: str) -> None:
    """The context of each query of the evaluated split, chosen from the system's ranking: its run file."""
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


def generate(params: Params, paths: PipelinePaths, system: str) -> None:
    """The answers of the evaluated split's queries from the system's contexts (its context file)."""
    rag = params.rag
    snapshot = Snapshot(paths.snapshot)
    context_path = paths.context(system)
    context_meta = table_metadata(context_path)
    if context_meta.get("system") != system:
        raise ContractError(f"{context_path}: written for system {context_meta.get('system')!r}, not {system!r}. "
                            f"Fix: `dvc repro --force answer@{system}`.")
    calibration = read_json(paths.calibration)
    context = BuildContext(corpus_texts=corpus_texts(snapshot), calibration=calibration.get("result", {}))
    with build_generator(rag.generator, context) as generator:  # stops a server the generator started
        passages: Passages = load_passages(snapshot, paths.candidates)
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
