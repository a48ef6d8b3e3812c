"""Report sections of issue 14 on hand-made inputs: what the rerankers moved, the frontier with policies as curves, and
the composed configurations (skip rate, what skipping lost)."""

import numpy as np
import pandas as pd
import pytest

from rerankeval.report.configurations import configurations_section
from rerankeval.policies.frontier import frontier_points, settings_held_elsewhere
from rerankeval.report.frontier import plot_frontier
from rerankeval.report.moved import moved_per_query, moved_section
from rerankeval.stats.schema import Comparison, ComparisonCore
from rerankeval.stats.variants import mean_interval
from rerankeval.systems.roles import KindTraits
from tests.analysis_records import FIRST_STAGE, GENERATOR_CHECK, method

BOOT = {"n_samples": 200, "seed": 1, "confidence": 0.95, "method": "percentile"}


def run_of(order: list[str], query_id: str = "q1") -> pd.DataFrame:
    return pd.DataFrame({"query_id": query_id, "doc_id": order, "rank": range(1, len(order) + 1),
                         "fused_rank": [int(doc[1:]) + 1 for doc in order]})


QRELS = pd.DataFrame({"query_id": ["q1"] * 4 + ["q2"], "doc_id": ["d3", "d1", "d2", "d4", "d0"],
                      "relevance": [3, 0, 1, 2, 0]})


def test_what_moved_by_hand():
    run = pd.concat([run_of(["d3", "d2", "d0", "d1", "d4"]), run_of(["d1", "d0"], "q2")], ignore_index=True)
    moved = moved_per_query(run, QRELS, "ce")
    assert moved["query_id"].tolist() == ["q1"]  # q2 has no relevant document
    row = moved.iloc[0]
    # Best: d3 (grade 3, fused 4th) now first. Above it in fused order: d1 (judged 0) and d2 (grade 1), both pushed.
    assert (row["top_fused_rank"], row["best_fused_rank"], row["best_rank"]) == (4, 4, 1)
    assert (row["hard_negatives"], row["hard_negatives_pushed"], row["decoys"], row["decoys_pushed"]) == (1, 1, 1, 1)
    assert row["relevant_moved"] == pytest.approx((3 + 1 + 0) / 3)  # d3 +3, d2 +1, d4 0
    unchanged = moved_per_query(run_of(["d0", "d1", "d2", "d3", "d4"]), QRELS, "fusion").iloc[0]
    assert (unchanged["hard_negatives_pushed"], unchanged["decoys_pushed"], unchanged["best_rank"]) == (0, 0, 4)
    queries = pd.DataFrame({"query_id": ["q1", "q2"], "text": ["a", "b"], "intent": ["exact_id", "other"]})
    text = moved_section({"ce": run, "fusion": run_of(["d0"])}, QRELS, queries, ["intent"], "fusion",
                         ["fusion", "ce"])
    assert "| `ce` | 1 | 1/1 (100%) | 1/1 (100%) | 0% | 0% | 100% / 0% | +1.33 |" in text
    assert "intent=exact_id" in text


