"""What the answers (stages 3 and 4) show beside the ranking, from the per-query measures: per system the answer
measures' means (those without a paired CI too: tokens and cost), the outcome of each answer with gold, and per
challenger whether its ranking gain reached the answer, query by query. compare.json's ``answers`` holds it, and the
report's answers section and its plot only render it (the intervals and paired deltas are ``comparison``'s)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

RANKING_MEASURE = "nDCG@10"
"""The ranking side of "did the ranking gain reach the answer?"."""
ANSWER_MEASURE = "AnswerF1"
"""Its answer side; without it in the per-query table there is no answers analysis."""
HEADLINE = ("EvidenceCoverage", "AnswerEM", "AnswerF1", "AbstentionPrecision", "AbstentionRecall",
            "CitationPrecision")
"""The answer measures the report's system table shows, after the ranking measure."""
COST_MEASURES = ("AnswerTokens", "AnswerCost")
OUTCOME_MEASURES = ("AnswerEM", "CorrectRefusal", "BoundaryPartial", "IncorrectAnswer", "FalseRefusal")
TOLERANCE = 1e-9
"""A per-query delta within this of 0 is no change."""


def _mean(values: pd.Series) -> float | None:
    finite = values.dropna()
    return float(finite.mean()) if len(finite) else None


def _counts(per_query: pd.DataFrame, baseline: str) -> dict[str, int]:
    own = per_query[per_query["system"] == baseline]
    ranked = int(own[RANKING_MEASURE].notna().sum()) if RANKING_MEASURE in own else len(own)
    # the answer measures share one domain (the queries with gold answers, unanswerable ones included)
    return {"queries": len(own), "with_gold": int(own[ANSWER_MEASURE].notna().sum()), "with_relevant": ranked}


def _outcomes(frame: pd.DataFrame) -> dict[str, int]:
    """How many answers with gold were correct, partial, wrong, refused wrongly or rightly, or failed."""
    gold = frame["AnswerEM"].notna()
    refusals = int(frame.loc[gold, "CorrectRefusal"].sum())
    counts = {"correct": int(frame.loc[gold, "AnswerEM"].sum()) - refusals,
              "boundary_partial": int(frame.loc[gold, "BoundaryPartial"].sum()),
              "incorrect_answer": int(frame.loc[gold, "IncorrectAnswer"].sum()),
              "false_refusal": int(frame.loc[gold, "FalseRefusal"].sum()), "correct_refusal": refusals}
    counts["failed"] = int(gold.sum()) - sum(counts.values())
    return counts


def _deltas(per_query: pd.DataFrame, baseline: str) -> dict[str, pd.DataFrame]:
    """Per challenger: its queries' (ranking delta, answer delta) against the baseline, where both are defined."""
    base = per_query[per_query["system"] == baseline].set_index("query_id")
    found = {}
    for system, frame in per_query.groupby("system", sort=False):
        if system == baseline:
            continue
        own = frame.set_index("query_id")
        found[system] = pd.DataFrame({"ranking": own[RANKING_MEASURE] - base[RANKING_MEASURE],
                                      "answer": own[ANSWER_MEASURE] - base[ANSWER_MEASURE]}).dropna().sort_index()
    return found


def _reach(deltas: pd.DataFrame) -> dict[str, int]:
    up, down = deltas["ranking"] > TOLERANCE, deltas["ranking"] < -TOLERANCE
    gain, loss = deltas["answer"] > TOLERANCE, deltas["answer"] < -TOLERANCE
    return {"ranking_up": int(up.sum()), "ranking_up_answer_up": int((up & gain).sum()),
            "ranking_up_answer_down": int((up & loss).sum()), "ranking_down": int(down.sum()),
            "ranking_down_answer_down": int((down & loss).sum()),
            "ranking_same_answer_moved": int((~up & ~down & (gain | loss)).sum())}


def _plain(value: float) -> float | None:
    """6 significant digits (a cost per query of 1e-7 USD keeps its digits, where 6 decimals would not); NaN: None."""
    return None if value is None or not math.isfinite(value) else float(f"{float(value):.6g}")


def answer_analysis(per_query: pd.DataFrame, baseline: str) -> dict | None:
    """compare.json's ``answers``, or None when the per-query table has no answer measure (no generate stage ran).
    ``deltas``: per challenger, its queries as [query id, Δ ranking measure, Δ answer measure] (the plot's points);
    without the ranking measure among the evaluated ones, ``ranking_measure`` is None and there are no deltas."""
    if ANSWER_MEASURE not in per_query.columns:
        return None
    ranking = RANKING_MEASURE if RANKING_MEASURE in per_query.columns else None
    shown = [m for m in (RANKING_MEASURE, *HEADLINE, *COST_MEASURES) if m in per_query.columns]
    by_system = dict(tuple(per_query.groupby("system", sort=False)))
    deltas = _deltas(per_query, baseline) if ranking else {}
    return {
        "ranking_measure": ranking, "answer_measure": ANSWER_MEASURE, "tolerance": TOLERANCE,
        "counts": _counts(per_query, baseline),
        "means": {system: {m: _plain(_mean(frame[m])) for m in shown} for system, frame in by_system.items()},
        "outcomes": ({system: _outcomes(frame) for system, frame in by_system.items()}
                     if set(OUTCOME_MEASURES) <= set(per_query.columns) else None),
        "reach": {system: _reach(frame) for system, frame in deltas.items()},
        "deltas": {system: [[str(query), _plain(row.ranking), _plain(row.answer)]
                            for query, row in frame.iterrows()] for system, frame in deltas.items()}}


def deltas_frame(deltas: Mapping[str, Sequence[Sequence[Any]]]) -> pd.DataFrame:
    """``answers``' ``deltas`` (per challenger, its queries as (query id, Δ ranking, Δ answer)) as rows of
    (challenger, query_id, ranking_delta, answer_delta): what a plot reads."""
    rows = [(system, query, ranking, answer) for system, found in deltas.items() for query, ranking, answer in found]
    return pd.DataFrame(rows, columns=["challenger", "query_id", "ranking_delta", "answer_delta"]).astype(
        {"ranking_delta": np.float64, "answer_delta": np.float64})
