"""The readout of a logged online experiment: per-arm click measures, interleaving credit, guardrails and a verdict.

``design: team_draft`` or ``probabilistic``: every impression is an interleaved page, each result credited to the side
that picked it (``origin``); an impression's outcome is +1 when the challenger's picks got more clicks, -1 when the
baseline's did, 0 otherwise. The primary is the mean over queries of each query's mean outcome (the preference per
query), with its bootstrap CI over queries, beside the sign test over impressions. ``design: ab``: each impression
showed one arm's page; the primary is the difference of the arms' mean click measure (``ab_metric``), with a bootstrap
CI that resamples each arm's impressions. Both designs are decided by ``stats.verdict.decide``, the offline verdict's
own code: the guardrails first (an A/B test's increase of abandonment and of empty result pages, each with its CI), then
the primary against 0 and ``min_delta``, every segment as a critical slice (Bonferroni-adjusted CIs), and the logged
latency's p95 and p99.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

import numpy as np
import pandas as pd

from ..core.errors import CollectionError
from ..stats.config import ReleaseRule
from ..stats.critical_slices import CriticalSlice
from ..stats.resampling import bootstrap_ci
from ..stats.verdict import (MIN_P99_TIMED, DeltaEvidence, Evidence, GuardrailEvidence, LatencyEvidence,
                              SliceEvidence, decide)
from .config import ReadoutConfig
from .logs import Impression, LogCounts
from .sensitivity import sign_test_pvalues

PREFERENCE = "Preference"
"""The team-draft primary's name: wins minus losses per impression, averaged per query then over queries."""
MIN_SEGMENT_QUERIES = 10
"""A segment with fewer queries (interleaving) or impressions per arm (A/B) is too small to REJECT on."""
ABANDONMENT = "Abandonment"
EMPTY_RESULTS = "EmptyResults"


def impressions_frame(impressions: Sequence[Impression], challenger: str) -> pd.DataFrame:
    """One row per impression: its query, segment, arm, click measures, latency and team-draft outcome."""
    rows = []
    for found in impressions:
        clicked = set(found.clicks)
        first = min(found.clicks) if found.clicks else None
        credit = sum(1 if side == challenger else -1 for position, side in enumerate(found.origin, start=1)
                     if position in clicked)
        rows.append({"query_id": found.query_id, "segment": found.segment, "arm": found.arm,
                     "reciprocal_rank": 1.0 / first if first else 0.0, "any_click": float(bool(clicked)),
                     "clicks": float(len(found.clicks)), "abandoned": float(not clicked),
                     "reformulated": float(found.reformulated), "empty": float(not found.shown),
                     "latency_ms": found.latency_ms, "outcome": float(np.sign(credit))})
    return pd.DataFrame(rows)


def _percentiles(values: pd.Series) -> dict:
    values = values.dropna()
    if values.empty:
        return {"p50_ms": None, "p95_ms": None, "p99_ms": None, "timed": 0}
    return {"p50_ms": round(float(np.percentile(values, 50)), 3), "p95_ms": round(float(np.percentile(values, 95)), 3),
            "p99_ms": round(float(np.percentile(values, 99)), 3), "timed": int(len(values))}


def _p99(arm: dict) -> float | None:
    """An arm's p99 for the verdict: None below ``MIN_P99_TIMED`` timed impressions (the page still shows it)."""
    return arm["p99_ms"] if arm["timed"] >= MIN_P99_TIMED else None


ARM_MEASURES = ("reciprocal_rank", "any_click", "clicks", "abandoned", "reformulated", "empty")
"""Each arm's click measures, means over its impressions."""


def _arm_summary(frame: pd.DataFrame, boot: dict | None = None) -> dict:
    """An arm's counts, click measures and logged latency; with ``boot``, each measure's percentile bootstrap CI
    over the arm's impressions too (``intervals``)."""
    summary = {"impressions": int(len(frame)), "queries": int(frame["query_id"].nunique()),
               **{name: round(float(frame[name].mean()), 6) for name in ARM_MEASURES},
               **_percentiles(frame["latency_ms"])}
    if boot is not None and len(frame):
        rng = np.random.default_rng([boot["seed"], 0xA4])
        summary["interval_confidence"] = boot["confidence"]
        summary["intervals"] = {name: [round(bound, 6) for bound in _percentile_interval(
            _bootstrap_means(frame[name].to_numpy(), boot["n_samples"], rng), boot["confidence"])]
            for name in ARM_MEASURES}
    return summary


