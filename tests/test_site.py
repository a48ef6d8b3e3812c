"""The report's HTML site on a tiny project: offline, byte-identical reruns, the explorer's cap; and, in headless
Chromium, every page loads with no console error or failed load and the explorer renders a query's candidates."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from rerankeval.data.snapshot import Snapshot
from rerankeval.eval.funnel import per_query_metrics
from rerankeval.eval.measures import parse_measure
from rerankeval.rag.select import CONTEXT_SCHEMA
from rerankeval.report.decision import p95_cell
from rerankeval.report.site import SiteInputs, build_site
from rerankeval.retrieval.candidates import load_candidates, load_passages
from rerankeval.stats.analysis import Analysis, analyze
from rerankeval.stats.config import CompareConfig
from rerankeval.stats.schema import Compare, SystemCost, Verdicts
from rerankeval.systems.base import FUSED_TAIL, FUSION_FALLBACK, RERANKED
from tests.headless_chromium import Browser, find_chromium
from tests.stage_fixtures import frozen_tiny_project, tiny_paths
from tests.analysis_records import FIRST_STAGE, GENERATOR_CHECK

HEADER = {"dataset": "tiny", "split": "test", "queries": 6}
CAP = 3
# A 1x1 PNG: the decision page links the report's plots, and a broken link is a failed load the browser test sees.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5Er"
                       "kJggg==")


def _run(candidates: pd.DataFrame, swaps: dict[str, tuple[int, int]],
         fallback_query: str | None = None) -> pd.DataFrame:
    """A run over the frozen candidates: the fused order with two fused ranks swapped in the queries of ``swaps``
    (a reranker that moved something); ``fallback_query`` keeps the fused order, marked as a fallback."""
    run = candidates[["query_id", "doc_id", "parent_id", "fused_rank"]].copy()
    run["rank"] = run["fused_rank"]
    for query_id, (a, b) in swaps.items():
        at = run["query_id"] == query_id
        run.loc[at & (run["fused_rank"] == a), "rank"], run.loc[at & (run["fused_rank"] == b), "rank"] = b, a
    run["score"] = 1.0 / run["rank"]
    run["mode"] = [RERANKED if rank <= 2 else FUSED_TAIL for rank in run["fused_rank"]]
    run["degraded_reason"] = None
    if fallback_query:
        fallback = run["query_id"] == fallback_query
        run.loc[fallback, "rank"] = run.loc[fallback, "fused_rank"]
        run.loc[fallback, "mode"], run.loc[fallback, "degraded_reason"] = FUSION_FALLBACK, "timeout after 2.0 s"
    return run.sort_values(["query_id", "rank"], ignore_index=True)


def _as_stage(analysis: Analysis) -> tuple[Compare, Verdicts]:
    """The comparison and the decision as the compare stage writes them: the cores ``analyze`` returns without the
    pipeline's records, with the fields the stage adds from its other outputs (the tiny project has none of them)."""
    compare = Compare.model_validate({**analysis.compare.model_dump(exclude_unset=True), "split": "test",
                                      "first_stage": FIRST_STAGE, "generator_sanity": GENERATOR_CHECK,
                                      "language_check": {},
                                      "worst_regressions": {}})
    verdicts = Verdicts.model_validate({**analysis.verdicts.model_dump(exclude_unset=True), "latency_source": {},
                                        "latency_untrusted": {}, "generator_flag": None, "inactive_claims": [],
                                        "variants": {}})
    return compare, verdicts


def _cost(p95_ms: float, cost_per_1k_queries: float) -> SystemCost:
    """A system's row of costs.json, timed at ``p95_ms`` in the quality run."""
    return SystemCost(queries=6, fallbacks=0, timeouts=0, skipped=0, cache_hits=0, p50_ms=p95_ms, p95_ms=p95_ms,
                      p99_ms=p95_ms, pairs_per_s=None, measured_p95_ms=p95_ms, pairs=0, pair_tokens_p50=None,
                      pair_tokens_p95=None, truncation_rate=None, tokens_per_s=None, latency_scale=1.0,
                      cost_per_1k_queries=cost_per_1k_queries)


