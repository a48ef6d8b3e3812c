import json
import shutil

import pytest

from rerankeval.cli.main import main
from rerankeval.core.errors import CollectionError
from rerankeval.data.beir import load_beir
from tests.conftest import write_beir

CORPUS = [{"_id": "d1", "title": "t", "text": "alpha"}, {"_id": "d2", "title": "", "text": "beta"}]
QUERIES = [{"_id": "q1", "text": "alpha?", "metadata": {"intent": "exact_id"}},
           {"_id": "q2", "text": "beta?", "metadata": {"intent": "temporal"}}]


def load(tmp_path, corpus=CORPUS, queries=QUERIES, qrels=None):
    qrels = qrels if qrels is not None else {"test": [("q1", "d1", 2), ("q2", "d2", 1)]}
    return load_beir(write_beir(tmp_path / "c", corpus, queries, qrels))


def test_loads_tables_splits_and_slices(tiny_beir):
    collection = load_beir(tiny_beir)
    assert collection.corpus.num_rows == 24
    splits = dict(zip(collection.queries.column("query_id").to_pylist(),
                      collection.queries.column("split").to_pylist()))
    assert splits["q0"] == "test" and splits["q7"] == "train"
    assert collection.slice_columns == ["language"]
    assert collection.qrels.column("relevance").type.bit_width == 32
    parents = dict(zip(collection.corpus.column("doc_id").to_pylist(),
                       collection.corpus.column("parent_id").to_pylist()))
    assert parents["d3b"] == "d3" and parents["d3c"] == "d3c"


def test_row_hash_changes_with_text(tmp_path):
    first = load(tmp_path / "a").corpus.column("row_sha256").to_pylist()
    changed = [dict(CORPUS[0], text="alpha!"), CORPUS[1]]
    second = load(tmp_path / "b", corpus=changed).corpus.column("row_sha256").to_pylist()
    assert first[0] != second[0] and first[1] == second[1]


@pytest.mark.parametrize(
    "corpus, queries, qrels, message",
    [
        (CORPUS + [{"_id": "d1", "text": "dup"}], QUERIES, None,
         "corpus.jsonl:3: duplicate document id 'd1' (first on line 1)"),
        (CORPUS, QUERIES, {"test": [("q1", "d9", 1)]}, "test.tsv:2: document 'd9' is not in corpus.jsonl"),
        (CORPUS, QUERIES, {"test": [("q9", "d1", 1)]}, "test.tsv:2: query 'q9' is not in the queries files"),
        (CORPUS, QUERIES, {"test": [("q1", "d1", "1.5")]}, "test.tsv:2: grade '1.5' is not an integer"),
        (CORPUS, QUERIES, {"test": [("q1", "d1", 1), ("q1", "d1", 2)]}, "test.tsv:3: (q1, d1) is judged 2 here but 1"),
        (CORPUS, [{"_id": "q1", "text": "  "}], {"test": [("q1", "d1", 1)]},
         "queries.jsonl:1: query 'q1' has empty text"),
        (CORPUS, QUERIES, {"test": [("q1", "d1", 1)], "train": [("q1", "d2", 1)]}, "is also judged in split 'test'"),
    ],
)
def test_bad_input_names_file_line_and_fix(tmp_path, corpus, queries, qrels, message):
    with pytest.raises(CollectionError) as raised:
        load(tmp_path, corpus, queries, qrels)
    assert message in str(raised.value)
    assert "Fix:" in str(raised.value) or "split" in str(raised.value)


def test_invalid_json_line(tmp_path):
    folder = write_beir(tmp_path / "c", CORPUS, QUERIES, {"test": [("q1", "d1", 1)]})
    with open(folder / "corpus.jsonl", "a", encoding="utf-8") as handle:
        handle.write("{not json\n")
    with pytest.raises(CollectionError, match=r"corpus.jsonl:3: not valid JSON"):
        load_beir(folder)


