"""PNG plots of the report (matplotlib, headless). Each function takes tidy data and writes one file atomically.

Read at a glance: every figure fits a page (at most ``MAX_WIDTH_PX`` wide, no flatter than ``MAX_ASPECT``), small
multiples share their axes, legends sit outside the data, point labels are placed so that none covers another or a
line or marker (``place_labels``), and the reference systems (oracle, random) are drawn as bounds apart from the
challengers."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from ..core.io import atomic_write
from ..eval.funnel import pool_measures
from ..stats.verdict import ci_label

DPI = 110
MAX_WIDTH_PX = 1320
MAX_ASPECT = 2.6
"""Width over height: a figure flatter than this is a strip nobody reads (the old 9-panel rows were 10:1)."""
COLUMNS = 3
"""Small multiples per row."""
BOUND_STYLE = {"color": "#555555", "linestyle": "--", "linewidth": 1.1}
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#e7ba52", "#bcbd22",
           "#17becf", "#393b79", "#ad494a", "#637939", "#8c6d31", "#7b4173", "#3182bd")
"""No grey: grey is the bounds' (``BOUND_STYLE``)."""


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    # A fixed creation date in the metadata keeps the bytes identical across reruns. No tight bbox: the labels were
    # placed for this layout, and cropping or re-laying it out would move points under them.
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None}))
    _figure().close(fig)


def colours(names: Sequence[str]) -> dict[str, str]:
    """One colour per name, the same across plots for the same sorted names (no two curves share one)."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(sorted(names))}


def grid(count: int, panel: tuple[float, float], sharex: bool = True, sharey: bool = True):
    """``count`` small multiples in rows of ``COLUMNS`` with shared axes; unused cells hidden. Returns the figure and
    the used axes in reading order."""
    plt = _figure()
    columns = min(COLUMNS, max(count, 1))
    rows = math.ceil(max(count, 1) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(panel[0] * columns, panel[1] * rows), sharex=sharex,
                             sharey=sharey, squeeze=False)
    cells = [axis for row in axes for axis in row]
    for axis in cells[count:]:
        axis.set_visible(False)
    for axis in cells[max(count - columns, 0):count]:  # the bottom of each column, above a hidden cell or not
        axis.xaxis.set_tick_params(labelbottom=True)
    return fig, cells[:count]


def place_labels(axis, points: Sequence[tuple[float, float, str, str]], fontsize: float = 6.5) -> int:
    """Label each (x, y, text, colour) in data coordinates, in the order given (put the important ones first): each
    label takes the first offset around its point where it covers no label already placed and nothing drawn (a line,
    a marker: ``drawn_marks``) and stays inside the axes; a label with no free place is left out. Call after the
    axes' limits and the figure's layout are final. Returns how many were left out."""
    renderer = axis.figure.canvas.get_renderer()
    frame = axis.get_window_extent(renderer)
    marks = drawn_marks(axis)
    placed, left_out = [text.get_window_extent(renderer) for text in axis.texts], 0  # e.g. the bounds' labels
    offsets = [(dx * r, dy * r) for r in (1, 2.2, 3.6) for dx, dy in ((4, 3), (4, -9), (-4, 3), (-4, -9), (0, 8),
                                                                       (0, -13), (9, -3), (-9, -3))]
    for x, y, text, colour in points:
        for dx, dy in offsets:
            label = axis.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize,
                                  color=colour, ha="left" if dx >= 0 else "right", va="bottom")
            box = label.get_window_extent(renderer)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            covers = ((marks[:, 0] > box.x0) & (marks[:, 0] < box.x1) & (marks[:, 1] > box.y0)
                      & (marks[:, 1] < box.y1)).any()
            if inside and not covers and not any(box.overlaps(other) for other in placed):
                placed.append(box)
                break
            label.remove()
        else:
            left_out += 1
    return left_out


def drawn_marks(axis, step_px: float = 2.0):
    """What the axes draw, as display points: each line's vertices and its segments sampled every ``step_px``
    pixels (a dashed line as if solid), and each scatter's markers."""
    import numpy as np

    found = [np.empty((0, 2))]
    for line in axis.lines:
        xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
        xy = xy[np.isfinite(xy).all(axis=1)]
        found.append(xy)
        if line.get_linestyle() not in ("None", "none", "", " "):
            for start, end in zip(xy[:-1], xy[1:]):
                steps = max(int(np.hypot(*(end - start)) / step_px), 1)
                found.append(start + (end - start) * np.linspace(0, 1, steps + 1)[:, None])
    for collection in axis.collections:
        offsets = np.asarray(collection.get_offsets(), dtype=float)
        if len(offsets):
            found.append(collection.get_offset_transform().transform(offsets))
    return np.vstack(found)


