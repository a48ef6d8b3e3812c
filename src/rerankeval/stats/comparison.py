"""Turn per-query metrics into a decision: paired CIs, corrected p-values, per-query deltas, slices, verdicts.

Every interval (system means, deltas, slices) comes from the same bootstrap resamples of the query set, so the
numbers are consistent with each other. Pure: DataFrames in, a JSON-ready dict out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from ..core.config import StrictConfig
from ..eval.config import MeasureName
from . import domains
from .resampling import DEFAULT_CONFIDENCE, DEFAULT_MIN_SLICE_SIZE, DEFAULT_N_SAMPLES, DEFAULT_SEED, DEFAULT_TIE_TOL
from .verdict import DeltaEvidence, Evidence, LatencyEvidence, ReleaseRule, SliceEvidence, decide


class UnjudgedWatch(StrictConfig):
    """Flag challengers whose top documents are unjudged much more (or less) often than the baseline's."""

    measure: MeasureName = "Judged@10"
    judged_only_measure: MeasureName | None = None
    margin: float = Field(0.05, ge=0)


class CompareConfig(StrictConfig):
    """The ``compare`` block of params.yaml."""

    baseline: str
    metrics: list[MeasureName]
    samples: int = Field(DEFAULT_N_SAMPLES, ge=1)
    seed: int = DEFAULT_SEED
    confidence: float = Field(DEFAULT_CONFIDENCE, gt=0, lt=1)
    ci_method: Literal["percentile", "bca"] = "percentile"
    permutations: int = Field(DEFAULT_N_SAMPLES, ge=1)
    correction: Literal["holm", "bh"] = "holm"
    tie_tolerance: float = Field(DEFAULT_TIE_TOL, ge=0)
    worst_n: int = Field(5, ge=0)
    min_slice_size: int = Field(DEFAULT_MIN_SLICE_SIZE, ge=1)
    unjudged: UnjudgedWatch = UnjudgedWatch()
    release: ReleaseRule


def finite(value: float) -> float | None:
    """JSON has no infinities or NaN: those become null."""
    value = float(value)
    return round(value, 6) if math.isfinite(value) else None


def _mean(values: np.ndarray) -> float:
    """The mean over the queries where the measure is defined (NaN when it is defined on none)."""
    defined = values[~np.isnan(values)]
    return float(defined.mean()) if len(defined) else float("nan")


def metric_arrays(per_query: pd.DataFrame, systems: Sequence[str], metrics: Sequence[str]) -> dict:
    """``scores[system][metric]``: per-query arrays aligned on the sorted query ids of the baseline."""
    missing = [metric for metric in metrics if metric not in per_query.columns]
    if missing:
        raise ValueError(f"compare.metrics {missing} are not evaluated; add them to evaluation.measures")
    by_system = {system: frame.set_index("query_id").sort_index() for system, frame in per_query.groupby("system")}
    query_ids = by_system[systems[0]].index
    scores = {}
    for system in systems:
        frame = by_system[system]
        if not frame.index.equals(query_ids):
            raise ValueError(f"system {system!r} was evaluated on other queries than {systems[0]!r}")
        scores[system] = {metric: frame[metric].to_numpy(dtype=np.float64) for metric in metrics}
    return scores


