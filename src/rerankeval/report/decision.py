"""report.md as a decision page: per challenger the decision, the one reason that decided it, Δ [CI] of the primary
metric, the answer-level Δ where the generator can tell rankings apart, p95 and cost, and the rule's error rates;
the reference systems apart, as bounds; then the plots that carry the decision. Everything else is on the details
page (``report.build``). Pure text from verdicts.json, compare.json and the report's cost table: nothing computed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..stats.schema import Compare, SystemCost, Verdict, Verdicts
from ..stats.verdict import ci_label
from ..systems.roles import KindTraits
from . import claims
from .guardrails import guardrail_section
from .markdown import delta_ci, delta_with_interval, ms, table, verdict_rule

ROLE_NAMES = {"ceiling": "ceiling (bound)", "floor": "floor (bound)", "first_stage": "first-stage order"}
DECISION_PLOTS = (("pareto.png", "quality against p95 latency, the frontier"),
                  ("slice_deltas.png", "Δ of the primary metric per slice"),
                  ("depth_curve.png", "quality against reranking depth"))
UNTRUSTED = "⚠"


@dataclass(frozen=True)
class DecisionInputs:
    verdicts: Verdicts
    compare: Compare
    traits: Mapping[str, KindTraits]
    costs: Mapping[str, SystemCost]
    """The report's cost table (costs.json ``systems``): ``cost_per_1k_queries`` per system."""
    hourly_price: float
    generator: str
    """The generator kind (``rag.generator.kind``)."""
    swept: bool
    """Whether policy sweeps are on the frontier plot (their settings are read off the evaluated queries)."""
    access: Mapping[str, Any] | None = None
    """What the freeze's access filter removed (metrics.json ``access``); None without access labels."""


def decision_page(header: Sequence[str], inputs: DecisionInputs, plots_link: str, details_link: str) -> str:
    """``header``: the page's title and its few context lines; the links are relative to report.md."""
    verdicts = inputs.verdicts
    parts = ["\n".join(header), *verdict_rule(verdicts), decision_table(inputs)]
    notes = [latency_note(verdicts), answer_note(inputs)]
    parts += [note for note in notes if note]
    guardrails = guardrail_section(inputs.compare, verdicts, inputs.access, table)
    if guardrails:
        parts.append(guardrails)
    references = reference_table(inputs)
    if references:
        parts += [f"### Reference systems vs `{verdicts.baseline}` (bounds and first-stage orders, not release "
                  "decisions)", references]
    parts += ["### The plots that carry the decision", *plot_lines(inputs, plots_link),
              f"Every other table, every reason and the per-query lists: [details]({details_link})."]
    return "\n\n".join(parts)


def challengers(inputs: DecisionInputs) -> list[tuple[str, str, Verdict]]:
    """The decided (challenger, baseline, verdict) triples of rerankers under test (not reference systems)."""
    return [(system, reference, verdict) for system, reference, verdict in claims.decided(inputs.verdicts)
            if not _reference(inputs, system)]


def decision_table(inputs: DecisionInputs) -> str:
    verdicts = inputs.verdicts
    plain = claims.plain(verdicts)
    level = ci_label(verdicts.rule.confidence)
    answer = _answer_metric(inputs)
    header = ["challenger", *([] if plain else ["vs", "claim"]), "decision", "decided by",
              f"Δ {verdicts.rule.primary_metric} [{level}]", *([f"Δ {answer} [{level}]"] if answer else []),
              "p95 ms", "cost / 1k queries", "false ACCEPT / power"]
    rows = []
    for system, reference, verdict in challengers(inputs):
        answer_cell = [_answer_delta(inputs, system, reference, answer)] if answer else []
        rows.append([f"`{system}`", *([] if plain else [f"`{reference}`", claims.claim_cell(verdict)]),
                     f"**{verdict.decision}**", verdict.decided_by.replace("|", "\\|"), delta_ci(verdict),
                     *answer_cell, p95_cell(verdicts, system), cost_cell(inputs.costs, system),
                     error_rates(verdict)])
    if not rows:
        return "No reranker under test: every system is a reference (bounds or first-stage orders)."
    return table(header, rows) + (
        "\n\nfalse ACCEPT / power: the rule's simulated ACCEPT rate at a true Δ of 0 (of -margin for a noninferior "
        "claim) and at a true Δ of min_delta (of 0), the full simulation on the details page. p95: the dedicated "
        "latency measurement the verdict's check read; cost: the quality run's per-query latency at "
        f"${inputs.hourly_price:g} per machine-hour (API prices where a system calls one)."
        + "".join(f" {line}" for line in claims.no_rates(verdicts)))


def p95_text(verdicts: Verdicts, system: str) -> str:
    """The system's one p95 (the verdict's), as every page writes it."""
    return ms(verdicts.latency_p95_ms.get(system))


