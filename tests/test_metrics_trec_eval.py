"""Every measure trec_eval also computes must agree with pytrec_eval (and Judged with ir_measures).

trec_eval orders equal scores by docno descending, we by TIE_BREAK_RULE; so the oracle gets
an explicit, tie-free order: score = -rank, the rank derived here independently of
rerankeval with a plain pandas sort that spells out the rule.
"""

import ir_measures
import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from rerankeval.metrics import evaluate

QUERIES = ["q0", "q1", "q2", "q3"]
JUDGEABLE_DOCS = [f"d{i}" for i in range(7)]
UNJUDGED_DOCS = ["u0", "u1", "u2"]
TOLERANCE = 1e-9


@st.composite
def collections(draw):
    """Graded qrels (0-4) and a run with tied scores, unjudged documents, queries missing from
    the run or from the qrels, and sometimes no rows at all."""
    qrels_rows = []
    for query in draw(st.lists(st.sampled_from(QUERIES), unique=True)):
        judged = draw(st.lists(st.sampled_from(JUDGEABLE_DOCS), unique=True, min_size=1))
        qrels_rows += [(query, doc, draw(st.integers(0, 4))) for doc in judged]
    run_rows = []
    for query in draw(st.lists(st.sampled_from([*QUERIES, "q_unjudged"]), unique=True)):
        docs = draw(st.lists(st.sampled_from(JUDGEABLE_DOCS + UNJUDGED_DOCS), unique=True, min_size=1))
        # Few distinct scores, so ties are common.
        run_rows += [(query, doc, float(draw(st.integers(0, 3)))) for doc in docs]
    qrels = pd.DataFrame(qrels_rows, columns=["query_id", "doc_id", "relevance"])
    run = pd.DataFrame(run_rows, columns=["query_id", "doc_id", "score"])
    return (
        run.astype({"query_id": "str", "doc_id": "str", "score": "float64"}),
        qrels.astype({"query_id": "str", "doc_id": "str", "relevance": "int64"}),
    )


def tie_broken_ranks(run):
    """score descending, then doc_id ascending: the rule rerankeval documents, spelled out."""
    ordered = run.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, True])
    return ordered.assign(rank=ordered.groupby("query_id").cumcount() + 1)


def as_run_dict(ranked):
    run = {}
    for query, doc, rank in zip(ranked["query_id"], ranked["doc_id"], ranked["rank"]):
        run.setdefault(query, {})[doc] = -float(rank)
    return run


def as_qrels_dict(qrels):
    out = {}
    for query, doc, grade in zip(qrels["query_id"], qrels["doc_id"], qrels["relevance"]):
        out.setdefault(query, {})[doc] = int(grade)
    return out


def trec_eval(qrels, run_dict, measures, rel, judged_only):
    """Per-query values of trec_eval measures for every qrels query; 0 where the run lacks the query."""
    evaluator = pytrec_eval.RelevanceEvaluator(
        as_qrels_dict(qrels), set(measures), relevance_level=rel, judged_docs_only_flag=int(judged_only)
    )
    result = evaluator.evaluate(run_dict)
    return {m: {q: result.get(q, {}).get(m, 0.0) for q in qrels["query_id"].unique()} for m in measures}


def top_k_run(ranked, qrels, k, judged_only):
    """The run cut to its top k, after removing unjudged documents when judged_only (trec_eval -J
    condenses the list first; cutting first would give another list)."""
    if judged_only:
        judged = set(zip(qrels["query_id"], qrels["doc_id"]))
        keep = np.array([pair in judged for pair in zip(ranked["query_id"], ranked["doc_id"])], dtype=bool)
        ranked = ranked[keep]
        ranked = ranked.assign(rank=ranked.groupby("query_id").cumcount() + 1)
    return ranked[ranked["rank"] <= k]


def assert_matches(ours, expected, measure):
    for query, value in expected.items():
        assert ours.loc[query, measure] == pytest.approx(value, abs=TOLERANCE), (measure, query)


