"""``evaluate``: per-query values of any registered measures, from a run and qrels DataFrames.

The run and qrels become one GradeMatrix (``rerankeval.eval.matrix``, whose docstring gives the
input contract and TIE_BREAK_RULE); each measure's family kernel computes on the input its
family needs, built once per call and shared by every measure that needs it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

import numpy as np
import pandas as pd

from .matrix import GradeMatrix, JudgedRun, grade_matrix
from .ranks import assign_ranks, positions  # noqa: F401  (assign_ranks: this module's API too)
from .measures import Measure, as_measure, build_input


def evaluate(
    run: pd.DataFrame,
    qrels: pd.DataFrame,
    measures: Iterable[Measure | str],
    *,
    queries: Iterable[str] | None = None,
    no_relevant: str = "drop",
    sources: Mapping[str, object] | None = None,
) -> pd.DataFrame:
    """Per-query values: indexed by query_id (sorted), one float64 column per measure.

    Columns are named by the measures' canonical strings, e.g. ``nDCG@10``; measures may be
    given as Measure values or strings. ``queries`` and ``no_relevant`` choose the rows, as the
    matrix module describes. ``sources`` hands other per-query inputs to the families that need
    them (``rag``: see ``measures.answers``). Bad input raises ValueError naming the problem and
    where it is.
    """
    measures = list(dict.fromkeys(as_measure(m) for m in measures))
    matrix = grade_matrix(
        run,
        qrels,
        queries=queries,
        no_relevant=no_relevant,
        candidate_order=any(m.family.needs == "candidate_order" for m in measures),
    )
    if sources:
        matrix = replace(matrix, sources=dict(sources))
    return evaluate_matrix(matrix, measures)


def evaluate_matrix(matrix: GradeMatrix, measures: Iterable[Measure | str]) -> pd.DataFrame:
    """``evaluate`` on a prebuilt GradeMatrix: the kernels alone."""
    inputs: dict[str, object] = {}
    columns = {}
    for measure in dict.fromkeys(as_measure(m) for m in measures):
        needs = measure.family.needs
        if needs not in inputs:
            inputs[needs] = build_input(needs, matrix)
        values = np.asarray(measure.family.kernel(measure, inputs[needs]), dtype=np.float64)
        if not measure.family.defines_no_relevant:
            values[~matrix.has_relevant] = 0.0
        columns[str(measure)] = values
    return pd.DataFrame(columns, index=matrix.query_ids, dtype=np.float64)


def oracle_run(candidates: pd.DataFrame, qrels: pd.DataFrame) -> pd.DataFrame:
    """The best reranking of each query's candidates, as a run with a ``rank`` column.

    Candidates are sorted by true grade descending (unjudged counts as 0, as trec_eval
    assumes), then by original rank ascending: fused_rank when present, else the candidates'
    own rank (TIE_BREAK_RULE). The oracle can only reorder candidates, so relevant documents
    outside them stay unreachable.
    """
    rows = JudgedRun(candidates, qrels, orderings=("fused_rank", "rank", "score"))
    if "fused_rank" in candidates.columns:
        original = rows.order("fused_rank")
    else:
        original = rows.order("rank" if "rank" in candidates.columns else "score")
    grade = rows.grades(missing=0, dtype=np.int64)
    order = np.lexsort((positions(rows, original), -grade, rows.layout.codes))
    rank = np.empty(len(candidates), dtype=np.int64)
    rank[order] = np.arange(len(candidates)) - rows.layout.starts[rows.layout.codes[order]] + 1
    oracle = candidates.drop(columns=[c for c in ("rank", "score") if c in candidates.columns])
    return oracle.assign(rank=rank).iloc[order].reset_index(drop=True)


def oracle_values(
    candidates: pd.DataFrame,
    qrels: pd.DataFrame,
    measures: Iterable[Measure | str],
    *,
    queries: Iterable[str] | None = None,
    no_relevant: str = "drop",
) -> pd.DataFrame:
    """The best value each measure can reach by reordering the candidates, per query."""
    return evaluate(oracle_run(candidates, qrels), qrels, measures, queries=queries, no_relevant=no_relevant)


