"""The Markdown report: pure text from the evaluate and compare results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

import pandas as pd

from ..data.sample import sample_text
from ..eval.funnel import HEADROOM_PREFIX, ORACLE_PREFIX, headroom_column, oracle_column
from ..stats.schema import (Compare, Comparison, ComparisonCore, DecisionCore, FirstStageCheck, Interval, Method,
                            SliceComparison, SystemCost, Verdict, Verdicts)
from ..stats.verdict import ci_label
from . import claims


def fmt(value: float | None, digits: int = 4, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def ms(value: float | None) -> str:
    """A latency as every page writes it: one decimal from 10 ms, two below (a first stage's 0.02 ms is no 0.0)."""
    if value is None:
        return "n/a"
    return fmt(value, 1) if value >= 10 else fmt(value, 2)


def ci(entry: Interval | Comparison | SliceComparison, signed: bool = False) -> str:
    """A compared value's interval: ``-0.0100 .. +0.0624``."""
    return interval_text(entry.low, entry.high, signed)


def interval_text(low: float | None, high: float | None, signed: bool = False) -> str:
    """An interval's bounds as ``ci`` shows them, for the bounds the analysis keeps in a plain dict (a sanity
    check's)."""
    return f"{fmt(low, signed=signed)} .. {fmt(high, signed=signed)}"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def p_value(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.4f}" if value >= 1e-4 else "<1e-4"


def decision_header(context: Mapping[str, Any]) -> list[str]:
    """The decision page's title and what was evaluated, in a few lines (the rest heads the details page)."""
    return [f"# rerankeval report: {context['dataset']}", "", *_split_lines(context),
            candidates_line(context["retrieval"], context.get("candidate_source", "hybrid"))]


def _split_lines(context: Mapping[str, Any]) -> list[str]:
    return [
        f"- Evaluated split: `{context['split']}`, {context['queries']} queries " + (
            f"({context['queries'] - context['ranked_queries']} without a relevant document, kept as abstention "
            f"cases: ranking measures average over the other {context['ranked_queries']})."
            if context.get("ranked_queries") not in (None, context["queries"])
            else f"(queries without a relevant document: {context['no_relevant']})."),
        *([f"- Query sample: {sample_text(context['sample'])} (`dataset.sample`; the ids are in the snapshot "
           "manifest): a quick run, its intervals wider than the whole split's."] if context.get("sample") else [])]


def header_section(context: Mapping[str, Any], subtitle: str | None = None) -> str:
    """The details page's head: what was evaluated and how (``subtitle``: after the title, e.g. a link back)."""
    snapshot, retrieval, method = context["snapshot"], context["retrieval"], context["method"]
    return "\n".join([
        f"# rerankeval report: {context['dataset']}" + (f", {subtitle}" if subtitle else ""),
        "",
        *_split_lines(context),
        f"- Snapshot content sha256: corpus `{snapshot['corpus'][:12]}`, queries `{snapshot['queries'][:12]}`, "
        f"qrels `{snapshot['qrels'][:12]}`.",
        candidates_line(retrieval, context.get("candidate_source", "hybrid")),
        f"- Ties: {context['tie_break']}.",
        "- Metric names carry their conventions: `nDCG@10` is trec_eval's (linear gain, IDCG over every judged "
        "document); `[idcg=candidates]` uses the candidates' ideal order (the reranker's ordering skill alone); "
        "`[gain=exp]` uses 2^rel - 1; `[judged_only=true]` removes unjudged documents before scoring.",
        f"- Uncertainty: {method.resampling}, {method.ci} {ci_label(method.confidence)}s from {method.samples} "
        f"resamples (seed {method.seed}); p-values from {method.permutations} sign flips and a paired t-test.",
        f"- {family_statement(method)}",
    ])


def family_statement(method: Method) -> str:
    """What the release decision's multiplicity family and procedure are, and what is descriptive."""
    release, descriptive = method.release_family, method.descriptive_family
    families = "; ".join(f"{name}: {', '.join(f'`{member}`' for member in found.members)}"
                         for name, found in release.families.items() if name.startswith("release"))
    return (f"Release decision: {release.what} ({families or 'none'}); intervals and adjusted p by "
            f"{release.procedure}, so a verdict's interval excludes 0 exactly when its adjusted p is below "
            f"{1 - method.confidence:.2f}. Everything else is descriptive ({descriptive.size} comparisons; "
            f"{descriptive.ci} intervals, {descriptive.p_adjusted}).")


def candidates_line(retrieval: Mapping[str, Any], source: str) -> str:
    """Where the candidates came from (``retrieval.source``); ``source``: the candidate source's name (metrics)."""
    if retrieval.get("source", "hybrid") == "hybrid":
        return (f"- Candidates: fused top-{retrieval['top_n']} of BM25 (k1={retrieval['bm25']['k1']}, "
                f"b={retrieval['bm25']['b']}) and dense (`{retrieval['dense']['model']}`), RRF k={retrieval['rrf_k']} "
                f"over each retriever's top {retrieval['fusion_depth']}.")
    origin = (f"from the TREC run `{retrieval['run']}` (each query's top {retrieval['top_n']} in trec_eval's order, "
              "texts from the corpus)" if retrieval["source"] == "run" else
              f"replayed from `{retrieval['path']}` (the first {retrieval['top_n']} of each query, each with its own "
              "text)")
    return (f"- Candidates: {first_stage_label(source, retrieval)}, {origin}; nothing was retrieved or encoded here, "
            "and the `fusion`-kind system is that first stage's own order.")


def first_stage_label(source: str, retrieval: Mapping[str, Any] | None = None) -> str:
    """How reports name a candidate source's own order: ``first stage (run: prod.trec)`` for a run (``retrieval``:
    the params' ``retrieval``, which names its file), ``first stage (<name>)`` for a replay file's
    ``candidate_source``; the hybrid's is the fusion."""
    if source == "hybrid":
        return "hybrid"
    if retrieval is not None and retrieval.get("source") == "run":
        return f"first stage (run: {PurePath(retrieval['run']).name})"
    return f"first stage ({source})"


def verdict_section(verdicts: DecisionCore) -> str:
    """The decision and the one reason that decided it per challenger, the rule's simulated error rates on this query
    set, and every reason in a details block."""
    rows = [[f"`{system}`", *([] if claims.plain(verdicts) else [f"`{reference}`", claims.claim_cell(verdict)]),
             f"**{verdict.decision}**", delta_ci(verdict), _cell(verdict.decided_by)]
            for system, reference, verdict in claims.decided(verdicts)]
    level = ci_label(verdicts.rule.confidence)
    header = ["challenger", *([] if claims.plain(verdicts) else ["vs", "claim"]), "decision",
              f"Δ {verdicts.rule.primary_metric} [{level}]", "decided by"]
    return "\n\n".join([*verdict_rule(verdicts), table(header, rows), *verdict_reasons(verdicts)])


def verdict_rule(verdicts: DecisionCore) -> list[str]:
    """The verdict's heading, the baseline's flag and the rule in a sentence (and the non-inferiority rule's)."""
    rule, level = verdicts.rule, ci_label(verdicts.rule.confidence)
    metric = rule.primary_metric
    parts = [f"## Release verdict vs {', '.join(f'`{b}`' for b in verdicts.baselines or [verdicts.baseline])}"]
    if verdicts.baseline_flag:
        parts.append(f"> ⚠ **{verdicts.baseline_flag}.** No verdict against it is a bare ACCEPT.")
    slices = ""
    if rule.critical_slices:
        tests = rule.slice_tests
        adjusted = (f" (adjusted for {tests} slice tests: {rule.slices_that_can_reject} slices x the release "
                    "family)" if tests > 1 else "")
        slices = (f"; a critical slice REJECTs only when its {ci_label(rule.slice_confidence)}{adjusted} lies "
                  f"below -budget, and a slice under {rule.min_slice_size} queries can only block ACCEPT")
    superior = any(verdict.claim is None for _, _, verdict in claims.decided(verdicts))
    if superior:  # with every challenger claiming non-inferiority, the superiority rule decides nothing
        parts.append(f"ACCEPT needs {metric} to gain at least {rule.min_delta:+.4f} with its {level} above 0 and "
                     f"no check failing{slices} (docs/verdict.md, \"The rule\").")
    elif slices:
        parts.append(f"A critical slice{slices.removeprefix('; a critical slice')} (docs/verdict.md, \"The rule\").")
    if claims.rule_text(verdicts, level):
        parts.append(claims.rule_text(verdicts, level))
    parts.append(inference_text(verdicts))
    return parts


def inference_text(verdicts: DecisionCore) -> str:
    """The release decision's multiplicity family, its procedure and its simulated family-wise error rate; under
    ``compare.inference: per_comparison``, that each pair stands alone and how many challengers share the baseline."""
    inference = verdicts.inference
    level = 1 - verdicts.rule.confidence
    if inference.mode == "per_comparison":
        alone = [found for name, found in inference.families.items()
                 if name.startswith("alone") and found.baseline == verdicts.baseline]
        challengers = len(verdicts.verdicts)
        return (f"Family: {inference.release_family}. Procedure: {inference.procedure}: each interval holds "
                f"for its pair alone, and excludes 0 exactly when its p is below {level:.2f}. With {challengers} "
                f"systems decided against `{verdicts.baseline}` this way, the chance that some null one "
                f"is wrongly decided exceeds each pair's own (simulated: "
                + ", ".join(f"`{found.members[0]}` {found.any_error:.1%}" for found in alone)
                + "); `compare.inference: family` controls it.")
    families = []
    for name, found in inference.families.items():
        if not name.startswith("release"):
            continue
        families.append(f"{name} ({', '.join(f'`{member}`' for member in found.members)}: some member wrongly "
                        f"decided in {found.any_error:.1%} of {found.trials} simulated null trials)")
    return (f"Family: {inference.release_family}: {'; '.join(families) or 'none'}. Procedure: "
            f"{inference.procedure}: each interval holds for the whole family, and excludes 0 exactly when the "
            f"adjusted p is below {level:.2f}. Reference systems are decided alone; secondary metrics are descriptive.")


def delta_ci(verdict: Verdict) -> str:
    """A verdict's Δ of the primary metric with its CI: ``+0.0270 [-0.0100, +0.0624]``."""
    return delta_with_interval(verdict.delta, *verdict.ci)


def delta_with_interval(delta: float | None, low: float | None, high: float | None) -> str:
    """A Δ beside a verdict's, in the decision table's form: ``+0.0270 [-0.0100, +0.0624]``."""
    return f"{fmt(delta, signed=True)} [{fmt(low, signed=True)}, {fmt(high, signed=True)}]"


def verdict_reasons(verdicts: DecisionCore, folded: bool = True) -> list[str]:
    """What the verdict table leaves out: the latency each check read (the compare stage's ``Verdicts`` record it),
    the rule's simulated error rates and every reason and note (``folded``: in a details block)."""
    plain = claims.plain(verdicts)
    parts = []
    if isinstance(verdicts, Verdicts) and verdicts.latency_source:  # the machine's load beside the decision
        parts.append("Latency the check read, with the machine's load: " + "; ".join(
            f"`{system}` {source}" + (" (**not trusted to REJECT**)" if system in verdicts.latency_untrusted else "")
            for system, source in verdicts.latency_source.items()) + ".")
    parts.append(operating_characteristics_text(verdicts))
    details = ["<details><summary>Every reason and note</summary>", ""] if folded else ["### Every reason and note", ""]
    for system, reference, verdict in claims.decided(verdicts):
        details.append(f"**`{system}`{'' if plain else f' vs `{reference}`'}: {verdict.decision}**")
        details.append("")
        details += [f"- {_cell(reason)}" for reason in verdict.reasons]
        details += [f"- note: {_cell(note)}" for note in verdict.notes]
        details.append("")
    if folded:
        details.append("</details>")
    parts.append("\n".join(details).rstrip())
    return parts


def operating_characteristics_text(verdicts: DecisionCore) -> str:
    """How far to trust each verdict: the rule's simulated decision rates at a true effect of 0 and of min_delta."""
    simulation, min_delta = verdicts.simulation, verdicts.rule.min_delta
    rows = []
    plain = claims.plain(verdicts)
    for system, reference, verdict in claims.decided(verdicts):
        if verdict.claim is not None:  # a non-inferiority claim: its own table below
            continue
        label = f"`{system}`" if plain else f"`{system}` vs `{reference}`"
        at_zero, at_min = (verdict.operating_characteristics[key] for key in ("at_zero", "at_min_delta"))
        rows.append([label, *(["n/a"] * 4 if verdict.rates_why else
                              [_rate(at_zero.reject), _rate(at_zero.accept), _rate(at_min.accept),
                               _rate(at_min.reject)])])
    header = ["challenger", "REJECT at effect 0", "ACCEPT at effect 0", f"ACCEPT at {min_delta:+.4f}",
              f"REJECT at {min_delta:+.4f}"]
    error = 50 / simulation["trials"] ** 0.5  # the largest Monte Carlo standard error of a rate, in points
    noninferior = claims.noninferiority_rows(verdicts)
    head = (f"How far to trust it: the rule's decisions simulated on this query set and its slices "
            f"({simulation['trials']} trials per effect, {simulation['samples']} resamples each, seed "
            f"{simulation['seed']}; deltas: {simulation['deltas']}; checks: {simulation['checks']}; each rate within "
            f"±{error:.1f} points, one Monte Carlo standard error).")
    parts = [head] + ([table(header, rows)] if rows else []) + claims.no_rates(verdicts)
    if noninferior:
        parts.append(("Non-inferiority claims, simulated the same way" if rows else "Non-inferiority claims")
                     + " at a true Δ of -margin and of 0:\n\n" + table(claims.NONINFERIORITY_HEADER, noninferior))
    return "\n\n".join(parts)


def _rate(value: float) -> str:
    return f"{value:.1%}"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|")


def first_stage_section(first_stage: Mapping[str, Mapping[str, float]], top_n: int,
                        sanity: FirstStageCheck | None = None, fusion: Mapping[str, Any] | None = None,
                        retrieval: Mapping[str, Any] | None = None) -> str:
    """Each retriever's own top ``top_n``; with ``sanity`` (``stats.sanity.first_stage_sanity``) also each one
    against the random floor, the best first stage, and the flag of a baseline that cannot carry a decision; with
    ``fusion`` (the freeze's record, ``retrieval.fusion_fit``) the RRF weights and why; ``retrieval`` names a run
    source's file (``first_stage_label``)."""

    def label(name: str) -> str:
        return name if name in ("bm25", "dense") else first_stage_label(name, retrieval)

    vs_random = sanity.retrievers if sanity else {}
    header = ["retriever", f"candidate recall@{top_n} (Success)", f"coverage R@{top_n}", "nDCG@10", "RR@10"]
    if sanity and sanity.random is not None:
        header.append(f"Δ {sanity.metric} vs random [{ci_label(sanity.confidence)}]")
    rows = []
    for name, values in first_stage.items():
        row = [label(name), fmt(values[f"Success@{top_n}"]),
               fmt(values[f"R@{top_n}"]), fmt(values["nDCG@10"]), fmt(values["RR@10"])]
        found = vs_random[name].vs_random if name in vs_random else None
        if len(header) > len(row):
            row.append("n/a" if found is None else f"{fmt(found.delta, signed=True)} "
                       f"[{interval_text(found.low, found.high, signed=True)}]"
                       + (" ⚠ at the random floor" if vs_random[name].at_random_floor else ""))
        rows.append(row)
    title = (f"each retriever's own top {top_n}" if len(first_stage) > 1 else
             f"{label(next(iter(first_stage)))}, its top {top_n} (no BM25 or dense ranked the corpus here)")
    text = f"## First stage: {title}\n\n" + table(header, rows)
    if sanity:
        lines = [f"Best first stage on {sanity.metric}: **{label(sanity.best)}** "
                 f"({fmt(sanity.retrievers[sanity.best].mean)})."]
        fused = sanity.fusion_vs_best_component
        if fused is not None:
            lines.append(f"Fusion (hybrid) vs its best component ({sanity.best_component}): "
                         f"{fmt(fused.delta, signed=True)} [{interval_text(fused.low, fused.high, signed=True)}].")
        if sanity.flag:
            lines.append(f"⚠ **{sanity.flag}.**")
        text += "\n\n" + " ".join(lines)
    if fusion:
        weights = ", ".join(f"{name} {weight:.2f}" for name, weight in fusion["weights"].items())
        why = {"equal": "plain RRF", "declared": "declared in retrieval.fusion.weights"}.get(fusion["how"])
        if "fit" in fusion:
            why = f"fit on the {fusion['fit']['split']} split: {fusion['fit']['reason']}"
        text += f"\n\nHybrid RRF weights: {weights} ({why})."
    return text


def defined(compare: ComparisonCore, metric: str, means: Mapping[str, Mapping[str, float | None]] = {}) -> bool:
    """Whether some system has a mean of ``metric``: compare.json's where it compares it, else ``means``' (the
    answers analysis's, for a measure evaluated but not compared). A measure defined nowhere (the answer measures on
    a collection without gold answers) is named once by the tables, not drawn as columns and rows of n/a."""
    return any((values[metric].mean if metric in values else means.get(system, {}).get(metric)) is not None
               for system, values in compare.systems.items())


def not_shown(metrics: Sequence[str]) -> str:
    """The line that names the measures a table leaves out as defined nowhere; "" when none."""
    return f"Not shown, defined on no query here: {', '.join(metrics)}." if metrics else ""


def systems_section(compare: ComparisonCore, metrics_json: Mapping[str, Any], metrics: Sequence[str],
                    oracle_measures: Sequence[str], top_n: int, warnings: Mapping[str, str] | None = None,
                    source_orders: Mapping[str, str] | None = None) -> str:
    """``warnings``: a line per system whose results need one (an external run cut to the candidates), shown after
    the table and flagged with ⚠ in its row. ``source_orders``: system -> the first stage whose own order it is
    (``first_stage_label``), for a run or replay source's `fusion`-kind systems, named in their row and a note."""
    warnings, source_orders = warnings or {}, source_orders or {}
    level = ci_label(compare.method.confidence)
    undefined = [m for m in metrics if not defined(compare, m)]
    metrics = [m for m in metrics if m not in undefined]
    header = ["system"] + [f"{m} [{level}]" for m in metrics] + [f"CandidateRecall@{top_n}"]
    header += [f"oracle {m}" for m in oracle_measures] + [f"headroom {m}" for m in oracle_measures]
    rows = []
    for system, values in compare.systems.items():
        means = metrics_json["systems"][system]
        row = [f"`{system}`{f' ({source_orders[system]})' if system in source_orders else ''}"
               f"{' ⚠' if system in warnings else ''}"]
        row += [f"{fmt(values[m].mean)} [{ci(values[m])}]" for m in metrics]
        row.append(fmt(means.get(f"CandidateRecall@{top_n}")))
        row += [fmt(means[oracle_column(m)]) for m in oracle_measures]
        row += [fmt(means[headroom_column(m)]) for m in oracle_measures]
        rows.append(row)
    note = ("Candidate recall is the ceiling of every reranker: a query whose relevant documents are not among the "
            "candidates cannot be fixed by reranking. Oracle = the candidates in ideal order; headroom = oracle - "
            "achieved. With `idcg=qrels` the oracle is below 1 when relevant documents were not retrieved: improve "
            "the retriever; a large headroom with a high oracle says improve the reranker.")
    flagged = "".join(f"\n\n⚠ `{system}`: {warning}." for system, warning in warnings.items())
    orders = "".join(f"\n\n`{system}` is the candidates in {label}'s own order (a `fusion`-kind system; no BM25 or "
                     "dense ran here)." for system, label in source_orders.items())
    return ("## Systems\n\n" + table(header, rows) + flagged + orders + "\n\n" + note
            + (f"\n\n{not_shown(undefined)}" if undefined else ""))


def all_metrics_section(metrics_json: Mapping[str, Any], not_applicable: Sequence[str] = ()) -> str:
    """Every metric's mean; those in ``not_applicable`` (unjudged-based ones on positive-only qrels) show n/a."""
    systems = metrics_json["systems"]
    names = [name for name in next(iter(systems.values())) if not name.startswith((ORACLE_PREFIX, HEADROOM_PREFIX))]
    rows = [[f"`{system}`"] + ["n/a" if name in not_applicable else fmt(values[name]) for name in names]
            for system, values in systems.items()]
    text = "## Every metric (means)\n\n" + table(["system"] + names, rows)
    if any(name in not_applicable for name in names):
        text += ("\n\nn/a: measures that need judged non-relevant documents (Judged, Bpref, judged_only) mean "
                 "nothing on these qrels, which judge none (see the unjudged watch).")
    return text


def deltas_section(compare: ComparisonCore) -> str:
    rows, undefined = [], list(dict.fromkeys(item.metric for item in compare.comparisons
                                             if not defined(compare, item.metric)))
    for item in compare.comparisons:
        if item.metric in undefined:
            continue
        rows.append([f"`{item.challenger}`", item.metric, fmt(item.baseline_mean), fmt(item.challenger_mean),
                     fmt(item.delta, signed=True), ci(item, signed=True),
                     item.family, p_value(item.p_adjusted), p_value(item.p_randomisation), p_value(item.p_ttest),
                     f"{item.improved}/{item.tied}/{item.regressed}", fmt(item.median_delta, signed=True),
                     fmt(item.cohens_dz, 2, signed=True)])
    header = ["challenger", "metric", "baseline", "challenger", "Δ mean", ci_label(compare.method.confidence),
              "family", "p adjusted (in its family)", "p rand (raw)", "p t (raw)", "win/tie/loss", "Δ median", "d_z"]
    return (f"## Paired comparison with `{compare.baseline}`\n\n" + table(header, rows)
            + (f"\n\n{not_shown(undefined)}" if undefined else ""))


def plot_link(title: str, path: str, shown_elsewhere: bool) -> str:
    """A plot embedded, or, when the decision page shows it (``shown_elsewhere``), a link to it (not shown twice)."""
    return f"Plot: [{title}]({path}), on the decision page." if shown_elsewhere else f"![{title}]({path})"


def depth_section(curve_means: pd.DataFrame, measure: str, recall: Mapping[int, float], plots: str,
                  on_decision_page: bool = False) -> str:
    quality = curve_means[curve_means["measure"] == measure]
    rows = [[f"`{row.system}`", row.depth, fmt(recall.get(row.depth)), fmt(row.mean)]
            for row in quality.sort_values(["system", "depth"]).itertuples()]
    return ("## Depth curve (one scoring pass; top d reranked, the rest in fused order)\n\n"
            + table(["system", "depth d", "candidate recall@d", measure], rows)
            + "\n\n" + plot_link("depth curve", f"{plots}/depth_curve.png", on_decision_page))


def slice_size(comparisons: Sequence[SliceComparison]) -> str:
    """A slice's size as its comparisons counted it: the queries each delta is defined on, the verdict's n for the
    primary metric (one number when they agree; ⚠ = fewer than the minimum)."""
    sizes = dict.fromkeys(f"{c.queries}{' ⚠' if c.too_small else ''}" for c in comparisons)
    return " / ".join(sizes)


def slices_section(compare: ComparisonCore, metric: str, plots: str | None, on_decision_page: bool = False) -> str:
    """Per-slice deltas with CIs; ``plots`` None leaves the plot links out; ``on_decision_page``: the slice plot is
    there, so only linked here."""
    if not compare.slices:
        return "## Slices\n\nThe queries carry no slice labels."
    level = ci_label(compare.method.confidence)
    parts = [f"## Slices ({metric}, Δ vs `{compare.baseline}` with {level}; ⚠ = fewer queries than the minimum)"]
    for column, rows in compare.slices.items():
        challengers = sorted({c.challenger for c in rows[0].comparisons})
        lines = []
        for row in rows:
            by_challenger = {c.challenger: c for c in row.comparisons if c.metric == metric}
            lines.append([row.value, slice_size([by_challenger[c] for c in challengers])]
                         + [f"{fmt(by_challenger[c].delta, signed=True)} [{ci(by_challenger[c], signed=True)}]"
                            for c in challengers])
        parts.append(f"### {column}\n\n" + table([column, "queries"] + [f"`{c}`" for c in challengers], lines))
    if plots is not None:
        parts.append(plot_link("slice deltas", f"{plots}/slice_deltas.png", on_decision_page)
                     + f"\n\n![per-query deltas]({plots}/delta_distribution.png)")
    return "\n\n".join(parts)


def unjudged_section(compare: ComparisonCore) -> str:
    unjudged = compare.unjudged
    if not unjudged.get("applicable", True):
        return (f"## Unjudged watch: not applicable\n\n{unjudged['not_applicable'][0].upper()}"
                f"{unjudged['not_applicable'][1:]}. {unjudged['measure']}, judged-only measures and Bpref are shown "
                "as n/a and the verdict does not check the unjudged rate.")
    rows = [[f"`{system}`", fmt(rate, 3)] for system, rate in unjudged["rate"].items()]
    margin = "no margin" if unjudged["margin"] is None else f"margin {unjudged['margin']}, the verdict's too"
    text = f"## Unjudged watch (1 - {unjudged['measure']}, {margin})\n\n"
    text += table(["system", "unjudged rate"], rows)
    if unjudged["warnings"]:
        text += "\n\n" + "\n".join(f"- ⚠ {warning}" for warning in unjudged["warnings"])
    return text


def query_link(query_id: str, explorer: str | None) -> str:
    """A query id linked to its page in the site's explorer (``explorer``: its path from the page; None: plain)."""
    return f"`{query_id}`" if explorer is None else f"[`{query_id}`]({explorer}#q={query_id})"


def regressions_section(compare: Compare, metric: str, skip: Sequence[str] = (),
                        explorer: str | None = None) -> str:
    """Each challenger's worst regressions (compare's ``worst_n``), but for the systems in ``skip`` (the bounds,
    whose regressions say nothing about a reranker), each query linked to the explorer."""
    parts = [f"## Worst regressions on {metric} (top 3 documents before → after, grade in brackets)"]
    rows = [[f"`{system}`", query_link(item["query_id"], explorer), item["query"].replace("|", "\\|")[:90],
             ", ".join(item["before"]), ", ".join(item["after"])]
            for system, items in compare.worst_regressions.items() if system not in skip for item in items]
    return "\n\n".join([*parts, table(["system", "query", "text", "before", "after"], rows) if rows else
                        "No challenger regressed on any query."])


def render(sections: Sequence[str]) -> str:
    return "\n\n".join(section.strip() for section in sections if section) + "\n"


def candidate_source_record(retrieval: Any, name: str) -> dict[str, Any]:
    """evaluation.yaml's ``candidate_source``: the hybrid's retrievers and fusion, or the run or replay file."""
    if retrieval.source == "hybrid":
        return {"retrievers": ["bm25", "dense:" + retrieval.dense.model], "fusion": f"rrf(k={retrieval.rrf_k})",
                "top_n": retrieval.top_n}
    return {"source": retrieval.source, "name": name, "file": getattr(retrieval, retrieval.input_key),
            "top_n": retrieval.top_n}


def evaluation_record(params: Any, manifest: Mapping[str, Any], compare: ComparisonCore,
                      metrics_json: Mapping[str, Any]) -> dict[str, Any]:
    """A machine-readable evaluation report: what was evaluated, against which data versions, how, and the results."""
    tables = manifest["tables"]
    method = compare.method
    deltas = {}
    for item in compare.comparisons:
        deltas.setdefault(item.challenger, {})[item.metric] = {
            "delta": item.delta, "ci": [item.low, item.high], "p_adjusted": item.p_adjusted, "family": item.family,
            "win_tie_loss": [item.improved, item.tied, item.regressed]}
    return {
        "id": f"rerankeval/{params.dataset.name}/{params.dataset.eval_split}/"
              f"{tables['qrels']['content_sha256'][:12]}",
        "dataset": {"name": params.dataset.name, "split": params.dataset.eval_split,
                    "queries": compare.queries,
                    **({"sample": {key: value for key, value in manifest["sample"].items() if key != "query_ids"}}
                       if manifest.get("sample") else {})},
        "versions": {name: tables[name]["content_sha256"] for name in ("corpus", "queries", "qrels")},
        "candidate_source": candidate_source_record(params.retrieval, metrics_json.get("candidate_source", "hybrid")),
        "conventions": {"ndcg_idcg": "qrels (trec_eval) unless the metric name says idcg=candidates",
                        "gain": "linear unless the metric name says gain=exp",
                        "ties": "score desc, fused rank asc, doc id asc",
                        "queries_without_relevant": params.evaluation.no_relevant},
        "baseline": compare.baseline,
        "systems": {name: dict(config) for name, config in params.systems.items()},
        "metrics": {system: {name: value for name, value in values.items()
                             if not name.startswith((ORACLE_PREFIX, HEADROOM_PREFIX))}
                    for system, values in metrics_json["systems"].items()},
        "uncertainty": {"method": f"{method.resampling}, {method.ci} interval",
                        "confidence": method.confidence, "samples": method.samples, "seed": method.seed,
                        "tests": method.tests, "inference": method.inference,
                        "release_family": method.release_family.model_dump(mode="json", exclude_unset=True),
                        "descriptive_family": method.descriptive_family.model_dump(mode="json", exclude_unset=True)},
        "deltas_vs_baseline": deltas,
    }


def cost_section(costs: Mapping[str, SystemCost], hourly_price: float,
                 measured_p95_ms: Mapping[str, float | None]) -> str:
    """``costs``: costs.json's ``systems`` in the order to show them; ``measured_p95_ms``: verdicts.json's
    ``latency_p95_ms``, the p95 each verdict read."""
    rows = [[f"`{system}`", ms(measured_p95_ms.get(system)), v.queries, v.fallbacks, v.cache_hits,
             ms(v.p50_ms), ms(v.p95_ms), ms(v.p99_ms), ms(v.measured_p95_ms),
             fmt(v.latency_scale, 3), fmt(v.pairs_per_s, 1), fmt(v.tokens_per_s, 0),
             fmt(v.pair_tokens_p50, 0), fmt(v.pair_tokens_p95, 0),
             "n/a" if v.truncation_rate is None else f"{v.truncation_rate:.1%}",
             fmt(v.cost_per_1k_queries, 5)]
            for system, v in costs.items()]
    header = ["system", "p95 ms", "queries", "fallbacks", "cache hits", "quality run p50 ms", "quality run p95 ms",
              "quality run p99 ms", "quality run p95 ms as run", "scale", "pairs/s", "tokens/s", "pair tokens p50",
              "pair tokens p95", "truncated", "cost / 1k queries"]
    return (f"## Latency, tokens and cost (per query after warm-up; ${hourly_price}/machine-hour)\n\n"
            + table(header, rows)
            + "\n\n`p95 ms` is the system's one p95, on every page and plot: the dedicated measurement its verdict "
              "read (below). The quality run's latency is per query as if nothing were cached: a cache hit costs the "
              "compute time measured when the pair was scored, under whatever load the machine then carried "
              "(`as run`: the wall time this run took, cache included). It gives the shape of latency over depth "
              "and sweep settings; `scale` (p95 over the quality run's p95) puts those on the measurement's scale. "
              "Cost is the quality run's machine time, as a claim's cost saving reads it. Pair tokens count the query "
              "and passage before truncation; truncated = share of pairs whose passage was cut at max_length.")


def depth_cost_section(table_rows: pd.DataFrame, measure: str, plots: str) -> str:
    rows = [[f"`{r.system}`", r.depth, fmt(r.candidate_recall), fmt(r.quality), ms(r.p95_ms),
             fmt(r.cost_per_1k_queries, 5)] for r in table_rows.itertuples()]
    return ("## Depth vs cost (latency at depth d estimated from the full-depth pass: model time scaled by the share "
            "of the query's scored tokens in the top d, on the dedicated measurement's scale)\n\n"
            + table(["system", "depth", "candidate recall@d", measure, "p95 ms", "cost / 1k queries"], rows)
            + f"\n\n![depth vs cost]({plots}/depth_cost.png)")


def environment_section(environments: Mapping[str, Mapping[str, Any]]) -> str:
    if not environments:
        return ""
    parts = ["## Environment of the learned systems"]
    for system, environment in environments.items():
        items = ", ".join(f"{key}: `{value}`" for key, value in sorted(environment.items()))
        parts.append(f"- `{system}`: {items}")
    return "\n".join(parts)