def legend_outside(axis, fontsize: float = 7.5) -> None:
    """A legend to the right of the axes, never over the data (tight_layout makes room for it)."""
    axis.legend(fontsize=fontsize, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def bound_lines(axis, bounds: Mapping[str, float], data_low: float, data_high: float) -> None:
    """Reference systems as dashed horizontal lines; one far outside the data range is written at the axes' edge
    instead (stretching the axis to it would flatten every challenger)."""
    span = max(data_high - data_low, 1e-6)
    low, high = data_low - 0.08 * span, data_high + 0.08 * span
    kept = {name: value for name, value in bounds.items() if data_low - span <= value <= data_high + span}
    for value in kept.values():
        low, high = min(low, value - 0.04 * span), max(high, value + 0.04 * span)
    axis.set_ylim(low, high)
    for name, value in bounds.items():
        if name in kept:
            axis.axhline(value, **BOUND_STYLE, zorder=0)
            axis.annotate(f"{name} {value:.3f}", (0.005, value), xycoords=("axes fraction", "data"),
                          xytext=(2, 2), textcoords="offset points", fontsize=7, color=BOUND_STYLE["color"])
        else:
            above = value > high
            axis.annotate(f"{'↑' if above else '↓'} {name} {value:.3f} (off the axis)", (0.005, 0.99 if above
                          else 0.01), xycoords="axes fraction", fontsize=7, color=BOUND_STYLE["color"],
                          va="top" if above else "bottom")


def depth_curve(curve: pd.DataFrame, measure: str, path: Path, bounds: Sequence[str] = ()) -> None:
    """``curve``: system, depth, measure, mean. Left: ``measure`` vs depth per system (``bounds``, the oracle and
    random, dashed and grey: what reranking these candidates can reach, not challengers); right: candidate recall
    and coverage, the ceiling of every reranker."""
    plt = _figure()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.5, 4.8), gridspec_kw={"width_ratios": [1.3, 1]})
    quality = curve[curve["measure"] == measure]
    palette = colours([s for s in quality["system"].unique() if s not in bounds])
    for system, frame in quality.sort_values("depth").groupby("system"):
        if system in bounds:
            left.plot(frame["depth"], frame["mean"], marker=".", label=f"{system} (bound)", **BOUND_STYLE)
        else:
            left.plot(frame["depth"], frame["mean"], marker="o", markersize=4, label=system, color=palette[system])
    left.set(xlabel="rerank depth", ylabel=measure, title=f"{measure} by rerank depth (dashed: bounds)",
             xscale="log")
    legend_outside(left)
    recall_name, coverage_name = (curve["depth"].map(lambda depth, i=i: str(pool_measures(depth)[i])) for i in (0, 1))
    recall = curve[curve["measure"] == recall_name].drop_duplicates("depth").sort_values("depth")
    coverage = curve[curve["measure"] == coverage_name].drop_duplicates("depth").sort_values("depth")
    right.plot(recall["depth"], recall["mean"], marker="o", color="#333333", label="candidate recall")
    right.plot(coverage["depth"], coverage["mean"], marker="s", color="#999999", label="coverage")
    right.set(xlabel="rerank depth", ylabel="share of queries / of relevant docs",
              title="The pool's ceiling: any relevant (recall), share of relevant (coverage)", xscale="log",
              ylim=(0, 1.05))
    right.title.set_fontsize(9)
    legend_outside(right)
    fig.tight_layout()
    _save(fig, path)


def _nothing_to_show(path: Path, message: str) -> None:
    """A declared plot exists for every collection: when there is nothing to draw, it says why."""
    plt = _figure()
    fig, axis = plt.subplots(figsize=(6, 1.2))
    axis.axis("off")
    axis.text(0.5, 0.5, message, ha="center", va="center", fontsize=10)
    _save(fig, path)


