"""The site's HTML: the decision page, one page per system and the explorer, as strings from ``site.data``'s records.
Every page links the one stylesheet beside it (``assets.STYLESHEET``) and the explorer carries its script and data
inline; plots are the report's PNGs, linked relative to the site folder."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ...stats.schema import Compare, Verdicts
from ...stats.verdict import ci_label
from ..claims import plain
from ..guardrails import guardrail_section
from ..markdown import inference_text
from .assets import EXPLORER_JS, STYLESHEET

DECISION_PLOTS = [("pareto.png", "Quality against p95 latency (the frontier)"),
                  ("slice_deltas.png", "Δ of the primary metric per slice"),
                  ("depth_curve.png", "Quality against reranking depth")]
QUALITY_RUN_LABELS = {"p50_ms": "quality run p50 ms", "p95_ms": "quality run p95 ms", "p99_ms": "quality run p99 ms",
                      "measured_p95_ms": "quality run p95 ms as run (cache included)",
                      "latency_scale": "scale (p95 over the quality run's p95)"}
"""The quality run's latency (cold replay: its shape over depth, not the system's p95) named as such, so the page
shows one number called p95."""


def page_name(system: str) -> str:
    """The file of a system's page (system names are YAML keys; anything unsafe in a file name becomes `_`)."""
    return "system_" + re.sub(r"[^A-Za-z0-9_.-]", "_", system) + ".html"


def _num(value: float | None, digits: int = 4, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _page(title: str, body: str, nav: Sequence[tuple[str, str]], script: str = "") -> str:
    links = "".join(f'<a href="{escape(href)}">{escape(text)}</a>' for href, text in nav)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{escape(title)}</title>"
            f"<link rel=\"icon\" href=\"data:,\"><link rel=\"stylesheet\" href=\"{STYLESHEET}\"></head>\n<body>"
            f"<header><h1>{escape(title)}</h1>"
            f"<nav>{links}</nav></header>\n<main>\n{body}\n</main>{script}</body></html>\n")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[int], id_: str) -> str:
    """``rows`` are HTML already (escaped by the caller); ``numeric``: the columns aligned right."""
    align = [' class="num"' if i in numeric else "" for i in range(len(header))]
    head = "".join(f"<th{align[i]}>{escape(h)}</th>" for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(f"<td{align[i]}>{cell}</td>" for i, cell in enumerate(row)) + "</tr>"
                   for row in rows)
    return f'<table id="{id_}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _nav(documents: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The pages' links, then the report's Markdown documents: (href, text) each."""
    return [("index.html", "Decision"), ("explorer.html", "Query explorer"), *documents]


def _cost(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.4f}"


def _verdict_rows(rows: Sequence[Mapping[str, Any]], several: bool) -> list[list[str]]:
    return [[f'<a href="{page_name(r["system"])}">{escape(r["system"])}</a>',
             *([escape(r["baseline"]), escape(r["claim"])] if several else []),
             f'<span class="decision {escape(r["decision"])}">{escape(r["decision"])}</span>',
             f'{_num(r["delta"], signed=True)} [{_num(r["low"], signed=True)}, {_num(r["high"], signed=True)}]',
             escape(r["decided_by"]),
             escape(r["p95"])
             + (f' <span title="{escape(r["p95_untrusted"])}">⚠</span>' if r["p95_untrusted"] else ""),
             _cost(r["cost_per_1k_queries"]),
             f'<a href="explorer.html#system={escape(r["system"])}&amp;regressed=1">regressions</a>']
            for r in rows]


def _inline(text: str) -> str:
    """A report cell's Markdown (`code`, **strong**) as HTML, the text escaped."""
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(text)))


def guardrails_html(compare: Compare, verdicts: Verdicts, access: Mapping[str, Any] | None) -> str:
    """report.md's guardrail section (``report.guardrails``), the same cells as HTML."""
    return guardrail_section(compare, verdicts, access, lambda header, rows: _table(
        header, [[_inline(cell) for cell in row] for row in rows], [], "guardrails")).replace(
        "### Guardrails", "<h2>Guardrails</h2>", 1)