@pytest.fixture
def project(tmp_path, tiny_beir):
    """The site's inputs on the tiny collection's test split (6 queries, 5 frozen candidates each)."""
    frozen_tiny_project(tmp_path, tiny_beir)
    paths = tiny_paths(tmp_path)
    snapshot = Snapshot(paths.snapshot)
    queries = snapshot.queries_of("test")
    qrels = snapshot.table("qrels").to_pandas()
    candidates = load_candidates(paths.candidates, with_text=False)
    candidates = candidates[candidates["query_id"].isin(queries["query_id"])]
    ids = sorted(queries["query_id"])
    first = ids[0]
    # Swapping fused ranks 1 and 2 helps every query here; swapping 2 and 3 in the third one makes it regress.
    swaps = {query_id: (2, 3) if query_id == ids[2] else (1, 2) for query_id in ids}
    runs = {"fusion": _run(candidates, {}), "model": _run(candidates, swaps, fallback_query=first)}
    measures = [parse_measure("nDCG@10"), parse_measure("Judged@10")]
    per_query = per_query_metrics(runs, qrels, list(queries["query_id"]), measures, [], no_relevant="drop")
    settings = CompareConfig.parse({"baseline": "fusion", "metrics": ["nDCG@10"], "samples": 200,
                                    "permutations": 200, "min_slice_size": 2,
                                    "simulation": {"trials": 20, "samples": 100},
                                    "release": {"primary_metric": "nDCG@10", "min_delta": 0.03}}, "compare")
    result, verdicts = _as_stage(analyze(per_query, queries.set_index("query_id")[["language"]], settings,
                                         settings.release))
    head = runs["model"][(runs["model"]["query_id"] == sorted(queries["query_id"])[1]) & (runs["model"]["rank"] <= 2)]
    contexts = {"model": pd.DataFrame({"query_id": head["query_id"], "position": [0, 1], "doc_id": head["doc_id"],
                                       "parent_id": head["parent_id"], "rank": head["rank"], "source": "ranked",
                                       "tokens": 7, "redundant": False, "near_duplicate": False})[CONTEXT_SCHEMA.names]}
    answers = {"model": pd.DataFrame({"query_id": [head["query_id"].iloc[0]], "answer": ["at most twice"],
                                      "abstained": [False], "failed": [False], "reason": [None],
                                      "citations": [[head["doc_id"].iloc[0]]]})}
    inputs = SiteInputs(primary="nDCG@10", baseline="fusion", systems=["fusion", "model"], compare=result,
                        verdicts=verdicts, per_query=per_query, runs=runs, candidates=candidates,
                        candidate_source="hybrid", first_stage_filled=True, qrels=qrels, queries=queries,
                        slice_columns=["language"],
                        costs={"fusion": _cost(0.02, 0.0), "model": _cost(40.0, 0.0011)},
                        max_candidates=CAP, contexts=contexts, answers=answers,
                        passages=load_passages(paths.candidates))
    plots = tmp_path / "reports" / "plots"
    plots.mkdir(parents=True)
    (plots / "pareto.png").write_bytes(PNG)
    report = tmp_path / "reports" / "report.md"
    report.write_text("# report\n")
    details = report.with_name("details.md")
    details.write_text("# details\n")
    return {"inputs": inputs, "plots": plots, "report": report, "details": details,
            "site": tmp_path / "reports" / "site",
            "candidates": candidates, "per_query": per_query, "queries": queries, "first": first,
            "context_query": head["query_id"].iloc[0]}


def _shown(project: dict, query_id: str) -> list[str]:
    candidates = project["candidates"][project["candidates"]["query_id"] == query_id].sort_values("fused_rank")
    relevant = set(project["inputs"].qrels.query("query_id == @query_id and relevance > 0")["doc_id"])
    return [doc for doc, rank in zip(candidates["doc_id"], candidates["fused_rank"]) if rank <= CAP or doc in relevant]


