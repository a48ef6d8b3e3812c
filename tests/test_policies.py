"""Policy sweeps over stored scores: one pass, zero new model calls when the cache holds the pairs, and points with
paired CIs, p95 and cost."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from rerankeval.core.errors import ConfigError
from rerankeval.policies.config import SweepConfig
from rerankeval.policies.points import per_query_quality, policy_points
from rerankeval.policies.sweep import override, run_policy
from rerankeval.rerank.driver import RerankSettings, rerank
from rerankeval.report.frontier import sweeps_section
from rerankeval.stats.config import CompareConfig
from rerankeval.systems.registry import build_system
from tests.composite_fixtures import QRELS, QUERIES, SCORED, candidates, context, systems  # noqa: F401, F811  (fixture)


@pytest.fixture
def composed(systems):  # noqa: F811
    systems["blend"] = {"kind": "blend", "depth": 4, "components": ["length", "column:bm25_score"], "weight": 0.5}
    systems["cascade"] = {"kind": "cascade", "depth": 4, "first": "column:bm25_score", "second": "length",
                          "second_depth": 2}
    systems["routed"] = {"kind": "routed", "depth": 4, "default": "length", "rules": [
        {"when": {"margin": {"column": "bm25_score", "at_least": 3.0}}, "then": "skip"}]}
    return systems


def resampled(samples: int) -> CompareConfig:
    """The comparison's settings a sweep's intervals and p are computed under."""
    return CompareConfig.parse({"baseline": "fusion", "metrics": ["RR@10"], "samples": samples,
                                "permutations": samples, "seed": 1, "confidence": 0.95,
                                "release": {"primary_metric": "RR@10", "min_delta": 0.03}}, "compare")


SWEEPS = [SweepConfig(system="blend", parameter="weight", values=[0.0, 0.5, 1.0]),
          SweepConfig(system="cascade", parameter="second_depth", values=[1, 2, 4]),
          SweepConfig(system="routed", parameter="rules.0.when.margin.at_least", values=[3.0, 5.0]),
          SweepConfig(system="length", parameter="depth", values=[2, 4], label="word count depth")]


def test_a_sweep_over_cached_scores_makes_no_model_call(composed):
    rerank(candidates(), QUERIES, build_system("length", composed["length"], context(composed)), RerankSettings(4))
    calls = len(SCORED)
    shared = context(composed)
    results = [run_policy(sweep, candidates(), QUERIES, shared, f"policies.sweeps[{i}]")
               for i, sweep in enumerate(SWEEPS)]
    assert len(SCORED) == calls, "a sweep over stored scores called the model"
    assert all(result.pairs.scored == 0 for result in results)
    blend = results[0].pairs
    # Weight 0 (BM25 alone) does not call the word-count model; 0.5 reads it from the cache, 1 reuses those scores.
    assert (blend.from_cache, blend.reused) == (8, 8)
    assert [setting.pairs.from_cache + setting.pairs.reused for setting in results[0].settings] == [0, 8, 8]
    assert [len(result.settings) for result in results] == [3, 3, 2, 2]
    # Routed: a BM25 margin of 4 skips both queries at threshold 3, none at 5.
    skipped = [(setting.latency["mode"] == "SKIPPED").sum() for setting in results[2].settings]
    assert skipped == [2, 0]


def test_sweep_points_carry_quality_deltas_latency_and_pair_counts(composed):
    rerank(candidates(), QUERIES, build_system("length", composed["length"], context(composed)), RerankSettings(4))
    fused, _ = rerank(candidates(), QUERIES, build_system("fusion", composed["fusion"], context(composed)),
                      RerankSettings(4))
    baseline = per_query_quality(fused, QRELS, ["q1", "q2"], "RR@10", "drop")
    assert baseline.tolist() == [0.5, 1.0]  # q1's relevant d1 is fused 2nd, q2's d0 is 1st
    policy = run_policy(SWEEPS[0], candidates(), QUERIES, context(composed), "policies.sweeps[0]")
    points = policy_points(policy, baseline, QRELS, "RR@10", resampled(200), no_relevant="drop", warmup_queries=0,
                           hourly_price=3.6)
    # q1's d1 comes first at every weight (RR 1). q2's d0: BM25 (weight 0) puts it 3rd, word count (weight 1) 3rd
    # (tied with d2 at 2 words, fused rank first), the half blend (.125, 1, .25, .25) last: RR 1/3, 1/4, 1/3.
    assert points["quality"].tolist() == pytest.approx([2 / 3, 0.625, 2 / 3])
    assert points["delta"].tolist() == pytest.approx([-1 / 12, -0.125, -1 / 12])
    assert points["value"].tolist() == ["0", "0.5", "1"] and (points["pairs_scored"] == 0).all()
    assert (points["p95_ms"] > 0).all() and (points["cost_per_1k_queries"] > 0).all()
    assert (points["low"] <= points["delta"]).all() and (points["delta"] <= points["high"]).all()


def blend_sweep_on_60_queries(composed, monkeypatch, seed: int, step: float):
    """The blend's weight sweep, each setting's per-query quality drawn on 60 queries (setting k: the baseline's plus
    k x ``step`` on average): the policy, the baseline's quality and each setting's, by its run."""
    from rerankeval.policies import points as points_module

    rerank(candidates(), QUERIES, build_system("length", composed["length"], context(composed)), RerankSettings(4))
    policy = run_policy(SWEEPS[0], candidates(), QUERIES, context(composed), "policies.sweeps[0]")
    rng = np.random.default_rng(seed)
    ids = [f"q{i:02d}" for i in range(60)]
    baseline = pd.Series(rng.uniform(0, 1, len(ids)), index=ids)
    quality = {id(setting.run): baseline + rng.normal(step * k, 0.2, len(ids))
               for k, setting in enumerate(policy.settings)}
    monkeypatch.setattr(points_module, "per_query_quality", lambda run, *args: quality[id(run)])
    return policy, baseline, quality


def test_a_sweep_s_intervals_are_simultaneous_over_its_settings(composed, monkeypatch):
    """Picking the best-looking of many settings needs the settings' family: each interval is wider than the same
    setting's interval in a sweep of it alone, and holds its delta."""
    policy, baseline, _ = blend_sweep_on_60_queries(composed, monkeypatch, seed=3, step=0.02)
    together = policy_points(policy, baseline, QRELS, "RR@10", resampled(1000), no_relevant="drop",
                             warmup_queries=0, hourly_price=3.6)
    alone = policy_points(replace(policy, settings=policy.settings[:1]), baseline, QRELS, "RR@10", resampled(1000),
                          no_relevant="drop", warmup_queries=0, hourly_price=3.6)
    assert together["delta"][0] == pytest.approx(alone["delta"][0])
    assert together["high"][0] - together["low"][0] > 1.1 * (alone["high"][0] - alone["low"][0])