def compare(per_query: pd.DataFrame, slices: pd.DataFrame, settings: CompareConfig, rule: ReleaseRule,
            latency_p95_ms: Mapping[str, float | None]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The comparison (deterministic: the same inputs give the same bytes) and the verdicts (which also weigh the
    measured latency, so they carry timing). ``slices``: one row per query (index query_id), a column per label."""
    systems = [settings.baseline] + sorted(set(per_query["system"]) - {settings.baseline})
    if settings.baseline not in set(per_query["system"]):
        raise ValueError(f"baseline {settings.baseline!r} is not among the systems {sorted(set(per_query['system']))}")
    watch = [settings.unjudged.measure] + ([settings.unjudged.judged_only_measure] if settings.unjudged.judged_only_measure else [])
    metrics = list(dict.fromkeys([*settings.metrics, rule.primary_metric]))
    scores = metric_arrays(per_query, systems, list(dict.fromkeys(metrics + watch)))
    query_ids = per_query[per_query["system"] == settings.baseline].sort_values("query_id")["query_id"].to_numpy()
    boot = dict(n_samples=settings.samples, seed=settings.seed, confidence=settings.confidence,
                method=settings.ci_method)

    # Measures undefined on some queries (NaN: ranking measures without a relevant document, answer measures outside
    # their domain) are averaged over their domain; see stats.domains. Complete measures are computed as before.
    system_columns = [(system, metric) for system in systems for metric in metrics]
    means = domains.mean_intervals(np.column_stack([scores[s][m] for s, m in system_columns]), **boot)
    system_table: dict[str, dict] = {}
    for j, (system, metric) in enumerate(system_columns):
        system_table.setdefault(system, {})[metric] = {
            "mean": finite(means.mean[j]), "low": finite(means.low[j]), "high": finite(means.high[j])}

    paired = domains.paired_family({s: {m: scores[s][m] for m in metrics} for s in systems}, settings.baseline)
    family = paired.comparisons
    intervals = domains.family_intervals(paired, **boot)
    tests = domains.family_significance(paired, n_permutations=settings.permutations, seed=settings.seed,
                                        correction=settings.correction)
    summaries = domains.family_summaries(paired, tie_tol=settings.tie_tolerance, worst_n=settings.worst_n)
    comparisons = []
    for j, item in enumerate(family):
        summary = summaries[j]
        comparisons.append({
            "challenger": item.challenger, "metric": item.metric,
            "baseline_mean": finite(_mean(scores[settings.baseline][item.metric])),
            "challenger_mean": finite(_mean(scores[item.challenger][item.metric])),
            "delta": finite(intervals.mean[j]), "low": finite(intervals.low[j]), "high": finite(intervals.high[j]),
            "p_randomisation": finite(tests.p_randomisation[j]),
            "p_randomisation_adjusted": finite(tests.p_randomisation_adjusted[j]),
            "p_ttest": finite(tests.p_ttest[j]), "p_ttest_adjusted": finite(tests.p_ttest_adjusted[j]),
            "median_delta": finite(summary.median), "cohens_dz": finite(summary.cohens_dz),
            "improved": summary.improved, "tied": summary.tied, "regressed": summary.regressed,
            "percentiles": {str(q): finite(v) for q, v in summary.percentiles.items()},
            "worst_regressions": [str(query_ids[i]) for i in summary.worst_regressions],
        })

    slice_results, slice_evidence = {}, {system: [] for system in systems[1:]}
    aligned = slices.reindex(query_ids)
    for column in aligned.columns:
        labels = aligned[column].fillna("(none)").astype(str).to_numpy()
        result = domains.family_slices(paired, labels, min_slice_size=settings.min_slice_size, **boot)
        rows = []
        for k, value in enumerate(result.values):
            rows.append({"value": str(value), "queries": int(result.sizes[k]), "too_small": bool(result.too_small[k]),
                         "comparisons": [{"challenger": item.challenger, "metric": item.metric,
                                          "delta": finite(result.mean[k, j]), "low": finite(result.low[k, j]),
                                          "high": finite(result.high[k, j])}
                                         for j, item in enumerate(family)]})
        slice_results[column] = rows
        for j, item in enumerate(family):
            if item.metric == rule.primary_metric:
                # A slice on which the primary metric is undefined (no relevant document in it) is no evidence.
                slice_evidence[item.challenger].extend(
                    e for e in SliceEvidence.from_intervals(column, result, j) if math.isfinite(e.mean))

    unjudged = {system: finite(1.0 - _mean(scores[system][settings.unjudged.measure])) for system in systems}
    warnings = []
    for system in systems[1:]:
        gap = unjudged[system] - unjudged[settings.baseline]
        if abs(gap) > settings.unjudged.margin:
            judged_only = ""
            if settings.unjudged.judged_only_measure:
                judged_only = (f"; judged-only {settings.unjudged.judged_only_measure}: "
                               f"{_mean(scores[system][settings.unjudged.judged_only_measure]):.4f} vs "
                               f"{_mean(scores[settings.baseline][settings.unjudged.judged_only_measure]):.4f}")
            warnings.append(f"{system}: unjudged rate ({settings.unjudged.measure}) {unjudged[system]:.3f} vs "
                            f"baseline {unjudged[settings.baseline]:.3f} (difference {gap:+.3f} exceeds the margin "
                            f"{settings.unjudged.margin}); unjudged documents count as irrelevant{judged_only}")

    verdicts = {}
    primary_index = {item.challenger: j for j, item in enumerate(family) if item.metric == rule.primary_metric}
    for system in systems[1:]:
        latency = None
        if latency_p95_ms.get(system) is not None:
            latency = LatencyEvidence(latency_p95_ms[system], latency_p95_ms.get(settings.baseline))
        evidence = Evidence(
            primary=DeltaEvidence.from_intervals(rule.primary_metric, intervals, primary_index[system]),
            slices=tuple(slice_evidence[system]),
            baseline_unjudged_rate=unjudged[settings.baseline], challenger_unjudged_rate=unjudged[system],
            latency=latency)
        verdict = decide(rule, evidence)
        verdicts[system] = {"decision": str(verdict.decision), "reasons": list(verdict.reasons),
                            "notes": list(verdict.notes)}

    method = {"resampling": "paired bootstrap over queries", "ci": settings.ci_method,
              "samples": settings.samples, "seed": settings.seed, "confidence": settings.confidence,
              "tests": ["paired randomisation (sign flip)", "paired t-test"],
              "permutations": settings.permutations, "correction": settings.correction,
              "family": f"{len(systems) - 1} challengers x {len(metrics)} metrics",
              "tie_tolerance": settings.tie_tolerance}
    partial = sorted({item.metric for item, undefined in zip(family, paired.partial) if undefined})
    if partial:
        method["undefined_on_some_queries"] = {
            "metrics": partial, "rule": "mean over the queries where the measure is defined; percentile CI of the "
            "difference of the two means under the same resamples; randomisation test by per-query swaps"}
    return {
        "baseline": settings.baseline,
        "queries": int(len(query_ids)),
        "method": method,
        "systems": system_table,
        "comparisons": comparisons,
        "slices": slice_results,
        "unjudged": {"measure": settings.unjudged.measure, "rate": unjudged, "margin": settings.unjudged.margin,
                     "warnings": warnings},
    }, {
        "baseline": settings.baseline,
        "rule": {"primary_metric": rule.primary_metric, "min_delta": rule.min_delta,
                 "critical_slices": [spec.label() + f" budget {spec.budget}" for spec in rule.critical_slices],
                 "max_unjudged_increase": rule.max_unjudged_increase, "latency_p95_max_ms": rule.latency_p95_max_ms},
        "latency_p95_ms": {system: finite(value) if value is not None else None
                           for system, value in latency_p95_ms.items()},
        "verdicts": verdicts,
    }


def relevant_doc_type(qrels: pd.DataFrame, corpus_metadata: pd.Series) -> pd.Series | None:
    """Document slice: the doc_type of each query's most relevant document (ties: alphabetical), if known."""
    doc_types = corpus_metadata.map(lambda text: json.loads(text).get("doc_type"))
    if doc_types.isna().all():
        return None
    relevant = qrels[qrels["relevance"] > 0].assign(doc_type=lambda f: f["doc_id"].map(doc_types).fillna("(none)"))
    best = relevant.sort_values(["query_id", "relevance", "doc_type"], ascending=[True, False, True])
    return best.groupby("query_id")["doc_type"].first()


def regression_details(comparisons: list[dict], runs: Mapping[str, pd.DataFrame], qrels: pd.DataFrame,
                       query_texts: Mapping[str, str], baseline: str, metric: str, top_k: int = 3) -> dict:
    """For the worst regressions on ``metric``: query text and the top documents before and after, with grades."""
    grades = dict(zip(zip(qrels["query_id"], qrels["doc_id"]), qrels["relevance"].astype(int)))

    def top(system: str, query_id: str) -> list[str]:
        run = runs[system]
        head = run[run["query_id"] == query_id].nsmallest(top_k, "rank")["doc_id"]
        return [f"{doc_id} ({grades.get((query_id, doc_id), 'unjudged')})" for doc_id in head]

    details = {}
    for item in comparisons:
        if item["metric"] != metric:
            continue
        details[item["challenger"]] = [
            {"query_id": query_id, "query": query_texts[query_id], "before": top(baseline, query_id),
             "after": top(item["challenger"], query_id)}
            for query_id in item["worst_regressions"]]
    return details
