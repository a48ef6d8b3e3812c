"""Precision variants: each learned system whose ``dtype`` is not float32 against its float32 twin (the configured
system with the same settings but the dtype), with the quality delta's paired bootstrap CI and the speed ratio.

The speed ratio is the twin's mean model seconds per query over the variant's, on the same queries and pairs, with
a paired bootstrap CI (the same query resamples for both). Model seconds are measured when the pairs were scored
(a cache hit replays them), so the table says whether each side was measured in this run or replayed: on a shared
machine, only a ratio of two timings taken together is a fair one (``benchmarks/bench_precision.py`` interleaves
them in one process).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..rerank.latency import model_seconds, timed_queries
from ..stats.resampling import bootstrap_ci, bootstrap_means
from .markdown import fmt, table

LEARNED_KINDS = ("cross_encoder", "flag_reranker", "bi_encoder")
UNRELATED = {"dtype", "depends_on", "batch_size", "executor", "cache_dir", "deadline_s"}
"""Settings that do not change which pairs a system scores or what a float32 model computes."""


def twins(systems: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(variant, float32 twin) for every learned variant that has one."""
    def key(config):
        return sorted((k, str(v)) for k, v in config.items() if k not in UNRELATED)

    found = []
    for name, config in systems.items():
        if config.get("kind") in LEARNED_KINDS and config.get("dtype", "float32") != "float32":
            twin = next((other for other, candidate in systems.items() if candidate.get("kind") == config["kind"]
                         and candidate.get("dtype", "float32") == "float32" and key(candidate) == key(config)), None)
            if twin is not None:
                found.append((name, twin))
    return found


def _source(latency: pd.DataFrame) -> str:
    measured, replayed = latency["compute_s"].sum(), latency["replayed_s"].sum()
    return "this run" if measured >= replayed else "replayed from the cache"


def precision_rows(pairs: Sequence[tuple[str, str]], per_query: pd.DataFrame, latencies: Mapping[str, pd.DataFrame],
                   measure: str, warmup: int, boot: Mapping[str, Any],
                   described: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    values = per_query.pivot(index="query_id", columns="system", values=measure)
    for variant, twin in pairs:
        # Over the measure's domain: queries where it is defined (an unanswerable question has no nDCG).
        delta = bootstrap_ci((values[variant] - values[twin]).dropna().to_numpy(dtype=np.float64), **boot)
        seconds = pd.concat([model_seconds(timed_queries(latencies[s], warmup).set_index("query_id")).rename(s)
                             for s in (twin, variant)], axis=1).dropna()
        replicates = bootstrap_means(seconds.to_numpy(dtype=np.float64), n_samples=boot["n_samples"],
                                     seed=boot["seed"])
        ratios = replicates[:, 0] / replicates[:, 1]
        tail = (1 - boot["confidence"]) / 2
        precision = described.get(variant, {}).get("precision", {})
        rows.append({"variant": variant, "twin": twin, "dtype": precision.get("dtype"),
                     "native_bf16": precision.get("native_bf16"), "delta": float(delta.mean[0]),
                     "low": float(delta.low[0]), "high": float(delta.high[0]),
                     "speed_ratio": float(seconds[twin].mean() / seconds[variant].mean()),
                     "ratio_low": float(np.quantile(ratios, tail)), "ratio_high": float(np.quantile(ratios, 1 - tail)),
                     "twin_ms": float(seconds[twin].mean() * 1000), "variant_ms": float(seconds[variant].mean() * 1000),
                     "timing": f"{_source(latencies[twin])} / {_source(latencies[variant])}"})
    return rows


def precision_section(rows: Sequence[Mapping[str, Any]], measure: str, confidence: float) -> str:
    if not rows:
        return ""
    body = [[f"`{r['variant']}` vs `{r['twin']}`", r["dtype"] + (" (emulated: no bf16 instructions)"
                                                                 if r["native_bf16"] is False else ""),
             f"{fmt(r['delta'], signed=True)} [{fmt(r['low'], signed=True)}, {fmt(r['high'], signed=True)}]",
             f"{r['speed_ratio']:.2f}x [{r['ratio_low']:.2f}, {r['ratio_high']:.2f}]",
             f"{r['twin_ms']:.1f} / {r['variant_ms']:.1f}", r["timing"]] for r in rows]
    return ("## Precision variants against float32\n\n"
            + table(["variant", "dtype", f"Δ {measure} [{confidence:.0%} CI]", "speed-up [CI]",
                     "model ms per query float32 / variant", "timed (float32 / variant)"], body)
            + "\n\nΔ is paired over queries; speed-up is float32 model time over the variant's, on the same pairs. "
              "Timings replayed from the cache were measured when the pairs were first scored, possibly under "
              "another machine load: `benchmarks/bench_precision.py` measures both in one process, interleaved.")
