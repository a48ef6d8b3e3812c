"""Can the comparison carry a decision at all? Checks of the baseline, the judgments and the runs themselves.

* First stage: each retriever against the random floor, and a fused baseline against its best component, with
  paired bootstrap CIs; a baseline significantly below a component (or at the random floor) is flagged.
* Judgments: qrels that judge no document non-relevant (positive-only, like most Korean sets and CISI) make every
  unjudged-based measure and check meaningless: an unjudged document there is merely one not known relevant.
* Runs: a challenger whose ranking equals the baseline's on every query probably never saw its own configuration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..eval.measures import parse_measure
from .resampling import CIMethod, bootstrap_ci
from .verdict import ci_label

FUSED, COMPONENTS = "hybrid", ("bm25", "dense")


def positive_only_reason(qrels: pd.DataFrame, query_ids: Sequence[str]) -> str | None:
    """Why unjudged-based measures and checks mean nothing on these qrels, or None when they do.

    They mean nothing when the evaluated queries' qrels judge no document non-relevant (no grade <= 0)."""
    judged = qrels[qrels["query_id"].isin(set(query_ids))]
    if len(judged) == 0 or (judged["relevance"] <= 0).any():
        return None
    return ("the qrels judge no document non-relevant (no grade <= 0), so an unjudged document is merely one not "
            "known relevant: unjudged rates measure precision, not judgment coverage")


def needs_negative_judgments(measure: str) -> bool:
    """Measures that mean nothing without judged non-relevant documents: Judged, Bpref and every judged_only one."""
    parsed = parse_measure(measure)
    return parsed.judged_only or parsed.name in ("Judged", "Bpref")


def identical_to_baseline(runs: Mapping[str, pd.DataFrame], baseline: str, query_ids: Sequence[str]) -> dict[str, int]:
    """Challengers whose ranking (doc ids in rank order) equals the baseline's on every query: system -> queries."""
    wanted = set(query_ids)

    def rankings(run: pd.DataFrame) -> pd.DataFrame:
        rows = run[run["query_id"].isin(wanted)]
        return rows.sort_values(["query_id", "rank"])[["query_id", "doc_id"]].reset_index(drop=True)

    reference = rankings(runs[baseline])
    return {system: int(reference["query_id"].nunique()) for system, run in runs.items()
            if system != baseline and len(reference) and rankings(run).equals(reference)}


def reduced_to_baseline(reductions: Mapping[str, Any], baseline: str) -> dict[str, str]:
    """Why each run identical to the baseline's ranks as it does, where what its system says it reduces to
    (``describe.reduces_to``: {system, why}, a blend at weight 0 or 1; None: nothing) names the baseline. The
    compare stage reads it from each run's metadata, ``rerankeval compare`` from each run file's ir_metadata."""
    return {system: str(reduced["why"]) for system, reduced in reductions.items()
            if isinstance(reduced, Mapping) and reduced.get("system") == baseline and reduced.get("why")}


def first_stage_sanity(first_stage: pd.DataFrame, random_floor: pd.Series | None, metric: str, baseline: str,
                       baseline_retriever: str | None, *, n_samples: int, seed: int, confidence: float,
                       method: CIMethod) -> dict[str, Any]:
    """Each first-stage retriever (``first_stage``: retriever, query_id, measure columns) against the random floor
    (the random system's per-query ``metric``, indexed by query id), and the fused ranking against its best
    component. ``baseline_retriever``: the first-stage ranking the baseline's kind reproduces
    (``roles.KindTraits.retriever``), None for a reranker. ``flag`` says why the baseline cannot carry a decision, or
    is None. Without BM25 and dense (a run or replay candidate source) the one ranking is the candidates' own order,
    which a fusion-kind baseline reproduces."""
    wide = first_stage.pivot(index="query_id", columns="retriever", values=metric).sort_index()
    retrievers = [name for name in (*COMPONENTS, FUSED) if name in wide.columns] + \
        sorted(set(wide.columns) - {*COMPONENTS, FUSED})
    own_order = retrievers[0] if len(retrievers) == 1 and retrievers[0] not in COMPONENTS else FUSED
    columns, labels = [], []
    if random_floor is not None:
        floor = random_floor.reindex(wide.index)
        if floor.isna().any():
            raise ValueError("the random system was evaluated on other queries than the first stage")
        for name in retrievers:
            columns.append(wide[name] - floor)
            labels.append(("floor", name))
    components = [name for name in COMPONENTS if name in wide.columns]
    best_component = max(components, key=lambda name: (wide[name].mean(), name)) if components else None
    if best_component and FUSED in wide.columns:
        columns.append(wide[FUSED] - wide[best_component])
        labels.append(("fusion", best_component))
    intervals = bootstrap_ci(np.column_stack(columns), n_samples=n_samples, seed=seed, confidence=confidence,
                             method=method) if columns else None
    found = {label: {"delta": round(float(intervals.mean[j]), 6), "low": round(float(intervals.low[j]), 6),
                     "high": round(float(intervals.high[j]), 6)} for j, label in enumerate(labels)}

    table = {name: {"mean": round(float(wide[name].mean()), 6), "vs_random": found.get(("floor", name))}
             for name in retrievers}
    for entry in table.values():
        entry["at_random_floor"] = entry["vs_random"] is not None and entry["vs_random"]["low"] <= 0
    best = max(retrievers, key=lambda name: (wide[name].mean(), name))
    fusion_vs_best = found.get(("fusion", best_component)) if best_component else None
    result = {"metric": metric, "confidence": confidence, "queries": int(len(wide)),
              "random": None if random_floor is None else round(float(random_floor.reindex(wide.index).mean()), 6),
              "retrievers": table, "best": best, "best_component": best_component,
              "fusion_vs_best_component": fusion_vs_best, "baseline": baseline, "flag": None}
    retriever = own_order if baseline_retriever == FUSED else baseline_retriever
    if retriever == FUSED and fusion_vs_best is not None and fusion_vs_best["high"] < 0:
        result["flag"] = (f"the comparison baseline is broken on this collection: {baseline} (fused) is "
                          f"{-fusion_vs_best['delta']:.3f} below {best_component} on {metric} "
                          f"({ci_label(confidence)} of the difference [{fusion_vs_best['low']:+.3f}, "
                          f"{fusion_vs_best['high']:+.3f}]); best first stage: {best}")
    elif retriever in table and table[retriever]["at_random_floor"]:
        result["flag"] = (f"the comparison baseline is broken on this collection: {baseline} is not above the random "
                          f"floor on {metric}; best first stage: {best}")
    return result

