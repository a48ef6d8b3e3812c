import numpy as np
import pandas as pd
import pytest

from rerankeval.evaluation import depth_curve, depth_run, means, per_query_metrics, system_depth
from rerankeval.eval.measures import parse_measure


def run_frame(scores, query="q", doc_prefix="d"):
    """A run of one query: candidates d1..dn in fused order with the given scores (NaN = unscored)."""
    n = len(scores)
    frame = pd.DataFrame({"query_id": query, "doc_id": [f"{doc_prefix}{i + 1}" for i in range(n)],
                          "fused_rank": np.arange(1, n + 1), "score": np.asarray(scores, dtype=float)})
    head = depth_run(frame, n)
    return frame.merge(head[["query_id", "doc_id", "rank"]], on=["query_id", "doc_id"])


def test_depth_run_reranks_only_the_head():
    run = run_frame([0.1, 0.2, 0.9, 0.8, np.nan])
    at_two = depth_run(run, 2)
    assert at_two["doc_id"].tolist() == ["d2", "d1", "d3", "d4", "d5"]
    at_four = depth_run(run, 4)
    assert at_four["doc_id"].tolist() == ["d3", "d4", "d2", "d1", "d5"]
    assert at_four["rank"].tolist() == [1, 2, 3, 4, 5]
    assert system_depth(run) == 4


def test_depth_run_of_a_fallback_query_is_the_fused_order():
    run = run_frame([np.nan] * 4)
    assert depth_run(run, 4)["doc_id"].tolist() == ["d1", "d2", "d3", "d4"]
    assert system_depth(run) == 0


QRELS = pd.DataFrame({"query_id": ["q", "q", "q"], "doc_id": ["d3", "d4", "d9"], "relevance": [1, 2, 1]})


def test_per_query_metrics_with_oracle_and_headroom_by_hand():
    runs = {"fusion": run_frame([4, 3, 2, 1]), "model": run_frame([1, 2, 4, 3])}
    ndcg = parse_measure("nDCG@10")
    table = per_query_metrics(runs, QRELS, ["q"], [ndcg, parse_measure("RR@10")], [ndcg], no_relevant="drop")
    # Ideal over qrels: grades 2, 1, 1 -> IDCG = 2 + 1/log2(3) + 1/log2(4). The oracle reaches 2 + 1/log2(3) (d9 was
    # never retrieved). fusion ranks d3 (1) at 3 and d4 (2) at 4; model ranks d3 first, then d4.
    idcg = 2 + 1 / np.log2(3) + 0.5
    fusion = table.set_index("system").loc["fusion"]
    model = table.set_index("system").loc["model"]
    assert fusion["nDCG@10"] == pytest.approx((1 / 2 + 2 / np.log2(5)) / idcg)
    assert model["nDCG@10"] == pytest.approx((1 + 2 / np.log2(3)) / idcg)
    assert fusion["oracle:nDCG@10"] == pytest.approx((2 + 1 / np.log2(3)) / idcg)
    assert fusion["headroom:nDCG@10"] == pytest.approx(fusion["oracle:nDCG@10"] - fusion["nDCG@10"])
    assert fusion["RR@10"] == pytest.approx(1 / 3) and model["RR@10"] == 1.0
    assert means(table)["model"]["RR@10"] == 1.0


def test_depth_curve_points_only_where_scores_exist():
    runs = {"shallow": run_frame([4, 3, 2, 1]).assign(score=[1.0, 2.0, np.nan, np.nan])}
    curve = depth_curve(runs, QRELS, ["q"], [1, 2, 4], [parse_measure("RR@10")],
                        lambda d: [parse_measure(f"CandidateRecall@{d}")], no_relevant="drop")
    assert sorted(curve["depth"].unique()) == [1, 2]
    recall = curve[curve["measure"].str.startswith("CandidateRecall")].set_index("depth")["value"]
    assert recall.to_dict() == {1: 0.0, 2: 0.0}
