"""Turn per-query metrics into a decision: paired CIs, adjusted p-values, per-query deltas, slices, verdicts.

Every interval (system means, deltas, slices) comes from the same bootstrap resamples of the query set, so the
numbers are consistent with each other (the release decision's primary intervals are simultaneous over their family,
``stats.family``); the one exception is the primary metric's CI of a pair involving a system
trained with several seeds, which also counts the between-seed variance (``stats.seed_comparison``). Pure:
DataFrames in, a JSON-ready dict out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from . import domains
from .config import CompareConfig, ReleaseRule, UnjudgedWatch
from .decisions import (GuardrailInputs, ReleasePairs, RunFacts, decide_pairs, evidence_settings, family_label,
                        family_of, finite)
from .evidence import adjusted_confidence, release_evidence, slices_that_can_reject, verdict_queries
from .family import procedure
from .inference import paired_inference
from .seed_comparison import seed_family, seeds_record, with_seed_intervals
from .simulation import SIMULATED_DELTAS
from .guardrails import check_slice_budgets, guardrail_table


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
            facts: RunFacts = RunFacts(),
            per_query_seeds: pd.DataFrame | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The comparison (deterministic: the same inputs give the same bytes) and the verdicts (which also weigh the
    measured latency, so they carry timing). ``slices``: one row per query (index query_id), a column per label.

    Every (challenger, baseline) pair of ``CompareConfig.references`` (each baseline on every metric, and each
    claim's ``against`` that is no baseline on the primary metric) is compared over one set of resamples. On the
    primary metric, each reference's release challengers (``facts.reference_systems`` excluded) form one family whose
    intervals and adjusted p come from one procedure (``stats.family``; ``compare.inference: per_comparison``: each
    pair alone), and a reference system is decided alone; every other comparison is descriptive, Holm-adjusted (or
    ``compare.correction``) among themselves. compare.json's ``comparisons`` and ``slices`` and verdicts.json's
    ``verdicts`` are against the first baseline, as with one; ``comparisons_by_baseline`` and
    ``verdicts_by_baseline`` hold the other references' pairs.

    ``per_query_seeds``: each training seed's per-query measures of the systems trained with several seeds (whose
    ``per_query`` rows are the mean over seeds); a pair involving one gets the seed-aware primary CI
    (``stats.seed_comparison``) and compare.json a ``seeds`` record."""
    systems = [settings.baseline] + sorted(set(per_query["system"]) - {settings.baseline})
    if settings.baseline not in set(per_query["system"]):
        raise ValueError(f"baseline {settings.baseline!r} is not among the systems {sorted(set(per_query['system']))}")
    if len(systems) < 2:
        raise ValueError(f"nothing to compare: only the baseline {settings.baseline!r} was evaluated")
    references = settings.model_copy(update={"release": rule}).references(systems)
    judged_only = settings.unjudged.judged_only_measure
    watch = [settings.unjudged.measure] + ([judged_only] if judged_only else [])
    metrics = list(dict.fromkeys([*settings.metrics, rule.primary_metric]))
    scores = metric_arrays(per_query, systems, list(dict.fromkeys(metrics + watch)))
    query_ids = per_query[per_query["system"] == settings.baseline].sort_values("query_id")["query_id"].to_numpy()
    boot = settings.resampling()
    # Guardrails: the measures the evaluate stage computed (it does when the collection carries their labels).
    guarded = list(dict.fromkeys(str(rule.measure) for rule in settings.guardrails
                                 if str(rule.measure) in per_query.columns))
    unguarded = [f"guardrail {rule.measure} not checked: the collection carries no label it reads (data.access)"
                 for rule in settings.guardrails if str(rule.measure) not in guarded]
    guard_scores = metric_arrays(per_query, systems, guarded) if guarded else {}

    system_table = _system_means(scores, systems, metrics, boot)
    paired = _paired(scores, systems, metrics, settings, rule, references)
    family = paired.comparisons
    # The release decision's family: each baseline's release challengers on the primary metric, simultaneous
    # intervals and adjusted p from one procedure (stats.family); a reference system is decided alone. Every other
    # pair (secondary metrics) is descriptive: its own interval, p adjusted over the descriptive pairs.
    on_primary = [j for j, item in enumerate(family) if item.metric == rule.primary_metric]
    groups = [family_of(family[j], j, facts.reference_systems, settings.inference) for j in on_primary]
    inference = paired_inference(paired, [groups[on_primary.index(j)] if j in on_primary else None
                                          for j in range(len(family))], settings, worst_n=settings.worst_n)
    primary_family, simultaneous = paired.subset(on_primary), inference.simultaneous
    # A pair involving a system trained with several seeds: its primary-metric CI also counts the between-seed
    # variance (at the Bonferroni level of its family); it replaces the bootstrap's, in compare.json and the verdict.
    on_seeds, seed_p = _seed_family(per_query_seeds, family, on_primary, simultaneous.family_size, scores, query_ids,
                                    rule.primary_metric, settings.confidence)
    release_p = dict(zip(on_primary, simultaneous.p_adjusted))
    release_p.update(seed_p)
    primary_intervals = with_seed_intervals(simultaneous.intervals, {on_primary.index(j): found
                                                                     for j, found in on_seeds.items()})
    descriptive = inference.descriptive
    comparisons: dict[str, list[dict]] = {reference: [] for reference in references}
    for j, item in enumerate(family):
        summary = inference.summaries[j]
        shown = (primary_intervals, on_primary.index(j)) if j in release_p else (inference.shown, j)
        comparisons[item.baseline].append({
            "challenger": item.challenger, "baseline": item.baseline, "metric": item.metric,
            "baseline_mean": finite(_mean(scores[item.baseline][item.metric])),
            "challenger_mean": finite(_mean(scores[item.challenger][item.metric])),
            "delta": finite(shown[0].mean[shown[1]]), "low": finite(shown[0].low[shown[1]]),
            "high": finite(shown[0].high[shown[1]]),
            "family": family_label(groups[on_primary.index(j)]) if j in release_p else "descriptive",
            "p_adjusted": finite(release_p.get(j, inference.p_adjusted[j])),
            "p_randomisation": finite(inference.p_randomisation[j]), "p_ttest": finite(inference.p_ttest[j]),
            "median_delta": finite(summary.median), "cohens_dz": finite(summary.cohens_dz),
            "improved": summary.improved, "tied": summary.tied, "regressed": summary.regressed,
            "percentiles": {str(q): finite(v) for q, v in summary.percentiles.items()},
            "worst_regressions": [str(query_ids[i]) for i in summary.worst_regressions],
            **({"ci_seeds": list(on_seeds[j].seeds)} if j in on_seeds else {}),
        })

    aligned = slices.reindex(query_ids)
    labels = {column: aligned[column].fillna("(none)").astype(str).to_numpy() for column in aligned.columns}
    every_query_labels = labels  # the guardrails are defined on every query (the primary metric's domain may not be)
    check_slice_budgets(settings.guardrails, every_query_labels, guarded)
    slice_results = _slice_table(paired, settings, labels)  # against the first baseline

    unjudged = unjudged_watch(scores, systems, settings.unjudged, rule.unjudged_margin, facts.positive_only)
    # The verdict reads the release family's own intervals of the primary metric (compare.json's, one set of
    # resamples); a slice outside the primary metric's domain (the demo's abstention questions for nDCG@10) gives it
    # no evidence and is not counted in its size.
    evidence = release_evidence(primary_family, labels, rule, groups, n_samples=settings.samples,
                                overall=primary_intervals, **evidence_settings(settings))
    defined = verdict_queries(primary_family)
    primary = primary_family.deltas[defined]
    labels = {column: values[defined] for column, values in labels.items()}
    verdicts, families = decide_pairs(
        ReleasePairs(primary_family, groups, evidence, [release_p[j] for j in on_primary],
                     {k: list(on_seeds[j].seeds) for k, j in enumerate(on_primary) if j in on_seeds}),
        primary, labels, rule, settings, facts, unjudged["rate"], references,
        GuardrailInputs(guard_scores, guarded, unguarded, every_query_labels))
    # The slice tests the rule page states: the first baseline's release family's (a challenger alone: 1 member).
    first_family = families.get(family_label(("release", settings.baseline)))
    method = _method_record(settings, rule, families, len(descriptive),
                            sorted({item.metric for item, undefined in zip(family, paired.partial) if undefined}))
    others = [reference for reference in references if reference != settings.baseline]
    result = {
        "baseline": settings.baseline,
        "queries": int(len(query_ids)),
        "method": method,
        "systems": system_table,
        "comparisons": comparisons[settings.baseline],
        "slices": slice_results,
        "unjudged": unjudged,
    }
    if guarded:
        result["guardrails"] = guardrail_table(guard_scores, systems, guarded, boot)
    if on_seeds:
        result["seeds"] = seeds_record(on_seeds, inference.own, rule.primary_metric, settings.confidence,
                                       settings.seed)
    rule_text = _rule_record(rule, settings, slices_that_can_reject(rule, labels, settings.min_slice_size),
                             len(first_family["members"]) if first_family else 1)
    decided = {
        "baseline": settings.baseline,
        **({"baselines": settings.baselines} if len(settings.baselines) > 1 else {}),
        "queries": int(len(query_ids)),
        "verdict_queries": int(defined.sum()),
        "rule": rule_text,
        "baseline_flag": facts.baseline_flag,
        "simulation": {"trials": settings.simulation.trials, "samples": settings.simulation.samples,
                       "seed": settings.seed, "deltas": SIMULATED_DELTAS,
                       "checks": "primary metric and critical slices (the deterministic checks do not vary)",
                       "families": "each family's members at once: one sign per query and trial for all of them"},
        "inference": {"mode": settings.inference, "release_family": method["release_family"]["what"],
                      "procedure": procedure(settings.inference), "families": families},
        "latency_p95_ms": {system: None if value is None else finite(value)
                           for system, value in facts.latency_p95_ms.items()},
        "fallbacks": {system: {"fallbacks": count, "timeouts": facts.timeouts.get(system, 0), "queries": total}
                      for system, (count, total) in facts.fallbacks.items()},
        "verdicts": verdicts[settings.baseline],
    }
    if others:
        result["comparisons_by_baseline"] = {reference: comparisons[reference] for reference in others}
        decided["verdicts_by_baseline"] = {reference: verdicts[reference] for reference in others}
    return result, decided


