"""The statistics of configurations beside the comparison family, computed by the compare stage (into verdicts.json,
since they weigh timings) so that the report only renders them: each precision variant against its float32 twin
(quality delta and speed-up) and each composed system's cold cost and skip rate, with their bootstrap CIs over
the comparison's resamples (the same ``(n_queries, n_samples, seed)`` draws)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
import pandas as pd

from .resampling import bootstrap_ci, bootstrap_means

UNRELATED = {"dtype", "depends_on", "batch_size", "executor", "cache_dir", "deadline_s"}
"""Settings that do not change which pairs a system scores or what a float32 model computes."""


def twins(systems: Mapping[str, Mapping[str, Any]], learned: Collection[str]) -> list[tuple[str, str]]:
    """(variant, float32 twin) for every learned variant (``learned``: the systems whose run's traits say so) that
    has one."""
    def key(config):
        return sorted((k, str(v)) for k, v in config.items() if k not in UNRELATED)

    found = []
    for name, config in systems.items():
        if name in learned and config.get("dtype", "float32") != "float32":
            twin = next((other for other, candidate in systems.items() if candidate.get("kind") == config["kind"]
                         and candidate.get("dtype", "float32") == "float32" and key(candidate) == key(config)), None)
            if twin is not None:
                found.append((name, twin))
    return found


def mean_interval(values: np.ndarray, boot: Mapping[str, Any]) -> dict[str, float] | None:
    """The mean over the finite values (a measure's domain) with its bootstrap CI; None when there are fewer than 2."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if len(values) < 2:
        return None
    result = bootstrap_ci(values, **boot)
    return {"mean": float(result.mean[0]), "low": float(result.low[0]), "high": float(result.high[0])}


def precision_variant(variant: str, twin: str, quality: pd.DataFrame, seconds: pd.DataFrame,
                      boot: Mapping[str, Any], compared: bool = False) -> dict[str, Any]:
    """``quality``: per query (rows) the measure of both systems (columns); ``seconds``: their model seconds per
    query. The speed-up is the twin's mean over the variant's, its CI from the same query resamples for both.
    ``compared``: the analysis compares the pair (a claim against the twin), so its Δ is that comparison's
    (``stats.analysis``) and none is resampled here (``delta`` None until then)."""
    delta = None if compared else mean_interval((quality[variant] - quality[twin]).to_numpy(dtype=np.float64), boot)
    timed = seconds[[twin, variant]].dropna()
    replicates = bootstrap_means(timed.to_numpy(dtype=np.float64), n_samples=boot["n_samples"], seed=boot["seed"])
    ratios = replicates[:, 0] / replicates[:, 1]
    tail = (1 - boot["confidence"]) / 2
    return {"variant": variant, "twin": twin, "delta": delta,
            "speed_ratio": float(timed[twin].mean() / timed[variant].mean()),
            "ratio_low": float(np.quantile(ratios, tail)), "ratio_high": float(np.quantile(ratios, 1 - tail)),
            "twin_ms": float(timed[twin].mean() * 1000), "variant_ms": float(timed[variant].mean() * 1000)}
