"""Can the comparison carry a decision: a broken fused baseline, positive-only qrels, identical runs."""

import numpy as np
import pandas as pd
import pytest

from rerankeval.eval.engine import evaluate
from rerankeval.eval.funnel import first_stage_metrics
from rerankeval.retrieval.fusion import rrf_top, top_k
from rerankeval.stats.comparison import RunFacts, compare
from rerankeval.stats.config import CompareConfig
from rerankeval.stats.sanity import (first_stage_sanity, identical_to_baseline, needs_negative_judgments,
                                     positive_only_reason)

N_QUERIES, N_DOCS, TOP_N = 60, 40, 40
BOOT = dict(n_samples=1000, seed=17, confidence=0.95, method="percentile")


def ranking(scores, query_ids):
    """A run (query_id, doc_id, rank) of each query's documents by score, doc index breaking ties."""
    found = top_k(scores, TOP_N)
    return pd.DataFrame([(query, f"d{column}", rank) for row, query in enumerate(query_ids)
                         for rank, column in enumerate(found.columns[row], start=1)],
                        columns=["query_id", "doc_id", "rank"])


@pytest.fixture(scope="module")
def broken_collection():
    """Document 0 is each query's relevant one (1, 2 judged non-relevant). BM25 ranks it first or second; the dense
    retriever cannot read the queries (random scores), so RRF fusion buries it under documents both half-like."""
    rng = np.random.default_rng(7)
    query_ids = [f"q{i:02d}" for i in range(N_QUERIES)]
    bm25 = rng.random((N_QUERIES, N_DOCS))
    bm25[:, 0] = np.where(rng.random(N_QUERIES) < 0.8, 2.0, 1.5)
    bm25[:, 1] = 1.8
    dense = rng.random((N_QUERIES, N_DOCS))
    qrels = pd.DataFrame([(q, doc, grade) for q in query_ids for doc, grade in (("d0", 1), ("d1", 0), ("d2", 0))],
                         columns=["query_id", "doc_id", "relevance"])
    bm25_top, dense_top = top_k(bm25, TOP_N), top_k(dense, TOP_N)
    fused = pd.DataFrame([(query, f"d{column}", rank) for row, query in enumerate(query_ids)
                          for rank, column in enumerate(rrf_top([bm25_top, dense_top], row, k=60, depth=TOP_N,
                                                                top_n=TOP_N).columns, start=1)],
                         columns=["query_id", "doc_id", "rank"])
    rankings = {"bm25": ranking(bm25, query_ids), "dense": ranking(dense, query_ids), "hybrid": fused}
    first_stage = first_stage_metrics(rankings, qrels, query_ids, TOP_N, no_relevant="drop")
    shuffled = fused.assign(rank=fused.groupby("query_id")["rank"].transform(
        lambda ranks: rng.permutation(ranks.to_numpy())))
    random_floor = evaluate(shuffled, qrels, ["nDCG@10"], queries=query_ids)["nDCG@10"]
    return first_stage, random_floor, qrels, rankings


def test_a_fused_baseline_far_below_bm25_is_flagged(broken_collection):
    first_stage, random_floor, _, _ = broken_collection
    sanity = first_stage_sanity(first_stage, random_floor, "nDCG@10", "fusion", "hybrid", **BOOT)
    means = {name: entry["mean"] for name, entry in sanity["retrievers"].items()}
    assert means["bm25"] > means["hybrid"] + 0.1 and sanity["best"] == sanity["best_component"] == "bm25"
    assert sanity["fusion_vs_best_component"]["high"] < 0
    assert sanity["flag"].startswith("the comparison baseline is broken on this collection: fusion (fused) is ")
    assert "below bm25 on nDCG@10" in sanity["flag"] and sanity["flag"].endswith("best first stage: bm25")
    assert sanity["retrievers"]["dense"]["at_random_floor"]
    assert not sanity["retrievers"]["bm25"]["at_random_floor"]


