"""The site's one stylesheet (written once as ``site.css`` beside the pages, which link it relative) and the
explorer's script (inlined into its page): the site works offline, from file://, with no CDN and no server."""

STYLESHEET = "site.css"

CSS = """
:root { --fg: #1d232b; --muted: #5b6573; --line: #d7dce2; --bg-alt: #f4f6f8; --accept: #16794b; --reject: #b3261e;
        --inconclusive: #8a6100; --link: #0b57d0; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); margin: 0; }
header { padding: 12px 24px; border-bottom: 1px solid var(--line); display: flex; gap: 24px; align-items: baseline; }
header h1 { font-size: 18px; margin: 0; }
header nav a { margin-right: 16px; }
main { padding: 16px 24px; }
a { color: var(--link); text-decoration: none; }
a:hover { text-decoration: underline; }
h2 { font-size: 16px; margin: 24px 0 8px; }
p.note, .muted { color: var(--muted); }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--bg-alt); font-weight: 600; position: sticky; top: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.decision { font-weight: 700; }
.ACCEPT { color: var(--accept); } .REJECT { color: var(--reject); } .INCONCLUSIVE { color: var(--inconclusive); }
.warn { background: #fff4d6; border: 1px solid #e8c766; padding: 8px 12px; border-radius: 4px; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; }
.plots figure { margin: 0; max-width: 620px; }
.plots img { max-width: 100%; border: 1px solid var(--line); }
.layout { display: grid; grid-template-columns: 300px minmax(0, 1fr); gap: 16px; }
.filters label { display: block; margin: 6px 0 2px; color: var(--muted); font-size: 12px; }
.filters select, .filters input[type=text] { width: 100%; }
#query-list { list-style: none; padding: 0; margin: 8px 0; max-height: 70vh; overflow-y: auto;
              border: 1px solid var(--line); }
#query-list li { padding: 4px 8px; border-bottom: 1px solid var(--line); cursor: pointer; }
#query-list li.selected { background: #e3ecfb; }
#query-list .qtext { color: #555; font-size: 0.85em; }
#query-list li .id { font-family: ui-monospace, monospace; }
.scroll { overflow-x: auto; }
td.sys { white-space: nowrap; font-variant-numeric: tabular-nums; }
.up { color: var(--accept); } .down { color: var(--reject); }
.degraded { background: #fde7e4; }
.mono { font-family: ui-monospace, monospace; font-size: 12px; white-space: nowrap; }
.grade-pos { font-weight: 700; color: var(--accept); }
.slices span { display: inline-block; background: var(--bg-alt); border: 1px solid var(--line); border-radius: 10px;
               padding: 0 8px; margin-right: 6px; font-size: 12px; }
.answer { border-left: 3px solid var(--line); padding: 4px 12px; margin: 6px 0; }
"""

