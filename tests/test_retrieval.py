import numpy as np
import pyarrow as pa

from rerankeval.core.hashing import sha256_text
from rerankeval.data.beir import load_beir
from rerankeval.retrieval.candidates import CANDIDATES_SCHEMA, PASSAGES_SCHEMA, load_candidates, write_candidates
from rerankeval.retrieval.config import HybridConfig
from rerankeval.retrieval.freeze import FIRST_STAGE_SCHEMA, freeze
from rerankeval.retrieval.fusion import rrf_top, top_k
from rerankeval.retrieval.text import passage_text, tokenize


def test_tokenize_korean_bigrams_and_latin_words():
    assert tokenize("PAY-1042 결제를 the Retry") == ["pay", "1042", "결제", "제를", "retry"]
    assert tokenize("비 S2") == ["비", "s2"]
    assert tokenize("ＰＡＹ") == ["pay"]  # NFKC folds full-width letters


def full_ranks(scores: np.ndarray) -> np.ndarray:
    """Reference: 1-based ranks of every column, score descending, ties by column."""
    order = np.lexsort((np.arange(len(scores)), -scores))
    ranks = np.empty(len(order), dtype=int)
    ranks[order] = np.arange(1, len(order) + 1)
    return ranks


def test_top_k_breaks_ties_by_column_even_at_the_boundary():
    ranking = top_k(np.array([[0.5, 0.9, 0.5, 0.1, 0.5]]), 3)
    assert ranking.columns.tolist() == [[1, 0, 2]]
    assert ranking.exact_ranks(0, np.array([4, 3])).tolist() == [4, 5]


def test_rrf_by_hand():
    bm25 = top_k(np.array([[3.0, 2.0, 1.0]]), 2)   # ranks 1, 2, 3
    dense = top_k(np.array([[1.0, 3.0, 2.0]]), 2)  # ranks 3, 1, 2
    fused = rrf_top([bm25, dense], 0, k=60, depth=2, top_n=3)
    # doc1: 1/62 + 1/61; doc0: bm25 rank 1 only (dense rank 3 is beyond depth 2); doc2: dense rank 2 only.
    assert fused.columns.tolist() == [1, 0, 2]
    assert np.allclose(fused.scores, [1 / 62 + 1 / 61, 1 / 61, 1 / 62])
    assert [ranks.tolist() for ranks in fused.ranks] == [[2, 1, 3], [1, 3, 2]]  # exact, also beyond the top k


def test_fused_ties_go_to_best_single_rank_then_doc_id():
    a = top_k(np.array([[2.0, 3.0, 1.0]]), 3)  # ranks 2, 1, 3
    b = top_k(np.array([[3.0, 2.0, 1.0]]), 3)  # ranks 1, 2, 3
    fused = rrf_top([a, b], 0, k=60, depth=0, top_n=3)  # depth 0: every fused score ties at 0
    assert fused.columns.tolist() == [0, 1, 2]


def test_top_k_fusion_equals_ranking_the_whole_corpus():
    """Randomised against a full-corpus reference, with ties: candidates, fused scores and exact ranks agree."""
    rng = np.random.default_rng(5)
    for _ in range(30):
        n_docs, depth, top_n = int(rng.integers(5, 40)), int(rng.integers(1, 12)), int(rng.integers(1, 15))
        scores = [np.round(rng.random((1, n_docs)), 1), rng.integers(0, 4, (1, n_docs)).astype(float)]
        full = [full_ranks(score[0]) for score in scores]
        fused_all = sum(np.where(r <= depth, 1.0 / (60 + r), 0.0) for r in full)
        best = np.minimum(*full)
        expected = np.lexsort((np.arange(n_docs), best, -fused_all))[:min(top_n, n_docs)]
        fused = rrf_top([top_k(score, max(depth, top_n)) for score in scores], 0, k=60, depth=depth, top_n=top_n)
        assert fused.columns.tolist() == expected.tolist()
        assert fused.scores.tolist() == fused_all[expected].tolist()
        assert [ranks.tolist() for ranks in fused.ranks] == [r[expected].tolist() for r in full]


class FakeRetriever:
    """Scores = number of query tokens in the passage (lexical) or a fixed per-document prior (dense)."""

    def __init__(self, passages, **_):
        self.passages = passages

    def scores(self, queries):
        return np.array([[len(set(tokenize(q)) & set(tokenize(p))) for p in self.passages] for q in queries], float)


class PriorRetriever(FakeRetriever):
    def scores(self, queries):
        return np.tile(np.linspace(1, 0, len(self.passages)), (len(queries), 1))


def test_freeze_contract(tiny_beir, tmp_path):
    collection = load_beir(tiny_beir)
    config = HybridConfig(top_n=5, fusion_depth=5)
    frozen = freeze(collection.corpus, collection.queries, config, lexical_retriever=FakeRetriever,
                    dense_retriever=PriorRetriever)
    candidates, own = frozen.candidates, frozen.first_stage
    assert candidates.schema.equals(CANDIDATES_SCHEMA) and own.schema.equals(FIRST_STAGE_SCHEMA)
    assert frozen.passages.schema.equals(PASSAGES_SCHEMA)
    assert frozen.dense["model"] == "e5-small"  # auto: the tiny collection is half Korean
    write_candidates(tmp_path / "candidates.parquet", tmp_path / "passages.parquet", candidates, frozen.passages, {})
    frame = load_candidates(tmp_path / "candidates.parquet")
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
    config = HybridConfig(top_n=4, fusion_depth=3)
    runs = [freeze(collection.corpus, collection.queries, config, lexical_retriever=FakeRetriever,
                   dense_retriever=PriorRetriever).candidates for _ in range(2)]
    assert runs[0].equals(runs[1])
    assert isinstance(runs[0], pa.Table)
