"""One procedure behind the release decision: the verdict's interval and the printed adjusted p agree, in the family
the pages state (stats.family), on synthetic families and on the demo's committed outputs."""

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rerankeval.stats.config import ReleaseClaim, ReleaseRule
from rerankeval.stats.deltas import Comparison
from rerankeval.stats.domains import PairedFamily
from rerankeval.stats.family import simultaneous_intervals
from rerankeval.stats.simulation import family_characteristics

REPORTS = Path("reports")
RULE = ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.03}, "compare.release")


def family_of(base: np.ndarray, challenger: np.ndarray) -> PairedFamily:
    return PairedFamily(tuple(Comparison(f"s{j}", "nDCG@10", "base") for j in range(base.shape[1])), base, challenger)


@pytest.mark.parametrize("seed", range(6))
def test_an_interval_excludes_zero_exactly_when_its_adjusted_p_is_below_alpha(seed):
    rng = np.random.default_rng(seed)
    n, members = 60, 6
    base = rng.random((n, members))
    challenger = base + rng.normal(rng.normal(0, 0.04, members), 0.15, (n, members))
    challenger[rng.random((n, members)) < 0.1] = np.nan  # domains that differ per member and side
    found = simultaneous_intervals(family_of(base, challenger), [0, 0, 0, 1, 1, 2], n_samples=999, seed=seed,
                                   confidence=0.95)
    excludes = (found.intervals.low > 0) | (found.intervals.high < 0)
    assert excludes.tolist() == (found.p_adjusted < 0.05).tolist()
    assert found.family_size.tolist() == [3, 3, 3, 2, 2, 1]
    # a bigger family needs a larger critical value: its intervals are wider than each member's alone
    alone = simultaneous_intervals(family_of(base, challenger), list(range(members)), n_samples=999, seed=seed,
                                   confidence=0.95)
    assert (found.critical[:3] > alone.critical[:3]).all()
    assert (found.p_adjusted[:3] >= alone.p_adjusted[:3]).all()


def test_identical_runs_have_an_empty_interval_and_p_one():
    base = np.random.default_rng(1).random((30, 2))
    found = simultaneous_intervals(family_of(base, base.copy()), [0, 0], n_samples=500, seed=1, confidence=0.95)
    assert found.intervals.low.tolist() == [0.0, 0.0] and found.p_adjusted.tolist() == [1.0, 1.0]


def test_five_null_challengers_are_wrongly_decided_together_near_the_stated_level():
    rng = np.random.default_rng(5)
    shared = rng.normal(0, 0.1, (100, 1))
    deltas = shared + rng.normal(0, 0.1, (100, 5))  # five correlated challengers, as rerankers of one baseline are
    rates = family_characteristics(deltas, {}, RULE, [ReleaseClaim()] * 5, trials=300, n_samples=1000, seed=3,
                                   confidence=0.95, method="percentile", min_slice_size=20)
    one = family_characteristics(deltas[:, :1], {}, RULE, [ReleaseClaim()], trials=300, n_samples=1000, seed=3,
                                 confidence=0.95, method="percentile", min_slice_size=20)
    # a 5% family-wise level, with the Monte Carlo error of 300 trials (se 1.3 points)
    assert rates.any_error <= 0.09 and one.any_error <= 0.09
    per_member = [point.accept + point.reject for point in rates.at_null]
    assert max(per_member) < rates.any_error  # each member alone is held below the family's rate


def _demo():
    return (json.loads((REPORTS / "verdicts.json").read_text()), json.loads((REPORTS / "compare.json").read_text()))


def test_every_demo_reject_for_significance_has_an_adjusted_p_below_alpha_in_its_stated_family():
    verdicts, compare = _demo()
    alpha = 1 - verdicts["rule"]["confidence"]
    pairs = {(c["challenger"], c["baseline"]): c for c in compare["comparisons"]
             + [c for found in compare.get("comparisons_by_baseline", {}).values() for c in found]
             if c["metric"] == verdicts["rule"]["primary_metric"]}
    decided = [(system, verdicts["baseline"], verdict) for system, verdict in verdicts["verdicts"].items()]
    decided += [(system, baseline, verdict) for baseline, found in verdicts.get("verdicts_by_baseline", {}).items()
                for system, verdict in found.items()]
    significant = 0
    for system, baseline, verdict in decided:
        shown = pairs[(system, baseline)]
        assert verdict["family"] == shown["family"] != "descriptive"
        assert verdict["p_adjusted"] == shown["p_adjusted"] and verdict["ci"] == [shown["low"], shown["high"]]
        assert (verdict["ci"][0] > 0 or verdict["ci"][1] < 0) == (verdict["p_adjusted"] < alpha), system
        if "significantly worse" in verdict["decided_by"]:
            significant += 1
            assert verdict["p_adjusted"] < alpha, system
    assert significant, "the demo has REJECTs for significance: this test must see them"
    families = verdicts["inference"]["families"]
    release = families[f"release vs {verdicts['baseline']}"]["members"]
    assert len(release) >= 2 and not {"bm25", "dense", "oracle", "random"} & set(release)