def test_frontier_draws_policies_as_curves_and_marks_the_frontier(tmp_path):
    depth_costs = pd.DataFrame({"system": ["fusion", "ce", "ce", "oracle", "random"], "depth": [100, 10, 30, 100, 10],
                                "quality": [0.6, 0.62, 0.55, 0.9, 0.1], "p95_ms": [0.1, 200.0, 500.0, 0.1, 0.05],
                                "cost_per_1k_queries": [0.0, 0.01, 0.02, 0.0, 0.0]})
    traits = {"fusion": KindTraits("first_stage", "hybrid"), "ce": KindTraits(learned=True),
              "oracle": KindTraits("ceiling"), "random": KindTraits("floor"), "blend": KindTraits(composite=True)}
    own = pd.DataFrame({"system": ["fusion", "ce", "oracle", "blend"], "quality": [0.6, 0.55, 0.9, 0.66],
                        "p95_ms": [0.1, 500.0, 0.1, 510.0], "cost_per_1k_queries": [0.0, 0.02, 0.0, 0.02]})
    sweeps = pd.DataFrame({"policy": "blend weight", "system": "blend", "parameter": "weight",
                           "value": ["0", "0.5", "1"], "position": [0, 1, 2], "quality": [0.6, 0.67, 0.55],
                           "p95_ms": [505.0, 505.0, 505.0], "cost_per_1k_queries": 0.02, "held": False})
    points = frontier_points(depth_costs, traits, own, sweeps)
    assert not {"oracle", "random"} & set(points["policy"].str.split().str[0])  # bounds, not configurations
    assert points.set_index("label")["frontier"].to_dict() == {
        "fusion@100": True, "ce@10": True, "ce@30": False, "blend": False, "blend weight=0": False,
        "blend weight=0.5": True, "blend weight=1": False}
    plot_frontier(points, "nDCG@10", tmp_path / "pareto.png")
    assert (tmp_path / "pareto.png").stat().st_size > 1000


def test_configurations_report_skip_rate_and_what_skipping_lost():
    latency = pd.DataFrame({"query_id": ["a", "b", "c", "d"], "position": range(4),
                            "mode": ["SKIPPED", "RERANKED", "SKIPPED", "RERANKED"], "wall_s": [0.001, 0.2, 0.001, 0.2],
                            "compute_s": [0.0, 0.2, 0.0, 0.2], "replayed_s": 0.0})
    per_query = pd.DataFrame({"system": ["routed"] * 4 + ["blend"] * 4, "query_id": list("abcd") * 2,
                              "nDCG@10": [0.2, 0.9, 0.5, 0.8, 0.7, 0.9, 0.5, 0.8]})
    compare = ComparisonCore(baseline="fusion", queries=4, method=method(), systems={}, slices={}, unjudged={},
                             comparisons=[
        Comparison(challenger="routed", baseline="fusion", metric="nDCG@10", baseline_mean=0.6, challenger_mean=0.61,
                   delta=0.01, low=-0.02, high=0.04, family="release vs fusion", p_adjusted=0.5, p_randomisation=0.5,
                   p_ttest=0.5, median_delta=0.0, cohens_dz=0.1, improved=1, tied=2, regressed=1, percentiles={},
                   worst_regressions=[])])
    configs = {"routed": {"kind": "routed", "default": "blend"}, "blend": {"kind": "blend"}}
    described = {"routed": {"describe": {"rules": [{"when": {"identifier_in_query": True, "margin": None},
                                                    "then": "skip"}], "default": "blend"}}}
    queries = pd.DataFrame({"query_id": list("abcd"), "text": ["PAY-1042 retry?", "b", "c", "d"]})
    traits = {"routed": KindTraits(composite=True), "blend": KindTraits(composite=True)}
    text = configurations_section(["routed"], configs, traits, described, {"routed": latency},
                                  {"routed": {"composite_pairs": {"scored": 0, "from_cache": 60}}}, per_query,
                                  compare, queries, "nDCG@10", {"routed": 412.5}, 3.6,
                                  {"routed": {"cold_seconds": mean_interval(latency["compute_s"].to_numpy(), BOOT),
                                              "skipped": mean_interval(np.array([1.0, 0, 1, 0]), BOOT)}}, 5)
    assert "if identifier_in_query=True then skip; else blend" in text
    assert "| 50% [" in text and "| 0 / 60 |" in text  # skip rate with its CI; pairs scored / from the cache
    assert "| 412.5 |" in text  # the p95 its verdict read: one p95 per system on every page
    assert "No configuration beats `fusion` with a CI above 0" in text
    assert "1 of them lose, 0 gain" in text and "| a | PAY-1042 retry? | -0.5000 |" in text


