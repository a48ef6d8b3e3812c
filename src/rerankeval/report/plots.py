"""PNG plots of the report (matplotlib, headless). Each function takes tidy data and writes one file atomically."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.io import atomic_write
from ..eval.funnel import pool_measures
from ..stats.verdict import ci_label


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    # A fixed creation date in the metadata keeps the bytes identical across reruns.
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110, metadata={"Software": None}))
    _figure().close(fig)


def depth_curve(curve: pd.DataFrame, measure: str, path: Path) -> None:
    """``curve``: system, depth, measure, mean. Left: ``measure`` vs depth per system; right: candidate recall."""
    plt = _figure()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    quality = curve[curve["measure"] == measure]
    for system, frame in quality.groupby("system"):
        left.plot(frame["depth"], frame["mean"], marker="o", label=system)
    left.set(xlabel="rerank depth", ylabel=measure, title=f"{measure} by rerank depth", xscale="log")
    left.legend(fontsize=8)
    recall_name, coverage_name = (curve["depth"].map(lambda depth, i=i: str(pool_measures(depth)[i])) for i in (0, 1))
    recall = curve[curve["measure"] == recall_name].drop_duplicates("depth").sort_values("depth")
    coverage = curve[curve["measure"] == coverage_name].drop_duplicates("depth").sort_values("depth")
    right.plot(recall["depth"], recall["mean"], marker="o", label="candidate recall (any relevant in top d)")
    right.plot(coverage["depth"], coverage["mean"], marker="s", label="coverage (share of relevant in top d)")
    right.set(xlabel="rerank depth", ylabel="fraction of queries / relevant docs", title="Reranking pool ceiling",
              xscale="log", ylim=(0, 1.02))
    right.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path)


def _nothing_to_show(path: Path, message: str) -> None:
    """A declared plot exists for every collection: when there is nothing to draw, it says why."""
    plt = _figure()
    fig, axis = plt.subplots(figsize=(6, 1.2))
    axis.axis("off")
    axis.text(0.5, 0.5, message, ha="center", va="center", fontsize=10)
    _save(fig, path)


def slice_deltas(rows: pd.DataFrame, metric: str, path: Path, confidence: float) -> None:
    """``rows``: challenger, slice (``column=value``), delta, low, high, too_small (CIs at ``confidence``). One
    panel per challenger."""
    if rows.empty:
        _nothing_to_show(path, "The queries carry no slice labels: no per-slice deltas.")
        return
    plt = _figure()
    challengers = sorted(rows["challenger"].unique())
    height = 0.9 + 0.28 * rows["slice"].nunique()
    fig, axes = plt.subplots(1, len(challengers), figsize=(3.6 * len(challengers), height), sharey=True, squeeze=False)
    for axis, challenger in zip(axes[0], challengers):
        frame = rows[rows["challenger"] == challenger].reset_index(drop=True)
        for small, color in ((False, "#1f77b4"), (True, "#999999")):
            part = frame[frame["too_small"] == small]
            axis.errorbar(part["delta"], part.index, xerr=[part["delta"] - part["low"], part["high"] - part["delta"]],
                          fmt="o", color=color, capsize=3)
        axis.axvline(0, color="black", linewidth=0.8)
        axis.set_yticks(list(frame.index), frame["slice"])
        axis.set_title(challenger, fontsize=9)
        axis.set_xlabel(f"Δ {metric}")
    axes[0][0].invert_yaxis()
    fig.suptitle(f"Per-slice mean delta vs baseline with {ci_label(confidence)} (grey: fewer queries than the minimum)",
                 fontsize=9)
    fig.tight_layout()
    _save(fig, path)


def delta_distribution(deltas: pd.DataFrame, metric: str, path: Path) -> None:
    """``deltas``: challenger, delta (one row per query). Histogram of per-query deltas per challenger."""
    plt = _figure()
    challengers = sorted(deltas["challenger"].unique())
    fig, axes = plt.subplots(1, len(challengers), figsize=(3.4 * len(challengers), 3), sharey=True, squeeze=False)
    for axis, challenger in zip(axes[0], challengers):
        values = deltas.loc[deltas["challenger"] == challenger, "delta"]
        axis.hist(values, bins=21, range=(-1, 1), color="#1f77b4")
        axis.axvline(0, color="black", linewidth=0.8)
        axis.set_title(challenger, fontsize=9)
        axis.set_xlabel(f"per-query Δ {metric}")
    axes[0][0].set_ylabel("queries")
    fig.tight_layout()
    _save(fig, path)


def depth_cost(rows: pd.DataFrame, measure: str, path: Path) -> None:
    """``rows``: system, depth, quality, p95_ms, cost_per_1k_queries. Left: quality by depth; right: p95 latency by
    depth, each point labelled with its cost per 1,000 queries, so one sees where deeper reranking stops paying."""
    plt = _figure()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    floor = max(rows["p95_ms"].min(), 1e-3)
    for system, frame in rows.sort_values("depth").groupby("system"):
        left.plot(frame["depth"], frame["quality"], marker="o", label=system)
        line, = right.plot(frame["depth"], frame["p95_ms"].clip(lower=floor), marker="o", label=system)
        for row in frame.itertuples():
            right.annotate(f"${row.cost_per_1k_queries:.4f}", (row.depth, max(row.p95_ms, floor)), fontsize=6,
                           xytext=(2, 3), textcoords="offset points", color=line.get_color())
    left.set(xlabel="rerank depth", ylabel=measure, title=f"{measure} by rerank depth", xscale="log")
    right.set(xlabel="rerank depth", ylabel="p95 latency per query (ms, log)", xscale="log", yscale="log",
              title="p95 latency by depth (labels: cost per 1k queries)")
    left.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path)
