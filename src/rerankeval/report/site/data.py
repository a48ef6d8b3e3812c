"""What the site shows, from the report stage's inputs (the compare stage's analysis as ``stats.schema``'s models):
the decision rows, each system's page and the explorer's per-query records. Nothing here measures anything: it selects
and reshapes what the earlier stages wrote."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...eval.funnel import system_depth
from ...stats.schema import Compare, SystemCost, Verdicts
from ...systems.base import RERANKED
from ..claims import claim_cell, decided
from ..decision import p95_text
from ..moved import moved_per_query

FIRST_STAGE_COLUMNS = ("bm25", "dense", "fused")
SNIPPET_CHARS = 280
"""Context passages are shown as their first characters: enough to read why they were picked, small enough to
keep the explorer's data a few hundred kB."""
SHA_PREFIX = 12


@dataclass(frozen=True)
class SiteInputs:
    primary: str
    baseline: str
    systems: Sequence[str]
    compare: Compare
    verdicts: Verdicts
    per_query: pd.DataFrame
    runs: Mapping[str, pd.DataFrame]
    candidates: pd.DataFrame
    """The frozen candidates (CANDIDATES_SCHEMA, no text)."""
    candidate_source: str
    """The candidate source's name (``retrieval.candidates.candidate_source``)."""
    first_stage_filled: bool
    """Whether the candidates hold BM25's and dense's scores and ranks (``retrieval.candidates.first_stage_filled``)."""
    qrels: pd.DataFrame
    queries: pd.DataFrame
    slice_columns: Sequence[str]
    costs: Mapping[str, SystemCost]
    """costs.json ``systems``: each system's latency percentiles and cost per 1k queries."""
    max_candidates: int
    contexts: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    answers: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    passages: Mapping[str, str] = field(default_factory=dict)
    """sha256 -> text of the frozen passages (only the selected contexts' are shown)."""
    reference: Sequence[str] = ()
    """Systems that are bounds or first-stage orders (oracle, random), listed apart from the challengers."""
    access: Mapping[str, Any] | None = None
    """What the freeze's access filter removed (metrics.json ``access``); None without access labels."""


def _number(value: Any, digits: int = 6) -> float | None:
    if value is None or (isinstance(value, float) and not np.isfinite(value)) or pd.isna(value):
        return None
    return round(float(value), digits)


