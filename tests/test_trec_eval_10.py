"""trec_eval 10's behaviours that 9.0.8 (pytrec_eval) lacks or does differently, through `rerankeval trec_eval`:
its ties, its set measures and geometric means, unj_k and -n. Each fixture says where its expected value comes from:
pytrec_eval (trec_eval 9.0.8's code) where the two versions agree and pytrec_eval has the measure, by hand where not."""

import json

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
        for query in QRELS if not name.startswith("gm_") else ():  # trec_eval prints no query's gm_* line
            assert found[name, query] == pytest.approx(expected[query][name], abs=5e-5), (name, query)
        summary = pytrec_eval.compute_aggregated_measure(name, [expected[q][name] for q in QRELS])
        assert found[name, "all"] == pytest.approx(summary, abs=5e-5), name
    assert ("gm_map", "q2") not in found


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


def test_the_measure_sets_print_what_trec_eval_10_prints_in_its_order(tmp_path):
    """measures.c's all_trec and official, every measure at its default parameters, in its table's order."""
    files = write(tmp_path, QRELS, RUN)
    result = rerankeval("trec_eval", "-m", "all_trec", *files)
    names = [line.split("\t")[0].strip() for line in result.stdout.splitlines()]
    assert result.stderr == ""
    bases = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
             "iprec_at_recall", "P", "recall", "infAP", "gm_bpref", "Rprec_mult", "utility", "11pt_avg", "binG", "G",
             "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success", "set_P", "set_relative_P",
             "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "rbp", "rbp_resid",
             "unj")  # relstring: per query
    expected = []
    for base in bases:
        cuts = {"iprec_at_recall": [f"{p / 10:3.2f}" for p in range(11)],
                "Rprec_mult": [f"{p / 10:3.2f}" for p in range(2, 21, 2)], "success": ["1", "5", "10"],
                "unj": ["5", "10", "20"]}.get(
            base, ["5", "10", "15", "20", "30", "100", "200", "500", "1000"]
            if base in ("P", "recall", "ndcg_cut", "map_cut", "relative_P") else [None])
        expected += [base if cut is None else f"{base}_{cut}" for cut in cuts]
    assert names == expected
    official = [line.split("\t")[0].strip() for line in rerankeval("trec_eval", *files).stdout.splitlines()]
    assert official == expected[:expected.index("P_1000") + 1]
    assert result.stdout.splitlines()[0] == "runid                 \tall\tr"  # the run file's tag


def test_measures_print_in_trec_eval_s_order_whatever_the_order_asked(tmp_path):
    files = write(tmp_path, QRELS, RUN)
    lines = rerankeval("trec_eval", "-q", "-m", "ndcg_cut.10", "-m", "P.5,3", "-m", "map", *files).stdout.splitlines()
    assert [tuple(line.split("\t")[:2]) for line in lines[:4]] == [
        ("map".ljust(22), "q1"), ("P_3".ljust(22), "q1"), ("P_5".ljust(22), "q1"), ("ndcg_cut_10".ljust(22), "q1")]
    # the summary: only what -m names (num_q is a measure like the others; official and all_trec name it)
    assert [line.split("\t")[0].strip() for line in lines[-5:]] == ["ndcg_cut_10", "map", "P_3", "P_5", "ndcg_cut_10"]


PYTREC_EVAL_HAS = ("iprec_at_recall", "11pt_avg", "Rprec_mult", "relative_P", "set_relative_P", "infAP", "utility",
                   "binG", "G", "Rndcg", "ndcg_rel", "num_nonrel_judged_ret")


def random_collection(seed):
    """Six queries of graded qrels (a -1: pooled, unjudged) and runs holding unjudged documents and tied scores."""
    import random

    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(6):
        docs = [f"d{i}" for i in range(rng.randint(3, 25))]
        qrels[f"q{q}"] = {d: rng.choice([0, 0, 1, 2, 3, -1]) for d in docs if rng.random() < 0.7} or {docs[0]: 1}
        retrieved = rng.sample(docs + [f"u{i}" for i in range(5)], rng.randint(1, len(docs)))
        run[f"q{q}"] = {d: float(rng.randint(0, 8)) for d in retrieved}
    return qrels, run


