import os
import stat

import numpy as np
import pandas as pd
import pytest

from rerankeval.data import trec
from rerankeval.data.beir import read_qrels_tsv
from rerankeval.data.trec import (
    read_qrels,
    read_run,
    read_trec_qrels,
    read_trec_run,
    write_trec_qrels,
    write_trec_run,
)


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_read_trec_run_keeps_ids_as_strings_and_scores_as_floats(tmp_path):
    path = write(tmp_path / "run.txt", "001 Q0 NA 1 12.5 bm25\n\n  001\tQ0  d7 2 -3e-2 bm25  \n002 Q0 d7 1 4 bm25\n")
    run = read_trec_run(path)
    assert run.columns.tolist() == ["query_id", "doc_id", "score"]
    assert run["query_id"].tolist() == ["001", "001", "002"]
    assert run["doc_id"].tolist() == ["NA", "d7", "d7"]
    assert run["score"].tolist() == [12.5, -0.03, 4.0]
    assert pd.api.types.is_string_dtype(run["doc_id"]) and run["score"].dtype == np.float64


def test_read_trec_qrels_and_beir_qrels(tmp_path):
    trec_path = write(tmp_path / "qrels.txt", "q1 0 d1 2\nq1 0 d2 0\nq2 Q0 d1 -1\n")
    qrels = read_trec_qrels(trec_path)
    assert qrels.to_dict("list") == {"query_id": ["q1", "q1", "q2"], "doc_id": ["d1", "d2", "d1"],
                                     "relevance": [2, 0, -1]}
    assert qrels["relevance"].dtype == np.int64
    beir_path = write(tmp_path / "test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td1\t-1\n")
    pd.testing.assert_frame_equal(read_qrels_tsv(beir_path).drop(columns="line"), qrels)
    pd.testing.assert_frame_equal(read_qrels(beir_path), qrels)
    pd.testing.assert_frame_equal(read_qrels(trec_path), qrels)


def test_empty_files_read_as_empty_tables(tmp_path):
    assert read_trec_run(write(tmp_path / "run.txt", "")).columns.tolist() == ["query_id", "doc_id", "score"]
    beir = read_qrels(write(tmp_path / "qrels.tsv", "query-id\tcorpus-id\tscore\n"))
    assert beir.columns.tolist() == ["query_id", "doc_id", "relevance"] and beir.empty


def test_run_round_trip_is_exact(tmp_path):
    rng = np.random.default_rng(0)
    run = pd.DataFrame({
        "query_id": np.repeat(["q2", "q10", "q1"], 4),
        "doc_id": [f"doc-{i}" for i in range(12)],
        "score": rng.normal(size=12) * 10.0 ** rng.integers(-8, 8, size=12),
    }).astype({"query_id": "str", "doc_id": "str"})
    path = tmp_path / "run.trec"
    write_trec_run(run, path, tag="mine")
    back = read_trec_run(path)
    expected = run.sort_values(["query_id", "score"], ascending=[True, False]).reset_index(drop=True)
    pd.testing.assert_frame_equal(back, expected)
    lines = path.read_text().splitlines()
    assert lines[0].split()[1::2] == ["Q0", "1", "mine"]
    assert [line.split()[3] for line in lines[:4]] == ["1", "2", "3", "4"]


def test_written_ranks_follow_the_tie_break_rule_and_rank_only_runs_get_scores(tmp_path):
    tied = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["c", "a", "b"], "score": [1.0, 1.0, 2.0]})
    assert write_trec_run(tied.astype({"query_id": "str", "doc_id": "str"}), tmp_path / "tied.trec", tag="t") == 0
    # Ranks from scores follow trec_eval (ties: doc id descending), so the tied scores themselves keep the order.
    assert (tmp_path / "tied.trec").read_text() == "q Q0 b 1 2.0 t\nq Q0 c 2 1.0 t\nq Q0 a 3 1.0 t\n"
    # An explicit rank trec_eval's order would not rebuild from the scores: only the row out of place is nudged,
    # to the largest 32-bit float below the row above.
    against = tied.assign(rank=[1, 2, 3])
    assert write_trec_run(against.astype({"query_id": "str", "doc_id": "str"}), tmp_path / "against.trec",
                          tag="t") == 1
    below_one = float(np.nextafter(np.float32(1.0), np.float32(0.0)))
    assert (tmp_path / "against.trec").read_text() == f"q Q0 c 1 1.0 t\nq Q0 a 2 1.0 t\nq Q0 b 3 {below_one!r} t\n"
    # Rows without a score (beyond the rerank depth) get whole numbers below the scored ones.
    beyond_depth = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "score": [0.9, np.nan, np.nan],
                                 "rank": [1, 2, 3]})
    write_trec_run(beyond_depth.astype({"query_id": "str", "doc_id": "str"}), tmp_path / "tail.trec", tag="t")
    assert (tmp_path / "tail.trec").read_text() == "q Q0 a 1 0.9 t\nq Q0 b 2 -1.0 t\nq Q0 c 3 -2.0 t\n"
    ranked = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["y", "x"], "rank": [2, 1]})
    write_trec_run(ranked.astype({"query_id": "str", "doc_id": "str"}), tmp_path / "ranked.trec", tag="t")
    assert (tmp_path / "ranked.trec").read_text() == "q Q0 x 1 -1.0 t\nq Q0 y 2 -2.0 t\n"