@settings(max_examples=150, deadline=None)
@given(collections(), st.integers(1, 9), st.integers(1, 3), st.booleans())
def test_agrees_with_trec_eval(data, k, rel, judged_only):
    run, qrels = data
    flags = [f"rel={rel}"] if rel != 1 else []
    flags += ["judged_only=true"] if judged_only else []
    binary = f"[{','.join(flags)}]" if flags else ""
    graded = "[judged_only=true]" if judged_only else ""
    pairs = {
        f"P@{k}{binary}": f"P_{k}",
        f"R@{k}{binary}": f"recall_{k}",
        f"Success@{k}{binary}": f"success_{k}",
        f"Rprec{binary}": "Rprec",
        f"RR{binary}": "recip_rank",
        f"AP{binary}": "map",
        f"AP@{k}{binary}": f"map_cut_{k}",
        f"nDCG{graded}": "ndcg",
        f"nDCG@{k}{graded}": f"ndcg_cut_{k}",
    }
    if not judged_only:
        pairs[f"Bpref{binary}"] = "bpref"
    rr_at_k = f"RR@{k}{binary}"
    ours = evaluate(run, qrels, [*pairs, rr_at_k], no_relevant="zero")
    assert list(ours.index) == sorted(qrels["query_id"].unique())

    ranked = tie_broken_ranks(run)
    expected = trec_eval(qrels, as_run_dict(ranked), pairs.values(), rel, judged_only)
    for measure, trec_name in pairs.items():
        assert_matches(ours, expected[trec_name], measure)
    # trec_eval's recip_rank has no cutoff: RR@k is RR of the list cut at k.
    cut = as_run_dict(top_k_run(ranked, qrels, k, judged_only))
    assert_matches(ours, trec_eval(qrels, cut, ["recip_rank"], rel, False)["recip_rank"], rr_at_k)


@settings(max_examples=80, deadline=None)
@given(collections(), st.integers(1, 9))
def test_judged_agrees_with_ir_measures(data, k):
    """Judged is not in trec_eval; ir_measures' judged provider defines it."""
    run, qrels = data
    ours = evaluate(run, qrels, [f"Judged@{k}"])
    ranked = tie_broken_ranks(run)
    provider = ir_measures.providers.registry["judged"]
    expected = {
        m.query_id: m.value
        for m in provider.iter_calc(
            [ir_measures.Judged @ k],
            [ir_measures.Qrel(*row) for row in qrels.itertuples(index=False)],
            [ir_measures.ScoredDoc(q, d, -float(r))
             for q, d, r in ranked[["query_id", "doc_id", "rank"]].itertuples(index=False)],
        )
    }
    # A query without relevant document is dropped here (no_relevant="drop"): compare the others.
    assert set(ours.index) == set(qrels.loc[qrels["relevance"] >= 1, "query_id"])
    assert_matches(ours, {q: expected[q] for q in ours.index}, f"Judged@{k}")


@settings(max_examples=60, deadline=None)
@given(collections())
def test_drop_keeps_exactly_the_queries_with_a_relevant_document(data):
    run, qrels = data
    measures = ["nDCG@5", "AP", "Judged@5"]
    dropped = evaluate(run, qrels, measures, no_relevant="drop")
    zeroed = evaluate(run, qrels, measures, no_relevant="zero")
    with_relevant = sorted(qrels.loc[qrels["relevance"] >= 1, "query_id"].unique())
    assert list(dropped.index) == with_relevant
    pd.testing.assert_frame_equal(dropped, zeroed.loc[with_relevant])
    assert (zeroed.drop(index=with_relevant).to_numpy() == 0).all()


def test_a_known_case_matches_trec_eval_by_hand():
    """A fixed case, so a failure here reads without hypothesis: graded qrels, an unjudged doc."""
    qrels = pd.DataFrame(
        {"query_id": ["q"] * 4, "doc_id": ["a", "b", "c", "e"], "relevance": np.array([1, 0, 2, 0], dtype=np.int64)}
    )
    run = pd.DataFrame({"query_id": ["q"] * 4, "doc_id": ["b", "a", "x", "c"], "rank": [1, 2, 3, 4]})
    ours = evaluate(run, qrels, ["P@3", "AP", "AP@3", "RR", "Rprec", "Bpref", "nDCG@2", "Success@1"]).loc["q"]
    assert ours["P@3"] == pytest.approx(1 / 3)
    assert ours["AP"] == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert ours["AP@3"] == pytest.approx((1 / 2) / 2)  # divided by R = 2, not min(k, R)
    assert ours["RR"] == pytest.approx(1 / 2)
    assert ours["Rprec"] == pytest.approx(1 / 2)
    assert ours["Bpref"] == pytest.approx(((1 - 1 / 2) + (1 - 1 / 2)) / 2)
    assert ours["nDCG@2"] == pytest.approx((1 / np.log2(3)) / (2 + 1 / np.log2(3)))
    assert ours["Success@1"] == 0.0
