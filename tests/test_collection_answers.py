"""Gold answers in a collection: typed query fields (never slices), validated with the file, the line and the fix."""

from __future__ import annotations

import pytest

from rerankeval.core.errors import CollectionError
from rerankeval.data.beir import load_beir
from tests.conftest import write_beir

CORPUS = [{"_id": "d1", "title": "", "text": "alpha"}, {"_id": "d2", "title": "", "text": "beta"}]


def load(tmp_path, queries, qrels=(("q1", "d1", 1), ("q2", "d2", 0))):
    return load_beir(write_beir(tmp_path / "c", CORPUS, queries, {"test": list(qrels)}))


def test_answers_and_answerable_are_typed_columns_not_slices(tmp_path):
    collection = load(tmp_path, [
        {"_id": "q1", "text": "alpha?", "metadata": {"answers": ["alpha", "a"], "kind": "x"}},
        {"_id": "q2", "text": "gamma?", "metadata": {"answerable": False, "kind": "y"}},
        {"_id": "q3", "text": "beta?", "metadata": {"kind": "x"}}], qrels=(("q1", "d1", 1), ("q2", "d2", 0),
                                                                          ("q3", "d2", 1)))
    assert collection.has_answers and collection.slice_columns == ["kind"]
    queries = collection.queries.to_pylist()
    assert [(q["answers"], q["answerable"]) for q in queries] == [(["alpha", "a"], True), (None, False),
                                                                  (None, None)]
    # The all-0 query stays in the split (it is the abstention case).
    assert [q["split"] for q in queries] == ["test", "test", "test"]


def test_collections_without_answers_keep_their_table_and_hashes(tmp_path):
    plain = load(tmp_path / "a", [{"_id": "q1", "text": "alpha?"}, {"_id": "q2", "text": "beta?"}])
    assert not plain.has_answers and plain.queries.schema.names == ["query_id", "text", "split", "row_sha256"]


@pytest.mark.parametrize("metadata, qrels, message", [
    ({"answers": "alpha"}, None, "queries.jsonl:1: query 'q1': metadata.answers must be a list of non-empty strings"),
    ({"answers": ["alpha", ""]}, None, "metadata.answers must be a list of non-empty strings"),
    ({"answerable": "no"}, None, "queries.jsonl:1: query 'q1': metadata.answerable must be true or false"),
    ({"answerable": True}, None, "query 'q1' is answerable but has no metadata.answers. Fix:"),
    ({"answerable": False}, None, "test.tsv:2: query 'q1' is marked answerable: false but judges 'd1' relevant (1)"),
])
def test_bad_answer_fields_are_refused(tmp_path, metadata, qrels, message):
    with pytest.raises(CollectionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load(tmp_path, [{"_id": "q1", "text": "alpha?", "metadata": metadata}, {"_id": "q2", "text": "beta?"}])
