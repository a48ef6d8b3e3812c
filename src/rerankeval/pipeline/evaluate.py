"""Stage `evaluate`: per-query metrics of every system, oracle headroom, depth curves and first-stage recall.

A system built on a seed set is measured once per training seed (per_query_seeds.parquet); its per_query rows, so
metrics.json and every Δ downstream, are the mean over seeds per query (``eval.seeds``). Its answer measures and depth
curve are its run file's, the first seed's (the one select and generate read)."""

from __future__ import annotations

from functools import partial

import pandas as pd
import pyarrow as pa

from ..core.io import read_table, table_metadata, write_json, write_table
from ..data.access import AccessLabels, guardrail_flags
from ..data.snapshot import Snapshot
from ..eval.engine import evaluate
from ..eval.funnel import depth_curve, first_stage_metrics, means, per_query_metrics
from ..eval.measures import Measure, parse_measure
from ..eval.seeds import per_seed_metrics, with_seed_means
from ..rag.answer_measures import answer_metrics, join_measures
from ..rag.answers import ANSWERS_SCHEMA
from ..rag.select import CONTEXT_SCHEMA
from ..rerank.assemble import demote_run
from ..retrieval.candidates import FIRST_STAGE_SCHEMA, candidate_source, load_candidates
from ..retrieval.freeze import RETRIEVERS
from ..workspace.paths import (DEPTH_CURVE_FILE, FIRST_STAGE_FILE, PER_QUERY_FILE, PER_QUERY_SEEDS_FILE,
                               SYSTEM_PLACEHOLDER, PipelinePaths)
from ..workspace.runs import load_runs, load_seed_runs
from .params import Params


def run(params: Params, paths: PipelinePaths) -> None:
    evaluation, split = params.evaluation, params.dataset.eval_split
    measures = [parse_measure(name) for name in evaluation.measures]
    oracle_measures = [parse_measure(name) for name in evaluation.oracle_measures]
    depth_measures = [parse_measure(name) for name in evaluation.depth_measures]
    no_relevant = evaluation.no_relevant

    snapshot = Snapshot(paths.snapshot)
    qrels = snapshot.table("qrels").to_pandas()
    query_ids = snapshot.queries_of(split)["query_id"].tolist()
    runs = load_runs(paths.run(SYSTEM_PLACEHOLDER), params.system_names, paths.candidates)
    per_query = per_query_metrics(runs, qrels, query_ids, measures, oracle_measures, no_relevant=no_relevant)
    seed_runs = load_seed_runs(paths.seed_runs(SYSTEM_PLACEHOLDER), params.system_names, paths.candidates)
    per_seed = per_seed_metrics(seed_runs, qrels, query_ids, measures, oracle_measures, no_relevant=no_relevant,
                                like=per_query)
    per_query = with_seed_means(per_query, per_seed)
    if params.rag.measures:
        per_query = with_answer_measures(per_query, params, paths, snapshot)
    labels = AccessLabels.of_candidates(snapshot, paths.candidates, params.retrieval.access.queries_without_groups)
    guardrails = labelled_guardrails([parse_measure(name) for name in evaluation.guardrails], labels)
    if guardrails:
        per_query = with_guardrails(per_query, runs, labels, query_ids, guardrails)
    # A system whose rerank stage demoted the outdated (its run's metadata says so) gets the rule at every depth too.
    demoting = [name for name in runs if table_metadata(paths.run(name)).get("outdated", {}).get("rule") == "demote"]
    curve = depth_curve(runs, qrels, query_ids, evaluation.depths, depth_measures, no_relevant=no_relevant,
                        after={name: partial(demote_run, stale=labels.stale) for name in demoting})

    # Each retriever that ranked the corpus (none for a run or replay source), then the candidates' own order under
    # the source's name (hybrid: the fusion).
    own = read_table(paths.first_stage, FIRST_STAGE_SCHEMA).to_pandas()
    rankings = {name: own[own["retriever"] == name][["query_id", "doc_id", "rank"]] for name in RETRIEVERS
                if (own["retriever"] == name).any()}
    source = candidate_source(table_metadata(paths.candidates))["name"]
    fused = load_candidates(paths.candidates, columns=["query_id", "doc_id", "fused_rank"], with_text=False)
    rankings[source] = fused.rename(columns={"fused_rank": "rank"})
    first_stage = first_stage_metrics(rankings, qrels, query_ids, params.retrieval.top_n, no_relevant=no_relevant)

    write_table(paths.eval / PER_QUERY_FILE, pa.Table.from_pandas(per_query, preserve_index=False),
                {"split": split, "no_relevant": no_relevant, "snapshot": snapshot.hashes})
    write_table(paths.eval / PER_QUERY_SEEDS_FILE, pa.Table.from_pandas(per_seed, preserve_index=False),
                {"split": split, "no_relevant": no_relevant, "seeds": {system: list(runs)
                                                                      for system, runs in seed_runs.items()}})
    write_table(paths.eval / DEPTH_CURVE_FILE, pa.Table.from_pandas(curve, preserve_index=False), {"split": split})
    write_table(paths.eval / FIRST_STAGE_FILE, pa.Table.from_pandas(first_stage, preserve_index=False),
                {"split": split})
    metrics = {"queries": len(set(per_query["query_id"])), "candidate_source": source, "systems": means(per_query),
               "first_stage": means(first_stage, key="retriever"),
               "fusion": table_metadata(paths.first_stage).get("fusion", {})}
    access = table_metadata(paths.candidates).get("access")
    if access is not None and (labels.restricts or {"cannot_filter", "validity_unknown"} & set(access)):
        metrics["access"] = access
    write_json(paths.metrics, metrics)
    headline = str(depth_measures[0] if depth_measures else measures[0])
    for system, values in metrics["systems"].items():
        print(f"evaluate: {system:>12}  {headline} {values[headline]:.4f}")


