"""trec_eval's per-query table of any measures it prints: measure families through the engine, its counts, its
geometric means' logarithms and the measures of ``eval.trec_lists``; what ``rerankeval trec_eval`` prints and what
``rerankeval evaluate`` computes for trec_eval's own names."""

from __future__ import annotations

import dataclasses

import pandas as pd

from .counts import GEOMETRIC, geometric_terms, trec_eval_counts
from .engine import evaluate
from .trec_lists import ListMeasure, list_values, ranked_grades, summary_of

COUNTS = ("num_ret", "num_rel", "num_rel_ret")
"""trec_eval's counts per query, summed (not averaged) over the queries in its summary line."""


def trec_eval_table(run, qrels, queries: list[str], asked: dict[str, object], *, level: int | None,
                     judged_only: bool, version: str, num_docs: int):
    """trec_eval's per-query values of ``asked`` (printed name -> what computes it, ``cli.main``'s ``-m`` names) on
    ``run`` (ranked as trec_eval ranks it) over ``queries``, a column per name (a geometric mean's column holds its
    per-query logarithms), and the names trec_eval sums over the queries and prints per query only. ``level`` (-l)
    and ``judged_only`` (-J) are conventions of each measure: its rel and judged_only."""
    families = {}
    for name, measure in asked.items():
        if measure is None or isinstance(measure, ListMeasure):
            continue
        parameters = measure.family.parameters
        if level is not None and "rel" in parameters:
            measure = dataclasses.replace(measure, rel=level)
        if judged_only and "judged_only" in parameters:
            measure = dataclasses.replace(measure, judged_only=True)
        families[name] = measure
    columns = []
    if families:
        values = evaluate(run, qrels, families.values(), queries=queries, no_relevant="zero")
        columns.append(pd.DataFrame({name: geometric_terms(values[str(m)]) if name in GEOMETRIC else values[str(m)]
                                     for name, m in families.items()}))
    counted = [name for name in asked if name in COUNTS]
    if counted:
        columns.append(trec_eval_counts(run, qrels, queries, 1 if level is None else level, judged_only)[counted])
    listed = list(dict.fromkeys(m for m in asked.values() if isinstance(m, ListMeasure)))
    if listed:
        lists = ranked_grades(run, qrels, queries, judged_only)
        columns.append(list_values(lists, listed, 1 if level is None else level, version, num_docs))
    table = pd.concat(columns, axis=1).reindex(queries) if columns else pd.DataFrame(index=queries)
    summed = {*counted, *(c for m in listed if summary_of(m) == "sum" for c in m.columns())}
    per_query_only = {c for m in listed if summary_of(m) == "none" for c in m.columns()}
    return table, summed, per_query_only