@pytest.mark.parametrize("flags", [[], ["-J"], ["-l", "2"]])
def test_trec_eval_s_own_measures_equal_pytrec_eval_on_random_runs(tmp_path, capsys, flags):
    """Every measure of eval.trec_lists that pytrec_eval has, per query, on 12 random collections (9.0.8's rounding
    of recall cut-offs, which pytrec_eval builds); NaN where trec_eval divides 0 by 0 (-J leaving no document)."""
    from rerankeval.cli.main import main

    for seed in range(12):
        qrels, run = random_collection(seed)
        files = write(tmp_path, qrels, run)
        level = int(flags[1]) if "-l" in flags else 1
        expected = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC_EVAL_HAS), relevance_level=level,
                                                  judged_docs_only_flag="-J" in flags).evaluate(run)
        assert main(["trec_eval", "-q", "-n", "--trec-eval-version", "9.0.8", *flags,
                     *(f"-m{name}" for name in PYTREC_EVAL_HAS), *map(str, files)]) == 0
        found = {(n.strip(), q): float(v.replace("-nan", "nan"))
                 for n, q, v in (line.split("\t") for line in capsys.readouterr().out.splitlines())}
        for query, values in expected.items():
            for name, value in values.items():
                assert found[name, query] == pytest.approx(value, abs=5e-5, nan_ok=True), (seed, query, name)


def test_interpolated_precision_rounds_its_recall_cut_offs_by_version(tmp_path):
    """R = 3, relevant at ranks 1, 3 and 5: precision there 1, 2/3, 3/5. At recall 0.4 (1.2 documents) 9.0.8 truncates
    1.2 + 0.9 to 2 (2/3, as pytrec_eval says) where 10.0 rounds 1.2 to 1 (1.0). 11pt_avg by hand, 10.0: the 11
    fractions round to 0,0,1,1,1,2,2,2,2,3,3 relevant documents: (5 x 1 + 4 x 2/3 + 2 x 3/5) / 11."""
    qrels = {"q1": {"a": 1, "b": 1, "c": 1, "x": 0, "y": 0}}
    run = {"q1": {"a": 5.0, "x": 4.0, "b": 3.0, "y": 2.0, "c": 1.0}}
    files = write(tmp_path, qrels, run)
    old = pytrec_eval.RelevanceEvaluator(qrels, {"iprec_at_recall", "11pt_avg"}).evaluate(run)["q1"]
    found_908 = parse(rerankeval("trec_eval", "--trec-eval-version", "9.0.8", "-m", "iprec_at_recall.0.4",
                                 "-m", "11pt_avg", *files).stdout)
    found_10 = parse(rerankeval("trec_eval", "-m", "iprec_at_recall.0.4", "-m", "11pt_avg", *files).stdout)
    assert old["iprec_at_recall_0.40"] == pytest.approx(2 / 3)
    assert found_908["iprec_at_recall_0.40", "all"] == pytest.approx(2 / 3, abs=5e-5)
    assert found_908["11pt_avg", "all"] == pytest.approx(old["11pt_avg"], abs=5e-5)
    assert found_10["iprec_at_recall_0.40", "all"] == 1.0
    assert found_10["11pt_avg", "all"] == pytest.approx((5 + 4 * 2 / 3 + 2 * 0.6) / 11, abs=5e-5)