def test_a_sweep_s_points_are_the_analysis_of_its_settings_against_the_baseline(composed, monkeypatch):
    """The sweep and ``analyze`` run one paired inference (stats.inference): each setting's Δ, interval and adjusted
    p equal the analysis of the settings as the release challengers of the baseline (one family, the same resamples)."""
    from rerankeval.stats.analysis import analyze

    policy, baseline, quality = blend_sweep_on_60_queries(composed, monkeypatch, seed=5, step=0.03)
    ids = list(baseline.index)
    settings = CompareConfig.parse({"baseline": "fusion", "metrics": ["RR@10"], "samples": 999, "permutations": 999,
                                    "simulation": {"trials": 20, "samples": 100},
                                    "release": {"primary_metric": "RR@10", "min_delta": 0.03}}, "compare")
    points = policy_points(policy, baseline, QRELS, "RR@10", settings, no_relevant="drop", warmup_queries=0,
                           hourly_price=3.6)
    per_query = pd.concat([pd.DataFrame({"system": name, "query_id": ids, "RR@10": values.to_numpy(),
                                         "Judged@10": 1.0})
                           for name, values in [("fusion", baseline), *zip(points["value"], quality.values())]])
    analysed = analyze(per_query, pd.DataFrame(index=ids), settings, settings.release)
    rows = {row.challenger: row for row in analysed.compare.comparisons}
    assert {row.family for row in rows.values()} == {"release vs fusion"}
    for point in points.itertuples():  # compare.json rounds to 6 decimals (stats.decisions.finite)
        row = rows[point.value]
        assert tuple(round(value, 6) for value in (point.delta, point.low, point.high, point.p_adjusted)) == (
            row.delta, row.low, row.high, row.p_adjusted), point.value


def test_a_setting_that_calls_no_model_costs_no_model_time(composed):
    rerank(candidates(), QUERIES, build_system("length", composed["length"], context(composed)), RerankSettings(4))
    baseline = per_query_quality(rerank(candidates(), QUERIES, build_system("fusion", composed["fusion"],
                                                                           context(composed)), RerankSettings(4))[0],
                                 QRELS, ["q1", "q2"], "RR@10", "drop")
    shared = context(composed)
    # (free, paid): blend weight 0 is BM25 alone; a cascade of second_depth 0 is BM25's order; a BM25 margin of 4
    # skips both queries at threshold 3. The word-count model replays 0.01 s a pair from the cache (2 or 4 pairs a
    # query for the paid settings): a free setting is charged none of it (wall times are left out: a busy machine
    # makes them noisy).
    sweeps = [SweepConfig(system="blend", parameter="weight", values=[0.0, 0.5]),
              SweepConfig(system="cascade", parameter="second_depth", values=[0, 2]),
              SweepConfig(system="routed", parameter="rules.0.when.margin.at_least", values=[3.0, 5.0])]
    for number, sweep in enumerate(sweeps):
        policy = run_policy(sweep, candidates(), QUERIES, shared, f"policies.sweeps[{number}]")
        points = policy_points(policy, baseline, QRELS, "RR@10", resampled(50), no_relevant="drop",
                               warmup_queries=0, hourly_price=3.6)
        free, paid = points.itertuples()
        replayed = [setting.latency["replayed_s"].to_numpy() for setting in policy.settings]
        assert free.model_pairs == 0 and (replayed[0] == 0).all(), sweep.system
        assert paid.model_pairs > 0 and (replayed[1] >= 0.02 - 1e-9).all(), sweep.system
        # the paid setting marked as a point elsewhere (settings_held_elsewhere): its row says which
        header, _, *rows = [[cell.strip() for cell in line.split("|")] for line in sweeps_section(
            points.assign(held=[False, True]), {}, "RR@10").splitlines()[-4:]]
        assert [row[header.index("model pairs")] for row in rows] == ["0", str(paid.model_pairs)], sweep.system
        assert [row[header.index("setting")] for row in rows] == [free.value, f"{paid.value} (as configured)"]


