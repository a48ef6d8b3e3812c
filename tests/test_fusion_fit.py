"""Fitted RRF weights (retrieval.fusion): plain RRF bit for bit at equal weights, a move only on evidence from the fit
split, never a look at the evaluated split's judgments."""

import numpy as np
import pytest
from pydantic import ValidationError

from rerankeval.data.beir import load_beir
from rerankeval.retrieval.config import FusionConfig, HybridConfig
from rerankeval.retrieval.freeze import freeze
from rerankeval.retrieval.fusion import rrf_top, top_k
from rerankeval.retrieval.fusion_fit import share_weights
from tests.conftest import write_beir
from tests.test_retrieval import FakeRetriever, PriorRetriever


def test_equal_share_is_plain_rrf_bit_for_bit():
    rng = np.random.default_rng(3)
    rankings = [top_k(rng.random((1, 50)), 20), top_k(rng.random((1, 50)), 20)]
    plain = rrf_top(rankings, 0, k=60, depth=20, top_n=20)
    equal = rrf_top(rankings, 0, k=60, depth=20, top_n=20, weights=share_weights(0.5))
    assert equal.columns.tolist() == plain.columns.tolist() and equal.scores.tolist() == plain.scores.tolist()
    heavy = rrf_top(rankings, 0, k=60, depth=20, top_n=3, weights=share_weights(0.75))
    # By hand: 1.5 / (60 + BM25 rank) + 0.5 / (60 + dense rank), ranks within depth 20.
    for position, score in enumerate(heavy.scores):
        bm25_rank, dense_rank = (int(ranks[position]) for ranks in heavy.ranks)
        expected = (1.5 / (60 + bm25_rank) if bm25_rank <= 20 else 0) + (0.5 / (60 + dense_rank) if dense_rank <= 20
                                                                          else 0)
        assert score == pytest.approx(expected)


def keyword_collection(folder, train_queries=40, test_queries=6):
    """Each document holds one keyword; each query asks for one document's keyword. BM25 (token overlap) finds it;
    the fake dense retriever is a fixed prior, useless: a collection where plain RRF drags BM25 down."""
    n_docs = train_queries + test_queries
    corpus = [{"_id": f"d{i:03d}", "title": "", "text": f"note about keyword{i} and more"} for i in range(n_docs)]
    queries = [{"_id": f"q{i:03d}", "text": f"keyword{i}"} for i in range(n_docs)]
    qrels = {"train": [(f"q{i:03d}", f"d{i:03d}", 1) for i in range(train_queries)],
             "test": [(f"q{i:03d}", f"d{i:03d}", 1) for i in range(train_queries, n_docs)]}
    return write_beir(folder, corpus, queries, qrels)


def frozen(path, **fusion):
    collection = load_beir(path)
    config = HybridConfig(top_n=20, fusion_depth=20, fusion=FusionConfig(**fusion))
    return freeze(collection.corpus, collection.queries, config, collection.qrels,
                  lexical_retriever=FakeRetriever, dense_retriever=PriorRetriever), collection


def test_a_useless_retriever_moves_the_weights_toward_the_other_on_train_evidence(tmp_path):
    result, _ = frozen(keyword_collection(tmp_path / "kw"))
    fit = result.fusion["fit"]
    assert result.fusion["how"] == "fit" and fit["share"] == 0.8 and fit["ci"][0] > 0
    assert result.fusion["weights"] == {"bm25": 1.6, "dense": 0.4}
    assert fit["queries"] == 40 and fit["split"] == "train" and "Bonferroni over 6 shares" in fit["reason"]
    plain, _ = frozen(keyword_collection(tmp_path / "kw2"), weights="equal")
    assert plain.fusion == {"weights": {"bm25": 1.0, "dense": 1.0}, "how": "equal"}
    # On the test queries (not used to fit) the relevant document rises: under plain RRF the prior's top documents
    # crowd it.
    def relevant_ranks(frozen_run):
        candidates = frozen_run.candidates.to_pandas()
        relevant = candidates["doc_id"].str[1:] == candidates["query_id"].str[1:]
        return candidates[relevant].set_index("query_id")["fused_rank"].loc[[f"q{i:03d}" for i in range(40, 46)]]

    fitted, equal = relevant_ranks(result), relevant_ranks(plain)
    assert (fitted <= equal).all() and fitted.mean() < equal.mean()


def test_too_little_evidence_keeps_plain_rrf_and_the_test_split_is_never_read(tmp_path):
    few, _ = frozen(keyword_collection(tmp_path / "few", train_queries=3))
    assert few.fusion["fit"]["share"] == 0.5 and few.fusion["weights"] == {"bm25": 1.0, "dense": 1.0}
    assert "not significant: equal weights kept" in few.fusion["fit"]["reason"]
    # Changing every test judgment changes nothing: the fit reads the train split's only.
    path = keyword_collection(tmp_path / "kw")
    before, collection = frozen(path)
    test_file = path / "qrels" / "test.tsv"
    test_file.write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i:03d}\td000\t1\n" for i in range(40, 46)))
    after, _ = frozen(path)
    assert after.fusion == before.fusion and after.candidates.equals(before.candidates)


def test_no_train_split_means_equal_weights_with_the_reason(tiny_beir):
    collection = load_beir(tiny_beir, ["test"])
    result = freeze(collection.corpus, collection.queries, HybridConfig(top_n=5, fusion_depth=5),
                    collection.qrels, lexical_retriever=FakeRetriever, dense_retriever=PriorRetriever)
    assert result.fusion["weights"] == {"bm25": 1.0, "dense": 1.0}
    assert result.fusion["fit"]["reason"] == "no 'train' queries to fit on: equal weights"


@pytest.mark.parametrize("bad", [{"grid": [0.3, 0.7]}, {"grid": [0.0, 0.5]}, {"weights": {"bm25": 1.0}},
                                 {"weights": "auto"}, {"confidence": 1.0}])
def test_bad_fusion_settings_are_refused(bad):
    with pytest.raises(ValidationError):
        FusionConfig(**bad)
