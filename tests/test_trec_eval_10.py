"""trec_eval 10's behaviours that 9.0.8 (pytrec_eval) lacks or does differently, through `rerankeval trec_eval`:
its ties, its set measures and geometric means, unj_k and -n. Each fixture says where its expected value comes from:
pytrec_eval (trec_eval 9.0.8's code) where the two versions agree and pytrec_eval has the measure, by hand where not."""

import math

import pytest

from test_cli_evaluate import parse, rerankeval

pytrec_eval = pytest.importorskip("pytrec_eval")

QRELS = {"q1": {"a": 1, "b": 0, "c": 2, "d": 1}, "q2": {"x": 1, "y": 0}, "q3": {"z": 1}}
RUN = {"q1": {"a": 3.0, "b": 2.0, "e": 1.0, "c": 0.5}, "q2": {"y": 2.0, "w": 1.0}, "q3": {"z": 1.0}}


def write(tmp_path, qrels, run):
    (tmp_path / "q.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    (tmp_path / "r.txt").write_text("".join(f"{q} Q0 {d} 0 {s!r} r\n" for q, docs in run.items()
                                            for d, s in docs.items()))
    return tmp_path / "q.txt", tmp_path / "r.txt"


def test_ties_follow_the_version_asked(tmp_path):
    """a (relevant) scores 1 + 1e-9, b (not) scores 1: equal as 32-bit floats, so 9.0.8 breaks the tie by doc id
    descending (b first: P_1 = 0, as pytrec_eval says); 10.0 compares doubles (a first: P_1 = 1, by hand)."""
    qrels, run = {"q1": {"a": 1, "b": 0}}, {"q1": {"a": 1.0 + 1e-9, "b": 1.0}}
    files = write(tmp_path, qrels, run)
    expected_908 = pytrec_eval.RelevanceEvaluator(qrels, {"P.1"}).evaluate(run)["q1"]["P_1"]
    assert expected_908 == 0.0
    assert parse(rerankeval("trec_eval", "-m", "P.1", "--trec-eval-version", "9.0.8", *files).stdout)[
        "P_1", "all"] == expected_908
    assert parse(rerankeval("trec_eval", "-m", "P.1", *files).stdout)["P_1", "all"] == 1.0  # 10.0, the default
    # the file's rank column is ignored by both, as trec_eval ignores it
    (tmp_path / "r.txt").write_text("q1 Q0 b 1 1.0 r\nq1 Q0 a 2 1.000000001 r\n")
    assert parse(rerankeval("trec_eval", "-m", "P.1", *files).stdout)["P_1", "all"] == 1.0


def test_set_measures_and_geometric_means_equal_pytrec_eval(tmp_path):
    """q2 retrieves nothing relevant (set_F 0, AP 0 -> gm_map's floor 1e-5); the versions agree on these."""
    files = write(tmp_path, QRELS, RUN)
    names = ("set_F", "set_map", "gm_map", "gm_bpref", "set_P", "set_recall")
    expected = pytrec_eval.RelevanceEvaluator(QRELS, set(names)).evaluate(RUN)
    found = parse(rerankeval("trec_eval", "-q", *(f"-m{name}" for name in names), *files).stdout)
    for name in names:
        for query in QRELS:
            assert found[name, query] == pytest.approx(expected[query][name], abs=5e-5), (name, query)
        summary = pytrec_eval.compute_aggregated_measure(name, [expected[q][name] for q in QRELS])
        assert found[name, "all"] == pytest.approx(summary, abs=5e-5), name
    assert found["gm_map", "q2"] == pytest.approx(math.log(1e-5), abs=5e-5)


def test_unj_k_divides_by_k_and_counts_a_negative_grade_as_unjudged(tmp_path):
    """By hand (pytrec_eval, 9.0.8, has no unj): q1 ranks a (1), n (-1), u (unjudged); unj_2 = 1/2 (n), unj_5 =
    2/5 (n and u over 5 places, the list being 3 long)."""
    files = write(tmp_path, {"q1": {"a": 1, "n": -1}}, {"q1": {"a": 3.0, "n": 2.0, "u": 1.0}})
    found = parse(rerankeval("trec_eval", "-m", "unj.2,5", *files).stdout)
    assert (found["unj_2", "all"], found["unj_5", "all"]) == (0.5, 0.4)
    # without a cutoff, over each query's own list (2 of q1's 3; q2's 1 of 1), not the longest list's length
    from rerankeval.eval.engine import evaluate
    import pandas as pd
    run = pd.DataFrame({"query_id": ["q1"] * 3 + ["q2"], "doc_id": ["a", "n", "u", "v"], "score": [3.0, 2.0, 1.0, 1.0]})
    qrels = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "n", "w"], "relevance": [1, -1, 1]})
    assert evaluate(run, qrels, ["Unjudged"], no_relevant="zero")["Unjudged"].tolist() == [2 / 3, 1.0]


def test_n_prints_no_summary(tmp_path):
    files = write(tmp_path, QRELS, RUN)
    lines = rerankeval("trec_eval", "-q", "-n", "-m", "map", *files).stdout.splitlines()
    assert [line.split("\t")[1] for line in lines] == ["q1", "q2", "q3"]
    assert rerankeval("trec_eval", "-n", "-m", "map", *files).stdout.strip() == ""


def test_the_measure_sets_compute_what_they_name(tmp_path):
    files = write(tmp_path, QRELS, RUN)
    result = rerankeval("trec_eval", "-m", "all_trec", *files)
    found = parse(result.stdout)
    assert {("set_F", "all"), ("set_map", "all"), ("gm_map", "all"), ("gm_bpref", "all")} <= set(found)
    assert "gm_map" not in result.stderr and "11pt_avg" in result.stderr  # what is not computed is named
    official = [line.split("\t")[0].strip() for line in rerankeval("trec_eval", *files).stdout.splitlines()]
    assert official[official.index("map") + 1] == "gm_map"  # trec_eval's official set, in its order
