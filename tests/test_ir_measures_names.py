"""ir_measures' spelling of a measure is accepted and means what ir_measures computes: each name's value on a small
graded fixture equals ir_measures' own (the package, with its pytrec_eval backend)."""

import ir_measures
import pandas as pd
import pytest

from rerankeval.eval.engine import evaluate
from rerankeval.eval.measures import parse_measure

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
