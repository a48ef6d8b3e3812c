"""The real `rerankeval` console command, run as a subprocess on small files."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

COMMAND = shutil.which("rerankeval", path=str(Path(sys.executable).parent)) or shutil.which("rerankeval")
D = np.log2

# q1: c (2) and a (1) relevant; q2: z relevant; q3: nothing relevant.
QRELS = "q1 0 a 1\nq1 0 b 0\nq1 0 c 2\nq2 0 z 1\nq3 0 k 0\n"
# q1 ranked b, a, x, c; q2 retrieves only a non-relevant document.
RUN_A = "q1 Q0 b 1 5 a\nq1 Q0 a 2 4 a\nq1 Q0 x 3 3 a\nq1 Q0 c 4 2 a\nq2 Q0 a 1 1 a\n"
# q1 ranked c, a; q2 finds z first.
RUN_B = "q1 Q0 c 1 9 b\nq1 Q0 a 2 8 b\nq2 Q0 z 1 1 b\n"

Q1_NDCG = (1 / D(3) + 2 / D(5)) / (2 + 1 / D(3))


def rerankeval(*args, check=True):
    result = subprocess.run([COMMAND, *map(str, args)], capture_output=True, text=True, timeout=60)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def parse(stdout):
    """{(measure, query): value} from trec_eval-style lines."""
    table = {}
    for line in stdout.splitlines():
        if line.startswith("#"):
            continue
        measure, query, value = line.split("\t")
        table[measure.strip(), query] = float(value)
    return table


@pytest.fixture
def files(tmp_path):
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run_a.trec").write_text(RUN_A)
    (tmp_path / "run_b.trec").write_text(RUN_B)
    return tmp_path


def test_prints_aggregates_like_trec_eval(files):
    out = rerankeval("evaluate", "--qrels", files / "qrels.txt", "--run", files / "run_a.trec",
                     "--metric", "nDCG@10", "--metric", "MRR@10", "--metric", "P@2").stdout
    # Each measure printed as asked (MRR@10, not its canonical RR@10).
    assert [line.split("\t")[0].strip() for line in out.splitlines()] == ["num_q", "nDCG@10", "MRR@10", "P@2"]
    table = parse(out)
    assert table["num_q", "all"] == 2  # the queries in both the run and the qrels, as trec_eval (q3 is not run)
    assert table["nDCG@10", "all"] == pytest.approx(Q1_NDCG / 2, abs=5e-5)
    assert table["MRR@10", "all"] == pytest.approx(0.25, abs=5e-5)
    assert table["P@2", "all"] == pytest.approx(0.25, abs=5e-5)


def test_per_query_and_complete_like_trec_eval_c(files):
    out = rerankeval("evaluate", "--qrels", files / "qrels.txt", "--run", files / "run_a.trec",
                     "--metric", "nDCG@10", "--per-query", "-c").stdout
    table = parse(out)
    assert table["nDCG@10", "q1"] == pytest.approx(Q1_NDCG, abs=5e-5)
    assert table["nDCG@10", "q2"] == 0.0
    assert table["nDCG@10", "q3"] == 0.0
    assert table["num_q", "all"] == 3
    assert table["nDCG@10", "all"] == pytest.approx(Q1_NDCG / 3, abs=5e-5)


def test_several_runs_print_one_labelled_block_each(files):
    out = rerankeval("evaluate", "--qrels", files / "qrels.txt", "--run", files / "run_a.trec",
                     "--run", files / "run_b.trec", "--metric", "RR").stdout
    blocks = out.split("# run: ")[1:]
    assert [block.splitlines()[0] for block in blocks] == ["run_a.trec", "run_b.trec"]
    assert parse(blocks[0].split("\n", 1)[1])["RR", "all"] == pytest.approx(0.25, abs=5e-5)
    assert parse(blocks[1].split("\n", 1)[1])["RR", "all"] == pytest.approx(1.0, abs=5e-5)


def test_json_output_keeps_full_precision(files):
    out = rerankeval("evaluate", "--qrels", files / "qrels.txt", "--run", files / "run_a.trec",
                     "--metric", "nDCG@10[gain=exp]", "--metric", "AP", "--json", "--per-query").stdout
    result = json.loads(out)["run_a.trec"]
    q1_exp = (1 / D(3) + 3 / D(5)) / (3 + 1 / D(3))
    assert result["num_q"] == 2
    assert result["per_query"]["q1"]["nDCG@10[gain=exp]"] == pytest.approx(q1_exp, abs=1e-12)
    assert result["all"]["nDCG@10[gain=exp]"] == pytest.approx(q1_exp / 2, abs=1e-12)
    assert result["all"]["AP"] == pytest.approx((1 / 2 + 2 / 4) / 2 / 2, abs=1e-12)
    named = json.loads(rerankeval("evaluate", "--qrels", files / "qrels.txt", "--run", files / "run_a.trec", "--json",
                                  "-m", "P@5[rel=2]", "-m", "ndcg_cut_10", "-m", "nDCG@10[idcg=candidates]").stdout)
    assert named["run_a.trec"]["ir_measures"] == {"P@5[rel=2]": "P(rel=2)@5", "ndcg_cut_10": "nDCG@10",
                                                  "nDCG@10[idcg=candidates]": None}


def test_parquet_run_with_beir_or_parquet_qrels(files):
    run = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "c", "z"], "rank": [1, 2, 1],
                        "fused_rank": [2, 1, 1]})
    run.to_parquet(files / "run.parquet")
    beir = "query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, _, d, g in (line.split() for line in QRELS.splitlines()))
    (files / "test.tsv").write_text(beir)
    qrels = pd.DataFrame([line.split() for line in QRELS.splitlines()],
                         columns=["query_id", "iteration", "doc_id", "relevance"])
    qrels.astype({"relevance": "int64"}).drop(columns="iteration").to_parquet(files / "qrels.parquet")
    for qrels_file in ("test.tsv", "qrels.parquet"):
        out = rerankeval("evaluate", "--qrels", files / qrels_file, "--run", files / "run.parquet",
                         "--metric", "Success@1[rel=2]", "--metric", "CandidateRecall@1[rel=2]").stdout
        table = parse(out)
        assert table["Success@1[rel=2]", "all"] == 0.0  # a (grade 1) ranked first
        assert table["CandidateRecall@1[rel=2]", "all"] == 0.5  # c (grade 2) was q1's first candidate


def test_errors_exit_2_with_a_message(files):
    (files / "bad.trec").write_text("q1 Q0 a 1 4 t\nq1 Q0 b 2 t\n")
    bad_file = rerankeval("evaluate", "--qrels", files / "qrels.txt", "--run", files / "bad.trec",
                          "--metric", "RR", check=False)
    assert bad_file.returncode == 2
    assert f"{files / 'bad.trec'}, line 2: expected 6 fields, found 5" in bad_file.stderr

    bad_metric = rerankeval("evaluate", "--qrels", files / "qrels.txt", "--run", files / "run_a.trec",
                            "--metric", "RR@10[gain=exp]", check=False)
    assert bad_metric.returncode == 2
    assert "parameter 'gain' does not apply to RR" in bad_metric.stderr

    missing = rerankeval("evaluate", "--qrels", files / "nope.txt", "--run", files / "run_a.trec",
                         "--metric", "RR", check=False)
    assert missing.returncode == 2 and "nope.txt" in missing.stderr

    (files / "no_relevant.txt").write_text("q1 0 a 0\n")
    nothing = rerankeval("evaluate", "--qrels", files / "no_relevant.txt", "--run", files / "run_a.trec",
                         "--metric", "RR", "--no-relevant", "drop", check=False)
    assert nothing.returncode == 2 and "no query to evaluate" in nothing.stderr
    # As trec_eval, a judged query without a relevant document counts, as 0.
    assert parse(rerankeval("evaluate", "--qrels", files / "no_relevant.txt", "--run", files / "run_a.trec",
                            "--metric", "RR").stdout) == {("num_q", "all"): 1, ("RR", "all"): 0.0}


def test_help_lists_evaluate_and_the_measures():
    out = rerankeval("--help").stdout
    assert "evaluate" in out and "nDCG@k [gain, idcg, judged_only]" in out


def test_the_command_module_imports_no_heavy_library():
    # numpy (0.05 s) comes with the measure registry, whose kernels are numpy; pandas, pyarrow and the compiled
    # string kernels (which need both) do not.
    probe = ("import sys, rerankeval.cli; "
             "print(sorted({'pandas', 'pyarrow', 'rerankeval.eval._strings'} & set(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_a_comma_list_of_cutoffs_is_one_measure_per_cutoff_as_trec_eval_prints_them(tmp_path):
    """trec_eval's `-m P.1,2,3`: one query, d1 and d3 relevant (grade 1), ranked d1, d2, d3."""
    (tmp_path / "q.txt").write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 1\n")
    (tmp_path / "r.txt").write_text("q1 Q0 d1 1 3 r\nq1 Q0 d2 2 2 r\nq1 Q0 d3 3 1 r\n")
    out = rerankeval("evaluate", "--qrels", tmp_path / "q.txt", "--run", tmp_path / "r.txt", "-m", "P.1,2,3",
                     "-m", "ndcg_cut.1,3").stdout
    table = parse(out)
    assert [line.split("\t")[0].strip() for line in out.splitlines()] == [
        "num_q", "P_1", "P_2", "P_3", "ndcg_cut_1", "ndcg_cut_3"]
    assert (table["P_1", "all"], table["P_2", "all"], table["P_3", "all"]) == (1.0, 0.5, pytest.approx(2 / 3, abs=5e-5))
    # DCG@3 = 1/log2(2) + 0 + 1/log2(4) = 1.5; ideal = 1 + 1/log2(3) = 1.6309; 1.5 / 1.6309 = 0.9197
    assert table["ndcg_cut_1", "all"] == 1.0 and table["ndcg_cut_3", "all"] == pytest.approx(0.9197, abs=5e-5)