def test_every_demo_sweep_setting_s_interval_excludes_zero_exactly_when_its_adjusted_p_is_below_alpha():
    verdicts, _ = _demo()
    alpha = 1 - verdicts["rule"]["confidence"]
    points = json.loads((REPORTS / "costs.json").read_text())["sweeps"]
    excluding = [point for point in points if point["low"] > 0 or point["high"] < 0]
    assert excluding and len(excluding) < len(points), "the demo's sweeps have settings on both sides of the test"
    for point in points:
        assert (point in excluding) == (point["p_adjusted"] < alpha), (point["policy"], point["value"])


def test_each_system_has_one_p95_in_the_analysis_and_on_the_decision_page():
    verdicts, compare = _demo()
    measured, costs = verdicts["latency_p95_ms"], json.loads((REPORTS / "costs.json").read_text())
    checked = 0
    for system, p95 in measured.items():
        if p95 is None:
            continue
        record = costs["systems"][system]
        assert record["latency_scale"] * record["p95_ms"] == pytest.approx(p95, rel=1e-9), system
        deepest = max((row for row in costs["depths"] if row["system"] == system), key=lambda row: row["depth"])
        assert deepest["p95_ms"] == pytest.approx(p95, rel=1e-9), system  # the depth curve ends at its measured p95
        checked += 1
    configured = [point for point in costs["frontier"] if point["policy"] == point["system"]]
    assert configured, "the demo's composites are frontier points as configured: this test must see them"
    for point in configured:
        assert point["p95_ms"] == pytest.approx(measured[point["system"]], rel=1e-9), point["label"]
    decision = (REPORTS / "report.md").read_text(encoding="utf-8")
    for system, verdict in verdicts["verdicts"].items():
        marks = ("| superior |", "| noninferior", "(bound) |", "| first-stage order |")  # the tables with a p95
        rows = [line for line in decision.splitlines() if line.startswith(f"| `{system}` |")
                and any(mark in line for mark in marks)]
        shown = rf"\| ({measured[system]:.1f}|{measured[system]:.2f})( ⚠)? \|"  # challengers 1 decimal, references 2
        assert rows and all(re.search(shown, row) for row in rows), system
    assert checked == len([p for p in measured.values() if p is not None]) >= 5


def test_per_comparison_inference_is_printed_as_what_it_is():
    from rerankeval.report.markdown import inference_text
    from rerankeval.stats.analysis import analyze
    from rerankeval.stats.config import CompareConfig

    queries = [f"q{i:02d}" for i in range(40)]
    rng = np.random.default_rng(4)
    base = rng.random(40)
    rows = [{"system": "fusion", "query_id": q, "nDCG@10": v, "Judged@10": 1.0} for q, v in zip(queries, base)]
    for j, shift in enumerate((0.06, 0.0, -0.05)):
        rows += [{"system": f"model{j}", "query_id": q, "nDCG@10": v, "Judged@10": 1.0}
                 for q, v in zip(queries, base + shift + rng.normal(0, 0.12, 40))]
    per_query = pd.DataFrame(rows)
    slices = pd.DataFrame(index=queries)

    def run(inference):
        settings = CompareConfig.parse({"baseline": "fusion", "metrics": ["nDCG@10"], "samples": 2000,
                                        "permutations": 500, "inference": inference,
                                        "simulation": {"trials": 50, "samples": 300},
                                        "release": {"primary_metric": "nDCG@10", "min_delta": 0.03}}, "compare")
        return analyze(per_query, slices, settings, settings.release).verdicts

    family, alone = run("family"), run("per_comparison")
    assert family.inference.mode == "family" and alone.inference.mode == "per_comparison"
    assert "max-|t|" in family.inference.procedure and "max-|t|" not in alone.inference.procedure
    for system in ("model0", "model1", "model2"):
        in_family, by_itself = family.verdicts[system], alone.verdicts[system]
        assert in_family.family == "release vs fusion" and by_itself.family == f"alone: {system} vs fusion"
        # alone, no multiplicity: a narrower interval and a smaller p than in the family of three
        assert by_itself.ci[1] - by_itself.ci[0] < in_family.ci[1] - in_family.ci[0]
        assert by_itself.p_adjusted <= in_family.p_adjusted
    text = inference_text(alone)
    assert "each interval holds for its pair alone" in text and "whole family" not in text
    assert "3 systems decided against `fusion`" in text  # what no multiplicity control costs is stated, not hidden
    assert "each interval holds for the whole family" in inference_text(family)