def _int(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def decision_rows(inputs: SiteInputs) -> list[dict[str, Any]]:
    """The verdict table as report.md has it (one row per challenger and baseline), with p95 and cost beside it."""
    rows = []
    for system, reference, verdict in decided(inputs.verdicts):
        cost = inputs.costs.get(system)
        rows.append({"system": system, "baseline": reference, "decision": verdict.decision,
                     "claim": claim_cell(verdict), "delta": _number(verdict.delta),
                     "low": _number(verdict.ci[0]), "high": _number(verdict.ci[1]),
                     "decided_by": verdict.decided_by, "reasons": list(verdict.reasons), "notes": list(verdict.notes),
                     "p95": p95_text(inputs.verdicts, system),
                     "p95_untrusted": inputs.verdicts.latency_untrusted.get(system),
                     "cost_per_1k_queries": None if cost is None else _number(cost.cost_per_1k_queries, 6),
                     "reference": system in inputs.reference})
    return rows


def _cost_fields(cost: SystemCost | None) -> dict[str, Any]:
    """Every field of a system's costs.json row by name, sorted as the file has them, floats rounded; none without
    a row."""
    if cost is None:
        return {}
    values = {key: getattr(cost, key) for key in sorted(SystemCost.model_fields)}
    return {key: (_number(value, 6) if isinstance(value, float) else value) for key, value in values.items()}


def system_page(inputs: SiteInputs, system: str) -> dict[str, Any]:
    """One system's metrics with their CIs, its paired comparisons against the baseline (``Comparison``), its
    verdicts (each ``(baseline, Verdict)``) and costs."""
    compare, verdicts = inputs.compare, inputs.verdicts
    metrics = {name: {"mean": _number(entry.mean), "low": _number(entry.low), "high": _number(entry.high)}
               for name, entry in sorted(compare.systems.get(system, {}).items())}
    measured = {"latency_p95_ms": verdicts.latency_p95_ms.get(system), "p95": p95_text(verdicts, system),
                "latency_source": verdicts.latency_source.get(system),
                "latency_untrusted": verdicts.latency_untrusted.get(system)}
    return {"system": system, "baseline": inputs.baseline, "metrics": metrics,
            "comparisons": [row for row in compare.comparisons if row.challenger == system],
            "verdicts": [(reference, verdict) for name, reference, verdict in decided(verdicts) if name == system],
            "cost": _cost_fields(inputs.costs.get(system)), "measured": measured,
            "reference": system in inputs.reference, "method": compare.method}


def _ranked(run: pd.DataFrame, scored: bool = True) -> dict[str, dict[str, tuple[int, float | None, tuple[str, str]]]]:
    """query -> doc -> (rank, score, (mode, degraded reason)) of one system's run; ``scored`` False for a reference
    system, whose stored "score" only encodes its order (the oracle's grades, random's draw): no score shown."""
    ranked: dict[str, dict[str, tuple[int, float | None, tuple[str, str]]]] = {}
    for query_id, doc_id, rank, score, mode, reason in zip(run["query_id"], run["doc_id"], run["rank"], run["score"],
                                                           run["mode"], run["degraded_reason"]):
        ranked.setdefault(query_id, {})[doc_id] = (int(rank), _number(score) if scored else None,
                                                   (str(mode), "" if pd.isna(reason) else str(reason)))
    return ranked


def explorer_data(inputs: SiteInputs) -> dict[str, Any]:
    """Every evaluated query with its slices, primary metric per system, movement, candidates (capped), contexts
    and answers; strings repeated across rows (mode, degraded reason) are interned in ``modes``."""
    systems = list(inputs.systems)
    deepest = max((system_depth(inputs.runs[s]) for s in systems), default=0)
    cap = min(inputs.max_candidates, deepest) if deepest else inputs.max_candidates
    primary = inputs.per_query.pivot_table(index="query_id", columns="system", values=inputs.primary, dropna=False)
    moved = pd.concat([moved_per_query(inputs.runs[s], inputs.qrels, s) for s in systems], ignore_index=True)
    direction = {(r.system, r.query_id): ("up" if r.best_rank < r.best_fused_rank else
                                          "down" if r.best_rank > r.best_fused_rank else "same")
                 for r in moved.itertuples()}
    grades = {(q, d): int(g) for q, d, g in zip(inputs.qrels["query_id"], inputs.qrels["doc_id"],
                                                 inputs.qrels["relevance"])}
    candidates = {q: frame.sort_values("fused_rank") for q, frame in inputs.candidates.groupby("query_id")}
    runs = {s: _ranked(inputs.runs[s], scored=s not in inputs.reference) for s in systems}
    contexts = {s: {q: frame.sort_values("position") for q, frame in inputs.contexts[s].groupby("query_id")}
                for s in systems if s in inputs.contexts}
    answers = {s: dict(zip(frame["query_id"], frame.to_dict("records"))) for s, frame in inputs.answers.items()
               if s in systems}
    tested = [s for s in systems if s not in inputs.reference]
    modes: dict[tuple[str, str], int] = {}
    passages: dict[str, str] = {}
    records = []
    for query in inputs.queries.sort_values("query_id").itertuples(index=False):
        query_id = query.query_id
        frame = candidates.get(query_id, inputs.candidates.iloc[0:0])
        query_runs = {s: runs[s].get(query_id, {}) for s in systems}
        # Reference systems (random, a single retriever, the oracle) reorder the whole list: their heads would
        # bring in most candidates, so only the systems under test add theirs; relevant ones are always shown.
        shown_ids = set(frame.loc[frame["fused_rank"] <= cap, "doc_id"]).union(
            *({doc for doc, ranked in query_runs[s].items() if ranked[0] <= cap} for s in tested),
            {doc for doc in frame["doc_id"] if (grades.get((query_id, doc)) or 0) > 0})
        rows = []
        for candidate in frame[frame["doc_id"].isin(shown_ids)].itertuples(index=False):
            row = {"doc": candidate.doc_id, "sha": candidate.passage_sha256[:SHA_PREFIX],
                   "grade": grades.get((query_id, candidate.doc_id)),
                   **{name: [_number(getattr(candidate, f"{name}_score")), _int(getattr(candidate, f"{name}_rank"))]
                      for name in FIRST_STAGE_COLUMNS},
                   "systems": []}  # in the order of ``systems``, None where a system's run lacks the candidate
            for run in query_runs.values():
                ranked = run.get(candidate.doc_id)
                row["systems"].append(None if ranked is None else
                                      [ranked[0], ranked[1], modes.setdefault(ranked[2], len(modes))])
            rows.append(row)
        record = {"id": query_id, "text": str(query.text),
                  "slices": {column: (None if pd.isna(getattr(query, column)) else str(getattr(query, column)))
                             for column in inputs.slice_columns if column in inputs.queries.columns},
                  "metric": {s: _number(primary.at[query_id, s]) if query_id in primary.index and s in primary
                             else None for s in systems},
                  "moved": {s: direction.get((s, query_id)) for s in systems},
                  "total": int(len(frame)), "candidates": rows, "context": {}, "answer": {}}
        digests = dict(zip(frame["doc_id"][::-1], frame["passage_sha256"][::-1]))  # a doc's first row wins
        for system, by_query in contexts.items():
            if query_id in by_query:
                context = by_query[query_id]
                record["context"][system] = [[int(c.position), c.doc_id, c.source, int(c.tokens)]
                                             for c in context.itertuples(index=False)]
                for doc_id in context["doc_id"]:
                    digest = digests.get(doc_id)
                    if digest in inputs.passages:
                        passages[doc_id] = inputs.passages[digest][:SNIPPET_CHARS]
        for system, answers_by_query in answers.items():
            if query_id in answers_by_query:
                answer = answers_by_query[query_id]
                record["answer"][system] = {"answer": str(answer["answer"] or ""),
                                            "abstained": bool(answer["abstained"]), "failed": bool(answer["failed"]),
                                            "reason": "" if pd.isna(answer["reason"]) else str(answer["reason"]),
                                            "citations": [str(c) for c in answer["citations"]]}
        records.append(record)
    return {"primary": inputs.primary, "baseline": inputs.baseline, "systems": systems,
            "reference": [s for s in systems if s in inputs.reference], "cap": cap,
            "max_candidates": inputs.max_candidates, "deepest_depth": deepest,
            "tie_tolerance": inputs.compare.method.tie_tolerance,
            "source": inputs.candidate_source, "first_stage_filled": inputs.first_stage_filled,
            "slice_columns": [c for c in inputs.slice_columns if c in inputs.queries.columns],
            "plain_mode": RERANKED,
            "modes": [list(mode) for mode, _ in sorted(modes.items(), key=lambda item: item[1])],
            "passages": passages, "queries": records}