def test_the_verdict_against_a_flagged_baseline_is_never_a_bare_accept(broken_collection):
    first_stage, random_floor, _, _ = broken_collection
    sanity = first_stage_sanity(first_stage, random_floor, "nDCG@10", "fusion", "hybrid", **BOOT)
    fusion = first_stage[first_stage["retriever"] == "hybrid"].set_index("query_id")["nDCG@10"]
    bm25 = first_stage[first_stage["retriever"] == "bm25"].set_index("query_id")["nDCG@10"]
    # A reranker that beats the broken fusion clearly and still loses to BM25.
    reranker = (fusion + bm25) / 2
    per_query = pd.concat([frame.rename("nDCG@10").rename_axis("query_id").reset_index().assign(system=name,
                                                                                                **{"Judged@10": 1.0})
                           for name, frame in (("fusion", fusion), ("reranker", reranker))])
    settings = CompareConfig.parse({"baseline": "fusion", "metrics": ["nDCG@10"], "samples": 1000,
                                    "permutations": 1000, "simulation": {"trials": 50, "samples": 500},
                                    "release": {"primary_metric": "nDCG@10", "min_delta": 0.03}}, "compare")
    _, verdicts = compare(per_query, pd.DataFrame(index=fusion.index), settings, settings.release,
                          RunFacts(baseline_flag=sanity["flag"]))
    verdict = verdicts["verdicts"]["reranker"]
    assert verdict["ci"][0] > 0 and verdict["delta"] > 0.03  # it would be ACCEPTed against a sane baseline
    assert verdict["decision"] == "INCONCLUSIVE"
    assert verdict["decided_by"] == f"{sanity['flag']}; beating it proves little"


def test_a_healthy_first_stage_and_a_non_fused_baseline_are_not_flagged(broken_collection):
    first_stage, random_floor, _, _ = broken_collection
    # BM25 as the baseline: fusion's trouble is not its trouble.
    assert first_stage_sanity(first_stage, random_floor, "nDCG@10", "bm25", "bm25", **BOOT)["flag"] is None
    # Fusion that matches its best component: no flag; without a random system there is no floor to show.
    healthy = first_stage.copy()
    healthy.loc[healthy["retriever"] == "hybrid", "nDCG@10"] = healthy.loc[healthy["retriever"] == "bm25",
                                                                           "nDCG@10"].to_numpy()
    sanity = first_stage_sanity(healthy, None, "nDCG@10", "fusion", "hybrid", **BOOT)
    assert sanity["flag"] is None and sanity["random"] is None
    assert all(entry["vs_random"] is None and not entry["at_random_floor"] for entry in sanity["retrievers"].values())


def test_a_baseline_at_the_random_floor_is_flagged(broken_collection):
    first_stage, random_floor, _, _ = broken_collection
    sanity = first_stage_sanity(first_stage, random_floor, "nDCG@10", "dense", "dense", **BOOT)
    assert sanity["flag"] == ("the comparison baseline is broken on this collection: dense is not above the random "
                              "floor on nDCG@10; best first stage: bm25")


def test_positive_only_qrels_are_recognised_per_evaluated_query():
    qrels = pd.DataFrame({"query_id": ["a", "a", "b"], "doc_id": ["x", "y", "z"], "relevance": [2, 1, 0]})
    assert positive_only_reason(qrels, ["a"]).startswith("the qrels judge no document non-relevant (no grade <= 0)")
    assert positive_only_reason(qrels, ["a", "b"]) is None
    negative = qrels.assign(relevance=[2, 1, -1])
    assert positive_only_reason(negative, ["a", "b"]) is None
    assert [needs_negative_judgments(m) for m in ("Judged@10", "nDCG@10[judged_only=true]", "Bpref", "nDCG@10",
                                                  "RR@10")] == [True, True, True, False, False]


def test_identical_runs_are_found_whatever_the_row_order(broken_collection):
    _, _, _, rankings = broken_collection
    query_ids = sorted(rankings["bm25"]["query_id"].unique())
    runs = {"fusion": rankings["hybrid"], "copy": rankings["hybrid"].sample(frac=1, random_state=1),
            "bm25": rankings["bm25"]}
    assert identical_to_baseline(runs, "fusion", query_ids) == {"copy": N_QUERIES}