EXPLORER_JS = r"""
"use strict";
const D = JSON.parse(document.getElementById("explorer-data").textContent);
const $ = (id) => document.getElementById(id);

function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "text") node.textContent = value; else node.setAttribute(key, value);
  }
  for (const child of children || []) node.append(child);
  return node;
}

function fmt(value, digits) { return value === null || value === undefined ? "—" : value.toFixed(digits); }

function readState() {
  const raw = (location.hash.length > 1 ? location.hash.slice(1) : location.search.slice(1));
  const params = new URLSearchParams(raw);
  return {q: params.get("q"), system: params.get("system"), slice: params.get("slice") || "",
          moved: params.get("moved") || "", regressed: params.get("regressed") === "1",
          order: params.get("order") || ""};
}

function writeState(state) {
  const params = new URLSearchParams();
  if (state.q) params.set("q", state.q);
  if (state.system) params.set("system", state.system);
  if (state.slice) params.set("slice", state.slice);
  if (state.moved) params.set("moved", state.moved);
  if (state.regressed) params.set("regressed", "1");
  if (state.order) params.set("order", state.order);
  location.hash = params.toString();
}

function delta(query, system) {
  const value = query.metric[system], base = query.metric[D.baseline];
  return value === null || base === null ? null : value - base;
}

function matches(query, state) {
  if (state.slice) {
    const [column, value] = state.slice.split("=");
    if (query.slices[column] !== value) return false;
  }
  if (state.moved && query.moved[state.system] !== state.moved) return false;
  if (state.regressed) {
    const d = delta(query, state.system);
    if (d === null || d >= -D.tie_tolerance) return false;
  }
  return true;
}

function setupFilters(state) {
  const focus = $("focus");
  for (const system of D.systems) focus.append(el("option", {value: system, text: system}));
  focus.value = state.system;
  const slice = $("slice");
  slice.append(el("option", {value: "", text: "all queries"}));
  for (const column of D.slice_columns) {
    const values = [...new Set(D.queries.map((q) => q.slices[column]).filter((v) => v !== null))].sort();
    for (const value of values) slice.append(el("option", {value: column + "=" + value, text: column + "=" + value}));
  }
  slice.value = state.slice;
  $("moved").value = state.moved;
  $("regressed").checked = state.regressed;
  $("order").value = state.order;
  const ids = $("query-ids");
  for (const query of D.queries) ids.append(el("option", {value: query.id}));
  const update = () => writeState({...readState(), system: focus.value, slice: slice.value, moved: $("moved").value,
                                   regressed: $("regressed").checked, order: $("order").value});
  for (const node of [focus, slice, $("moved"), $("regressed"), $("order")]) node.addEventListener("change", update);
  $("lookup").addEventListener("change", () => {
    const wanted = $("lookup").value.trim();
    if (D.queries.some((q) => q.id === wanted)) writeState({...readState(), q: wanted});
    else $("lookup-error").textContent = wanted ? "no query " + wanted : "";
  });
}

function renderList(state, shown) {
  const list = $("query-list");
  list.replaceChildren();
  for (const query of shown) {
    const d = delta(query, state.system);
    const item = el("li", {"data-query": query.id, title: query.text}, [el("span", {class: "id", text: query.id}), " ",
      el("span", {class: d === null ? "muted" : d < 0 ? "down" : d > 0 ? "up" : "muted",
                  text: d === null ? "n/a" : (d >= 0 ? "+" : "") + d.toFixed(3)}), " ",
      el("span", {class: "qtext", text: query.text.length > 70 ? query.text.slice(0, 69) + "…" : query.text})]);
    if (query.id === state.q) item.classList.add("selected");
    item.addEventListener("click", () => writeState({...readState(), q: query.id}));
    list.append(item);
  }
  $("list-count").textContent = shown.length + " of " + D.queries.length + " queries";
}

function modeText(index) {
  const [mode, reason] = D.modes[index];
  return reason ? mode + ": " + reason : mode;
}

function candidateTable(query, focus) {
  // The picked system's column first, beside the first stage's; then the others in their configured order.
  const order = [focus, ...D.systems.filter((s) => s !== focus)].map((s) => [D.systems.indexOf(s), s]);
  const firstStage = D.first_stage_filled ? ["BM25", "dense"] : [];
  const fusedLabel = D.source === "hybrid" ? "fused" : "first stage (" + D.source + ")";
  const head = el("tr", {}, ["fused #", "doc", "sha256", "grade"].map((t) => el("th", {text: t})));
  if (!D.first_stage_filled) head.append(el("th", {text: "BM25 / dense"}));
  for (const name of firstStage) head.append(el("th", {class: "num", text: name + " score (rank)"}));
  head.append(el("th", {class: "num", text: fusedLabel + " score"}));
  for (const [, system] of order) head.append(el("th", {class: "num", text: system + " rank (move) · score"}));
  const body = el("tbody");
  for (const row of query.candidates) {
    const tr = el("tr", {"data-doc": row.doc});
    tr.append(el("td", {class: "num", text: String(row.fused[1] ?? "—")}));
    tr.append(el("td", {class: "mono", text: row.doc}));
    tr.append(el("td", {class: "mono", text: row.sha}));
    tr.append(el("td", {class: row.grade > 0 ? "num grade-pos" : "num",
                        text: row.grade === null ? "unjudged" : String(row.grade)}));
    if (!D.first_stage_filled) tr.append(el("td", {class: "muted", text: "absent (" + D.source + " source)"}));
    for (const name of ["bm25", "dense"].slice(0, firstStage.length)) {
      const [score, rank] = row[name];
      tr.append(el("td", {class: "num", text: fmt(score, 4) + " (" + (rank ?? "—") + ")"}));
    }
    tr.append(el("td", {class: "num", text: fmt(row.fused[0], 4)}));
    for (const [index, system] of order) {
      const entry = row.systems[index];
      if (!entry) { tr.append(el("td", {class: "muted", text: "—", "data-system": system})); continue; }
      const [rank, score, mode] = entry;
      const move = row.fused[1] === null ? 0 : row.fused[1] - rank;
      const [modeName, reason] = D.modes[mode];
      const cell = el("td", {class: "sys num" + (reason ? " degraded" : ""), title: modeText(mode),
                             "data-system": system},
                      [String(rank) + " ", el("span", {class: move > 0 ? "up" : move < 0 ? "down" : "muted",
                                                       text: move > 0 ? "↑" + move : move < 0 ? "↓" + -move : "="}),
                       " · " + fmt(score, 4),
                       modeName === D.plain_mode ? "" : el("div", {class: "muted", text: modeName})]);
      tr.append(cell);
    }
    body.append(tr);
  }
  return el("table", {id: "candidates"}, [el("thead", {}, [head]), body]);
}

function modesList(query) {
  const items = [];
  for (const [index, system] of D.systems.entries()) {
    const seen = [...new Set(query.candidates.map((row) => row.systems[index]).filter(Boolean).map((e) => e[2]))];
    items.push(el("li", {}, [el("b", {text: system}), ": " + seen.map(modeText).join("; ")]));
  }
  return el("ul", {class: "muted"}, items);
}

function answers(query, focus) {
  const parts = [];
  for (const system of [focus, ...D.systems.filter((s) => s !== focus)]) {
    const context = query.context[system], answer = query.answer[system];
    if (!context && !answer) continue;
    const block = [el("h3", {text: system})];
    if (context) {
      block.push(el("ol", {}, context.map(([position, doc, source, tokens]) => el("li", {}, [
        el("span", {class: "mono", text: doc}), " (" + source + ", " + tokens + " tokens) ",
        el("span", {class: "muted", text: D.passages[doc] || ""})]))));
    }
    if (answer) {
      const flags = [answer.abstained ? "abstained" : "", answer.failed ? "failed" : "", answer.reason].filter(Boolean);
      block.push(el("div", {class: "answer"}, [answer.answer || "(no answer)",
        el("div", {class: "muted", text: "citations: " + (answer.citations.join(", ") || "none") +
                                         (flags.length ? " · " + flags.join(" · ") : "")})]));
    }
    parts.push(el("div", {class: "system-answer", "data-system": system}, block));
  }
  return parts;
}

function renderDetail(state) {
  const detail = $("detail");
  const query = D.queries.find((q) => q.id === state.q);
  if (!query) {
    detail.replaceChildren(el("p", {class: "muted", text: state.q ? "No query " + state.q + "." : "Pick a query."}));
    return;
  }
  const metrics = D.systems.map((system) => {
    const d = delta(query, system);
    return el("tr", {}, [el("td", {text: system}), el("td", {class: "num", text: fmt(query.metric[system], 4)}),
      el("td", {class: "num " + (d < 0 ? "down" : d > 0 ? "up" : ""),
                text: system === D.baseline ? "baseline" : d === null ? "n/a" : (d >= 0 ? "+" : "") + d.toFixed(4)}),
      el("td", {text: query.moved[system] || "no relevant candidate"})]);
  });
  detail.replaceChildren(
    el("h2", {id: "query-title", text: query.id}),
    el("p", {id: "query-text", text: query.text}),
    el("p", {class: "slices"}, Object.entries(query.slices).map(([c, v]) => el("span", {text: c + "=" + v}))),
    el("table", {id: "query-metrics"}, [
      el("thead", {}, [el("tr", {}, ["system", D.primary, "Δ vs " + D.baseline, "best relevant doc vs fused order"]
                                    .map((t) => el("th", {text: t})))]),
      el("tbody", {}, metrics)]),
    el("h2", {text: "Candidates"}),
    el("p", {class: "note", text: "Showing " + query.candidates.length + " of " + query.total +
      " frozen candidates: the top " + D.cap + " of the fused order or of any system under test, and every " +
      "relevant one (reference systems' ranks are shown for these rows; the cap is the " +
      "smaller of evaluation.explorer_candidates = " + D.max_candidates + " and the deepest system depth, " +
      D.deepest_depth + "). Move: fused rank minus the system's rank (↑ moved up)." +
      (D.first_stage_filled ? "" : " BM25 and dense scores are absent: the " + D.source +
       " candidate source ranked no corpus here.")}),
    el("div", {class: "scroll"}, [candidateTable(query, state.system)]),
    el("h3", {text: "Mode per system"}), modesList(query),
    el("h2", {text: "Context and answer"}),
    ...(Object.keys(query.context).length || Object.keys(query.answer).length ? answers(query, state.system)
        : [el("p", {class: "muted", text: "No context or answer for this query."})]));
}

// The explorer opens on the first release challenger: a reference system (a first stage, a bound) is no decision.
function defaultSystem() {
  return D.systems.find((s) => s !== D.baseline && !D.reference.includes(s)) ||
    D.systems.find((s) => s !== D.baseline) || D.baseline;
}

function ordered(shown, state) {
  if (!state.order) return shown;
  const sign = state.order === "worst" ? 1 : -1;
  const key = (query) => { const d = delta(query, state.system); return d === null ? Infinity : sign * d; };
  return [...shown].sort((a, b) => key(a) - key(b) || (a.id < b.id ? -1 : 1));
}

function render() {
  const state = readState();
  if (!D.systems.includes(state.system)) state.system = defaultSystem();
  const shown = ordered(D.queries.filter((query) => matches(query, state)), state);
  renderList(state, shown);
  renderDetail(state);
}

setupFilters((() => {
  const s = readState();
  if (!D.systems.includes(s.system)) s.system = defaultSystem();
  return s;
})());
window.addEventListener("hashchange", render);
render();
"""