def test_identical_duplicate_judgments_are_noted_not_fatal(tmp_path):
    collection = load(tmp_path, qrels={"test": [("q1", "d1", 1), ("q1", "d1", 1)]})
    assert collection.qrels.num_rows == 1
    assert any("1 identical duplicate" in note for note in collection.notes)


def test_unjudged_queries_are_left_out_with_a_warning(tmp_path):
    collection = load(tmp_path, qrels={"test": [("q1", "d1", 1)]})
    assert collection.queries.column("query_id").to_pylist() == ["q1"]
    assert "1 queries have no judgment in splits ['test'] and are left out ('q2')." in collection.warnings


def test_missing_split_file_lists_available(tmp_path):
    folder = write_beir(tmp_path / "c", CORPUS, QUERIES, {"test": [("q1", "d1", 1)]})
    with pytest.raises(CollectionError, match=r"available splits: \['test'\]"):
        load_beir(folder, ["dev"])


def test_unique_per_query_metadata_is_not_a_slice(tmp_path):
    queries = [{"_id": "q1", "text": "a", "metadata": {"orig_id": "001", "intent": "x"}},
               {"_id": "q2", "text": "b", "metadata": {"orig_id": "002", "intent": "x"}},
               {"_id": "q3", "text": "c", "metadata": {"orig_id": "003", "intent": "y"}}]
    corpus = CORPUS
    collection = load(tmp_path, corpus, queries, {"test": [("q1", "d1", 1), ("q2", "d1", 1), ("q3", "d2", 1)]})
    assert collection.slice_columns == ["intent"]
    assert json.loads(collection.corpus.column("metadata")[0].as_py()) == {}


# Every input fault of a BEIR folder is refused with the file, the line and the fix (issue 10, item 6).
def bytes_fault(folder, name, old, new):
    path = folder / name
    path.write_bytes(path.read_bytes().replace(old, new, 1))


