import numpy as np
import pyarrow as pa

from rerankeval.candidates import CANDIDATES_SCHEMA, FIRST_STAGE_SCHEMA, RetrievalConfig, freeze
from rerankeval.collection import load_beir
from rerankeval.io import sha256_text
from rerankeval.retrieval import FirstStageRanking, fused_ranks, passage_text, rank_rows, rrf_scores
from rerankeval.text import tokenize


def test_tokenize_korean_bigrams_and_latin_words():
    assert tokenize("PAY-1042 결제를 the Retry") == ["pay", "1042", "결제", "제를", "retry"]
    assert tokenize("비 S2") == ["비", "s2"]
    assert tokenize("ＰＡＹ") == ["pay"]  # NFKC folds full-width letters


def test_rank_rows_breaks_ties_by_column():
    ranks = rank_rows(np.array([[0.5, 0.9, 0.5, 0.1]]))
    assert ranks.tolist() == [[2, 1, 3, 4]]


def test_rrf_by_hand():
    bm25 = FirstStageRanking(scores=np.zeros((1, 3)), ranks=np.array([[1, 2, 3]]))
    dense = FirstStageRanking(scores=np.zeros((1, 3)), ranks=np.array([[3, 1, 2]]))
    fused = rrf_scores([bm25, dense], k=60, depth=2)
    # doc0: bm25 rank 1 only (dense rank 3 is beyond depth 2); doc1: 1/62 + 1/61; doc2: dense rank 2 only.
    assert np.allclose(fused, [[1 / 61, 1 / 62 + 1 / 61, 1 / 62]])
    assert fused_ranks(fused, [bm25, dense]).tolist() == [[2, 1, 3]]


def test_fused_ties_go_to_best_single_rank_then_doc_id():
    a = FirstStageRanking(scores=np.zeros((1, 3)), ranks=np.array([[2, 1, 3]]))
    b = FirstStageRanking(scores=np.zeros((1, 3)), ranks=np.array([[1, 2, 3]]))
    fused = np.array([[0.1, 0.1, 0.1]])
    assert fused_ranks(fused, [a, b]).tolist() == [[1, 2, 3]]


class FakeRetriever:
    """Scores = number of query tokens in the passage (lexical) or a fixed per-document prior (dense)."""

    def __init__(self, passages, **_):
        self.passages = passages

    def scores(self, queries):
        return np.array([[len(set(tokenize(q)) & set(tokenize(p))) for p in self.passages] for q in queries], float)


class PriorRetriever(FakeRetriever):
    def scores(self, queries):
        return np.tile(np.linspace(1, 0, len(self.passages)), (len(queries), 1))


def test_freeze_contract(tiny_beir):
    collection = load_beir(tiny_beir)
    config = RetrievalConfig(top_n=5, fusion_depth=5)
    candidates, own = freeze(collection.corpus, collection.queries, config,
                             lexical_retriever=FakeRetriever, dense_retriever=PriorRetriever)
    assert candidates.schema.equals(CANDIDATES_SCHEMA) and own.schema.equals(FIRST_STAGE_SCHEMA)
    frame = candidates.to_pandas()
    assert frame.groupby("query_id").size().eq(5).all()
    assert (frame.groupby("query_id")["fused_rank"].apply(list) == [[1, 2, 3, 4, 5]] * 8).all()
    assert all(sha256_text(text) == digest for text, digest in zip(frame["passage"], frame["passage_sha256"]))
    corpus = collection.corpus.to_pandas().set_index("doc_id")
    row = frame.iloc[0]
    assert row["passage"] == passage_text(corpus.loc[row["doc_id"], "title"], corpus.loc[row["doc_id"], "text"])
    # BM25's own top list is in its own rank order and matches the ranks frozen with the candidates.
    own_bm25 = own.to_pandas().query("retriever == 'bm25' and query_id == 'q0'")
    assert own_bm25["rank"].tolist() == [1, 2, 3, 4, 5]
    merged = frame.merge(own_bm25, on=["query_id", "doc_id"])
    assert (merged["bm25_rank"] == merged["rank"]).all()
    # The query's own English passage wins BM25 for q1 ("...retried at most twice").
    assert own.to_pandas().query("retriever == 'bm25' and query_id == 'q1'")["doc_id"].iloc[0] == "d1a"


def test_freeze_is_deterministic(tiny_beir):
    collection = load_beir(tiny_beir)
    config = RetrievalConfig(top_n=4, fusion_depth=3)
    runs = [freeze(collection.corpus, collection.queries, config, lexical_retriever=FakeRetriever,
                   dense_retriever=PriorRetriever)[0] for _ in range(2)]
    assert runs[0].equals(runs[1])
    assert isinstance(runs[0], pa.Table)
