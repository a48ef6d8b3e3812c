"""Precision variants: each learned system whose ``dtype`` is not float32 against its float32 twin (the configured
system with the same settings but the dtype), with the quality delta's paired bootstrap CI and the speed ratio, as
the compare stage computed them (``stats.variants``, in verdicts.json).

The speed ratio is the twin's mean seconds per query over the variant's, on the same queries, with a paired
bootstrap CI (the same query resamples for both), timed as the compare stage recorded (``timed``): the dedicated
latency measurement where both sides have one, else the quality run's model seconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .markdown import fmt, table


def precision_rows(variants: Sequence[Mapping[str, Any]],
                   described: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The compare stage's precision statistics (verdicts.json ``variants``) with what each side ran as."""
    rows = []
    for found in variants:
        variant, delta = found["variant"], found["delta"] or {}
        precision = described.get(variant, {}).get("precision", {})
        rows.append({**found, "dtype": precision.get("dtype"), "native_bf16": precision.get("native_bf16"),
                     "delta": delta.get("mean"), "low": delta.get("low"), "high": delta.get("high")})
    return rows


def precision_section(rows: Sequence[Mapping[str, Any]], measure: str, confidence: float) -> str:
    if not rows:
        return ""
    body = [[f"`{r['variant']}` vs `{r['twin']}`", r["dtype"] + (" (emulated: no bf16 instructions)"
                                                                 if r["native_bf16"] is False else ""),
             f"{fmt(r['delta'], signed=True)} [{fmt(r['low'], signed=True)}, {fmt(r['high'], signed=True)}]",
             f"{r['speed_ratio']:.2f}x [{r['ratio_low']:.2f}, {r['ratio_high']:.2f}]",
             f"{r['twin_ms']:.1f} / {r['variant_ms']:.1f}", r["timed"]] for r in rows]
    return ("## Precision variants against float32\n\n"
            + table(["variant", "dtype", f"Δ {measure} [{confidence:.0%} CI]", "speed-up [CI]",
                     "ms per query float32 / variant", "timed by"], body)
            + "\n\nΔ is paired over queries; speed-up is float32's mean time per query over the variant's, on the same "
              "queries. The latency stage's measurement times both one after the other in one process, as the "
              "verdict's latency check and a latency claim read them; the quality run's model times, where a side "
              "lacks that measurement, were taken when the pairs were first scored (a cache hit replays them), "
              "possibly under another machine load. `benchmarks/bench_precision.py` interleaves both in one process."
            + agreement_table(rows))


def agreement_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """How far each variant's ranking agrees with its float32 twin's (``stats.agreement``), as the compare stage
    measured it."""
    pairs = [(f"`{r['variant']}` vs `{r['twin']}`", r["agreement"]) for r in rows if r.get("agreement")]
    if not pairs:
        return ""
    return "\n\n" + agreement_markdown(
        pairs, "variant", "Do their rankings agree?",
        "RBO weighs the top most (1: the same order); tau ranks the float32 top against the variant's; a mean Δ near "
        "0 can still hide many queries reordered both ways, which these show.")


def served_parity_section(found: Mapping[str, Mapping[str, Any]]) -> str:
    """Each served system of ``compare.served_parity`` against its in-process reference, as the compare stage
    measured it: the score-parity check its verdict read, then how far the two rankings agree."""
    if not found:
        return ""
    rows = []
    for system, entry in found.items():
        parity = entry["parity"]
        at = parity["at"] or {}
        rows.append([f"`{system}` vs `{entry['reference']}`", str(parity["pairs"]),
                     "n/a" if parity["max_diff"] is None else f"{parity['max_diff']:.3g}",
                     f"{parity['tolerance']:g}" + ("" if parity["transform"] == "none"
                                                   else f" (reference through {parity['transform']})"),
                     "held" if parity["passed"] else "**failed** (REJECT)",
                     f"{at.get('query_id', '')} / {at.get('doc_id', '')}" if at else ""])
    text = ("## Served against in-process\n\n"
            + table(["served vs in-process", "scored pairs", "largest score difference", "tolerance", "parity",
                     "where (query / document)"], rows)
            + "\n\nA served system is the model its verdict speaks for only if it scores as that model does "
              "in-process (`compare.served_parity`): beyond the tolerance, the verdict REJECTs it.")
    pairs = [(f"`{system}` vs `{entry['reference']}`", entry["agreement"]) for system, entry in found.items()]
    return text + "\n\n" + agreement_markdown(pairs, "served vs in-process", "Do their rankings agree?",
                                               "RBO weighs the top most (1: the same order).")


def agreement_markdown(pairs: Sequence[tuple[str, Mapping[str, Any]]], what: str, title: str, note: str) -> str:
    """A table of ``stats.agreement.agreement_summary`` results, one row per (label, summary)."""

    def cell(interval: Mapping[str, float] | None) -> str:
        return "n/a" if not interval else f"{interval['mean']:.3f} [{interval['low']:.3f}, {interval['high']:.3f}]"

    first = pairs[0][1]
    body = [[label, str(found["queries"]), cell(found["rbo"]), cell(found["tau"]), cell(found["overlap"]),
             cell(found["changed"]), fmt(found["max_score_diff"])] for label, found in pairs]
    return (f"### {title} (per query, top {first['k']}, means with CIs)\n\n"
            + table([what, "queries", f"RBO (p={first['p']:g})", f"Kendall's tau@{first['k']}",
                     f"overlap@{first['k']}", f"share of queries whose top {first['k']} changed",
                     "largest score difference"], body)
            + f"\n\n{note}")