def _explorer_data(site: Path) -> dict:
    text = (site / "explorer.html").read_text(encoding="utf-8")
    return json.loads(re.search(r'<script id="explorer-data" type="application/json">(.*?)</script>', text,
                                re.S).group(1).replace("<\\/", "</"))


def test_the_site_is_offline_byte_identical_and_capped(project):
    pages = build_site(project["inputs"], HEADER, project["site"], project["plots"],
                       [project["report"], project["details"]])
    assert sorted(p.name for p in pages) == ["explorer.html", "index.html", "system_fusion.html", "system_model.html"]
    first = {p.name: p.read_bytes() for p in [*pages, project["site"] / "site.css"]}
    build_site(project["inputs"], HEADER, project["site"], project["plots"],
                       [project["report"], project["details"]])
    assert {p.name: p.read_bytes() for p in project["site"].iterdir()} == first
    index = first["index.html"].decode()  # the decision page states the family and procedure behind its intervals
    assert "Family: per baseline, the release challengers" in index and "Procedure: single-step bootstrap" in index
    for name, content in first.items():  # no CDN, no remote script or style: one stylesheet beside the pages
        assert not re.search(rb"(src|href)=\"(https?:)?//", content), name
        if name.endswith(".html"):
            assert b'<link rel="stylesheet" href="site.css">' in content and b"<style>" not in content, name
    index = first["index.html"].decode()
    assert 'src="../plots/pareto.png"' in index and 'href="../report.md"' in index
    assert 'href="../details.md">details.md</a>' in index
    data = _explorer_data(project["site"])
    assert data["cap"] == CAP and data["deepest_depth"] == 5
    for query in data["queries"]:
        # The top 3 of the fused order and of `model` (which swapped two of them), and every relevant candidate.
        assert [row["doc"] for row in query["candidates"]] == _shown(project, query["id"]) and query["total"] == 5
    assert {len(query["candidates"]) for query in data["queries"]} == {3, 4}  # some relevant one lies below the cap
    fallback = next(q for q in data["queries"] if q["id"] == project["first"])
    model = data["systems"].index("model")
    assert data["modes"][fallback["candidates"][0]["systems"][model][2]] == [FUSION_FALLBACK, "timeout after 2.0 s"]


def _rows(page: str, table: str) -> list[dict[str, str]]:
    """The rows of one of a page's tables, each cell (its HTML) by its column's header."""
    found = re.search(rf'<table id="{table}"><thead><tr>(.*?)</tr></thead><tbody>(.*?)</tbody>', page, re.S)
    header = re.findall(r"<th[^>]*>(.*?)</th>", found.group(1))
    return [dict(zip(header, re.findall(r"<td[^>]*>(.*?)</td>", row))) for row in re.findall(r"<tr>(.*?)</tr>",
                                                                                             found.group(2))]


@pytest.mark.parametrize("p95_ms, shown", [(0.0167, "0.02"), (0.0152, "0.02"), (9.9996, "10.00")])
def test_a_systems_p95_reads_as_in_report_md_on_every_page(project, p95_ms, shown):
    """The p95 is formatted once from the measured figure, by report.md's own cell (``decision.p95_cell``): no
    rounding first (0.0152 rounded to 0.015 would read 0.01, 9.9996 to 10.0 would lose a digit), and no other digits
    on the system's page (0.0167 read 0.0 there)."""
    inputs = project["inputs"]
    verdicts = inputs.verdicts.model_copy(update={"latency_p95_ms": {"fusion": 0.03, "model": p95_ms},
                                                  "latency_untrusted": {"model": "measured under load"}})
    assert p95_cell(verdicts, "model") == f"{shown} ⚠"  # report.md's verdict table
    build_site(replace(inputs, verdicts=verdicts), HEADER, project["site"], project["plots"],
               [project["report"], project["details"]])
    index = (project["site"] / "index.html").read_text(encoding="utf-8")
    # The site's own untrusted mark, its reason on hover, after the same digits.
    marked = f'{shown} <span title="measured under load">⚠</span>'
    assert [row["p95 ms"] for row in _rows(index, "verdicts")] == [marked]
    page = (project["site"] / "system_model.html").read_text(encoding="utf-8")
    latency = {row[""]: row["value"] for row in _rows(page, "cost")}
    assert latency["p95 ms (the dedicated measurement the verdict read)"] == shown
    assert latency["latency untrusted"] == "measured under load"