def index_html(header: Mapping[str, Any], verdicts: Verdicts, rows: Sequence[Mapping[str, Any]],
               systems: Sequence[str], plots_link: str, plots: Sequence[str],
               documents: Sequence[tuple[str, str]], guardrails: str = "") -> str:
    """The decision: the verdict table as report.md has it (challengers, then reference systems apart), with each
    system's p95 and cost, then the plots that carry the decision."""
    rule = verdicts.rule
    level = ci_label(rule.confidence)
    several = not plain(verdicts)  # several baselines or a non-inferiority claim: say which, as report.md does
    columns = ["challenger", *(["vs", "claim"] if several else []), "decision",
               f"Δ {rule.primary_metric} [{level}]", "decided by", "p95 ms", "cost / 1k queries", "explorer"]
    numeric = [2 + 2 * several, 4 + 2 * several, 5 + 2 * several]
    parts = [f'<p>Split <code>{escape(str(header["split"]))}</code>, {header["queries"]} queries; baseline '
             f'<code>{escape(verdicts.baseline)}</code>. ACCEPT needs {escape(rule.primary_metric)} to gain at '
             f'least {rule.min_delta:+.4f} with its {escape(level)} above 0 and no check failing.</p>']
    if verdicts.baseline_flag:
        parts.append(f'<p class="warn">⚠ {escape(verdicts.baseline_flag)}. No verdict against it is a bare '
                     'ACCEPT.</p>')
    # The family and procedure behind every interval below, as report.md states them (report.markdown).
    parts.append("<p>" + re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(inference_text(verdicts))) + "</p>")
    challengers = [r for r in rows if not r["reference"]]
    references = [r for r in rows if r["reference"]]
    parts += ["<h2>Release verdict</h2>", _table(columns, _verdict_rows(challengers, several), numeric, "verdicts")]
    if references:
        parts += ["<h2>Reference systems</h2><p class=\"note\">Bounds and first-stage orders, not release "
                  "candidates: their rows show how far the challengers are from them.</p>",
                  _table(columns, _verdict_rows(references, several), numeric, "references")]
    if guardrails:
        parts.append("\n".join(part if part.startswith("<") else f"<p>{_inline(part)}</p>"
                               for part in guardrails.split("\n\n")))
    parts.append("<p class=\"note\">p95: the dedicated latency measurement the verdict's latency check read (the "
                 "same figure as report.md); ⚠: not trusted to REJECT, the reason on hover and on each system's "
                 "page. The quality run's own timings are on the details page.</p>")
    parts.append("<h2>Systems</h2><p>" + " · ".join(f'<a href="{page_name(s)}">{escape(s)}</a>' for s in systems)
                 + "</p>")
    figures = [f'<figure><img src="{escape(plots_link)}/{name}" alt="{escape(caption)}">'
               f"<figcaption>{escape(caption)}</figcaption></figure>"
               for name, caption in DECISION_PLOTS if name in plots]
    if figures:
        parts.append("<h2>Plots</h2><div class=\"plots\">" + "".join(figures) + "</div>")
    return _page(f"rerankeval: {header['dataset']}", "\n".join(parts), _nav(documents))