def test_a_blend_fitted_on_the_fallback_says_where():
    from rerankeval.report.configurations import _what

    fit = {"split": "train", "queries": 30, "measure": "nDCG@10", "curve": [{"mean": 0.61}, {"mean": 0.64}],
           "held_out_of_training": True, "in_sample": [], "rule": "one_se",
           "source": {"path": "datasets/demo", "fallback": True, "reason": "cranfield has no split 'train'"},
           "cv": {"folds": 3, "fold_weights": [0.45, 0.0, 0.45], "confidence": 0.95,
                  "estimate": {"mean": 0.62, "low": 0.58, "high": 0.66},
                  "gain_over_zero": {"mean": 0.01, "low": -0.004, "high": 0.025},
                  "distinguishable_from_zero": False, "in_sample_mean": 0.64}}
    text = _what("blend", {"blend": "0.45 x ce + 0.55 x fusion", "fit": fit})
    # The CV estimate and its CI come first; the in-sample value is shown beside them, marked optimistic.
    assert text == ("0.45 x ce + 0.55 x fusion; weight fitted on the train split of the fallback `datasets/demo` "
                    "(cranfield has no split 'train') (30 queries held out of the model's training, the smallest "
                    "weight within one standard error of the best of 2 weights; 3-fold CV: fold weights 0.45, 0, "
                    "0.45, out-of-fold nDCG@10 0.6200 [0.5800, 0.6600], gain over weight 0 +0.0100 [-0.0040, "
                    "+0.0250] (not distinguishable from 0 at 95%); in-sample 0.6400, optimistic)")
    own = _what("blend", {"blend": "b", "fit": {**fit, "source": {"fallback": False}}})
    assert "weight fitted on the train split (30 queries" in own


def test_the_per_query_list_keeps_each_rerankers_worst_few_linked_to_the_explorer():
    """The best document (d0, fused #1) falls 1, 2, 3 and 4 places in q1..q4: the list keeps the 2 worst, and leaves
    the reference systems out."""
    orders = {f"q{drop}": [f"d{i}" for i in range(1, drop + 1)] + ["d0"] + [f"d{i}" for i in range(drop + 1, 5)]
              for drop in range(1, 5)}
    run = pd.concat([run_of(order, query) for query, order in orders.items()], ignore_index=True)
    qrels = pd.DataFrame({"query_id": list(orders), "doc_id": "d0", "relevance": 2})
    queries = pd.DataFrame({"query_id": list(orders), "text": list(orders)})
    text = moved_section({"ce": run, "random": run}, qrels, queries, [], "fusion", ["fusion", "ce", "random"],
                         reference=["random"], worst_n=2, explorer="site/explorer.html")
    listed = [line for line in text.splitlines() if line.startswith("| `ce` | [`q")]
    assert [line.split(" | ")[1] for line in listed] == ["[`q4`](site/explorer.html#q=q4)",
                                                          "[`q3`](site/explorer.html#q=q3)"]
    assert "| 1 → 5 |" in listed[0] and not any(line.startswith("| `random` | [") for line in text.splitlines())
    # Positive-only qrels (as SciFact's): no hard negative or decoy to push, so no column of 0/0 for them
    assert "there is none to push down: those columns are left out" in text
    assert "pushed" not in text.split("there is none to push down", 1)[1] and "0/0" not in text


def test_worst_regressions_are_one_table_without_the_bounds():
    from rerankeval.report.markdown import regressions_section
    from rerankeval.stats.schema import Compare

    item = {"query_id": "q7", "query": "a | b", "before": ["d1 (2)"], "after": ["d2 (unjudged)"]}
    compare = Compare(baseline="fusion", queries=40, method=method(), systems={}, comparisons=[], slices={},
                      unjudged={},
                      split="test", first_stage=FIRST_STAGE, generator_sanity=GENERATOR_CHECK, language_check={},
                      worst_regressions={"ce": [item], "random": [item], "bm25": []})
    text = regressions_section(compare, "nDCG@10", skip=["random"], explorer="site/explorer.html")
    assert text.splitlines()[2:] == ["| system | query | text | before | after |", "|---|---|---|---|---|",
                                     "| `ce` | [`q7`](site/explorer.html#q=q7) | a \\| b | d1 (2) | d2 (unjudged) |"]


