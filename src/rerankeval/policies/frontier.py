"""The quality-cost frontier of every configuration: each system at its depths, each composite as configured, each
policy sweep (sweep stage) as a curve and the served system at the load test's chosen concurrency; the Pareto frontier
is marked across all of them. The compare stage's analysis holds the points (costs.json ``frontier``); the
report only draws and lists them.

A point is (quality mean, p95 latency per query); the frontier holds the points no other point beats on both axes.
The oracle (ceiling) and random (floor) are bounds, not deployable configurations, and are left out. Composite
systems are drawn at their configured setting (their depth curve from one scoring pass would not be the composite's
own).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..serving.measure import loadtest_p95
from .points import setting_label
from .sweep import setting_value
from ..systems.roles import KindTraits

POINT_COLUMNS = ["policy", "system", "label", "quality", "p95_ms", "cost_per_1k_queries", "position"]


def pareto_front(points: pd.DataFrame, quality: str = "quality", latency: str = "p95_ms",
                 resolution: float = 0.0) -> pd.Series:
    """The points no other beats on both axes, latencies compared at ``resolution`` (``latency_resolution``).

    Taken best quality first (the faster of equal qualities first): a point joins the frontier when it is faster,
    beyond the resolution, than every frontier point of at least its quality. So noise between settings that score
    the same pairs does not pick the frontier (the better quality at that latency does), and a dropped point is always
    within the resolution of a better frontier point: a chain of small steps cannot drop a point far from the rest.
    At resolution 0 this is the exact Pareto frontier (of exact twins, one point)."""
    order = points.sort_values([quality, latency], ascending=[False, True], kind="stable").index
    kept, fastest = [], np.inf
    for index in order:
        if points.at[index, latency] * (1 + resolution) < fastest:
            kept.append(index)
            fastest = points.at[index, latency]
    return pd.Series(points.index.isin(kept), index=points.index)


MAX_RESOLUTION = 0.05
"""The widest latency resolution: a machine so loaded that its rounds differ by more should be measured again (the
latency check says so); the frontier still tells apart settings more than 5% apart."""


def latency_resolution(p95_by_round: Mapping[str, Sequence[float]], floor_ms: float = 1.0) -> float:
    """How far apart two p95 latencies must be to differ: the median, over the measured systems slower than
    ``floor_ms`` (faster ones are timer noise), of the relative spread of one system's p95 across the rounds of its
    dedicated measurement ((max - min) / min), at most ``MAX_RESOLUTION``; 0 without such a measurement."""
    spreads = [(max(rounds) - min(rounds)) / min(rounds) for rounds in p95_by_round.values()
               if len(rounds) > 1 and min(rounds) >= floor_ms]
    return min(float(np.median(spreads)), MAX_RESOLUTION) if spreads else 0.0


def own_points(systems: Sequence[str], per_query: pd.DataFrame, measure: str,
               costs: Mapping[str, Mapping[str, Any]], measured: Mapping[str, float | None] = {}) -> pd.DataFrame:
    """Each system as configured: its mean ``measure``, p95 and cost per 1k queries. ``measured``: the p95 the
    verdict read (verdicts.json's ``latency_p95_ms``), which is the system's one p95 on every page and plot; the
    quality run's own p95 only where none was measured."""
    means = per_query.groupby("system")[measure].mean() if measure in per_query else pd.Series(dtype="float64")
    return pd.DataFrame([{"system": s, "quality": float(means.get(s, np.nan)),
                          "p95_ms": measured[s] if measured.get(s) is not None else costs[s]["p95_ms"],
                          "cost_per_1k_queries": costs[s]["cost_per_1k_queries"]} for s in systems])


def settings_held_elsewhere(sweeps: pd.DataFrame, depth_costs: pd.DataFrame, own: pd.DataFrame,
                            systems: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """``sweeps`` with ``held`` true on each setting that is already a point elsewhere, carrying that point's p95 and
    cost: a depth sweep's setting the depth table holds (its system at that depth), or a sweep's parameter at the value
    its system is configured with (the system as configured, ``own``), where the qualities agree. The same setting
    then has one latency on every page and plot, and the frontier draws it once (the other point)."""
    by_depth = depth_costs.set_index(["system", depth_costs["depth"].astype(str)])
    by_system = own.set_index("system")
    found = sweeps.assign(held=False)
    for index, point in sweeps.iterrows():
        if point["parameter"] == "depth":
            key = (point["system"], point["value"])
            other = by_depth.loc[key] if key in by_depth.index else None
        else:
            configured = setting_value(systems.get(point["system"], {}), point["parameter"])
            held = configured is not None and point["system"] in by_system.index \
                and setting_label(configured) == point["value"]
            other = by_system.loc[point["system"]] if held else None
        if other is not None and pd.notna(other["p95_ms"]) and np.isclose(other["quality"], point["quality"]):
            found.loc[index, ["p95_ms", "cost_per_1k_queries", "held"]] = [
                float(other["p95_ms"]), other["cost_per_1k_queries"], True]
    return found


def frontier_points(depth_costs: pd.DataFrame, traits: Mapping[str, KindTraits], own: pd.DataFrame,
                    sweeps: pd.DataFrame | None, loadtest: Mapping[str, Any] | None = None,
                    resolution: float = 0.0) -> pd.DataFrame:
    """``depth_costs``: system, depth, quality, p95_ms, cost_per_1k_queries (the depth-vs-cost table); ``own``: one
    row per system as configured (``own_points``); ``sweeps``: the sweep stage's points; ``traits``: each system's
    kind traits (from its run); ``loadtest``: the load test's record (``served_point``); ``resolution``:
    ``pareto_front``'s. Returns ``POINT_COLUMNS`` plus ``frontier``."""
    deployable = [name for name, found in traits.items() if not found.bound]
    composite = {name for name in deployable if traits[name].composite}
    parts = []
    depths = depth_costs[depth_costs["system"].isin(set(deployable) - composite) & depth_costs["p95_ms"].notna()
                         & depth_costs["quality"].notna()]
    depths = depths.sort_values("depth").drop_duplicates(["system", "quality", "p95_ms"], keep="first")
    parts.append(pd.DataFrame({"policy": depths["system"] + " depth", "system": depths["system"],
                               "label": depths["system"] + "@" +
                               depths["depth"].astype(str), "quality": depths["quality"], "p95_ms": depths["p95_ms"],
                               "cost_per_1k_queries": depths["cost_per_1k_queries"], "position": depths["depth"]}))
    configured = own[own["system"].isin(composite) & own["p95_ms"].notna() & own["quality"].notna()]
    parts.append(pd.DataFrame({"policy": configured["system"], "system": configured["system"],
                               "label": configured["system"],
                               "quality": configured["quality"], "p95_ms": configured["p95_ms"],
                               "cost_per_1k_queries": configured["cost_per_1k_queries"], "position": 0}))
    if sweeps is not None and len(sweeps):
        swept = sweeps[sweeps["p95_ms"].notna() & sweeps["quality"].notna()]
        # A setting the depth table or a system's own point holds is drawn once, as that point
        # (``settings_held_elsewhere``).
        swept = swept[~swept["held"].astype(bool)]
        parts.append(pd.DataFrame({"policy": swept["policy"], "system": swept["system"],
                                   "label": swept["system"] + " " + swept["parameter"]
                                   + "=" + swept["value"], "quality": swept["quality"], "p95_ms": swept["p95_ms"],
                                   "cost_per_1k_queries": swept["cost_per_1k_queries"],
                                   "position": swept["position"]}))
    parts = [part for part in parts if len(part)]
    if not parts:
        return pd.DataFrame(columns=[*POINT_COLUMNS, "frontier"])
    points = pd.concat(parts, ignore_index=True)[POINT_COLUMNS]
    points = served_point(points, loadtest)
    points["frontier"] = pareto_front(points, resolution=resolution)
    return points


def served_point(points: pd.DataFrame, loadtest: Mapping[str, Any] | None) -> pd.DataFrame:
    """The served system at the load test's chosen concurrency, as one more configuration (its full-depth quality);
    ``points`` as ``frontier_points`` builds them."""
    system = (loadtest or {}).get("system")
    p95 = loadtest_p95(loadtest, system) if loadtest else None
    own = points[points["policy"] == f"{system} depth"]
    if p95 is None or own.empty:
        return points
    deepest = own.sort_values("position").iloc[-1]
    if np.isclose(deepest["p95_ms"], p95, rtol=1e-9):  # the verdict read the load test: its curve already ends there
        return points
    served = {**deepest.to_dict(), "policy": f"{system} served", "p95_ms": p95,
              "label": f"{deepest['label']} served, concurrency {loadtest['pareto_concurrency']}"}
    return pd.concat([points, pd.DataFrame([served])], ignore_index=True)