def test_rank_biased_precision_and_its_residual_by_hand(tmp_path):
    """q1 ranks a (grade 1), x (0), b (2), u (pooled, unjudged: -1). Grades 0..2 leave [0, 1], so gains are scaled by
    the highest: a 0.5, b 1. rbp (p 0.9) = 0.1 x (0.5 + 1 x 0.81) = 0.131; p = 0.5: 0.5 x (0.5 + 0.25) = 0.375.
    rbp_resid = 0.9^4 + 0.1 x 0.9^3 (u at the 4th place) = 0.729."""
    files = write(tmp_path, {"q1": {"a": 1, "x": 0, "b": 2, "u": -1}}, {"q1": {"a": 4.0, "x": 3.0, "b": 2.0, "u": 1.0}})
    found = parse(rerankeval("trec_eval", "-m", "rbp", "-m", "rbp_resid", *files).stdout)
    # named twice, a measure takes its last parameters (trec_eval marks one entry of its table)
    found.update(parse(rerankeval("trec_eval", "-m", "rbp", "-m", "rbp.p=0.5", *files).stdout))
    assert ("rbp", "all") in found and len(rerankeval("trec_eval", "-m", "rbp", "-m", "rbp.p=0.5",
                                                       *files).stdout.splitlines()) == 1
    assert found["rbp", "all"] == pytest.approx(0.131, abs=5e-5)
    assert found["rbp_p=0.5", "all"] == pytest.approx(0.375, abs=5e-5)
    assert found["rbp_resid", "all"] == pytest.approx(0.729, abs=5e-5)


def test_utility_relstring_and_dcg(tmp_path):
    """By hand on QRELS/RUN. q1 retrieves a (1), b (0), e (unjudged), c (2) of R = 3 (a, c, d): utility (1,-1,0,0)
    = 2 - 2 = 0; utility.2,-1,-1,1 with -N 10 = 2x2 - 2 - 1 + (10 + 2 - 4 - 3) = 6; relstring '10-2', printed per
    query only. dcg / ideal_dcg is trec_eval's ndcg (pytrec_eval's)."""
    files = write(tmp_path, QRELS, RUN)
    lines = [*rerankeval("trec_eval", "-q", "-N", "10", "-m", "utility", "-m", "relstring", "-m", "dcg", "-m",
                         "ideal_dcg", *files).stdout.splitlines(),
             *rerankeval("trec_eval", "-q", "-N", "10", "-m", "utility.2,-1,-1,1", *files).stdout.splitlines()]
    assert "relstring             \tq1\t'10-2'" in lines
    assert not any(line.startswith("relstring") and "\tall\t" in line for line in lines)
    found = {tuple(line.split("\t")[:2]): line.split("\t")[2] for line in lines}
    assert float(found["utility".ljust(22), "q1"]) == 0.0
    assert float(found["utility_2,-1,-1,1".ljust(22), "q1"]) == 6.0
    ndcg = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg"}).evaluate(RUN)
    for query in QRELS:
        ratio = float(found["dcg".ljust(22), query]) / float(found["ideal_dcg".ljust(22), query])
        assert ratio == pytest.approx(ndcg[query]["ndcg"], abs=5e-4), query


def test_a_bad_parameter_is_refused_by_name(tmp_path):
    files = write(tmp_path, QRELS, RUN)
    result = rerankeval("trec_eval", "-m", "relative_P.5,x", *files, check=False)
    assert result.returncode != 0 and "relative_P" in result.stderr and "Traceback" not in result.stderr
    result = rerankeval("trec_eval", "-m", "utility.1,2", *files, check=False)
    assert result.returncode != 0 and "4 weights" in result.stderr and "Traceback" not in result.stderr


TREC_EVAL_OWN = ("num_ret", "num_rel", "num_rel_ret", "gm_map", "gm_bpref", "iprec_at_recall", "11pt_avg", "infAP",
                 "Rprec_mult", "utility", "binG", "G", "ndcg_rel", "Rndcg", "relative_P", "set_relative_P",
                 "num_nonrel_judged_ret", "rbp", "rbp_resid")
"""all_trec's measures that are no measure family here, a number per query (runid, num_q and relstring are not)."""