def test_scores_that_tie_as_32_bit_floats_are_nudged_only_there(tmp_path):
    """trec_eval reads scores as 32-bit floats: 1.0 and 1.00000001 tie for it, and it would put d2 first."""
    run = pd.DataFrame({"query_id": ["q"] * 5, "doc_id": ["d1", "d2", "d3", "d4", "d5"],
                        "score": [5.25, 1.00000001, 1.0, 0.5, 0.25], "rank": [1, 2, 3, 4, 5]})
    path = tmp_path / "run.trec"
    assert write_trec_run(run.astype({"query_id": "str", "doc_id": "str"}), path, tag="t") == 1
    back = read_trec_run(path)
    assert back["score"].tolist() == [5.25, 1.00000001, float(np.nextafter(np.float32(1.0), np.float32(0))), 0.5,
                                      0.25]
    single = back.assign(single=back["score"].astype(np.float32))
    assert single.sort_values(["single", "doc_id"], ascending=False)["doc_id"].tolist() == ["d1", "d2", "d3", "d4",
                                                                                             "d5"]


def test_qrels_round_trip(tmp_path):
    qrels = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["b", "a", "a"], "relevance": [0, 3, -2]})
    path = tmp_path / "qrels.txt"
    write_trec_qrels(qrels.astype({"query_id": "str", "doc_id": "str"}), path)
    assert path.read_text() == "q1 0 a 3\nq1 0 b 0\nq2 0 a -2\n"
    assert read_trec_qrels(path)["relevance"].tolist() == [3, 0, -2]


def test_parquet_runs_and_qrels(tmp_path):
    run = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "rank": [1, 2], "fused_rank": [2, 1]})
    run.to_parquet(tmp_path / "run.parquet")
    pd.testing.assert_frame_equal(read_run(tmp_path / "run.parquet"), run, check_dtype=False)
    qrels = pd.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "relevance": [1], "note": ["extra"]})
    qrels.to_parquet(tmp_path / "qrels.parquet")
    assert read_qrels(tmp_path / "qrels.parquet").columns.tolist() == ["query_id", "doc_id", "relevance"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4\n", "line 2: expected 6 fields, found 5 in 'q1 Q0 d2 2 0.4'"),
        ("q1 Q0 d1 1 high t\n", "line 1: score 'high' is not a number"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 nan t\n", "line 2: score 'nan' is not a finite number"),
        ("q1 Q0 d1 1 -inf t\n", "line 1: score '-inf' is not a finite number"),
    ],
)
def test_malformed_run_lines_name_file_line_and_fix(tmp_path, text, message):
    path = write(tmp_path / "bad.run", text)
    with pytest.raises(ValueError) as raised:
        read_trec_run(path)
    assert str(path) in str(raised.value)
    assert message in str(raised.value)
    assert "Fix: each line of a TREC run reads 'query_id Q0 doc_id rank score tag'" in str(raised.value)


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("qrels.txt", "q1 0 d1 1\nq1 0 d2 relevant\n", "line 2: relevance 'relevant' is not an integer"),
        ("qrels.txt", "q1 0 d1 1\nq1 d2 1\n", "line 2: expected 4 fields, found 3"),
        ("qrels.txt", "q1 0 d1 1.5\n", "line 1: relevance '1.5' is not an integer"),
        ("qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\n", ":2: expected 3 tab-separated fields"),
        ("qrels.tsv", "query-id\tcorpus-id\tscore\nq1\t\t1\n", ":2: empty corpus-id"),
        ("qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\tx\n", ":2: grade 'x' is not an integer"),
    ],
)
def test_malformed_qrels_lines_name_file_and_line(tmp_path, name, text, message):
    path = write(tmp_path / name, text)
    with pytest.raises(ValueError) as raised:
        read_qrels(path)
    separator = "" if message.startswith(":") else ", "
    assert f"{path}{separator}{message}" in str(raised.value)
    assert "Fix: " in str(raised.value)


def test_beir_reader_insists_on_the_header(tmp_path):
    path = write(tmp_path / "qrels.tsv", "q1\td1\t1\n")
    with pytest.raises(ValueError, match="qrels.tsv:1: expected the header 'query-id<TAB>corpus-id<TAB>score'"):
        read_qrels_tsv(path, require_header=True)


def test_writing_rejects_what_would_corrupt_the_file(tmp_path):
    run = pd.DataFrame({"query_id": ["q1"], "doc_id": ["two words"], "score": [1.0]})
    with pytest.raises(ValueError, match="run column 'doc_id' holds 'two words'"):
        write_trec_run(run, tmp_path / "run.trec", tag="t")
    with pytest.raises(ValueError, match="the run tag must be one word"):
        write_trec_run(run.assign(doc_id="d"), tmp_path / "run.trec", tag="my run")
    assert not (tmp_path / "run.trec").exists()