def test_a_setting_held_elsewhere_is_one_point_with_one_latency():
    depths = pd.DataFrame({"system": ["ce", "ce"], "depth": [5, 10], "quality": [0.6, 0.65], "p95_ms": [100.0, 200.0],
                           "cost_per_1k_queries": [0.01, 0.02]})
    own = pd.DataFrame({"system": ["ce", "cascade"], "quality": [0.65, 0.7], "p95_ms": [200.0, 150.0],
                        "cost_per_1k_queries": [0.02, 0.015]})
    systems = {"ce": {"kind": "cross_encoder", "depth": 10},
               "cascade": {"kind": "cascade", "second_depth": 10, "rules": [{"margin": {"at_least": 0.3}}]}}
    sweeps = pd.DataFrame({
        "policy": ["cross-encoder depth"] * 2 + ["cascade size"] * 2 + ["margin"] * 2,
        "system": ["ce"] * 2 + ["cascade"] * 4,
        "parameter": ["depth"] * 2 + ["second_depth"] * 2 + ["rules.0.margin.at_least"] * 2,
        "value": ["10", "20", "5", "10", "0.3", "0.5"], "quality": [0.65, 0.6, 0.66, 0.7, 0.7, 0.69],
        "p95_ms": [230.0, 400.0, 80.0, 152.0, 151.0, 149.0], "cost_per_1k_queries": 0.03,
        "position": [1, 2, 0, 1, 0, 1]})
    held = settings_held_elsewhere(sweeps, depths, own, systems)
    # The depth table's ce@10, and the cascade as configured (second_depth 10, margin 0.3): their p95 and cost.
    assert held["held"].tolist() == [True, False, False, True, True, False]
    assert held["p95_ms"].tolist() == [200.0, 400.0, 80.0, 150.0, 150.0, 149.0]
    assert held["cost_per_1k_queries"].tolist() == [0.02, 0.03, 0.03, 0.015, 0.015, 0.03]
    # A configured value whose sweep quality differs is another setting (a sweep run on other candidates): kept.
    other = settings_held_elsewhere(sweeps.assign(quality=sweeps["quality"] + 0.01), depths, own, systems)
    assert not other["held"].any() and other["p95_ms"].tolist() == sweeps["p95_ms"].tolist()
    points = frontier_points(depths, {"ce": KindTraits(learned=True), "cascade": KindTraits(composite=True)}, own,
                             held)
    assert points["label"].tolist() == ["ce@5", "ce@10", "cascade", "ce depth=20", "cascade second_depth=5",
                                        "cascade rules.0.margin.at_least=0.5"]
    assert points.loc[points["label"] == "ce@10", "p95_ms"].tolist() == [200.0]


def test_graded_qrels_without_a_hard_negative_above_the_best_doc_keep_the_decoy_column_only():
    """Cranfield's case: lower-graded relevant documents above the best one (decoys), none judged 0 there."""
    qrels = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["d3", "d1", "d2"], "relevance": [3, 1, 2]})
    queries = pd.DataFrame({"query_id": ["q1"], "text": ["a"]})
    text = moved_section({"ce": run_of(["d3", "d2", "d0", "d1", "d4"])}, qrels, queries, [], "fusion",
                         ["fusion", "ce"])
    assert "No hard negative (judged 0) sat above a query's best document" in text and "its column is left out" in text
    assert "| system | queries | decoys pushed below the best doc |" in text and "hard negatives pushed" not in text
    assert "| `ce` | 1 | 2/2 (100%) |" in text  # d1 and d2 were above d3 in fused order; both now below it