def test_evaluate_accepts_trec_eval_s_own_measures_and_gives_trec_eval_s_values(tmp_path):
    """`rerankeval evaluate -m NAME` for trec_eval's own numbers: each query's value and the summary (counts summed,
    gm_* geometric, the rest averaged) equal `rerankeval trec_eval -q` at 9.0.8's ties (the engine's)."""
    files = write(tmp_path, *random_collection(3))
    names = [item for name in TREC_EVAL_OWN for item in ("-m", name)]
    ours = parse(rerankeval("evaluate", "--qrels", files[0], "--run", files[1], "-q", *names).stdout)
    theirs = parse(rerankeval("trec_eval", "-q", "--trec-eval-version", "9.0.8", *names, *files).stdout)
    assert set(ours) == set(theirs) | {("num_q", "all")} and len(theirs) > 100
    assert all(ours[key] == pytest.approx(value, abs=1e-4) for key, value in theirs.items())
    assert ours["num_ret", "all"] == sum(value for (name, query), value in ours.items()
                                         if name == "num_ret" and query != "all")  # summed, as trec_eval sums
    described = json.loads(rerankeval("evaluate", "--qrels", files[0], "--run", files[1], "-m", "gm_map", "-m",
                                      "num_ret", "-m", "map", "--json").stdout)["r.txt"]
    assert described["measures"] == {"gm_map": "gm_map", "num_ret": "num_ret", "map": "AP"}
    assert described["all"]["num_ret"] == ours["num_ret", "all"]
    assert described["all"]["gm_map"] == pytest.approx(ours["gm_map", "all"], abs=1e-4)
    for named in ("relstring", "runid", "all_trec"):  # not a number per query: the command that prints it is named
        refused = rerankeval("evaluate", "--qrels", files[0], "--run", files[1], "-m", named, check=False)
        assert refused.returncode == 2 and f"rerankeval trec_eval -m {named}" in refused.stderr


def test_comment_lines_and_trailing_fields_through_the_command_print_trec_eval_s_bytes(tmp_path):
    """trec_eval 10 reads a line starting with `#` as a comment in qrels and runs, and ignores a run line's fields
    after the sixth (its test suite's qrels.comment.test and results.comment.test hold both). The output is
    byte-compared with the lines trec_eval prints, `%-22s\\tall\\t%6.4f` (counts as integers, runid as text: its
    test/out.comment.test), each value from pytrec_eval: under 9.0.8's conventions, which it builds, and which differ
    from 10.0 in iprec_at_recall's rounding (`test_interpolated_precision_rounds_its_recall_cut_offs_by_version`)."""
    clean = write(tmp_path, QRELS, RUN)
    commented = tmp_path / "commented"
    commented.mkdir()
    qrels_lines, run_lines = clean[0].read_text().splitlines(), clean[1].read_text().splitlines()
    (commented / "q.txt").write_text("\n".join(["# judged by hand", qrels_lines[0], "# between", *qrels_lines[1:]])
                                     + "\n")
    (commented / "r.txt").write_text("# my run\n" + "".join(f"{line} a second tag, a note\n" for line in run_lines))
    printed = rerankeval("trec_eval", "--trec-eval-version", "9.0.8", commented / "q.txt", commented / "r.txt").stdout
    assert printed == rerankeval("trec_eval", "--trec-eval-version", "9.0.8", *clean).stdout

    cuts = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
    means = ["map", "gm_map", "Rprec", "bpref", "recip_rank",
             *(f"iprec_at_recall_{p / 10:3.2f}" for p in range(11)), *(f"P_{k}" for k in cuts)]
    counts = ["num_ret", "num_rel", "num_rel_ret"]
    per_query = pytrec_eval.RelevanceEvaluator(QRELS, {"map", "gm_map", "Rprec", "bpref", "recip_rank",
                                                       "iprec_at_recall", "P", *counts}).evaluate(RUN)
    expected = [f"{'runid':<22}\tall\tr", f"{'num_q':<22}\tall\t{len(RUN)}"]
    expected += [f"{name:<22}\tall\t{sum(int(values[name]) for values in per_query.values())}" for name in counts]
    expected += [f"{name:<22}\tall\t"
                 f"{pytrec_eval.compute_aggregated_measure(name, [v[name] for v in per_query.values()]):6.4f}"
                 for name in means]
    order = ["runid", "num_q", *counts, *means]  # trec_eval's table order: the counts before map
    assert printed.splitlines() == sorted(expected, key=lambda line: order.index(line.split()[0]))