def p95_cell(verdicts: Verdicts, system: str) -> str:
    """``p95_text``, marked where the figure cannot REJECT (``latency_note`` says why)."""
    untrusted = system in verdicts.latency_untrusted and verdicts.latency_p95_ms.get(system) is not None
    return p95_text(verdicts, system) + (f" {UNTRUSTED}" if untrusted else "")


def cost_cell(costs: Mapping[str, SystemCost], system: str) -> str:
    found = costs.get(system)
    value = None if found is None else found.cost_per_1k_queries
    return "n/a" if value is None else f"${value:.4f}"


def error_rates(verdict: Verdict) -> str:
    if verdict.rates_why:
        return "n/a (no spread)"
    rates = verdict.operating_characteristics
    if verdict.claim is not None:
        error, power = rates["at_minus_margin"].accept, rates["at_zero"].accept
    else:
        error, power = rates["at_zero"].accept, rates["at_min_delta"].accept
    return f"{error:.1%} / {power:.1%}"


def latency_note(verdicts: Verdicts) -> str:
    """Which p95 figures cannot REJECT, grouped by the reason verdicts.json gives for each."""
    untrusted = verdicts.latency_untrusted
    if not untrusted:
        return ""
    by_reason: dict[str, list[str]] = {}
    for system, reason in sorted(untrusted.items()):
        by_reason.setdefault(reason, []).append(f"`{system}`")
    return (f"{UNTRUSTED} p95 not trusted to REJECT: "
            + "; ".join(f"{', '.join(systems)}: {reason}" for reason, systems in by_reason.items())
            + ". Each measurement's load is on the details page.")


def answer_note(inputs: DecisionInputs) -> str:
    """One line on the answer-level Δ: why it is not shown (the generator's sanity check), or what it rests on."""
    sanity = inputs.compare.generator_sanity
    floor = (f" Answers come from the `{inputs.generator}` generator, which copies sentences of the context: a floor "
             "for what a language model would answer." if inputs.generator == "extractive" else "")
    if sanity.skipped:
        return f"Answer-level Δ not shown: the generator sanity check did not run ({sanity.skipped}).{floor}"
    if sanity.flag:
        return f"Answer-level Δ not shown: {sanity.flag}.{floor}"
    return (f"Δ {sanity.metric}: the generator passes its sanity check (the ceiling and the baseline above the "
            f"floor).{floor}")


def reference_table(inputs: DecisionInputs) -> str:
    """The baseline and every reference system (first-stage orders, oracle, random) with Δ, p95 and cost."""
    verdicts = inputs.verdicts
    baseline = verdicts.baseline
    rows = [[f"`{baseline}`", "baseline", "—", p95_cell(verdicts, baseline), cost_cell(inputs.costs, baseline)]]
    for system, reference, verdict in claims.decided(verdicts):
        if _reference(inputs, system) and reference == baseline:
            rows.append([f"`{system}`", ROLE_NAMES.get(inputs.traits[system].role, inputs.traits[system].role),
                         delta_ci(verdict), p95_cell(verdicts, system), cost_cell(inputs.costs, system)])
    if len(rows) == 1:
        return ""
    level = ci_label(verdicts.rule.confidence)
    return table(["system", "role", f"Δ {verdicts.rule.primary_metric} [{level}]", "p95 ms",
                  "cost / 1k queries"], rows)


def plot_lines(inputs: DecisionInputs, plots_link: str) -> list[str]:
    """Each plot with the caveat that qualifies it, if any, right under it."""
    captions = {"pareto.png": f"The policy sweeps' settings are read off these `{inputs.compare.split}` queries "
                              "(tuned on them): a setting picked from a curve needs fresh queries to confirm it."
                if inputs.swept else "",
                "slice_deltas.png": "Rerankers under test only; grey: a slice under the minimum size, which can only "
                                    "block ACCEPT.",
                "depth_curve.png": ""}
    return [f"![{title}]({plots_link}/{name})" + (f"\n\n{captions[name]}" if captions[name] else "")
            for name, title in DECISION_PLOTS]


def _reference(inputs: DecisionInputs, system: str) -> bool:
    found = inputs.traits.get(system)
    return found is not None and found.reference


def _answer_metric(inputs: DecisionInputs) -> str | None:
    """The answer measure to show a Δ of: the sanity check's, only when the generator passed it."""
    sanity = inputs.compare.generator_sanity
    if sanity.skipped or sanity.flag:
        return None
    return sanity.metric


def _answer_delta(inputs: DecisionInputs, system: str, reference: str, metric: str) -> str:
    if reference != inputs.compare.baseline:
        return "n/a"
    found = next((c for c in inputs.compare.comparisons if c.challenger == system and c.metric == metric), None)
    return "n/a" if found is None else delta_with_interval(found.delta, found.low, found.high)
