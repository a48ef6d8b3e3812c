"""Every measure named as trec_eval's equals trec_eval (through pytrec_eval) on any TREC run:
tied scores, graded qrels with negative grades, unjudged documents, queries missing from the run.

pytrec_eval gets the raw scores, ties and all, and orders them itself (score as a 32-bit float
descending, then docno descending); the measures checked are every registered family's
declared trec_eval equivalent, at several cutoffs, with -l (rel) and -J (judged_only).
Judged, which trec_eval lacks, is checked against ir_measures on an explicit order.
"""

import ir_measures
import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from rerankeval.eval import Measure, families
from rerankeval.eval.engine import evaluate

QUERIES = ["q0", "q1", "q2", "q3"]
# Prefixes of one another, mixed case and lengths: docno order is byte order. The long ones share
# their first 16 bytes (the tie-break kernel's sort key), so only their later bytes order them.
LONG = "shared/prefix/16"
JUDGEABLE_DOCS = ["d0", "d1", "d10", "d2", "d2a", "D3", "e", LONG + "b", LONG + "ab"]
UNJUDGED_DOCS = ["u0", "u1", "d11", LONG + "a", LONG]
# Few distinct scores, so ties are common; 1.0 + 1e-9 ties with 1.0 as a 32-bit float, -0.0 with 0.0.
SCORES = [0.0, -0.0, 0.5, 1.0, 1.0 + 1e-9, 2.0, -1.5]
TOLERANCE = 1e-9


@st.composite
def collections(draw):
    """Graded qrels (-2 to 4, at least one grade >= 0 per query) and a run with tied scores, unjudged
    documents, queries missing from the run or from the qrels, and sometimes no rows at all."""
    qrels_rows = []
    for query in draw(st.lists(st.sampled_from(QUERIES), unique=True)):
        judged = draw(st.lists(st.sampled_from(JUDGEABLE_DOCS), unique=True, min_size=1))
        grades = [draw(st.integers(-2, 4)) for _ in judged]
        grades[0] = max(grades[0], 0)  # trec_eval reads uninitialised levels for a query judged only below 0
        qrels_rows += [(query, doc, grade) for doc, grade in zip(judged, grades)]
    run_rows = []
    for query in draw(st.lists(st.sampled_from([*QUERIES, "q_unjudged"]), unique=True)):
        docs = draw(st.lists(st.sampled_from(JUDGEABLE_DOCS + UNJUDGED_DOCS), unique=True, min_size=1))
        run_rows += [(query, doc, draw(st.sampled_from(SCORES))) for doc in docs]
    qrels = pd.DataFrame(qrels_rows, columns=["query_id", "doc_id", "relevance"])
    run = pd.DataFrame(run_rows, columns=["query_id", "doc_id", "score"])
    # Rows in any order, ids as Arrow strings or Python str objects: the kernels' every path.
    run = run.sample(frac=1, random_state=draw(st.integers(0, 2**16))).reset_index(drop=True)
    qrels = qrels.sample(frac=1, random_state=draw(st.integers(0, 2**16))).reset_index(drop=True)
    ids = draw(st.sampled_from(["str", "object"]))
    return (
        run.astype({"query_id": ids, "doc_id": ids, "score": "float64"}),
        qrels.astype({"query_id": ids, "doc_id": ids, "relevance": "int64"}),
    )


def trec_eval_ranks(run):
    """trec_eval's order spelled out with pandas: score as float32 descending, then doc_id descending."""
    ordered = run.assign(score32=run["score"].astype(np.float32) + np.float32(0.0)).sort_values(
        ["query_id", "score32", "doc_id"], ascending=[True, False, False])
    return ordered.assign(rank=ordered.groupby("query_id").cumcount() + 1)


def as_run_dict(run, value="score"):
    out = {}
    for query, doc, number in zip(run["query_id"], run["doc_id"], run[value]):
        out.setdefault(query, {})[doc] = float(number)
    return out


def as_qrels_dict(qrels):
    out = {}
    for query, doc, grade in zip(qrels["query_id"], qrels["doc_id"], qrels["relevance"]):
        out.setdefault(query, {})[doc] = int(grade)
    return out


def trec_eval(qrels, run_dict, names, rel, judged_only):
    """Per-query values of trec_eval measures for every qrels query; 0 where the run lacks the query."""
    evaluator = pytrec_eval.RelevanceEvaluator(
        as_qrels_dict(qrels), set(names), relevance_level=rel, judged_docs_only_flag=int(judged_only)
    )
    result = evaluator.evaluate(run_dict)
    return {name: {q: result.get(q, {}).get(name, 0.0) for q in qrels["query_id"].unique()} for name in names}


