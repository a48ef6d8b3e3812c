"""Traffic-weighted results beside the macro average (compare.json's ``weighted`` block, ``stats.weighted``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .markdown import fmt, table


def weighted_section(weighted: Mapping[str, Any] | None, metric: str) -> str:
    if not weighted:
        return ""
    rows = [[f"`{system}`", fmt(values[metric]["macro"]), f"{fmt(values[metric]['weighted'])} "
             f"[{fmt(values[metric]['low'])}, {fmt(values[metric]['high'])}]"]
            for system, values in weighted["systems"].items() if metric in values]
    deltas = [[f"`{c['challenger']}`", fmt(c["macro"], signed=True), f"{fmt(c['weighted'], signed=True)} "
               f"[{fmt(c['low'], signed=True)}, {fmt(c['high'], signed=True)}]"]
              for c in weighted["comparisons"] if c["metric"] == metric]
    return ("## Traffic-weighted results\n\n"
            f"Each query weighs its traffic weight ({weighted['queries']} queries, total weight "
            f"{weighted['total_weight']:g}, worth {weighted['effective_queries']:g} equally weighted queries; "
            f"{weighted['zero_weight_queries']} never asked). CIs: the macro average's query resamples, weighted.\n\n"
            + table(["system", f"{metric} macro", f"{metric} weighted [CI]"], rows)
            + ("\n\n" + table(["challenger", "Δ macro", "Δ weighted [CI]"], deltas) if deltas else ""))