def test_override_reaches_nested_settings_and_refuses_unknown_ones():
    mapping = {"kind": "routed", "rules": [{"when": {"margin": {"at_least": 1.0}}, "then": "skip"}]}
    assert override(mapping, "rules.0.when.margin.at_least", 2.0, "w")["rules"][0]["when"]["margin"] == {
        "at_least": 2.0}
    assert mapping["rules"][0]["when"]["margin"]["at_least"] == 1.0  # the original is untouched
    with pytest.raises(ConfigError, match="rules.3 not found"):
        override(mapping, "rules.3.then", "x", "w")


def test_settings_that_change_a_models_scores_are_not_a_sweep_over_stored_scores(composed):
    with pytest.raises(ConfigError, match="not a sweep over stored scores"):
        run_policy(SweepConfig(system="length", parameter="max_length", values=[64]), candidates(), QUERIES,
                   context(composed), "policies.sweeps[0]")
    with pytest.raises(ConfigError, match=r"(?s)policies.sweeps\[0\].values\[0\] = 7: .*weights must lie in \[0, 1\]"):
        run_policy(SweepConfig(system="blend", parameter="weight", values=[7]), candidates(), QUERIES,
                   context(composed), "policies.sweeps[0]")


def test_two_sweeps_may_not_draw_the_same_curve():
    from rerankeval.policies.config import PoliciesConfig

    sweep = {"system": "blend", "parameter": "weight", "values": [0.5]}
    with pytest.raises(ConfigError, match="share the label"):
        PoliciesConfig.parse({"sweeps": [sweep, sweep]}, "policies")


def test_a_sweep_over_a_dropped_system_is_inactive_not_an_error():
    """Dropping a system (`-S '~system@systems.NAME'`, as the README's own-first-stage commands do) leaves its sweep
    inactive, as a release claim is: the sweep stage says so and sweeps the rest."""
    from rerankeval.pipeline.sweep import inactive_sweeps
    from rerankeval.policies.config import PoliciesConfig

    policies = PoliciesConfig.parse({"sweeps": [{"system": "blend", "parameter": "weight", "values": [0.5]},
                                                {"system": "cascade", "parameter": "depth", "values": [2]}]},
                                    "policies")
    assert inactive_sweeps(policies, ["blend", "fusion"]) == [1]
    assert inactive_sweeps(policies, ["blend", "cascade"]) == []
    assert inactive_sweeps(policies, []) == [0, 1]


def test_run_policy_still_refuses_a_system_it_is_asked_to_sweep_by_name(composed):
    with pytest.raises(ConfigError, match="no system 'nope' under `systems`"):
        run_policy(SweepConfig(system="nope", parameter="depth", values=[2]), candidates(), QUERIES,
                   context(composed), "policies.sweeps[0]")


def test_a_sweep_asks_analyze_a_question_of_pairs(composed, monkeypatch):
    """The sweep makes no inference of its own: it asks ``analyze`` one question of ``Pairs`` per sweep (each
    setting against the baseline, the sweep one family) and shows what it answers."""
    from rerankeval.policies import points as points_module
    from rerankeval.stats import analysis

    asked = []

    def recording(per_query, slices, settings, question, *args, **kwargs):
        asked.append(question)
        return analysis.analyze(per_query, slices, settings, question, *args, **kwargs)

    monkeypatch.setattr(points_module, "analyze", recording)
    policy, baseline, quality = blend_sweep_on_60_queries(composed, monkeypatch, seed=7, step=0.03)
    points = policy_points(policy, baseline, QRELS, "RR@10", resampled(200), no_relevant="drop", warmup_queries=0,
                           hourly_price=3.6)
    [question] = asked
    assert isinstance(question, analysis.Pairs) and question.family == policy.label
    assert question.pairs == [(f"setting {k}", "baseline") for k in range(len(policy.settings))]
    assert points["delta"].tolist() == pytest.approx([(values - baseline).mean() for values in quality.values()])