def test_rerankeval_diff_numbers_are_the_analysis_of_base_against_head():
    """`rerankeval diff` and `analyze` run one paired inference (stats.inference): a system's base-to-head rows equal
    the analysis of the head run as a challenger of the base run, metric by metric, in the same families."""
    from rerankeval.stats.analysis import analyze
    from rerankeval.stats.config import CompareConfig
    from rerankeval.stats.revisions import Revision, diff_revisions

    rng = np.random.default_rng(7)
    queries = [f"q{i:02d}" for i in range(50)]
    before = {"nDCG@10": rng.uniform(0.2, 0.7, 50), "RR@10": rng.uniform(0, 1, 50)}
    after = {"nDCG@10": before["nDCG@10"] + rng.normal(0.03, 0.08, 50), "RR@10": rng.uniform(0, 1, 50)}
    after["RR@10"][::7] = np.nan  # a measure undefined on some queries goes by its domain on both paths
    slices = pd.DataFrame({"language": ["ko" if i % 3 == 0 else "en" for i in range(50)]},
                          index=pd.Index(queries, name="query_id"))

    def frame(system: str, values: dict) -> pd.DataFrame:  # the unjudged watch reads Judged@10 (all judged here)
        return pd.DataFrame({"system": system, "query_id": queries, **values, "Judged@10": 1.0})

    settings = CompareConfig.parse({"baseline": "base", "metrics": ["nDCG@10", "RR@10"], "samples": 999,
                                    "permutations": 999, "simulation": {"trials": 20, "samples": 100},
                                    "release": {"primary_metric": "nDCG@10", "min_delta": 0.03}}, "compare")
    diffed = diff_revisions(Revision("base", frame("reranker", before), slices, {}, {}),
                            Revision("head", frame("reranker", after), slices, {}, {}), settings, "nDCG@10")
    analysed = analyze(pd.concat([frame("base", before), frame("head", after)]), slices, settings, settings.release)
    rows = {row.metric: row for row in analysed.compare.comparisons}
    fields = ("delta", "low", "high", "p_adjusted", "p_randomisation", "improved", "tied", "regressed")
    for row in diffed.comparisons:
        assert {name: getattr(row, name) for name in fields} == {name: getattr(rows[row.metric], name)
                                                                for name in fields}, row.metric
    assert [row.family for row in diffed.comparisons] == ["changed systems on nDCG@10", "descriptive"]
    assert rows["nDCG@10"].family == "release vs base" and rows["RR@10"].family == "descriptive"


