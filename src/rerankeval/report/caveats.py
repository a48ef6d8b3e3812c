"""The report's lines for the generator sanity check and the reranker-language check (``stats.caveats``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..stats.schema import GeneratorCheck
from ..stats.verdict import ci_label
from .markdown import fmt, interval_text


def generator_lines(sanity: GeneratorCheck) -> list[str]:
    """Above the answer tables: the ceiling and the baseline against the floor on the primary answer measure, and the
    flag when either difference's CI reaches 0 (the tables then compare generator noise)."""
    if sanity.skipped:
        return [f"Generator sanity check not run: {sanity.skipped}.", ""]
    level = ci_label(sanity.confidence)
    parts = [f"`{name}` - `{sanity.floor}` {fmt(found.delta, signed=True)} "
             f"[{interval_text(found.low, found.high, signed=True)}]"
             for name, found in ((sanity.ceiling, sanity.ceiling_vs_floor),
                                 (sanity.baseline, sanity.baseline_vs_floor)) if found is not None]
    lines = [f"Generator sanity check on {sanity.metric} ({level}): {'; '.join(parts)}."]
    if sanity.flag:
        lines.append(f"> ⚠ **{sanity.flag}.** No verdict rests on an answer-level measure here; read the tables "
                     "below as the generator's behaviour, not as a comparison of rankings.")
    return [*lines, ""]


def language_warnings(run_metadata: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """A line per learned system whose tokenizer cannot read a slice of the collection (``describe.language_check``)."""
    warnings = {}
    for system, metadata in run_metadata.items():
        check = metadata.get("describe", {}).get("language_check") or {}
        if not check.get("measured") or not check.get("unreadable"):
            continue
        where = "this collection" if check["column"] is None else \
            ", ".join(f"{check['column']}={value}" for value in check["unreadable"])
        shares = ", ".join(f"{check['slices'][value][check['decided_on']]:.1%}" for value in check["unreadable"])
        text = "queries" if check["decided_on"] == "query_share" else "queries and scored passages"
        warnings[system] = (f"its model cannot read {where}: its tokenizer maps {shares} of the characters of the "
                            f"{text} to unknown, byte or split pieces (threshold "
                            f"{check['threshold']:.0%}); it blocks ACCEPT and is the likely cause of a regression "
                            "there, which still decides (the queries measure this model as they measure any other); "
                            "against a system that cannot read it either, it is a note, not a reason")
    return warnings