@pytest.fixture
def browser(tmp_path):
    executable = find_chromium()
    if executable is None:
        pytest.skip("no chromium on PATH (Debian: `apt-get install chromium`): the site's browser test needs one")
    opened = Browser(executable, tmp_path / "chromium-profile")
    yield opened
    opened.close()


CANDIDATE_ROWS = ("[...document.querySelectorAll('#candidates tbody tr')].map(tr => ({doc: tr.dataset.doc, "
                  "cells: [...tr.children].map(td => td.textContent), "
                  "model: tr.querySelector('td[data-system=model]').textContent}))")


def test_the_pages_render_in_headless_chromium(project, browser):
    build_site(project["inputs"], HEADER, project["site"], project["plots"],
                       [project["report"], project["details"]])
    site = project["site"].resolve().as_uri()
    errors, verdict = browser.open(f"{site}/index.html", "[...document.querySelectorAll('#verdicts tbody tr')]"
                                   ".map(tr => tr.textContent + '|' + document.images[0].naturalWidth + '|' + "
                                   "getComputedStyle(document.querySelector('th')).position)")
    # The shared stylesheet loads over file:// (its sticky table headers applied).
    assert errors == [] and len(verdict) == 1 and verdict[0].startswith("model") and verdict[0].endswith("|1|sticky")

    query = project["first"]
    errors, shown = browser.open(f"{site}/explorer.html#q={query}", "({title: document.getElementById("
                                 "'query-title').textContent, rows: " + CANDIDATE_ROWS + "})")
    assert errors == [] and shown["title"] == query
    assert [row["doc"] for row in shown["rows"]] == _shown(project, query)
    assert all(FUSION_FALLBACK in row["model"] for row in shown["rows"])  # the fallback shown in model's column

    # The regression filter lists the queries where model's nDCG@10 is below fusion's, computed here from the
    # per-query table; the query with a context shows it and the answer's citation.
    values = project["per_query"].pivot(index="query_id", columns="system", values="nDCG@10")
    regressed = sorted(values.index[values["model"] < values["fusion"]])
    context_query = project["context_query"]
    errors, listed = browser.open(f"{site}/explorer.html?q={context_query}#system=model&regressed=1&q={context_query}",
                                  "({ids: [...document.querySelectorAll('#query-list li')].map(li => li.dataset.query),"
                                  " answer: document.querySelector('.system-answer[data-system=model]').textContent})")
    assert errors == [] and listed["ids"] == regressed and len(regressed) > 0
    assert "at most twice" in listed["answer"] and "citations: " in listed["answer"]

    # Ordered by Δ, worst first, each query listed with its text.
    errors, listed = browser.open(f"{site}/explorer.html#system=model&order=worst",
                                  "[...document.querySelectorAll('#query-list li')].map(li => [li.dataset.query, "
                                  "li.querySelector('.qtext').textContent])")
    deltas = (values["model"].round(6) - values["fusion"].round(6)).round(6).dropna()  # the page's rounded values
    assert errors == [] and [query for query, _ in listed][:len(deltas)] == sorted(
        deltas.index, key=lambda query: (deltas[query], query))
    assert all(text for _, text in listed)

    errors, metrics = browser.open(f"{site}/system_model.html", "document.getElementById('metrics').textContent")
    assert errors == [] and "nDCG@10" in metrics

    # Candidates from a TREC run have no BM25 or dense scores: the explorer says so instead of showing blanks.
    build_site(replace(project["inputs"], candidate_source="run", first_stage_filled=False), HEADER,
               project["site"], project["plots"],
                       [project["report"], project["details"]])
    errors, shown = browser.open(f"{site}/explorer.html#q={query}", CANDIDATE_ROWS)
    assert errors == [] and len(shown) > 0 and all("absent (run source)" in row["cells"] for row in shown)