@pytest.mark.parametrize("edit, message", [
    (lambda f: bytes_fault(f, "corpus.jsonl", b"beta", b"b\xe9ta"),
     "corpus.jsonl:2: byte 0xe9 at column 38 is not UTF-8. Fix: re-encode the file as UTF-8"),
    (lambda f: bytes_fault(f, "queries.jsonl", b"alpha?", b"\xbfalpha?"),
     "queries.jsonl:1: byte 0xbf at column 24 is not UTF-8"),
    (lambda f: bytes_fault(f, "qrels/test.tsv", b"q2\td2", b"q2\xff\td2"), "test.tsv:3: byte 0xff at column 3"),
    (lambda f: bytes_fault(f, "qrels/test.tsv", b"d1\t2", b"d1\t99999999999"),
     "test.tsv:2: grade 99999999999 is out of range. Fix: use small integer grades"),
    (lambda f: shutil.rmtree(f / "qrels"), "qrels: no qrels files (<split>.tsv). Fix: add the relevance judgments"),
    (lambda f: (f / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n"),
     "qrels: the qrels judge no query. Fix: check the query ids"),
    (lambda f: (f / "queries.jsonl").write_text('{"_id": "q1", "text": 1969}\n{"_id": "q2", "text": "beta?"}\n'),
     "queries.jsonl:1: query 'q1' has a number as text (1969). Fix: quote it (\"text\": \"1969\")"),
    (lambda f: (f / "queries_test.jsonl").write_text('{"_id": "q2", "text": "again"}\n'),
     "queries_test.jsonl:1: duplicate query id 'q2' (first at queries.jsonl:2). Fix: list every query once"),
    (lambda f: bytes_fault(f, "qrels/test.tsv", b"q1\td1", b"Q1\td1"),
     "test.tsv:2: query 'Q1' is not in the queries files (ids are compared exactly: did you mean 'q1'?)"),
    (lambda f: bytes_fault(f, "qrels/test.tsv", b"q1\td1", b"q1\tD1"),
     "test.tsv:2: document 'D1' is not in corpus.jsonl (ids are compared exactly: did you mean 'd1'?)"),
])
def test_input_faults_are_refused_naming_the_file_line_and_fix(tmp_path, edit, message):
    folder = write_beir(tmp_path / "c", CORPUS, QUERIES, {"test": [("q1", "d1", 2), ("q2", "d2", 1)]})
    edit(folder)
    with pytest.raises(CollectionError) as raised:
        load_beir(folder)
    assert message in str(raised.value)
    assert main(["check-collection", str(folder)]) == 2  # the command reads it with the same code


def test_the_same_query_in_two_split_files_is_refused(tmp_path):
    folder = write_beir(tmp_path / "c", CORPUS, [QUERIES[1]], {"test": [("q2", "d2", 1)], "train": [("q1", "d1", 1)]})
    (folder / "queries_train.jsonl").write_text('{"_id": "q1", "text": "alpha?"}\n')
    (folder / "queries_test.jsonl").write_text('{"_id": "q1", "text": "alpha?"}\n')
    with pytest.raises(CollectionError, match=r"queries_train.jsonl:1: duplicate query id 'q1' \(first at "
                                              r"queries_test.jsonl:1\)"):
        load_beir(folder)


def test_a_byte_order_mark_is_dropped_from_every_file(tmp_path):
    folder = write_beir(tmp_path / "c", CORPUS, QUERIES, {"test": [("q1", "d1", 2), ("q2", "d2", 1)]})
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        (folder / name).write_bytes(b"\xef\xbb\xbf" + (folder / name).read_bytes())
    collection = load_beir(folder)
    assert collection.qrels.column("relevance").to_pylist() == [2, 1]
    assert collection.corpus.column("doc_id").to_pylist()[0] == "d1"


def test_suspicious_but_legal_input_gets_warnings(tmp_path):
    corpus = CORPUS + [{"_id": "d3", "title": "", "text": " "}]
    queries = QUERIES + [{"_id": "q3", "text": "gamma?"}]
    folder = write_beir(tmp_path / "c", corpus, queries, {"test": [("q1", "d1", 2), ("q2", "d2", 1)],
                                                          "train": [("q3", "d1", 0)]})
    (folder / "queries_train.jsonl").write_text('{"_id": "q4", "text": "delta?"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td2\t1\nq4\td1\t1\n")
    warnings = load_beir(folder).warnings
    expected = [
        "corpus.jsonl: 1 documents have neither title nor text ('d3'); no retriever can find them.",
        "queries_train.jsonl: 1 queries listed for split 'train' are judged in split 'test' (first: 'q4' on line 1)",
        "split 'test' has only 3 queries: its confidence intervals will be wide",
        "test.tsv: every judgment is relevant (no grade <= 0)",
        "train.tsv: 1 queries have no relevant document ('q3'); evaluation drops them or scores them 0",
    ]
    for text in expected:
        assert sum(text in warning for warning in warnings) == 1, (text, warnings)
    assert len(warnings) == len(expected) + 1  # and the train split is tiny too


def test_check_collection_prints_the_summary_and_warnings_and_refuses_a_missing_eval_split(tiny_beir, capsys):
    assert main(["check-collection", str(tiny_beir)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{tiny_beir}: a valid BEIR collection\n  documents: 24\n  queries: test 6, train 2\n")
    assert "  judgments: test 18 (grade: count 0: 6, 2: 6, 3: 6); train 6" in out
    assert "warning: split 'test' has only 6 queries" in out
    assert main(["check-collection", str(tiny_beir), "--splits", "train"]) == 2
    assert "no judged queries in the evaluation split 'test' (splits: ['train'])" in capsys.readouterr().err


def test_a_query_of_punctuation_alone_is_flagged_with_its_line(tmp_path):
    queries = QUERIES + [{"_id": "q3", "text": "?!... ---"}]
    folder = write_beir(tmp_path / "c", CORPUS, queries, {"test": [("q1", "d1", 2), ("q2", "d2", 1), ("q3", "d1", 1)]})
    warnings = [warning for warning in load_beir(folder).warnings if "no letter or digit" in warning]
    assert len(warnings) == 1 and "1 queries hold no letter or digit" in warnings[0]
    assert "(first: 'q3' on line 3)" in warnings[0] and "queries.jsonl" in warnings[0]
