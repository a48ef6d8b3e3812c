"""The guardrail table, one for report.md and the site: each system's rate of every guardrail measure with its CI
(ACLViolation: the queries that show a document their user may not see), its empty results, timeouts (the query's
deadline passed or an endpoint did not answer in time) and fallbacks (timeouts and scoring failures), and whether its
verdict's guardrails held; and the line saying what the access filter removed before any system scored anything, or
that the candidate source could not be filtered. Cells are text read off compare.json,
verdicts.json and metrics.json: nothing is computed here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..stats.config import GuardrailRule
from ..stats.schema import ComparisonCore, DecisionCore, Verdict, Verdicts
from .markdown import fmt


def guardrail_table(compare: ComparisonCore, verdicts: Verdicts) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the guardrail table; no rows when the collection carries no labels the guardrails read."""
    found = compare.guardrails or {}
    if not found:
        return [], []
    measures = list(found)
    systems = list(next(iter(found.values())))
    zero = {rule.measure: rule.zero for rule in verdicts.rule.guardrails or []}
    baseline = verdicts.baseline
    header = ["system", *measures, "empty results", "timeouts", "fallbacks", "guardrails"]
    rows = []
    for system in systems:
        cells = [f"`{system}`"]
        for measure in measures:
            value = found[measure][system]
            if zero.get(measure):
                share = value["queries_with_any"] / value["queries"] if value["queries"] else 0.0
                cells.append(f"{value['queries_with_any']} of {value['queries']} queries"
                             + (f" ({share:.1%})" if value["queries_with_any"] else ""))
            else:
                cells.append(f"{fmt(value['mean'])} [{fmt(value['low'])}, {fmt(value['high'])}]")
        empty = (verdicts.empty_results or {}).get(system)
        cells.append(f"{empty['empty']}/{empty['queries']}" if empty else "n/a")
        fallbacks = verdicts.fallbacks.get(system)
        cells.append(f"{fallbacks['timeouts']}/{fallbacks['queries']}" if fallbacks else "n/a")
        cells.append(f"{fallbacks['fallbacks']}/{fallbacks['queries']}" if fallbacks else "n/a")
        cells.append("baseline" if system == baseline else _outcome(verdicts.verdicts.get(system)))
        rows.append(cells)
    return header, rows


def _outcome(verdict: Verdict | None) -> str:
    if verdict is None or not verdict.guardrails:
        return "n/a"
    broken = [g["measure"] for g in verdict.guardrails if g["outcome"] == "violated"]
    unsettled = [g["measure"] for g in verdict.guardrails if g["outcome"] == "unsettled"]
    if broken:
        return "**violated**: " + ", ".join(broken)
    return "unsettled: " + ", ".join(unsettled) if unsettled else "held"


def access_line(access: Mapping[str, Any] | None) -> str:
    """What the freeze's access filter did (metrics.json ``access``), or why it could not filter; empty without
    access labels."""
    if not access:
        return ""
    unknown = f" Validity: {access['validity_unknown']}." if "validity_unknown" in access else ""
    if "cannot_filter" in access:
        return f"Access filter: the candidate source cannot be filtered: {access['cannot_filter']}.{unknown}"
    if not access.get("labelled_documents"):  # no acl anywhere: nothing to filter, only the validity to say
        return unknown.strip()
    if not access.get("filter", True):
        return ("Access filter: off (retrieval.access.filter is false): every system saw what its users may not; "
                "ACLViolation shows what they were shown." + unknown)
    sources = ", ".join(f"{name} {count}" for name, count in access.get("removed_from", {}).items())
    return (f"Access filter: {access['removed']} candidates the asking user may not see were removed from "
            f"{access['queries_with_removed']} queries before any system scored anything ({sources}); a system "
            "configured with access_filter: false reranks them, to show what the guardrail catches." + unknown)


def guardrail_rule_text(verdicts: DecisionCore) -> str:
    """The guardrails in a sentence (verdicts.json ``rule.guardrails``): checked before any quality check."""
    rules = verdicts.rule.guardrails or []
    if not rules:
        return ""
    budgets = [f"{rule.measure}: none allowed" if rule.zero else
               f"{rule.measure}: at most {rule.max_increase:+.4f} over the compared system (REJECT when the "
               "increase's CI lies above it)" + _own_slice_budgets(rule) for rule in rules]
    return ("Guardrails are checked before any quality check and no quality gain buys them back: "
            + "; ".join(budgets) + ".")


def _own_slice_budgets(rule: GuardrailRule) -> str:
    """`` and within slices intent=billing at most +0.0000``: the slices a guardrail holds to budgets of their own."""
    own = [f"{budget.column}={budget.value if budget.value is not None else '*'} at most {budget.budget:+.4f}"
           for budget in rule.slice_budgets]
    return f" and within slices {', '.join(own)}" if own else ""


def guardrail_section(compare: ComparisonCore, verdicts: Verdicts, access: Mapping[str, Any] | None,
                      render_table) -> str:
    """The heading, the rule, what the access filter did and the table (``render_table(header, rows)``); empty when
    the collection carries no labels."""
    header, rows = guardrail_table(compare, verdicts)
    line = access_line(access)
    if not rows and not line:
        return ""
    parts = ["### Guardrails", *filter(None, [guardrail_rule_text(verdicts), line])]
    if rows:
        parts.append(render_table(header, rows))
    return "\n\n".join(parts)