def _percentile_interval(replicates: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1 - confidence) / 2
    return float(np.quantile(replicates, tail)), float(np.quantile(replicates, 1 - tail))


def _bootstrap_means(values: np.ndarray, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap replicates of the mean of ``values``, drawn as multinomial counts of its distinct values: the same
    distribution as resampling the values, at a cost of the distinct values (a click measure has few), not of the
    impressions."""
    distinct, counts = np.unique(values, return_counts=True)
    drawn = rng.multinomial(len(values), counts / len(values), size=n_samples)
    return drawn @ distinct / len(values)


def two_sample_interval(challenger: np.ndarray, baseline: np.ndarray, *, n_samples: int, seed: int,
                        confidence: float) -> tuple[float, float, float]:
    """(difference of means, low, high): a percentile bootstrap resampling each sample's own values."""
    rng = np.random.default_rng([seed, 0xAB])
    replicates = _bootstrap_means(challenger, n_samples, rng) - _bootstrap_means(baseline, n_samples, rng)
    return (float(challenger.mean() - baseline.mean()), *_percentile_interval(replicates, confidence))


def _delta(metric: str, found: tuple[float, float, float], confidence: float) -> DeltaEvidence:
    return DeltaEvidence(metric, found[0], found[1], found[2], confidence)


def _interleaving(frame: pd.DataFrame, boot: dict) -> tuple[DeltaEvidence, list[SliceEvidence], dict]:
    per_query = frame.groupby("query_id")["outcome"].mean()
    intervals = bootstrap_ci(per_query.to_numpy(), **boot)
    primary = DeltaEvidence.from_intervals(PREFERENCE, intervals, 0)
    wins, losses = int((frame["outcome"] > 0).sum()), int((frame["outcome"] < 0).sum())
    segments = sorted(frame["segment"].unique())
    adjusted = {**boot, "confidence": 1 - (1 - boot["confidence"]) / max(len(segments), 1)}
    slices = []
    for segment in segments:
        within = frame[frame["segment"] == segment].groupby("query_id")["outcome"].mean().to_numpy()
        found = bootstrap_ci(within, **adjusted)
        slices.append(SliceEvidence("segment", segment, len(within), float(found.mean[0]), float(found.low[0]),
                                    float(found.high[0]), too_small=len(within) < MIN_SEGMENT_QUERIES,
                                    confidence=adjusted["confidence"], adjusted_for=len(segments)))
    record = {"wins": wins, "losses": losses, "ties": int(len(frame) - wins - losses),
              "sign_test_p": float(sign_test_pvalues(np.array([wins]), np.array([losses]))[0]),
              "per_query": {query: round(float(value), 6) for query, value in per_query.items()}}
    return primary, slices, record


def _ab(frame: pd.DataFrame, config: ReadoutConfig, baseline: str, boot: dict
        ) -> tuple[DeltaEvidence, list[SliceEvidence], tuple[GuardrailEvidence, ...]]:
    sides = {arm: frame[frame["arm"] == arm] for arm in (config.challenger, baseline)}
    settings = {"n_samples": boot["n_samples"], "seed": boot["seed"], "confidence": boot["confidence"]}  # percentile
    values = {arm: side[config.ab_metric].to_numpy() for arm, side in sides.items()}
    primary = _delta(config.ab_metric, two_sample_interval(values[config.challenger], values[baseline], **settings),
                     boot["confidence"])
    segments = sorted(frame["segment"].unique())
    adjusted = {**settings, "confidence": 1 - (1 - boot["confidence"]) / max(len(segments), 1)}
    slices = []
    for segment in segments:
        within = {arm: side.loc[side["segment"] == segment, config.ab_metric].to_numpy() for arm, side in sides.items()}
        size = min(len(found) for found in within.values())
        if size == 0:
            continue
        mean, low, high = two_sample_interval(within[config.challenger], within[baseline], **adjusted)
        slices.append(SliceEvidence("segment", segment, size, mean, low, high, too_small=size < MIN_SEGMENT_QUERIES,
                                    confidence=adjusted["confidence"], adjusted_for=len(segments)))
    guardrails = []
    for name, column, budget in ((ABANDONMENT, "abandoned", config.max_abandonment_increase),
                                 (EMPTY_RESULTS, "empty", config.max_empty_increase)):
        if budget is None:
            continue
        happened = {arm: side[column].to_numpy() for arm, side in sides.items()}
        rise = two_sample_interval(happened[config.challenger], happened[baseline], **settings)
        guardrails.append(GuardrailEvidence(
            name, zero=False, max_increase=budget, challenger_mean=float(happened[config.challenger].mean()),
            reference_mean=float(happened[baseline].mean()), queries_with_any=int(happened[config.challenger].sum()),
            queries=len(happened[config.challenger]), increase=_delta(name, rise, boot["confidence"])))
    return primary, slices, tuple(guardrails)


def readout(impressions: Sequence[Impression], counts: LogCounts, config: ReadoutConfig, baseline: str,
            boot: dict) -> dict:
    """The readout as JSON-ready data; ``boot``: the bootstrap's ``n_samples``, ``seed``, ``confidence`` and
    ``method`` (the CIs over queries follow it; an A/B test's two-sample interval is a percentile one)."""
    frame = impressions_frame(impressions, config.challenger)
    arms = sorted(frame["arm"].unique())
    interleaved = config.design != "ab"  # team-draft or probabilistic: both credit each click to its origin
    expected = ["interleaved"] if interleaved else sorted({config.challenger, baseline})
    if arms != expected:
        raise CollectionError(f"{config.log}: arms {arms}, but a {config.design} experiment of {config.challenger} "
                              f"against {baseline} logs {expected}. Fix: online.readouts' design, challenger and "
                              "baseline must describe this log")
    per_arm = {arm: _arm_summary(frame[frame["arm"] == arm], boot) for arm in arms}
    segments = {segment: {arm: _arm_summary(part[part["arm"] == arm]) for arm in sorted(part["arm"].unique())}
                for segment, part in frame.groupby("segment")}
    credit = None
    if interleaved:
        primary, slices, credit = _interleaving(frame, boot)
        guardrails: tuple[GuardrailEvidence, ...] = ()
        latency = LatencyEvidence(per_arm["interleaved"]["p95_ms"], challenger_p99_ms=_p99(per_arm["interleaved"]))
    else:
        primary, slices, guardrails = _ab(frame, config, baseline, boot)
        latency = LatencyEvidence(per_arm[config.challenger]["p95_ms"], per_arm[baseline]["p95_ms"],
                                  challenger_p99_ms=_p99(per_arm[config.challenger]))
    rule = ReleaseRule.model_construct(  # the primary is a click measure, not an offline measure name
        primary_metric=primary.metric, min_delta=config.min_delta,
        critical_slices=[CriticalSlice(column="segment", budget=config.segment_budget)],
        latency_p95_max_ms=config.latency_p95_max_ms,
        latency_p95_max_ratio=config.latency_p95_max_ratio if config.design == "ab" else None,
        latency_p99_max_ms=config.latency_p99_max_ms,
        unjudged_margin=None, max_fallback_rate=None, max_invalid_rate=None, claims={})
    timed = latency.challenger_p95_ms is not None
    verdict = decide(rule, Evidence(primary=primary, slices=tuple(slices), guardrails=guardrails,
                                    latency=latency if timed else None))
    return {"design": config.design, "challenger": config.challenger, "baseline": baseline,
            "log": {"path": config.log, **counts.to_dict()},
            "primary": asdict(primary), "interleaving": credit, "per_arm": per_arm, "segments": segments,
            "slices": [asdict(found) for found in slices], "guardrails": [asdict(found) for found in guardrails],
            "verdict": {"decision": str(verdict.decision), "decided_by": verdict.decided_by,
                        "reasons": list(verdict.reasons), "notes": list(verdict.notes)}}
