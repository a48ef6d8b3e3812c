"""One source for every number: the verdict's CIs and slice sizes are the comparison's, the report renders without
resampling, and `rerankeval diff` shows a system new in head with head's own comparison."""

import ast
import re
from pathlib import Path

import numpy as np
import pandas as pd

from rerankeval.report.markdown import slices_section
from rerankeval.report.prdiff import markdown_comment
from rerankeval.stats.comparison import compare
from rerankeval.stats.config import CompareConfig, ReleaseRule
from rerankeval.stats.revisions import Revision, diff_revisions
from rerankeval.stats.schema import ComparisonCore

REPORT = Path(__file__).resolve().parents[1] / "src" / "rerankeval" / "report"
RESAMPLING = {"rerankeval.stats.resampling", "rerankeval.stats.domains", "rerankeval.stats.evidence",
              "rerankeval.stats.significance", "rerankeval.stats.weighted", "rerankeval.stats.variants"}
RESAMPLING_NAMES = {"bootstrap_ci", "bootstrap_means", "slice_ci", "family_intervals", "family_slices",
                    "mean_intervals", "release_evidence", "weighted_bootstrap_ci", "diff_revisions", "mean_interval",
                    "precision_variant"}
COSTING = {"rerank.cost", "policies.frontier", "rerank.latency"}
"""What computes costs, latency percentiles and the frontier: the compare stage's analysis, never a page's."""
QUERIES = [f"q{i:03d}" for i in range(80)]


def per_query(rng):
    """Three systems on 80 queries; nDCG@10 undefined on the first 12 (no relevant document)."""
    base = rng.uniform(0.2, 0.8, 80)
    frames = []
    for system, shift in (("fusion", 0.0), ("ce", -0.08), ("blend", 0.03)):
        ndcg = np.clip(base + shift + rng.normal(0, 0.1, 80), 0, 1)
        ndcg[:12] = np.nan
        frames.append(pd.DataFrame({"system": system, "query_id": QUERIES, "nDCG@10": ndcg,
                                    "Judged@10": 1.0, "RR@10": rng.uniform(0, 1, 80)}))
    return pd.concat(frames, ignore_index=True)


def run_compare():
    # The undefined queries sit mostly in `en` and `multi_hop`, so the verdict's n differs from the slice's rows.
    slices = pd.DataFrame({"language": ["en"] * 10 + ["de"] * 2 + ["en", "de"] * 34,
                           "multi_hop": ["yes"] * 8 + ["no"] * 4 + ["yes", "no", "no", "no"] * 17},
                          index=pd.Index(QUERIES, name="query_id"))
    settings = CompareConfig.parse({"baseline": "fusion", "metrics": ["nDCG@10", "RR@10"], "samples": 800,
                                    "permutations": 200, "min_slice_size": 20,
                                    "simulation": {"trials": 20, "samples": 100},
                                    "release": {"primary_metric": "nDCG@10", "min_delta": 0.02}}, "compare")
    rule = ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.02,
                              "critical_slices": [{"column": "language", "budget": 0.05},
                                                  {"column": "multi_hop", "value": "yes", "budget": 0.05}]}, "rule")
    return compare(per_query(np.random.default_rng(3)), slices, settings, rule)


def test_every_verdict_ci_is_the_comparisons_ci():
    result, verdicts = run_compare()
    for challenger, verdict in verdicts["verdicts"].items():
        [item] = [c for c in result["comparisons"] if c["challenger"] == challenger and c["metric"] == "nDCG@10"]
        assert verdict["delta"] == item["delta"]
        assert verdict["ci"] == [item["low"], item["high"]]