def test_writing_is_atomic(tmp_path, monkeypatch):
    path = write(tmp_path / "run.trec", "old content\n")
    run = pd.DataFrame({"query_id": ["q1"], "doc_id": ["d"], "score": [1.0]})

    def fail_halfway(lines, handle):
        handle.write("q1 Q0 d 1")
        raise OSError("disk full")

    monkeypatch.setattr(trec, "_write_lines", fail_halfway)
    with pytest.raises(OSError, match="disk full"):
        write_trec_run(run, path, tag="t")
    assert path.read_text() == "old content\n"
    assert os.listdir(tmp_path) == ["run.trec"]  # no temporary file left behind

    monkeypatch.undo()
    write_trec_run(run, path, tag="t")
    assert path.read_text() == "q1 Q0 d 1 1.0 t\n"
    assert os.listdir(tmp_path) == ["run.trec"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_a_pipeline_run_with_a_nan_tail_exports_to_the_same_values_in_trec_eval(tmp_path):
    """A run as the rerank stage writes it (tied head scores, NaN beyond the depth, explicit ranks) written as TREC
    reads back with our reader and evaluates, by us and by trec_eval, to the values of the run itself."""
    import pytrec_eval

    from rerankeval.eval.engine import evaluate
    from rerankeval.rerank.driver import RerankSettings, rerank
    from tests.test_rerank import QUERIES, Fixed, candidates

    run, _ = rerank(candidates(n_queries=2, n_docs=6), QUERIES, Fixed(scores=[0.5, 0.9, 0.5, 0.1]),
                    RerankSettings(depth=4))
    assert (run["score"].isna().sum() == 4
            and run.groupby("query_id")["score"].apply(lambda s: s.duplicated().any()).all())
    write_trec_run(run, tmp_path / "run.trec", tag="system")
    back = read_trec_run(tmp_path / "run.trec")
    qrels = pd.DataFrame({"query_id": ["q0", "q0", "q0", "q1", "q1"], "doc_id": ["d0", "d2", "d5", "d2", "d4"],
                          "relevance": [1, 2, 1, 3, -1]})
    measures = ["nDCG@3", "P@2", "AP", "RR", "R@5"]
    ours, exported = evaluate(run, qrels, measures), evaluate(back, qrels, measures)
    pd.testing.assert_frame_equal(ours, exported)
    reference = pytrec_eval.RelevanceEvaluator(
        {q: dict(zip(g["doc_id"], g["relevance"].astype(int))) for q, g in qrels.groupby("query_id")},
        {"ndcg_cut.3", "P.2", "map", "recip_rank", "recall.5"}).evaluate(
        {q: dict(zip(g["doc_id"], g["score"])) for q, g in back.groupby("query_id")})
    for query in ("q0", "q1"):
        values = reference[query]
        assert ours.loc[query].tolist() == pytest.approx(
            [values["ndcg_cut_3"], values["P_2"], values["map"], values["recip_rank"], values["recall_5"]], abs=1e-12)


def test_a_non_utf8_trec_file_is_refused_naming_the_line(tmp_path):
    path = tmp_path / "run.trec"
    path.write_bytes(b"q1 Q0 a 1 2 t\nq1 Q0 b\xff 2 1 t\n")
    with pytest.raises(ValueError, match=r"run.trec:2: byte 0xff at column 8 is not UTF-8"):
        read_trec_run(path)
    path.write_bytes(b"\xef\xbb\xbfq1 0 a 1\nq1 0 b 0\n")  # a byte-order mark is dropped
    assert read_qrels(path)["query_id"].tolist() == ["q1", "q1"]


def test_comment_lines_and_text_after_the_run_tag_are_read_as_trec_eval_10_reads_them(tmp_path):
    """trec_eval 10 skips a line starting with # in qrels and runs, and reads a run line's first six fields (the
    rest, e.g. a second tag or a note, is ignored); a # inside an id stays part of it."""
    run = write(tmp_path / "a.run", "# produced by bm25, k1=0.9\nq1 Q0 d#1 1 2.5 bm25 extra words here\n"
                                    "  # an indented comment\nq1 Q0 d2 2 1.5 bm25\n# 0 x 1 1 1\n")
    qrels = write(tmp_path / "a.qrels", "# judged by two assessors\nq1 0 d#1 1\n#q1 0 d2 1\nq1 0 d2 0\n")
    assert read_trec_run(run).values.tolist() == [["q1", "d#1", 2.5], ["q1", "d2", 1.5]]
    assert trec.read_trec_qrels(qrels).values.tolist() == [["q1", "d#1", 1], ["q1", "d2", 0]]
    with pytest.raises(ValueError, match=r"line 2: expected 4 fields, found 5"):  # qrels take no trailing text
        trec.read_trec_qrels(write(tmp_path / "b.qrels", "q1 0 d1 1\nq1 0 d2 0 note\n"))
