"""Answer and context measures on hand-computed cases (English and Korean), through the measure registry."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rerankeval.eval import parse_measure
from rerankeval.eval.engine import evaluate
from rerankeval.eval.measures.answers import exact_match, outcome, token_f1
from rerankeval.rag.answer_measures import rag_frame


def test_squad_rule_for_english():
    assert exact_match("the Denver Broncos!", "Denver Broncos") == 1.0  # articles and punctuation removed
    assert token_f1("Denver Broncos won", "Denver Broncos") == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))  # 0.8
    assert token_f1("Carolina", "Denver Broncos") == 0.0


def test_korquad_rule_for_korean_counts_characters():
    # Word tokens: [마쓰모토, 조지가] vs [마쓰모토, 조지] share one word (F1 0.5); characters share 6 of 7 and 6.
    assert token_f1("마쓰모토 조지가", "마쓰모토 조지") == pytest.approx(12 / 13)
    assert exact_match("마쓰모토  조지.", "마쓰모토 조지") == 1.0
    assert exact_match("마쓰모토 조지가", "마쓰모토 조지") == 0.0
    assert token_f1("《전쟁 포기》", "전쟁 포기") == 1.0  # KorQuAD's quote marks are removed


def test_outcomes():
    assert outcome(True, ["never"], "Never", False, False) == "correct"
    assert outcome(True, ["never retry"], "you must never retry it", False, False) == "boundary_partial"
    assert outcome(True, ["never"], "twice", False, False) == "incorrect_answer"
    assert outcome(True, ["never"], "cannot answer", True, False) == "false_refusal"
    assert outcome(False, [], "cannot answer", True, False) == "correct_refusal"
    assert outcome(False, [], "twice", False, False) == "incorrect_answer"
    assert outcome(False, [], "", False, True) == "failed"


QRELS = pd.DataFrame({"query_id": ["q1", "q1", "q1", "q2", "q3", "q4", "q4"],
                      "doc_id": ["a1", "b1", "a2", "a1", "b1", "a1", "b2"],
                      "relevance": [3, 2, 0, 0, 0, 2, 1]})
PARENTS = {"a1": "A", "a2": "A", "b1": "B", "b2": "B"}
QUERIES = pd.DataFrame({"query_id": ["q1", "q2", "q3", "q4"],
                        "answers": [["never retry", "never"], None, None, ["마쓰모토 조지"]],
                        "answerable": [True, False, False, True]})
# q1 answers from b1 (relevant) and a2 (judged 0); q2 (unanswerable) abstains; q3 (unanswerable) answers;
# q4 (Korean) answers with a particle, citing a1.
CONTEXT = pd.DataFrame({
    "query_id": ["q1", "q1", "q1", "q2", "q3", "q4", "q4"], "position": [1, 2, 3, 1, 1, 1, 2],
    "doc_id": ["b1", "a2", "x9", "a1", "b1", "a1", "a2"], "parent_id": ["B", "A", "X", "A", "B", "A", "A"],
    "redundant": [False, False, False, False, False, False, True],
    "near_duplicate": [False, False, True, False, False, False, False], "tokens": [10, 20, 5, 7, 7, 30, 30]})
ANSWERS = pd.DataFrame({
    "query_id": ["q1", "q2", "q3", "q4"], "answer": ["Never retry. It pays twice.", "cannot answer", "twice",
                                                     "마쓰모토 조지가"],
    "abstained": [False, True, False, False], "failed": [False] * 4, "citations": [["b1", "a2"], [], ["b1"], ["a1"]],
    "claims": [2, 0, 1, 1], "supported_claims": [1, 0, 1, 1], "prompt_tokens": [0, 0, 0, 0],
    "completion_tokens": [0, 0, 0, 0], "cost_usd": [0.0, 0.0, 0.0, 0.0]})

EXPECTED = {  # q1, q2, q3, q4
    "AnswerEM": [0, 1, 0, 0],
    "AnswerF1": [None, 1, 0, 12 / 13],  # q1: below
    "Abstained": [0, 1, 0, 0],
    "CorrectRefusal": [0, 1, 0, 0],
    "IncorrectAnswer": [0, 0, 1, 0],
    "BoundaryPartial": [1, 0, 0, 1],
    "AbstentionPrecision": [np.nan, 1, np.nan, np.nan],
    "AbstentionRecall": [np.nan, 1, 0, np.nan],
    "CitationPrecision": [1 / 2, np.nan, 0, 1],
    "CitationPrecision[rel=2]": [1 / 2, np.nan, 0, 1],
    "CitationRecall": [1, np.nan, np.nan, 1],
    "ClaimSupport": [1 / 2, np.nan, 1, 1],
    "UnsupportedAnswer": [1, 0, 0, 0],
    "EvidenceCoverage": [1 / 2, np.nan, np.nan, 1 / 2],
    "ParentCoverage": [1 / 2, np.nan, np.nan, 1 / 2],
    "ContextPrecision": [1 / 3, np.nan, np.nan, 1 / 2],
    "Redundancy": [0, 0, 0, 1 / 2],
    "NearDuplicates": [1 / 3, 0, 0, 0],
    "ContextTokens": [35, 7, 7, 60],
}
# q1's best gold is "never retry": prediction tokens [never, retry, it, pays, twice] share 2 -> P 2/5, R 1: F1 4/7.
EXPECTED["AnswerF1"][0] = 2 * (2 / 5) / (2 / 5 + 1)


def test_every_answer_and_context_measure_on_hand_computed_queries():
    frame = rag_frame(QUERIES, QRELS, PARENTS, CONTEXT, ANSWERS)
    run = CONTEXT[["query_id", "doc_id", "position"]].rename(columns={"position": "rank"})
    values = evaluate(run, QRELS, list(EXPECTED), queries=["q1", "q2", "q3", "q4"], no_relevant="zero",
                      sources={"rag": frame})
    for name, expected in EXPECTED.items():
        column = str(parse_measure(name))
        np.testing.assert_allclose(values[column].to_numpy(), expected, err_msg=name, equal_nan=True)


def test_measures_without_the_rag_input_say_what_is_missing():
    with pytest.raises(ValueError, match="need the rag input"):
        evaluate(QRELS.assign(rank=range(1, len(QRELS) + 1)), QRELS, ["AnswerF1"])