def system_html(page: Mapping[str, Any], header: Mapping[str, Any], documents: Sequence[tuple[str, str]]) -> str:
    """One system (``site.data.system_page``): its verdicts, metrics with CIs, paired comparisons against the baseline,
    latency and cost."""
    system, level = page["system"], ci_label(page["method"].confidence)
    parts = []
    if page["reference"]:
        parts.append('<p class="note">A reference system (a bound or a first-stage order), not a release '
                     "candidate.</p>")
    for baseline, verdict in page["verdicts"]:
        reasons = "".join(f"<li>{escape(reason)}</li>" for reason in verdict.reasons)
        notes = "".join(f"<li class=\"muted\">note: {escape(note)}</li>" for note in verdict.notes)
        parts.append(f'<h2>Verdict vs <code>{escape(baseline)}</code>: <span class="decision '
                     f'{escape(verdict.decision)}">{escape(verdict.decision)}</span></h2>'
                     f'<p>{escape(verdict.decided_by)}</p><ul>{reasons}{notes}</ul>')
    metric_rows = [[escape(name), _num(entry.get("mean")), f'{_num(entry.get("low"))} .. {_num(entry.get("high"))}']
                   for name, entry in page["metrics"].items()]
    parts += [f"<h2>Metrics ({escape(level)}, {escape(page['method'].resampling)})</h2>",
              _table(["metric", "mean", level], metric_rows, [1, 2], "metrics")]
    if page["comparisons"]:
        rows = [[escape(c.metric), _num(c.baseline_mean), _num(c.challenger_mean), _num(c.delta, signed=True),
                 f"{_num(c.low, signed=True)} .. {_num(c.high, signed=True)}", escape(c.family), _num(c.p_adjusted),
                 f"{c.improved} / {c.regressed} / {c.tied}"]
                for c in page["comparisons"]]
        descriptive = page["method"].descriptive_family
        parts += [f"<h2>Against <code>{escape(page['baseline'])}</code>, paired</h2>",
                  f'<p class="muted">Family: a release or reference comparison on the primary metric has its '
                  f"family's interval and adjusted p, from one procedure (an interval excludes 0 exactly when p is "
                  f"below {1 - page['method'].confidence:.2f}). Every other row is descriptive and read by no "
                  f"verdict: its own {escape(descriptive.ci)} interval, and p "
                  f"{escape(descriptive.p_adjusted)}, so an "
                  "interval that excludes 0 beside an adjusted p above the level is not a finding.</p>",
                  _table(["metric", "baseline", system, "Δ", level, "family", "p (adjusted)",
                          "queries up / down / tied"], rows, [1, 2, 3, 4, 6], "comparisons"),
                  f'<p><a href="explorer.html#system={escape(system)}&amp;regressed=1">Queries where it regressed</a> '
                  f'· <a href="explorer.html#system={escape(system)}&amp;moved=up">where the best relevant document '
                  "moved up</a></p>"]
    cost, measured = page["cost"], page["measured"]
    latency_rows = [["p95 ms (the dedicated measurement the verdict read)", escape(measured["p95"])]] \
        if measured["latency_p95_ms"] is not None else []
    latency_rows += [[escape(QUALITY_RUN_LABELS.get(key, key)), escape(_num(value, 4) if isinstance(value, float)
                                                                     else str(value))] for key, value in cost.items()]
    for key in ("latency_source", "latency_untrusted"):
        if measured.get(key):
            latency_rows.append([escape(key.replace("_", " ")), escape(measured[key])])
    parts += ["<h2>Latency and cost</h2>", _table(["", "value"], latency_rows, [], "cost")]
    return _page(f"{system} · rerankeval: {header['dataset']}", "\n".join(parts), _nav(documents))


def explorer_html(data: Mapping[str, Any], header: Mapping[str, Any], documents: Sequence[tuple[str, str]]) -> str:
    """The explorer: filters and a query list on the left, the picked query on the right; its data inline as JSON."""
    payload = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    body = f"""<div class="layout">
<section class="filters">
<label for="lookup">Query id</label><input id="lookup" type="text" list="query-ids" placeholder="e.g. a query id">
<datalist id="query-ids"></datalist><div id="lookup-error" class="down"></div>
<label for="focus">System (the filters' and list's Δ {escape(data["primary"])} vs {escape(data["baseline"])})</label>
<select id="focus"></select>
<label for="slice">Slice</label><select id="slice"></select>
<label for="moved">Best relevant document vs the fused order</label>
<select id="moved"><option value="">any</option><option value="up">moved up</option>
<option value="down">moved down</option><option value="same">stayed</option></select>
<label><input id="regressed" type="checkbox"> only regressions vs {escape(data["baseline"])}</label>
<label for="order">Order</label>
<select id="order"><option value="">query id</option><option value="worst">Δ, worst first</option>
<option value="best">Δ, best first</option></select>
<div id="list-count" class="muted"></div>
<ul id="query-list"></ul>
</section>
<section id="detail"></section>
</div>"""
    script = (f'<script id="explorer-data" type="application/json">{payload}</script>'
              f"<script>{EXPLORER_JS}</script>")
    return _page(f"Query explorer · rerankeval: {header['dataset']}", body, _nav(documents), script)