def _system_means(scores: Mapping[str, Mapping[str, np.ndarray]], systems: Sequence[str], metrics: Sequence[str],
                  boot: Mapping[str, Any]) -> dict[str, dict]:
    """compare.json's ``systems``: each system's mean of each metric with its CI. A measure undefined on some
    queries (NaN: a ranking measure without a relevant document, an answer measure outside its domain) is averaged
    over its domain (``stats.domains``)."""
    columns = [(system, metric) for system in systems for metric in metrics]
    means = domains.mean_intervals(np.column_stack([scores[s][m] for s, m in columns]), **boot)
    table: dict[str, dict] = {}
    for j, (system, metric) in enumerate(columns):
        table.setdefault(system, {})[metric] = {
            "mean": finite(means.mean[j]), "low": finite(means.low[j]), "high": finite(means.high[j])}
    return table


def _paired(scores: Mapping[str, Mapping[str, np.ndarray]], systems: Sequence[str], metrics: Sequence[str],
            settings: CompareConfig, rule: ReleaseRule, references: Mapping[str, list[str]]) -> domains.PairedFamily:
    """Every compared pair: each baseline's challengers on every metric, then each claim's ``against`` that is no
    baseline on the primary metric only (what its claim decides)."""
    on_baselines = {ref: found for ref, found in references.items() if ref in settings.baselines}
    claimed = {ref: found for ref, found in references.items() if ref not in settings.baselines}
    paired = domains.paired_family({s: {m: scores[s][m] for m in metrics} for s in systems}, settings.baseline,
                                   on_baselines)
    if not claimed:
        return paired
    extra = domains.paired_family({s: {rule.primary_metric: scores[s][rule.primary_metric]} for s in systems},
                                  settings.baseline, claimed)
    return domains.PairedFamily(paired.comparisons + extra.comparisons, np.hstack([paired.base, extra.base]),
                                np.hstack([paired.challenger, extra.challenger]))