def trec_eval_named(cutoffs, rel, judged_only):
    """Every measure with a trec_eval equivalent under these options, from the registry (but for trec_eval 10's own,
    which pytrec_eval, 9.0.8, lacks: Unjudged's unj_k, checked by hand in tests/test_trec_eval_10.py)."""
    measures = []
    for family in families():
        if judged_only and "judged_only" not in family.parameters:
            continue
        if (family.trec_eval or family.trec_eval_uncut) not in pytrec_eval.supported_measures:
            continue
        params = {"rel": rel} if "rel" in family.parameters else {}
        if judged_only:
            params["judged_only"] = True
        for cutoff in ([None, *cutoffs] if family.takes_cutoff else [None]):
            measure = Measure(family.name, cutoff, **params)
            if measure.trec_eval is not None:
                measures.append(measure)
    return measures


def top_k_run(ranked, qrels, k, judged_only):
    """The run cut to its top k, after removing unjudged documents (and, as trec_eval -J does,
    negative grades) when judged_only: -J condenses the list first."""
    if judged_only:
        judged = set(zip(qrels.loc[qrels["relevance"] >= 0, "query_id"], qrels.loc[qrels["relevance"] >= 0, "doc_id"]))
        keep = np.array([pair in judged for pair in zip(ranked["query_id"], ranked["doc_id"])], dtype=bool)
        ranked = ranked[keep]
        ranked = ranked.assign(rank=ranked.groupby("query_id").cumcount() + 1)
    return ranked[ranked["rank"] <= k]


def assert_matches(ours, expected, measure):
    for query, value in expected.items():
        assert ours.loc[query, measure] == pytest.approx(value, abs=TOLERANCE), (measure, query)


def test_every_family_declares_its_trec_eval_equivalent():
    declared = {f.name: (f.trec_eval, f.trec_eval_uncut) for f in families() if f.trec_eval or f.trec_eval_uncut}
    assert declared == {
        "Success": ("success", None), "P": ("P", "set_P"), "R": ("recall", "set_recall"), "Rprec": ("Rprec", None),
        "RR": (None, "recip_rank"), "AP": ("map_cut", "map"), "nDCG": ("ndcg_cut", "ndcg"), "Bpref": ("bpref", None),
        "SetF": ("set_F", None), "SetAP": ("set_map", None), "Unjudged": ("unj", None),
    }
    assert Measure("nDCG", 10).trec_eval == "ndcg_cut_10"
    assert Measure("nDCG", 10, gain="exp").trec_eval is None


@settings(max_examples=200, deadline=None)
@given(collections(), st.lists(st.integers(1, 9), min_size=1, max_size=3, unique=True), st.integers(1, 3),
       st.booleans())
def test_agrees_with_trec_eval(data, cutoffs, rel, judged_only):
    run, qrels = data
    measures = trec_eval_named(cutoffs, rel, judged_only)
    ours = evaluate(run, qrels, measures, no_relevant="zero")
    assert list(ours.index) == sorted(qrels["query_id"].unique())
    # nDCG takes no rel: trec_eval's ndcg ignores -l, so one evaluator with -l rel serves all.
    expected = trec_eval(qrels, as_run_dict(run), [m.trec_eval for m in measures], rel, judged_only)
    for measure in measures:
        assert_matches(ours, expected[measure.trec_eval], str(measure))
    # trec_eval's recip_rank has no cutoff: RR@k is recip_rank of the list cut at k.
    ranked = trec_eval_ranks(run)
    for k in cutoffs:
        rr_at_k = Measure("RR", k, rel=rel, judged_only=judged_only)
        cut = as_run_dict(top_k_run(ranked, qrels, k, judged_only).assign(inverse=lambda f: -f["rank"]), "inverse")
        got = evaluate(run, qrels, [rr_at_k], no_relevant="zero")
        assert_matches(got, trec_eval(qrels, cut, ["recip_rank"], rel, False)["recip_rank"], str(rr_at_k))


@settings(max_examples=80, deadline=None)
@given(collections(), st.integers(1, 9))
def test_judged_agrees_with_ir_measures(data, k):
    """Judged is not in trec_eval; ir_measures' judged provider defines it."""
    run, qrels = data
    ours = evaluate(run, qrels, [f"Judged@{k}"])
    ranked = trec_eval_ranks(run)
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