def test_trec_eval_s_own_command_line_with_its_flags(tmp_path):
    """`rerankeval trec_eval [-q] [-c] [-M N] [-l N] [-J] [-m ...] QRELS RUN`: one query, grades d1 1, d2 0, d3 2,
    d4 unjudged; ranked d4, d1, d2, d3."""
    (tmp_path / "q.txt").write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d9 1\n")
    (tmp_path / "r.txt").write_text("q1 Q0 d4 1 4 r\nq1 Q0 d1 2 3 r\nq1 Q0 d2 3 2 r\nq1 Q0 d3 4 1 r\n")

    def values(*flags):
        return parse(rerankeval("trec_eval", *flags, tmp_path / "q.txt", tmp_path / "r.txt").stdout)

    plain = values("-m", "P.2,4", "-m", "recip_rank", "-m", "num_q")  # as trec_eval: only what -m names prints
    assert (plain["P_2", "all"], plain["P_4", "all"], plain["recip_rank", "all"]) == (0.5, 0.5, 0.5)  # d1 at rank 2
    assert plain["num_q", "all"] == 1  # q2 is not in the run: trec_eval averages over the run's queries
    assert values("-l", "2", "-m", "P.4", "-m", "recip_rank")["recip_rank", "all"] == 0.25  # only d3 counts
    assert values("-J", "-m", "P.2", "-m", "recip_rank")["recip_rank", "all"] == 1.0  # unjudged d4 left out
    assert values("-M", "2", "-m", "P.4")["P_4", "all"] == 0.25  # d1 alone among the first 2 of 4 places
    complete = values("-c", "-q", "-m", "recip_rank", "-m", "num_q")
    assert complete["num_q", "all"] == 2 and complete["recip_rank", "all"] == 0.25  # q2 scores 0 with -c
    assert complete["recip_rank", "q1"] == 0.5