def _slice_table(paired: domains.PairedFamily, settings: CompareConfig,
                 labels: Mapping[str, np.ndarray]) -> dict[str, list[dict]]:
    """compare.json's ``slices``: each slice value's deltas against the first baseline (the verdicts weigh every
    pair's own slices, ``stats.evidence``)."""
    against_first = paired.subset([j for j, item in enumerate(paired.comparisons)
                                   if item.baseline == settings.baseline])
    found = {}
    for column, column_labels in labels.items():
        result = domains.family_slices(against_first, column_labels, min_slice_size=settings.min_slice_size,
                                       **settings.resampling())
        found[column] = [
            {"value": str(value),
             "comparisons": [{"challenger": item.challenger, "metric": item.metric,
                              "queries": int(result.sizes[k, j]), "too_small": bool(result.too_small[k, j]),
                              "delta": finite(result.mean[k, j]), "low": finite(result.low[k, j]),
                              "high": finite(result.high[k, j])} for j, item in enumerate(against_first.comparisons)]}
            for k, value in enumerate(result.values)]
    return found


def _method_record(settings: CompareConfig, rule: ReleaseRule, families: dict, descriptive: int,
                   partial: list[str]) -> dict[str, Any]:
    """compare.json's ``method``: the resampling, the tests, the release family and the descriptive one (``partial``:
    the metrics undefined on some queries)."""
    method = {"resampling": "paired bootstrap over queries", "ci": settings.ci_method,
              "samples": settings.samples, "seed": settings.seed, "confidence": settings.confidence,
              "tests": ["paired randomisation (sign flip)", "paired t-test"],
              "permutations": settings.permutations, "correction": settings.correction,
              "inference": settings.inference,
              "release_family": {
                  "what": (f"per baseline, the release challengers (reference systems excluded) on "
                           f"{rule.primary_metric}" if settings.inference == "family" else
                           f"each pair alone on {rule.primary_metric} (compare.inference: per_comparison: no "
                           "multiplicity control across challengers)"),
                  "procedure": procedure(settings.inference), "families": families},
              "descriptive_family": {
                  "what": "every other comparison (secondary metrics; reference systems on them): descriptive, not "
                          "read by any verdict",
                  "size": descriptive, "ci": settings.ci_method,
                  "p_adjusted": f"{settings.correction} over the descriptive family, paired randomisation test"},
              "tie_tolerance": settings.tie_tolerance}
    if partial:
        method["undefined_on_some_queries"] = {
            "metrics": partial, "rule": "mean over the queries where the measure is defined; percentile CI of the "
            "difference of the two means under the same resamples; randomisation test by per-query swaps"}
    return method


