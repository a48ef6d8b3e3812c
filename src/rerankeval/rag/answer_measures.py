"""The answer and context measures per (system, query), computed from the generate stage's tables (the evaluate
stage's; ``rag.answers`` holds the tables, so generating runs no measure).

Which queries the measures cover: when the collection has gold answers, every query of the evaluated split,
including those whose judgments are all 0 (the abstention cases); otherwise the queries the ranking measures
evaluate. Ranking measures stay undefined (NaN) on a query without a relevant document when
``evaluation.no_relevant`` is ``drop`` (trec_eval skips such queries), so their means and paired intervals are over the
queries that have one; answer measures define their own value there (``rerankeval.eval.measures.answers``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..eval.engine import evaluate
from ..eval.measures import Measure
from ..eval.measures.answers import RAG_COLUMNS


def rag_frame(queries: pd.DataFrame, qrels: pd.DataFrame, parents: Mapping[str, str], context: pd.DataFrame,
              answers: pd.DataFrame) -> pd.DataFrame:
    """The ``rag`` input of one system: one row per query of ``answers``, indexed by query_id."""
    grade_of = {(q, d): int(g) for q, d, g in zip(qrels["query_id"], qrels["doc_id"], qrels["relevance"])}
    judged = qrels.groupby("query_id")
    judged_grades = {q: list(frame["relevance"].astype(int)) for q, frame in judged}
    judged_parents = {q: [parents.get(d, d) for d in frame["doc_id"]] for q, frame in judged}
    by_query = {q: frame.sort_values("position") for q, frame in context.groupby("query_id")}
    gold = queries.set_index("query_id")
    rows = []
    for row in answers.itertuples(index=False):
        q = row.query_id
        ctx = by_query.get(q, context.iloc[:0])
        has_gold = "answerable" in gold.columns and q in gold.index and not pd.isna(gold.at[q, "answerable"])
        rows.append({
            "query_id": q,
            "answerable": bool(gold.at[q, "answerable"]) if has_gold else None,
            "gold_answers": list(gold.at[q, "answers"]) if has_gold and gold.at[q, "answers"] is not None else [],
            "answer": row.answer, "abstained": bool(row.abstained), "failed": bool(row.failed),
            "citation_grades": [grade_of.get((q, d), 0) for d in row.citations],
            "context_grades": [grade_of.get((q, d), 0) for d in ctx["doc_id"]],
            "context_parents": list(ctx["parent_id"]), "context_redundant": list(ctx["redundant"]),
            "context_near_duplicate": list(ctx["near_duplicate"]), "context_tokens": int(ctx["tokens"].sum()),
            "judged_grades": judged_grades.get(q, []), "judged_parents": judged_parents.get(q, []),
            "claims": int(row.claims), "supported_claims": int(row.supported_claims),
            "prompt_tokens": int(row.prompt_tokens), "completion_tokens": int(row.completion_tokens),
            "cost_usd": float(row.cost_usd),
        })
    return pd.DataFrame(rows, columns=["query_id", *RAG_COLUMNS]).set_index("query_id")


def answer_metrics(contexts: Mapping[str, pd.DataFrame], answers: Mapping[str, pd.DataFrame], queries: pd.DataFrame,
                   qrels: pd.DataFrame, parents: Mapping[str, str], query_ids: Sequence[str],
                   measures: Sequence[Measure]) -> pd.DataFrame:
    """One row per (system, query of ``query_ids``): every answer and context measure."""
    frames = []
    for system, context in contexts.items():
        run = context[["query_id", "doc_id", "position"]].rename(columns={"position": "rank"})
        frame = rag_frame(queries, qrels, parents, context, answers[system])
        values = evaluate(run, qrels, list(measures), queries=list(query_ids), no_relevant="zero",
                          sources={"rag": frame})
        values.insert(0, "system", system)
        frames.append(values.rename_axis("query_id").reset_index())
    return pd.concat(frames, ignore_index=True)


def join_measures(ranking: pd.DataFrame, answer: pd.DataFrame | None, all_queries: bool) -> pd.DataFrame:
    """Ranking and answer measures side by side, rows sorted by (system order, query id).

    ``all_queries``: keep answer-only rows (queries without a relevant document), whose ranking measures are NaN.
    """
    if answer is None or answer.empty:
        return ranking
    systems = list(dict.fromkeys(ranking["system"]))
    joined = ranking.merge(answer, on=["system", "query_id"], how="outer" if all_queries else "left")
    order = joined["system"].map({system: i for i, system in enumerate(systems)}).to_numpy()
    joined = joined.iloc[np.lexsort((joined["query_id"].to_numpy(), order))].reset_index(drop=True)
    return joined