def test_a_challenger_whose_deltas_have_no_spread_shows_no_simulated_rates(tmp_path):
    """A run identical to the baseline's (a blend fitted to weight 0, as on SciFact) has a delta of 0 on every
    query; the simulation keeps the observed spread, so its 'power' came out 100% for a system that changes
    nothing. The verdict says why there is no rate, and every page shows n/a with that reason."""
    from rerankeval.report import claims, decision, markdown
    from rerankeval.stats.analysis import analyze
    from rerankeval.stats.config import CompareConfig
    from rerankeval.stats.simulation import NO_SPREAD

    rng = np.random.default_rng(3)
    queries = [f"q{i:02d}" for i in range(40)]
    base = rng.uniform(0.2, 0.7, 40)

    def frame(system: str, values: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame({"system": system, "query_id": queries, "nDCG@10": values, "Judged@10": 1.0})

    settings = CompareConfig.parse({"baseline": "base", "metrics": ["nDCG@10"], "samples": 499, "permutations": 499,
                                    "simulation": {"trials": 20, "samples": 100},
                                    "release": {"primary_metric": "nDCG@10", "min_delta": 0.03}}, "compare")
    per_query = pd.concat([frame("base", base), frame("same", base), frame("moved", base + rng.normal(0, 0.1, 40))])
    slices = pd.DataFrame(index=pd.Index(queries, name="query_id"))
    verdicts = analyze(per_query, slices, settings, settings.release).verdicts
    same, moved = verdicts.verdicts["same"], verdicts.verdicts["moved"]
    assert same.rates_why == NO_SPREAD and moved.rates_why is None
    assert same.operating_characteristics["at_min_delta"].accept == 1.0  # what the pages no longer show
    assert decision.error_rates(same) == "n/a (no spread)" and "%" in decision.error_rates(moved)
    text = markdown.operating_characteristics_text(verdicts)
    assert "| `same` | n/a | n/a | n/a | n/a |" in text
    assert f"n/a for `same` vs `base`: {NO_SPREAD}." in text and claims.no_rates(verdicts) == [
        f"n/a for `same` vs `base`: {NO_SPREAD}."]


def test_the_diff_asks_analyze_a_question_of_pairs(monkeypatch):
    """`rerankeval diff` makes no inference of its own: it asks ``analyze`` one question of ``Pairs`` (each changed
    system's head run against its base run, the changed systems one family) and shows what it answers (the sweep:
    tests/test_policies.py)."""
    from rerankeval.stats import analysis, revisions
    from rerankeval.stats.config import CompareConfig

    asked = []

    def recording(per_query, slices, settings, question, *args, **kwargs):
        asked.append(question)
        return analysis.analyze(per_query, slices, settings, question, *args, **kwargs)

    monkeypatch.setattr(revisions, "analyze", recording)
    rng = np.random.default_rng(11)
    queries = [f"q{i:02d}" for i in range(30)]
    values = {system: rng.uniform(0.2, 0.8, 30) for system in ("ce", "bm25")}
    settings = CompareConfig.parse({"baseline": "bm25", "metrics": ["nDCG@10"], "samples": 200, "permutations": 200,
                                    "release": {"primary_metric": "nDCG@10", "min_delta": 0.03}}, "compare")

    def revision(label: str, shift: float) -> revisions.Revision:
        frame = pd.concat([pd.DataFrame({"system": system, "query_id": queries, "nDCG@10": found + (
            shift if system == "ce" else 0.0)}) for system, found in values.items()], ignore_index=True)
        return revisions.Revision(label, frame, pd.DataFrame(index=pd.Index(queries, name="query_id")), {}, {})

    diffed = revisions.diff_revisions(revision("base", 0.0), revision("head", 0.05), settings, "nDCG@10")
    [question] = asked
    assert isinstance(question, analysis.Pairs) and question.pairs == [("head:ce", "base:ce")]
    assert question.family == "changed systems on nDCG@10" and diffed.systems["changed"] == ["ce"]
    [row] = diffed.comparisons
    assert row.delta == pytest.approx(0.05) and row.family == question.family


def test_a_question_of_pairs_refuses_what_only_a_decision_reads():
    """Facts, seeds and pipeline records weigh only in a release decision: asked ``Pairs``, ``analyze`` refuses them
    by name rather than ignore them."""
    from rerankeval.stats.analysis import Pairs, analyze
    from rerankeval.stats.comparison import RunFacts
    from rerankeval.stats.config import CompareConfig

    queries = [f"q{i}" for i in range(10)]
    per_query = pd.concat([pd.DataFrame({"system": system, "query_id": queries, "nDCG@10": np.linspace(0, 1, 10)})
                           for system in ("a", "b")])
    settings = CompareConfig.parse({"baseline": "a", "metrics": ["nDCG@10"], "samples": 100, "permutations": 100,
                                    "release": {"primary_metric": "nDCG@10", "min_delta": 0.03}}, "compare")
    question = Pairs([("b", "a")], ["nDCG@10"], "nDCG@10", "b vs a")
    slices = pd.DataFrame(index=queries)
    assert analyze(per_query, slices, settings, question).inference.shown.mean.tolist() == [0.0]
    with pytest.raises(ValueError, match="without a decision"):
        analyze(per_query, slices, settings, question, RunFacts(latency_p95_ms={"b": 1.0}))