def with_answer_measures(per_query: pd.DataFrame, params: Params, paths: PipelinePaths,
                         snapshot: Snapshot) -> pd.DataFrame:
    """The per-query table with the answer and context measures of ``params.rag.measures`` (``rag.answer_measures``)."""
    queries = snapshot.queries_of(params.dataset.eval_split)
    all_queries = snapshot.has_answers and params.evaluation.no_relevant == "drop"
    query_ids = list(queries["query_id"]) if all_queries else sorted(set(per_query["query_id"]))
    corpus = snapshot.table("corpus").select(["doc_id", "parent_id"]).to_pandas()
    contexts = {system: read_table(paths.context(system), CONTEXT_SCHEMA).to_pandas()
                for system in params.system_names}
    answers = {system: read_table(paths.answer(system), ANSWERS_SCHEMA).to_pandas() for system in params.system_names}
    measures = [parse_measure(name) for name in params.rag.measures]
    values = answer_metrics(contexts, answers, queries, snapshot.table("qrels").to_pandas(),
                            dict(zip(corpus["doc_id"], corpus["parent_id"])), query_ids, measures)
    return join_measures(per_query, values, all_queries)


NO_JUDGMENTS = pd.DataFrame({"query_id": pd.Series(dtype=str), "doc_id": pd.Series(dtype=str),
                             "relevance": pd.Series(dtype="int64")})
GUARDRAIL_LABELS = {"ACLViolation": "restricts", "Stale": "dated", "StaleFirst": "dated"}
"""Which labels each guardrail family reads (an ``AccessLabels`` property): without them it measures nothing."""


def labelled_guardrails(measures: list[Measure], labels: AccessLabels) -> list[Measure]:
    """The guardrail measures whose labels the collection carries."""
    return [measure for measure in measures if getattr(labels, GUARDRAIL_LABELS.get(measure.name, "restricts"))]


def with_guardrails(per_query: pd.DataFrame, runs: dict[str, pd.DataFrame], labels: AccessLabels,
                    query_ids: list[str], measures: list[Measure]) -> pd.DataFrame:
    """The per-query table with each system's guardrail measures (``eval.measures.guardrails``) from its run file."""
    frames = []
    for system, run in runs.items():
        # No judgments: these measures read labels, not grades; the per-query table decides which queries count.
        values = evaluate(run[["query_id", "doc_id", "rank"]], NO_JUDGMENTS, measures,
                          queries=query_ids, no_relevant="zero",
                          sources={"guardrails": guardrail_flags(run, labels)})
        frames.append(values.rename_axis("query_id").reset_index().assign(system=system))
    found = pd.concat(frames, ignore_index=True)
    return per_query.merge(found, on=["system", "query_id"], how="left")

