"""ranx's Qrels and Run both ways (interop/ranx.py): what goes to ranx comes back the same, and ranx measures the
ranking rerankeval measured, tied scores included (ranx breaks ties by an unstable sort; the export unties them in the
run's own order). ranx comes with the `ranx` extra (`make bench` installs it too); without it these tests skip."""

import numpy as np
import pandas as pd
import pytest

ranx = pytest.importorskip("ranx")

from rerankeval.eval.engine import evaluate  # noqa: E402
from rerankeval.eval.ranks import assign_ranks  # noqa: E402
from rerankeval.interop.ranx import (from_ranx_qrels, from_ranx_run, to_ranx_qrels, to_ranx_run,  # noqa: E402
                                     untied_scores)

SHARED = {"ndcg@10": "nDCG@10", "map": "AP", "mrr@10": "RR@10", "precision@5": "P@5", "recall@10": "R@10"}
"""ranx's name and rerankeval's for the measures both define alike (linear gain, IDCG over every judged document)."""


def collection(seed: int):
    """40 queries, 30 retrieved documents each with scores on a coarse grid (many ties), graded qrels 0-3."""
    rng = np.random.default_rng(seed)
    runs, judged = [], []
    for q in range(40):
        docs = [f"d{i}" for i in rng.permutation(60)[:30]]
        runs += [(f"q{q}", doc, float(rng.integers(0, 6))) for doc in docs]
        judged += [(f"q{q}", f"d{i}", int(rng.choice([0, 0, 1, 2, 3]))) for i in range(60) if rng.random() < 0.3]
        judged.append((f"q{q}", "d0", 1))  # every query has a relevant document
    qrels = pd.DataFrame(judged, columns=["query_id", "doc_id", "relevance"]).drop_duplicates(
        ["query_id", "doc_id"])
    return qrels.reset_index(drop=True), assign_ranks(pd.DataFrame(runs, columns=["query_id", "doc_id", "score"]))


def test_ranx_measures_the_ranking_rerankeval_measured():
    qrels, run = collection(7)
    assert run.duplicated(["query_id", "score"]).any()  # the ties are there to be broken
    found = ranx.evaluate(to_ranx_qrels(qrels), to_ranx_run(run, "fixture"), list(SHARED), return_mean=False)
    ours = evaluate(run, qrels, list(SHARED.values()))
    for theirs, mine in SHARED.items():
        assert np.allclose(found[theirs], ours[mine].to_numpy(), atol=1e-12), theirs


def test_a_run_and_its_qrels_come_back_from_ranx_unchanged():
    qrels, run = collection(3)
    back = from_ranx_run(to_ranx_run(run))
    mine = run.sort_values(["query_id", "rank"], kind="stable").reset_index(drop=True)
    assert back[["query_id", "doc_id", "rank"]].equals(mine[["query_id", "doc_id", "rank"]])
    returned = from_ranx_qrels(to_ranx_qrels(qrels)).sort_values(["query_id", "doc_id"]).reset_index(drop=True)
    assert returned.equals(qrels.sort_values(["query_id", "doc_id"]).reset_index(drop=True))


def test_untying_moves_only_the_tied_scores_and_by_the_least_step():
    run = pd.DataFrame({"query_id": ["q", "q", "q", "r"], "doc_id": ["a", "b", "c", "a"],
                        "score": [2.0, 2.0, 1.0, 2.0], "rank": [1, 2, 3, 1]})
    assert untied_scores(run).tolist() == [2.0, np.nextafter(2.0, -np.inf), 1.0, 2.0]