def test_every_slice_size_is_the_one_the_verdict_used():
    result, verdicts = run_compare()
    for challenger, verdict in verdicts["verdicts"].items():
        printed = dict(re.findall(r"critical slice (\S+=\S+) \(n=(\d+)", " ".join(verdict["reasons"])))
        assert set(printed) == {"language=de", "language=en", "multi_hop=yes"}
        for label, n in printed.items():
            column, value = label.split("=")
            [row] = [r for r in result["slices"][column] if r["value"] == value]
            [item] = [c for c in row["comparisons"] if c["challenger"] == challenger and c["metric"] == "nDCG@10"]
            assert item["queries"] == int(n)
    # en: 44 queries, 10 of them without nDCG@10; multi_hop=yes: 25, 8 without (too small to REJECT).
    assert "critical slice language=en (n=34)" in " ".join(verdicts["verdicts"]["ce"]["reasons"])
    assert "critical slice multi_hop=yes (n=17, too small to REJECT)" in " ".join(verdicts["verdicts"]["ce"]["reasons"])
    table = slices_section(ComparisonCore.model_validate(result), "nDCG@10", plots=None)
    assert "| en | 34 |" in table and "| yes | 17 ⚠ |" in table


def test_report_modules_do_not_resample():
    found = []
    for path in sorted(REPORT.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                module = ("rerankeval.report." * bool(node.level) if node.level == 1 else
                          "rerankeval." if node.level == 2 else "") + (node.module or "")
                names = {alias.name for alias in node.names}
                if module in RESAMPLING or names & RESAMPLING_NAMES or (
                        module == "rerankeval.stats" and names & {m.rsplit(".", 1)[1] for m in RESAMPLING}):
                    found.append(f"{path.name}:{node.lineno} imports {sorted(names)} from {module}")
                if module.removeprefix("rerankeval.") in COSTING and names - {"SECONDS_PER_HOUR"}:
                    found.append(f"{path.name}:{node.lineno} computes costs with {sorted(names)} from {module}")
    assert found == []


def test_the_answers_section_renders_the_analysis_without_the_per_query_table():
    """Its means, outcome counts and per-query deltas are compare.json's ``answers`` (``stats.answers``): the section
    is handed no per-query table, and its module neither imports pandas at run time nor aggregates."""
    import inspect

    from rerankeval.report import answers

    assert "per_query" not in inspect.signature(answers.answers_section).parameters
    source = (REPORT / "answers.py").read_text()
    tree = ast.parse(source)
    imported = {alias.name for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names}
    assert "pandas" not in imported and "numpy" not in imported
    aggregating = [f"answers.py:{node.lineno} .{node.func.attr}()" for node in ast.walk(tree)
                   if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                   and node.func.attr in {"mean", "sum", "notna", "dropna"}]
    assert aggregating == []


def test_diff_shows_a_system_new_in_head_against_the_baseline():
    result, _ = run_compare()
    frame = per_query(np.random.default_rng(3))
    slices = pd.DataFrame({"language": "en"}, index=pd.Index(QUERIES, name="query_id"))
    base = Revision("main (1)", frame[frame["system"] != "blend"], slices, {"qrels": "a"}, {})
    head = Revision("pr (2)", frame, slices, {"qrels": "a"}, {}, compare=result)
    settings = CompareConfig.parse({"baseline": "fusion", "metrics": ["nDCG@10"], "samples": 200,
                                    "release": {"primary_metric": "nDCG@10", "min_delta": 0.02}}, "compare")
    diffed = diff_revisions(base, head, settings, "nDCG@10")
    diff = diffed.model_dump()
    assert diff["systems"]["only_in_head"] == ["blend"]
    [item] = diff["new_systems"]["comparisons"]
    [expected] = [c for c in result["comparisons"] if c["challenger"] == "blend" and c["metric"] == "nDCG@10"]
    assert item == expected
    comment = markdown_comment(diffed)
    assert "not compared" not in comment
    assert "### New in head: `blend`, against head's baseline `fusion`" in comment
    assert f"| `blend` | nDCG@10 | {expected['baseline_mean']:.4f} | {expected['challenger_mean']:.4f} |" in comment
    assert f"{expected['low']:+.4f} .. {expected['high']:+.4f}" in comment
    without = diff_revisions(base, Revision("pr (2)", frame, slices, {"qrels": "a"}, {}), settings, "nDCG@10")
    assert "pr (2) has no compare.json: run `dvc repro compare` there" in markdown_comment(without)
