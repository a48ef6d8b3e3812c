import json

import pytest

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
    splits = dict(zip(collection.queries.column("query_id").to_pylist(), collection.queries.column("split").to_pylist()))
    assert splits["q0"] == "test" and splits["q7"] == "train"
    assert collection.slice_columns == ["language"]
    assert collection.qrels.column("relevance").type.bit_width == 32
    parents = dict(zip(collection.corpus.column("doc_id").to_pylist(), collection.corpus.column("parent_id").to_pylist()))
    assert parents["d3b"] == "d3" and parents["d3c"] == "d3c"


def test_row_hash_changes_with_text(tmp_path):
    first = load(tmp_path / "a").corpus.column("row_sha256").to_pylist()
    changed = [dict(CORPUS[0], text="alpha!"), CORPUS[1]]
    second = load(tmp_path / "b", corpus=changed).corpus.column("row_sha256").to_pylist()
    assert first[0] != second[0] and first[1] == second[1]


@pytest.mark.parametrize(
    "corpus, queries, qrels, message",
    [
        (CORPUS + [{"_id": "d1", "text": "dup"}], QUERIES, None, "corpus.jsonl:3: duplicate document id 'd1' (first on line 1)"),
        (CORPUS, QUERIES, {"test": [("q1", "d9", 1)]}, "test.tsv:2: document 'd9' is not in corpus.jsonl"),
        (CORPUS, QUERIES, {"test": [("q9", "d1", 1)]}, "test.tsv:2: query 'q9' is not in the queries files"),
        (CORPUS, QUERIES, {"test": [("q1", "d1", "1.5")]}, "test.tsv:2: grade '1.5' is not an integer"),
        (CORPUS, QUERIES, {"test": [("q1", "d1", 1), ("q1", "d1", 2)]}, "test.tsv:3: (q1, d1) is judged 2 here but 1"),
        (CORPUS, [{"_id": "q1", "text": "  "}], {"test": [("q1", "d1", 1)]}, "queries.jsonl:1: query 'q1' has empty text"),
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


def test_unjudged_queries_are_left_out_and_counted(tmp_path):
    collection = load(tmp_path, qrels={"test": [("q1", "d1", 1)]})
    assert collection.queries.column("query_id").to_pylist() == ["q1"]
    assert any("1 queries without judgments" in note for note in collection.notes)


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
