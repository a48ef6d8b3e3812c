"""ir_measures' spelling of a measure is accepted and means what ir_measures computes: each name's value on a small
graded fixture equals ir_measures' own (the package, with its pytrec_eval backend)."""

import ir_measures
import pandas as pd
import pytest

from rerankeval.eval.engine import evaluate
from rerankeval.eval.measures import Measure, parse_measure

QRELS = pd.DataFrame({"query_id": ["q1"] * 4 + ["q2"] * 3, "doc_id": ["a", "b", "c", "d", "a", "e", "f"],
                      "relevance": [2, 1, 0, 1, 1, 2, 0]})
RUN = pd.DataFrame({"query_id": ["q1"] * 5 + ["q2"] * 4, "doc_id": ["b", "x", "a", "c", "d", "f", "a", "e", "y"],
                    "score": [5.0, 4.0, 3.0, 2.0, 1.0, 4.0, 3.0, 2.0, 1.0]})
NAMES = ["RR(rel=2)@10", "AP(rel=2)", "nDCG@10", "P(rel=2)@5", "R@5", "P@3", "AP", "Judged@5"]


@pytest.mark.parametrize("name", NAMES)
def test_an_ir_measures_name_gives_ir_measures_value(name):
    ours = evaluate(RUN, QRELS, [parse_measure(name)], queries=["q1", "q2"])
    expected = ir_measures.calc_aggregate(
        [ir_measures.parse_measure(name)],
        [ir_measures.Qrel(r.query_id, r.doc_id, int(r.relevance)) for r in QRELS.itertuples()],
        [ir_measures.ScoredDoc(r.query_id, r.doc_id, r.score) for r in RUN.itertuples()])
    assert ours.iloc[:, 0].mean() == pytest.approx(list(expected.values())[0], abs=1e-9)


def test_ir_measures_exp_gain_is_rerankevals_and_its_default_dcg_the_linear_one():
    # ir_measures computes dcg='exp-log2' with a trec_eval binary this machine does not run: the name is checked
    assert parse_measure("nDCG(dcg='exp-log2')@10") == parse_measure("nDCG@10[gain=exp]")  # 2^rel - 1, as ours
    assert parse_measure("nDCG(dcg='log2')@10") == parse_measure("nDCG@10")


def test_an_ir_measures_parameter_rerankeval_lacks_is_refused_by_name():
    with pytest.raises(ValueError, match=r"ir_measures parameter 'gains=\{0:1\}' .* has no rerankeval equivalent"):
        parse_measure("nDCG(gains={0:1})@10")


NO_PROVIDER_HERE = {"nDCG(dcg='exp-log2')@5", "nDCG(dcg='exp-log2')", "RR(judged_only=True)@5"}
"""ir_measures names what no provider computes here (exp-log2 goes to gdeval.pl, which fails on this machine; no
provider takes RR's judged_only): their spelling is checked, their value is not."""


def measures_ir_measures_has():
    """Each family ir_measures shares, plain and with every parameter ir_measures takes for it."""
    from rerankeval.eval.measures.base import IR_MEASURES_FAMILIES, IR_MEASURES_UNCUT

    changed = {"rel": {"rel": 2}, "judged_only": {"judged_only": True}, "gain": {"gain": "exp"}}
    for name, takes in IR_MEASURES_FAMILIES.items():
        for cutoff in (5, None) if Measure(name).family.takes_cutoff else (None,):
            if cutoff is None and name in IR_MEASURES_UNCUT:
                takes = (IR_MEASURES_UNCUT[name] or (None, ()))[1]
                if not IR_MEASURES_UNCUT[name]:
                    continue  # no ir_measures name: tested below
            yield Measure(name, cutoff)
            for param in takes:
                yield Measure(name, cutoff, **changed[param])


@pytest.mark.parametrize("measure", list(measures_ir_measures_has()), ids=str)
def test_each_measure_is_written_in_ir_measures_spelling_that_computes_its_value(measure):
    from rerankeval.eval.measures import ir_measures_name

    name = ir_measures_name(measure)
    assert parse_measure(name) == measure  # it reads back as itself
    theirs = ir_measures.parse_measure(name)
    assert str(theirs) == name  # ir_measures reads it as written
    qrels = [ir_measures.Qrel(r.query_id, r.doc_id, int(r.relevance)) for r in QRELS.itertuples()]
    run = [ir_measures.ScoredDoc(r.query_id, r.doc_id, r.score) for r in RUN.itertuples()]
    if name in NO_PROVIDER_HERE:
        with pytest.raises(Exception):  # still true here, or this test would compare the value
            ir_measures.calc_aggregate([theirs], qrels, run)
        return
    ours = evaluate(RUN, QRELS, [measure], queries=["q1", "q2"])
    assert ours.iloc[:, 0].mean() == pytest.approx(ir_measures.calc_aggregate([theirs], qrels, run)[theirs],
                                                   abs=1e-9)


@pytest.mark.parametrize("text", ["nDCG@10[idcg=candidates]", "DCG@10", "CandidateRecall@10", "AnswerF1", "Success",
                                  "R[judged_only=true]"])
def test_a_measure_ir_measures_lacks_has_no_ir_measures_name(text):
    from rerankeval.eval.measures import ir_measures_name

    assert ir_measures_name(parse_measure(text)) is None
