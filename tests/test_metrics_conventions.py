"""Hand-computed cases for what trec_eval lacks: exp gain, candidate IDCG, condensed lists, the oracle,
candidate recall and coverage, query selection, the tie-break rule, bad input."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from rerankeval.eval import matrix
from rerankeval.eval.engine import assign_ranks, evaluate, evaluate_matrix, oracle_run, oracle_values
from rerankeval.eval.matrix import TIE_BREAK_RULE, grade_matrix

D = np.log2  # discount: a document at rank i is divided by log2(i + 1)


def frame(rows, columns):
    out = pd.DataFrame(rows, columns=columns)
    return out.astype({c: "str" for c in ("query_id", "doc_id") if c in columns})


@pytest.fixture
def qrels():
    # q1: a=3, d=2 (never retrieved), c=1 relevant; b=0 and e=-1 judged non-relevant.
    # q2 has no relevant document; q3 has one but is absent from the run.
    return frame(
        [("q1", "a", 3), ("q1", "b", 0), ("q1", "c", 1), ("q1", "d", 2), ("q1", "e", -1),
         ("q2", "f", 0), ("q3", "h", 1)],
        ["query_id", "doc_id", "relevance"],
    )


@pytest.fixture
def run():
    # The reranker's order for q1: c, e, x (unjudged), a, b. Candidate (fused) order: a, b, x, c, e.
    return frame(
        [("q1", "c", 1, 4), ("q1", "e", 2, 5), ("q1", "x", 3, 3), ("q1", "a", 4, 1), ("q1", "b", 5, 2),
         ("q2", "f", 1, 1), ("q2", "g", 2, 2)],
        ["query_id", "doc_id", "rank", "fused_rank"],
    )


def values(run, qrels, *measures, **options):
    return evaluate(run, qrels, list(measures), **options).loc["q1"]


def test_gain_linear_and_exp(run, qrels):
    got = values(run, qrels, "DCG@4", "DCG@4[gain=exp]", "nDCG@4", "nDCG@4[gain=exp]")
    assert got["DCG@4"] == pytest.approx(1 + 3 / D(5))
    assert got["DCG@4[gain=exp]"] == pytest.approx(1 + 7 / D(5))
    assert got["nDCG@4"] == pytest.approx((1 + 3 / D(5)) / (3 + 2 / D(3) + 1 / D(4)))
    assert got["nDCG@4[gain=exp]"] == pytest.approx((1 + 7 / D(5)) / (7 + 3 / D(3) + 1 / D(4)))


def test_ideal_from_candidates_ignores_relevant_documents_never_retrieved(run, qrels):
    got = values(run, qrels, "nDCG@4[idcg=candidates]", "nDCG@4[gain=exp,idcg=candidates]", "nDCG[idcg=candidates]")
    # The candidates' grades sorted: 3 (a), 1 (c), 0, 0 (e's -1 gains nothing); d is not a candidate.
    assert got["nDCG@4[idcg=candidates]"] == pytest.approx((1 + 3 / D(5)) / (3 + 1 / D(3)))
    assert got["nDCG@4[gain=exp,idcg=candidates]"] == pytest.approx((1 + 7 / D(5)) / (7 + 1 / D(3)))
    assert got["nDCG[idcg=candidates]"] == pytest.approx((1 + 3 / D(5)) / (3 + 1 / D(3)))


def test_judged_only_scores_the_condensed_list(run, qrels):
    got = values(run, qrels, "P@3", "P@3[judged_only=true]", "RR[rel=2]", "RR[rel=2,judged_only=true]",
                 "nDCG@3[judged_only=true]", "P[judged_only=true]")
    # Without x (unjudged) and e (grade -1, which trec_eval -J also removes) the list reads c, a, b.
    assert got["P@3"] == pytest.approx(1 / 3)
    assert got["P@3[judged_only=true]"] == pytest.approx(2 / 3)
    assert got["RR[rel=2]"] == pytest.approx(1 / 4)
    assert got["RR[rel=2,judged_only=true]"] == pytest.approx(1 / 2)
    assert got["nDCG@3[judged_only=true]"] == pytest.approx((1 + 3 / D(3)) / (3 + 2 / D(3) + 1 / D(4)))
    assert got["P[judged_only=true]"] == pytest.approx(2 / 3)


def test_negative_grades_are_non_relevant_judged_and_skipped_by_bpref(run, qrels):
    got = values(run, qrels, "Judged@3", "Judged", "Judged@10", "Bpref", "P@2")
    assert got["Judged@3"] == pytest.approx(2 / 3)  # c, e judged; x not
    assert got["Judged"] == pytest.approx(4 / 5)
    assert got["Judged@10"] == pytest.approx(4 / 5)  # divided by the 5 documents shown, not by 10
    # R = 3 (a, c, d); bpref skips e (grade -1) as trec_eval does, so N = 1 (b) and b is below both
    # retrieved relevant documents.
    assert got["Bpref"] == pytest.approx((1 + 1) / 3)
    assert got["P@2"] == pytest.approx(1 / 2)


def test_candidate_recall_and_coverage_read_the_fused_order(run, qrels):
    got = values(run, qrels, "CandidateRecall@1[rel=2]", "Success@1[rel=2]", "CandidateRecall@1[rel=4]",
                 "Coverage@1", "Coverage@3", "Coverage@4", "Coverage@100", "CandidateRecall")
    assert got["CandidateRecall@1[rel=2]"] == 1.0  # a is the first candidate...
    assert got["Success@1[rel=2]"] == 0.0  # ...but the reranker put c (grade 1) first
    assert got["CandidateRecall@1[rel=4]"] == 0.0
    assert got["Coverage@1"] == pytest.approx(1 / 3)
    assert got["Coverage@3"] == pytest.approx(1 / 3)
    assert got["Coverage@4"] == pytest.approx(2 / 3)
    assert got["Coverage@100"] == pytest.approx(2 / 3)  # d was never a candidate
    assert got["CandidateRecall"] == 1.0


def test_oracle_orders_by_grade_then_original_rank(run, qrels):
    oracle = oracle_run(run, qrels)
    q1 = oracle[oracle["query_id"] == "q1"].sort_values("rank")
    # b and x tie at grade 0 (unjudged counts as 0): fused rank 2 before 3.
    assert q1["doc_id"].tolist() == ["a", "c", "b", "x", "e"]
    assert q1["rank"].tolist() == [1, 2, 3, 4, 5]
    assert oracle[oracle["query_id"] == "q2"].sort_values("rank")["doc_id"].tolist() == ["f", "g"]


def test_oracle_ndcg_is_below_one_when_a_relevant_document_is_out_of_reach(run, qrels):
    best = oracle_values(run, qrels, ["nDCG@4", "nDCG@4[idcg=candidates]", "RR", "P@1"]).loc["q1"]
    assert best["nDCG@4"] == pytest.approx((3 + 1 / D(3)) / (3 + 2 / D(3) + 1 / D(4)))
    assert best["nDCG@4"] < 1
    assert best["nDCG@4[idcg=candidates]"] == pytest.approx(1.0)
    assert best["RR"] == best["P@1"] == 1.0


def test_oracle_without_fused_rank_breaks_grade_ties_by_the_runs_own_rank(qrels):
    candidates = frame([("q1", "x", 2.0), ("q1", "b", 3.0), ("q1", "a", 1.0)], ["query_id", "doc_id", "score"])
    # b and x both count as grade 0; b scored higher, so it ranked first.
    assert oracle_run(candidates, qrels)["doc_id"].tolist() == ["a", "b", "x"]


def test_queries_without_relevant_documents_are_dropped_or_zero(run, qrels):
    dropped = evaluate(run, qrels, ["nDCG@4", "Judged@2"])
    zeroed = evaluate(run, qrels, ["nDCG@4", "Judged@2"], no_relevant="zero")
    assert dropped.index.tolist() == ["q1", "q3"]
    assert zeroed.index.tolist() == ["q1", "q2", "q3"]
    assert zeroed.loc["q2"].tolist() == [0.0, 0.0]  # every measure, Judged included
    assert dropped.loc["q3"].tolist() == [0.0, 0.0]  # in the qrels, absent from the run
    assert (dropped.dtypes == np.float64).all()
    assert dropped.index.name == "query_id"


def test_explicit_queries_are_evaluated_even_when_missing_everywhere(run, qrels):
    got = evaluate(run, qrels, ["RR"], queries=["q9", "q3", "q1", "q2"], no_relevant="zero")
    assert got.index.tolist() == ["q1", "q2", "q3", "q9"]
    assert got["RR"].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert evaluate(run, qrels, ["RR"], queries=["q9", "q1"]).index.tolist() == ["q1"]


def test_tie_break_rule_is_trec_evals_score_then_doc_id_descending():
    assert TIE_BREAK_RULE.startswith("rank ascending when the run has a rank column; otherwise score descending")
    scored = frame([("q", "a", 1.0, 3), ("q", "c", 2.0, 4), ("q", "d", 1.0, 2), ("q", "b", 1.0, 1)],
                   ["query_id", "doc_id", "score", "fused_rank"])
    # fused_rank plays no part: trec_eval sees scores and doc ids only.
    assert assign_ranks(scored).sort_values("rank")["doc_id"].tolist() == ["c", "d", "b", "a"]
    assert (assign_ranks(scored.drop(columns="fused_rank")).sort_values("rank")["doc_id"].tolist()
            == ["c", "d", "b", "a"])
    qrels = frame([("q", "b", 1)], ["query_id", "doc_id", "relevance"])
    assert evaluate(scored, qrels, ["RR"]).loc["q", "RR"] == pytest.approx(1 / 3)


def test_a_rank_column_wins_over_scores():
    run = frame([("q", "a", 1, 0.0), ("q", "b", 2, 9.0)], ["query_id", "doc_id", "rank", "score"])
    qrels = frame([("q", "a", 1)], ["query_id", "doc_id", "relevance"])
    assert evaluate(run, qrels, ["RR"]).loc["q", "RR"] == 1.0


def test_row_order_of_the_run_does_not_matter():
    rng = np.random.default_rng(7)
    rows = [(f"q{q}", f"d{d}", float(rng.integers(0, 4)), d + 1) for q in range(30) for d in range(rng.integers(1, 12))]
    run = frame(rows, ["query_id", "doc_id", "score", "fused_rank"])
    qrels = frame([(f"q{q}", f"d{d}", int(rng.integers(0, 4))) for q in range(30) for d in range(0, 15, 2)],
                  ["query_id", "doc_id", "relevance"])
    measures = ["nDCG@5", "AP", "RR@3", "Bpref", "Judged@4", "CandidateRecall@3", "P@5[judged_only=true]"]
    shuffled = run.sample(frac=1, random_state=3).reset_index(drop=True)
    pd.testing.assert_frame_equal(evaluate(shuffled, qrels, measures), evaluate(run, qrels, measures))


@pytest.mark.filterwarnings("error")
def test_grades_beyond_int8_are_kept():
    qrels = frame([("q", "a", 200), ("q", "b", 100)], ["query_id", "doc_id", "relevance"])
    ranked = frame([("q", "b", 1), ("q", "a", 2)], ["query_id", "doc_id", "rank"])
    got = evaluate(ranked, qrels, ["nDCG", "nDCG[gain=exp]"]).loc["q"]
    assert got["nDCG"] == pytest.approx((100 + 200 / D(3)) / (200 + 100 / D(3)))
    exp = 2.0**200 - 1, 2.0**100 - 1
    assert got["nDCG[gain=exp]"] == pytest.approx((exp[1] + exp[0] / D(3)) / (exp[0] + exp[1] / D(3)))


def test_the_prebuilt_matrix_gives_what_evaluate_gives(run, qrels):
    measures = ["nDCG@4", "AP", "CandidateRecall@2"]
    matrix = grade_matrix(run, qrels, no_relevant="zero", candidate_order=True)
    pd.testing.assert_frame_equal(evaluate_matrix(matrix, measures), evaluate(run, qrels, measures, no_relevant="zero"))


def test_duplicate_measures_give_one_column(run, qrels):
    assert evaluate(run, qrels, ["MRR@10", "RR@10", "nDCG@3"]).columns.tolist() == ["RR@10", "nDCG@3"]


def test_empty_run_scores_zero(qrels):
    empty = frame([], ["query_id", "doc_id", "score"]).astype({"score": "float64"})
    got = evaluate(empty, qrels, ["nDCG@10", "AP", "Judged@5", "Bpref"])
    assert got.index.tolist() == ["q1", "q3"]
    assert (got.to_numpy() == 0).all()


# ---------------------------------------------------------------------------------------------
# Bad input


def raises(match, run, qrels, measures=("nDCG@10",), **options):
    with pytest.raises(ValueError, match=match):
        evaluate(run, qrels, list(measures), **options)


GOOD_QRELS = frame([("q1", "a", 1)], ["query_id", "doc_id", "relevance"])


def test_duplicate_pairs_in_the_run_name_the_first_pair():
    run = frame([("q1", "a", 1.0), ("q1", "b", 0.5), ("q2", "a", 0.1), ("q1", "a", 0.2)],
                ["query_id", "doc_id", "score"])
    raises(r"duplicate \(query_id, doc_id\) rows in run: \('q1', 'a'\) repeats at row 3", run, GOOD_QRELS)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_scores_are_rejected_with_their_row(bad):
    run = frame([("q1", "a", 1.0), ("q1", "b", bad)], ["query_id", "doc_id", "score"])
    raises(rf"non-finite score \({bad}\) at row 1 \(query_id 'q1', doc_id 'b'\)", run, GOOD_QRELS)


def test_duplicate_ranks_name_query_and_documents():
    run = frame([("q1", "a", 1), ("q1", "b", 2), ("q2", "c", 1), ("q1", "d", 2)], ["query_id", "doc_id", "rank"])
    raises(r"duplicate rank 2 in query 'q1' \(doc_ids 'b' and 'd'\)", run, GOOD_QRELS)


def test_ranks_start_at_one():
    run = frame([("q1", "a", 0), ("q1", "b", 1)], ["query_id", "doc_id", "rank"])
    raises(r"'rank' must be >= 1 \(1 = top\), got 0 at row 0", run, GOOD_QRELS)


def test_candidate_measures_need_a_tie_free_fused_rank():
    run = frame([("q1", "a", 1), ("q1", "b", 2)], ["query_id", "doc_id", "rank"])
    raises("CandidateRecall and Coverage need the run's fused_rank column", run, GOOD_QRELS, ["Coverage@10"])
    tied = run.assign(fused_rank=[3, 3])
    raises(r"duplicate fused_rank 3 in query 'q1'", tied, GOOD_QRELS, ["CandidateRecall@10"])


def test_missing_columns_and_wrong_types_are_named():
    raises("run needs a rank or a score column", frame([("q1", "a")], ["query_id", "doc_id"]), GOOD_QRELS)
    raises("qrels lacks column\\(s\\) relevance", frame([("q1", "a", 1)], ["query_id", "doc_id", "rank"]),
           GOOD_QRELS.drop(columns="relevance"))
    numeric_ids = pd.DataFrame({"query_id": [1], "doc_id": ["a"], "rank": [1]})
    raises(r"run column 'query_id' must hold strings, got dtype int64", numeric_ids, GOOD_QRELS)
    float_grades = GOOD_QRELS.astype({"relevance": "float64"})
    raises("qrels column 'relevance' must hold integers", frame([("q1", "a", 1)], ["query_id", "doc_id", "rank"]),
           float_grades)
    raises("run column 'score' must hold numbers", frame([("q1", "a", "high")], ["query_id", "doc_id", "score"]),
           GOOD_QRELS)
    raises("run column 'doc_id' has a missing value at row 1",
           pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", None], "rank": [1, 2]}), GOOD_QRELS)


def test_duplicate_judgments_are_rejected():
    qrels = frame([("q1", "a", 1), ("q1", "a", 2)], ["query_id", "doc_id", "relevance"])
    raises(r"duplicate \(query_id, doc_id\) rows in qrels: \('q1', 'a'\) repeats at row 1",
           frame([("q1", "a", 1)], ["query_id", "doc_id", "rank"]), qrels)


def test_bad_options_are_rejected():
    run = frame([("q1", "a", 1)], ["query_id", "doc_id", "rank"])
    raises("no_relevant must be one of drop, zero, got 'skip'", run, GOOD_QRELS, no_relevant="skip")
    raises("queries must be strings, got 1", run, GOOD_QRELS, queries=[1])
    raises("unknown measure 'nDGC'", run, GOOD_QRELS, ["nDGC@10"])
    too_high = GOOD_QRELS.assign(relevance=[5000])
    raises("gain=exp overflows for grades above 1023", run, too_high, ["nDCG@10[gain=exp]"])


# ---------------------------------------------------------------------------------------------
# How the grade matrix is built must not show in the results


def random_collection(seed, n_queries=40, doc_id="doc-{}"):
    """A shuffled run with tied scores, fused ranks and uneven lists; qrels in another query order."""
    rng = np.random.default_rng(seed)
    run_rows, qrels_rows = [], []
    for q in range(n_queries):
        for d in rng.choice(60, int(rng.integers(1, 15)), replace=False):
            run_rows.append((f"q{q}", doc_id.format(d), float(rng.integers(0, 5)), int(d) + 1))
        for d in rng.choice(60, int(rng.integers(0, 8)), replace=False):
            qrels_rows.append((f"q{(q * 7) % n_queries}", doc_id.format(d), int(rng.integers(0, 4))))
    run = frame(run_rows, ["query_id", "doc_id", "score", "fused_rank"])
    qrels = frame(qrels_rows, ["query_id", "doc_id", "relevance"])
    return run.sample(frac=1, random_state=seed).reset_index(drop=True), qrels


MEASURES = ["nDCG@5", "AP", "RR@3", "Bpref", "Judged@4", "P@5[judged_only=true]", "CandidateRecall@3"]


def chunked(column):
    values = column.tolist()
    cut = len(values) // 3
    parts = [pa.array(part, type=pa.large_string()) for part in (values[:cut], values[cut:2 * cut], values[2 * cut:])]
    return pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array(parts)), dtype="str")


def sliced(column):
    """The column as an Arrow array that starts one row into its buffers (a nonzero offset)."""
    values = pa.array(["padding", *column.tolist()], type=pa.large_string())
    return pd.Series(pd.arrays.ArrowStringArray(values.slice(1)), dtype="str")


CONVERSIONS = {
    "category": lambda column: column.astype("category"),
    "object": lambda column: column.astype(object),
    "python": lambda column: column.astype(pd.StringDtype("python")),
    "arrow_string": lambda column: column.astype(pd.ArrowDtype(pa.string())),  # 32-bit offsets
    "chunked": chunked,
    "sliced": sliced,
}


@pytest.mark.parametrize("doc_id", ["doc-{}", "문서-{}-é"])  # ASCII; Korean and accented
@pytest.mark.parametrize("layout", [*CONVERSIONS, "grouped"])
def test_input_layouts_give_identical_results(layout, doc_id):
    run, qrels = random_collection(1, doc_id=doc_id)
    expected = evaluate(run, qrels, MEASURES, no_relevant="zero")
    if layout == "grouped":
        run = run.sort_values("query_id", kind="stable").reset_index(drop=True)
        qrels = qrels.sort_values(["query_id", "doc_id"]).reset_index(drop=True)
    else:
        convert = CONVERSIONS[layout]
        run = run.assign(query_id=convert(run["query_id"]), doc_id=convert(run["doc_id"]))
        qrels = qrels.assign(query_id=convert(qrels["query_id"]), doc_id=convert(qrels["doc_id"]))
    pd.testing.assert_frame_equal(evaluate(run, qrels, MEASURES, no_relevant="zero"), expected)


def test_ties_break_by_utf8_bytes_in_every_layout():
    # trec_eval's strcmp: byte order of the UTF-8 ids, which is code-point order ("가" > "z" > "Z").
    run = frame([("q", "Z", 1.0), ("q", "가", 1.0), ("q", "z", 1.0), ("q", "za", 1.0)],
                ["query_id", "doc_id", "score"])
    for convert in CONVERSIONS.values():
        ranked = assign_ranks(run.assign(doc_id=convert(run["doc_id"])))
        assert ranked.sort_values("rank")["doc_id"].astype(str).tolist() == ["가", "za", "z", "Z"]


@pytest.mark.parametrize("column", ["query_id", "doc_id"])
def test_object_columns_with_a_value_that_is_not_a_string_are_named(column):
    run = frame([("q1", "a", 1), ("q1", "b", 2), ("q1", "c", 3)], ["query_id", "doc_id", "rank"]).astype(object)
    run[column] = run[column].astype(object)
    number = run.copy()
    number.loc[2, column] = 7
    raises(rf"run column '{column}' must hold strings, got int 7 at row 2; convert it with run\['{column}'\]"
           r"\.astype\(str\)", number, GOOD_QRELS)
    missing = run.copy()
    missing.loc[1, column] = None
    raises(rf"run column '{column}' has a missing value at row 1", missing, GOOD_QRELS)
    qrels = GOOD_QRELS.astype({column: object})
    qrels.loc[0, column] = float("nan")
    raises(rf"qrels column '{column}' has a missing value at row 0", run, qrels)
    listed = run.copy()
    listed[column] = pd.Series([run[column].iloc[0], ["q1", "b"], run[column].iloc[2]], dtype=object)
    raises(rf"run column '{column}' must hold strings, got list \['q1', 'b'\] at row 1", listed, GOOD_QRELS)


def test_the_kernels_refuse_a_buffer_of_another_layout():
    # An int64 array passed as the object array would be read as pointers: refused, not dereferenced.
    for column in [(2, np.zeros(3, dtype=np.int64)), (0, np.zeros(4, dtype=np.int64), np.zeros(1, dtype=np.uint8)),
                   (1, np.zeros(4, dtype=np.int32), np.zeros(1, dtype=np.uint8)), (3, np.zeros(3, dtype=object))]:
        with pytest.raises(ValueError, match="column: \\(0, int32 offsets, data\\)"):
            matrix._strings.sort_keys(column, np.empty((4, 2), dtype=np.uint64), None)


@pytest.mark.parametrize("layout", ["str", "object"])
@pytest.mark.parametrize("shuffled", [False, True])
@pytest.mark.parametrize("judged", [["d2"], ["d2", "d4"]])  # one candidate judgment per run row; two
def test_an_equal_hash_is_no_judgment_until_the_bytes_agree(monkeypatch, judged, shuffled, layout):
    # The join records a run row's judgment on equal hashes and confirms the bytes afterwards: with
    # every id hashing to 0, no run document here is judged, and its grades must say so.
    monkeypatch.setattr(matrix, "_HASH_MASK", 0)
    run = frame([("q2", "d9", 1.0), ("q1", "d1", 1.0), ("q2", "d2", 0.9), ("q1", "d3", 0.5)],
                ["query_id", "doc_id", "score"])
    qrels = frame([("q1", doc, 1) for doc in judged] + [("q2", "d2", 1)], ["query_id", "doc_id", "relevance"])
    if not shuffled:
        run = run.sort_values("query_id", kind="stable").reset_index(drop=True)
    run, qrels = (f.astype({"query_id": layout, "doc_id": layout}) for f in (run, qrels))
    values = evaluate(run, qrels, ["nDCG@10", "P@2"])
    assert values.loc["q1"].tolist() == [0.0, 0.0]
    assert values.loc["q2", "P@2"] == 0.5  # d2 is judged in q2


@pytest.mark.parametrize("layout", ["str", "object"])
@pytest.mark.parametrize("doc_id", ["doc-{}", "document{:04d}"])  # of varying length; of one length
def test_hash_collisions_change_nothing(monkeypatch, doc_id, layout):
    run, qrels = random_collection(2, doc_id=doc_id)
    run, qrels = (frame.astype({"query_id": layout, "doc_id": layout}) for frame in (run, qrels))
    expected = evaluate(run, qrels, MEASURES)
    # Every query and document id then hashes to 0: only the byte comparisons tell them apart.
    monkeypatch.setattr(matrix, "_HASH_MASK", 0)
    pd.testing.assert_frame_equal(evaluate(run, qrels, MEASURES), expected)
    repeated = pd.concat([run, run.iloc[[5]]], ignore_index=True)
    pair = (run["query_id"].iloc[5], run["doc_id"].iloc[5])
    raises(rf"duplicate \(query_id, doc_id\) rows in run: \('{pair[0]}', '{pair[1]}'\) repeats at row {len(run)}",
           repeated, qrels)


def test_doc_ids_that_differ_only_by_trailing_nul_bytes_are_distinct():
    run = frame([("q", "a", 3.0), ("q", "a\x00", 2.0), ("q", "", 1.0), ("q", "\x00", 0.5)],
                ["query_id", "doc_id", "score"])
    qrels = frame([("q", "a\x00", 1), ("q", "\x00", 2)], ["query_id", "doc_id", "relevance"])
    got = evaluate(run, qrels, ["RR", "P@4", "DCG@4"]).loc["q"]
    assert got["RR"] == pytest.approx(1 / 2)
    assert got["P@4"] == pytest.approx(2 / 4)
    assert got["DCG@4"] == pytest.approx(1 / D(3) + 2 / D(5))


def test_one_query_with_many_judgments():
    # The qrels' widest query is far wider than the rest.
    run = frame([("big", f"d{i}", float(-i)) for i in range(10)] + [(f"s{q}", "x", 1.0) for q in range(300)],
                ["query_id", "doc_id", "score"])
    judged = [("big", "d0", 1), ("big", "d3", 2)] + [("big", f"n{i}", 0) for i in range(5000)]
    qrels = frame(judged + [(f"s{q}", "x", 1) for q in range(300)], ["query_id", "doc_id", "relevance"])
    got = evaluate(run, qrels, ["P@5", "RR", "Judged@10"])
    assert got.loc["big"].tolist() == pytest.approx([2 / 5, 1.0, 2 / 10])
    assert (got.drop(index="big")["P@5"] == 1 / 5).all()
    repeated = pd.concat([qrels, qrels.iloc[[4000]]], ignore_index=True)
    raises(rf"duplicate \(query_id, doc_id\) rows in qrels: \('big', 'n3998'\) repeats at row {len(qrels)}",
           run, repeated)


def test_scores_are_compared_as_32_bit_floats_like_trec_eval():
    # Doubles equal as float32 tie (0.0 and -0.0 too), broken by doc_id descending; float32
    # neighbours (h just below 1) do not.
    below_one = float(np.nextafter(np.float32(1.0), np.float32(0.0)))
    scored = frame([("q", "b", 0.0), ("q", "a", -0.0), ("q", "c", np.nextafter(0.0, 1.0)), ("q", "d", 1.0),
                    ("q", "e", np.nextafter(1.0, 0.0)), ("q", "f", -1.0), ("q", "g", np.nextafter(-1.0, 0.0)),
                    ("q", "h", below_one)],
                   ["query_id", "doc_id", "score"])
    ranked = assign_ranks(scored).sort_values("rank")["doc_id"].tolist()
    assert ranked == ["e", "d", "h", "c", "b", "a", "g", "f"]
    qrels = frame([("q", "b", 1)], ["query_id", "doc_id", "relevance"])
    assert evaluate(scored, qrels, ["RR"]).loc["q", "RR"] == pytest.approx(1 / 5)


def test_ranks_of_any_size():
    run = frame([("q", "a", 2**62), ("q", "b", 2**60), ("q", "c", 2**62 + 1)], ["query_id", "doc_id", "rank"])
    qrels = frame([("q", "a", 1)], ["query_id", "doc_id", "relevance"])
    assert evaluate(run, qrels, ["RR"]).loc["q", "RR"] == pytest.approx(1 / 2)
    raises(r"duplicate rank 4611686018427387904 in query 'q' \(doc_ids 'a' and 'c'\)",
           run.assign(rank=[2**62, 2**60, 2**62]), qrels)