def _rule_record(rule: ReleaseRule, settings: CompareConfig, family_size: int, first_family_size: int) -> dict:
    """verdicts.json's ``rule``: what the verdicts apply, the slice tests' size and level included (``family_size``:
    the slices that can REJECT; ``first_family_size``: the first baseline's release family's members)."""
    rule_text = {"primary_metric": rule.primary_metric, "min_delta": rule.min_delta,
                 "confidence": settings.confidence,
                 "critical_slices": [spec.label() + f" budget {spec.budget}" for spec in rule.critical_slices],
                 "min_slice_size": settings.min_slice_size, "slices_that_can_reject": family_size,
                 "slice_tests": family_size * first_family_size,
                 "slice_confidence": round(adjusted_confidence(settings.confidence, family_size * first_family_size),
                                           6),
                 "unjudged_margin": rule.unjudged_margin, "max_fallback_rate": rule.max_fallback_rate,
                 "max_invalid_rate": rule.max_invalid_rate, "min_run_coverage": rule.min_run_coverage,
                 "latency_p95_max_ms": rule.latency_p95_max_ms, "latency_p95_max_ratio": rule.latency_p95_max_ratio}
    if rule.claims:
        rule_text["claims"] = {system: claim.to_dict() for system, claim in sorted(rule.claims.items())}
    if settings.guardrails:
        rule_text["guardrails"] = [guard.to_dict() for guard in settings.guardrails]
    return rule_text


def _seed_family(per_query_seeds: pd.DataFrame | None, family, on_primary: list[int], sizes: np.ndarray,
                 scores, query_ids, metric: str, confidence: float) -> tuple[dict, dict]:
    """The seed-aware comparisons of the primary pairs that involve a seeded system, each at the Bonferroni level of
    its family (``sizes``: per primary pair), and their adjusted p (Bonferroni of the seed-aware t test: 0 outside
    the interval exactly when it is below 1 - confidence)."""
    found, p_adjusted = {}, {}
    size_of = dict(zip(on_primary, sizes.tolist()))
    for size in sorted(set(size_of.values())):
        level = adjusted_confidence(confidence, size)
        for j, comparison in seed_family(per_query_seeds, family, scores, query_ids, metric, level).items():
            if size_of.get(j) == size:
                interval = comparison.interval
                se = float(interval.standard_error[0])
                t = abs(float(interval.mean[0])) / se if se > 0 else (0.0 if interval.mean[0] == 0 else np.inf)
                found[j] = comparison
                p_adjusted[j] = min(1.0, size * 2.0 * float(scipy_stats.t.sf(t, float(interval.df[0]))))
    return found, p_adjusted


def unjudged_watch(scores: Mapping[str, Mapping[str, np.ndarray]], systems: Sequence[str], watch: UnjudgedWatch,
                   margin: float | None, positive_only: str | None) -> dict[str, Any]:
    """Unjudged rate per system; warnings for challengers whose rate differs from the baseline's by more than
    ``margin``, unless the qrels are positive-only (then the watch does not apply and says why)."""
    baseline = systems[0]
    rate = {system: finite(1.0 - _mean(scores[system][watch.measure])) for system in systems}
    warnings = []
    for system in systems[1:]:
        gap = rate[system] - rate[baseline]
        if positive_only or margin is None or abs(gap) <= margin:
            continue
        judged_only = ""
        if watch.judged_only_measure:
            judged_only = (f"; judged-only {watch.judged_only_measure}: "
                           f"{_mean(scores[system][watch.judged_only_measure]):.4f} vs "
                           f"{_mean(scores[baseline][watch.judged_only_measure]):.4f}")
        warnings.append(f"{system}: unjudged rate ({watch.measure}) {rate[system]:.3f} vs baseline "
                        f"{rate[baseline]:.3f} (difference {gap:+.3f} exceeds the margin {margin}); unjudged "
                        f"documents count as irrelevant{judged_only}")
    return {"measure": watch.measure, "rate": rate, "margin": margin, "applicable": positive_only is None,
            "not_applicable": positive_only, "warnings": warnings}


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