def test_trec_eval_counts_are_summed_over_the_queries(tmp_path):
    """num_ret, num_rel, num_rel_ret per query, summed in the summary line (the fixture of the test above)."""
    (tmp_path / "q.txt").write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d9 1\n")
    (tmp_path / "r.txt").write_text("q1 Q0 d4 1 4 r\nq1 Q0 d1 2 3 r\nq1 Q0 d2 3 2 r\nq1 Q0 d3 4 1 r\n")

    def counts(*flags):
        counted = [text for name in ("num_q", "num_ret", "num_rel", "num_rel_ret") for text in ("-m", name)]
        table = parse(rerankeval("trec_eval", *flags, *counted, tmp_path / "q.txt", tmp_path / "r.txt").stdout)
        return tuple(int(table[name, "all"]) for name in ("num_q", "num_ret", "num_rel", "num_rel_ret"))

    assert counts() == (1, 4, 2, 2)  # q1 retrieves d4 d1 d2 d3; d1 and d3 are relevant
    assert counts("-l", "2") == (1, 4, 1, 1)  # only d3 is graded 2
    assert counts("-M", "2") == (1, 2, 2, 1)  # d4 and d1 retrieved
    assert counts("-J") == (1, 3, 2, 2)  # unjudged d4 left out
    assert counts("-c") == (2, 4, 3, 2)  # q2 counts: its d9 is relevant, nothing retrieved