def slice_deltas(rows: pd.DataFrame, metric: str, path: Path, confidence: float,
                 critical: Callable[[str], bool] = lambda label: False) -> None:
    """``rows``: challenger, slice (``column=value``), delta, low, high, too_small (CIs at ``confidence``). Small
    multiples, one per challenger, sharing both axes: the slices the metric is defined on, worst mean Δ over the
    challengers first, a critical slice (``critical(label)``) marked with a star and drawn in red."""
    rows = rows.dropna(subset=["delta"]) if not rows.empty else rows  # a slice outside the metric's domain
    if rows.empty:
        _nothing_to_show(path, "No per-slice deltas of a reranker under test (no slice labels, or no reranker).")
        return
    challengers = sorted(rows["challenger"].unique())
    slices = list(rows.groupby("slice")["delta"].mean().sort_values(kind="stable").index)
    labels = [f"★ {name}" if critical(name) else name for name in slices]
    fig, axes = grid(len(challengers), (3.5, 0.9 + 0.19 * len(slices)))
    position = {name: i for i, name in enumerate(slices)}
    for axis, challenger in zip(axes, challengers):
        frame = rows[rows["challenger"] == challenger]
        marked = frame["slice"].map(critical).astype(bool)
        for small, important, colour in ((False, False, "#1f77b4"), (False, True, "#d62728"), (True, False, "#aaaaaa"),
                                         (True, True, "#e8a0a0")):
            part = frame[(frame["too_small"] == small) & (marked == important)]
            axis.errorbar(part["delta"], part["slice"].map(position), xerr=[part["delta"] - part["low"],
                          part["high"] - part["delta"]], fmt="o", markersize=3, color=colour, capsize=2,
                          linewidth=1)
        axis.axvline(0, color="black", linewidth=0.8)
        axis.set_title(challenger, fontsize=9)
        axis.grid(axis="x", linewidth=0.3)
    axes[0].set_yticks(range(len(slices)), labels)
    axes[0].invert_yaxis()
    for axis in axes:
        axis.tick_params(axis="y", labelsize=7)
    for axis in axes[-COLUMNS:]:
        axis.set_xlabel(f"Δ {metric}", fontsize=8)
    fig.suptitle(f"Per-slice mean Δ vs baseline with {ci_label(confidence)}, worst first (★ red: critical slice; "
                 "pale: fewer queries than the minimum)", fontsize=9)
    fig.tight_layout()
    _save(fig, path)


def delta_distribution(deltas: pd.DataFrame, metric: str, path: Path) -> None:
    """``deltas``: challenger, delta (one row per query). A histogram of per-query deltas per challenger, small
    multiples sharing both axes."""
    if deltas.empty:
        _nothing_to_show(path, "No per-query deltas of a reranker under test.")
        return
    challengers = sorted(deltas["challenger"].unique())
    fig, axes = grid(len(challengers), (3.4, 2.1))
    for axis, challenger in zip(axes, challengers):
        values = deltas.loc[deltas["challenger"] == challenger, "delta"]
        axis.hist(values, bins=21, range=(-1, 1), color="#1f77b4")
        axis.axvline(0, color="black", linewidth=0.8)
        axis.set_title(challenger, fontsize=9)
    for axis in axes[-COLUMNS:]:
        axis.set_xlabel(f"per-query Δ {metric}", fontsize=8)
    for axis in axes[::COLUMNS]:
        axis.set_ylabel("queries", fontsize=8)
    fig.tight_layout()
    _save(fig, path)


FAST_MS = 1.0
"""A system whose p95 stays under this at every depth (a first-stage order) is drawn in a panel of its own below the
rerankers: on one log axis the two groups sit four decades apart and leave the canvas empty between them."""


def depth_cost(rows: pd.DataFrame, measure: str, path: Path) -> None:
    """``rows``: system, depth, quality, p95_ms, cost_per_1k_queries. p95 latency by depth per system (the quality by
    depth is depth_curve.png's), each system's cost per 1,000 queries at its deepest point in the legend, so one
    sees where deeper reranking stops paying. The rerankers on a log axis; the systems under ``FAST_MS`` at every
    depth (first-stage orders, whose latency does not move with depth) in a linear panel below."""
    plt = _figure()
    palette = colours(rows["system"].unique())
    deepest = rows.groupby("system")["p95_ms"].max()
    fast = sorted(deepest[deepest < FAST_MS].index)
    panels = [(systems, log) for systems, log in ((sorted(set(deepest.index) - set(fast)), True), (fast, False))
              if systems]
    fig, axes = plt.subplots(len(panels), 1, sharex=True, figsize=(9, 4.6), squeeze=False,
                             gridspec_kw={"height_ratios": [4, 1.3][:len(panels)]})
    axes = [row[0] for row in axes]
    for axis, (systems, log) in zip(axes, panels):
        for system in systems:
            frame = rows[rows["system"] == system].sort_values("depth")
            last = frame.iloc[-1]
            axis.plot(frame["depth"], frame["p95_ms"], marker="o", markersize=4, color=palette[system],
                      label=f"{system}: ${last['cost_per_1k_queries']:.4f} / 1k at depth {int(last['depth'])}")
        axis.set(xscale="log", yscale="log" if log else "linear",
                 ylabel="p95 ms (log)" if log else f"p95 ms (under {FAST_MS:g})")
        if not log:
            axis.set_ylim(0, float(deepest[systems].max()) * 1.6)
        axis.yaxis.label.set_fontsize(8)
    axes[-1].set_xlabel("rerank depth")
    axes[0].set_title(f"p95 latency by depth (legend: cost per 1k queries at the deepest; {measure} by depth: "
                      "depth_curve.png)", fontsize=9)
    handles = [handle for axis in axes for handle in axis.get_legend_handles_labels()[0]]
    axes[0].legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    _save(fig, path)

