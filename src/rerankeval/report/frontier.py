"""The quality-cost frontier drawn and listed: the points are the compare stage's analysis (costs.json
``frontier``, built by ``policies.frontier``); nothing here decides which point is on the frontier."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from . import plots
from .markdown import fmt, ms, plot_link, table


def plot_frontier(points: pd.DataFrame, measure: str, path: Path, bounds: Mapping[str, float] | None = None) -> None:
    """Every policy a curve (its settings in sweep order), the Pareto frontier joined in red; ``bounds``: the
    reference systems' quality (``oracle (ceiling)``: 0.97), dashed lines apart from the configurations. Labels:
    the frontier's points first, then each curve's ends, each where it covers no other and no line or marker
    (``plots.place_labels``)."""
    plt = plots._figure()
    fig, axis = plt.subplots(figsize=(11, 5.4))
    floor = max(points["p95_ms"].min(), 1e-3)
    points = points.assign(x=points["p95_ms"].clip(lower=floor))
    # One colour per system (its depth curve, its sweeps and its configured point share it); the line tells them
    # apart: solid, a depth curve; dashed, a policy sweep; a star, the system as configured.
    palette = plots.colours(points["system"].unique())
    labels, ends = [], []
    for policy, frame in points.groupby("policy", sort=True):
        frame = frame.sort_values("position")
        system = frame["system"].iloc[0]
        colour = palette[system]
        depth, configured = policy == f"{system} depth", policy == system
        axis.plot(frame["x"], frame["quality"], marker="*" if configured else "o" if depth else "s",
                  markersize=9 if configured else 4, linewidth=1, color=colour,
                  linestyle=("-" if depth else "--") if len(frame) > 1 else "none", label=policy)
        for row in (frame.iloc[[0, -1]] if len(frame) > 1 else frame).itertuples():
            ends.append((row.x, row.quality, _tag(row.label) if len(frame) > 1 else row.label, colour))
    front = points[points["frontier"]].sort_values("x")
    axis.plot(front["x"], front["quality"], color="#d62728", linewidth=2.2, alpha=0.5, zorder=0,
              label="Pareto frontier")
    axis.scatter(front["x"], front["quality"], s=90, facecolors="none", edgecolors="#d62728", zorder=3)
    labels += [(row.x, row.quality, row.label, palette[row.system]) for row in front.itertuples()]
    axis.set(xscale="log", xlabel="p95 latency per query (ms, log; cold: cache hits cost their model time)",
             ylabel=measure, title=f"Quality vs latency: {measure} (colour: system; solid: depth, dashed: sweep, "
                   "star: as configured; red: frontier)")
    plots.bound_lines(axis, bounds or {}, float(points["quality"].min()), float(points["quality"].max()))
    plots.legend_outside(axis, fontsize=7)
    fig.tight_layout()
    axis.set_xlim(axis.get_xlim())
    plots.place_labels(axis, labels + [end for end in ends if (end[0], end[1]) not in
                                       {(x, y) for x, y, _, _ in labels}])
    plots._save(fig, path)


def _tag(label: str) -> str:
    """A curve point's setting: ``0.3`` of ``blend weight=0.3``, ``10`` of ``ce@10``."""
    return label.rsplit("=", 1)[-1] if "=" in label else label.rsplit("@", 1)[-1]


def frontier_section(points: pd.DataFrame, sweeps: pd.DataFrame | None, pairs: Mapping[str, Mapping[str, int]],
                     measure: str, plots_link: str, on_decision_page: bool = False, resolution: float = 0.0) -> str:
    """``resolution``: costs.json's ``latency_resolution``, stated beside the frontier it decided."""
    header = ["configuration", "policy", measure, "p95 ms", "cost / 1k queries"]
    ordered = points.sort_values(["p95_ms", "quality"], ascending=[True, False])
    rows = [[f"`{r.label}`", r.policy, fmt(r.quality), ms(r.p95_ms), fmt(r.cost_per_1k_queries, 5)]
            for r in ordered.itertuples() if r.frontier]
    every = [[f"`{r.label}`", r.policy, fmt(r.quality), ms(r.p95_ms), fmt(r.cost_per_1k_queries, 5),
              "frontier" if r.frontier else ""] for r in ordered.itertuples()]
    text = (f"## Quality-cost frontier: {measure} vs p95 latency (systems x depth, configurations, policy sweeps)\n\n"
            f"The configurations no other beats on both axes ({len(rows)} of {len(points)} points; p95 latencies "
            f"within {resolution:.1%} of each other count as one, the median spread of a system's p95 across the "
            "rounds of its latency measurement):\n\n"
            + table(header, rows) + "\n\n" + plot_link("frontier", f"{plots_link}/pareto.png", on_decision_page)
            + "\n\n<details><summary>Every point"
            "</summary>\n\n" + table([*header, ""], every) + "\n\n</details>")
    return text + ("\n\n" + sweeps_section(sweeps, pairs, measure) if sweeps is not None and len(sweeps) else "")


HELD_MARK = {False: " (as configured)", True: " (the depth table's)"}
"""A sweep setting that is a point elsewhere (``SweepPoint.held``): a system as configured, or a depth of the depth
table."""


def sweeps_section(sweeps: pd.DataFrame, pairs: Mapping[str, Mapping[str, int]], measure: str) -> str:
    parts = ["### Policy sweeps (one pass over stored scores)",
             "Each setting is a full run of the configuration on the evaluated queries; Δ is against the baseline "
             "with a paired CI simultaneous over the sweep's settings and the p adjusted in that family (one family "
             "per sweep, by the release family's procedure, so the best-looking of many settings is not read at a "
             "single setting's level); it "
             "is not the release family's interval that a verdict reads (a configured system's is on the decision "
             "page). A sweep's curve describes the settings on this split: a setting picked "
             "from it is tuned on the test queries (the blend's own weight is fitted on the train split instead). "
             "Each setting costs what it scored: model pairs are those its run needed from a model, 0 for a setting "
             "that calls none. A setting that is a system as configured, or a depth of the depth table, is marked "
             "and shows that configuration's one p95 and cost."]
    summary = [[policy, len(frame), *(pairs.get(policy, {}).get(key, "n/a") for key in ("scored", "from_cache",
                                                                                        "reused"))]
               for policy, frame in sweeps.groupby("policy", sort=False)]
    parts.append(table(["policy", "settings", "pairs scored (model calls)", "pairs read from the cache",
                        "pairs reused in memory"], summary))
    rows = [[r.policy, r.value + (HELD_MARK[r.parameter == "depth"] if r.held else ""),
             fmt(r.quality), f"{fmt(r.delta, signed=True)} [{fmt(r.low, signed=True)}, "
             f"{fmt(r.high, signed=True)}]", fmt(r.p_adjusted), ms(r.p95_ms), fmt(r.cost_per_1k_queries, 5),
             str(r.model_pairs), f"{r.skip_rate:.0%}", f"{r.fallback_rate:.0%}"]
            for r in sweeps.itertuples()]
    parts.append(table(["policy", "setting", measure, f"Δ {measure} vs baseline [CI]", "p (adjusted)", "p95 ms",
                        "cost / 1k", "model pairs", "skipped", "fallbacks"], rows))
    return "\n\n".join(parts)
