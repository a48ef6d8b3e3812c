"""Candidates on disk: each passage text once, referred to by hash, verified byte for byte when read back; scores
stored at the declared precision so machines whose arithmetic differs in the last bits write the same files."""

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from rerankeval.core.errors import ContractError
from rerankeval.core.hashing import sha256_file, sha256_text
from rerankeval.core.precision import SCORE_DECIMALS, stored_scores
from rerankeval.data.beir import load_beir
from rerankeval.rerank.assemble import assemble
from rerankeval.retrieval.candidates import load_candidates, passages_table, write_candidates
from rerankeval.retrieval.config import HybridConfig
from rerankeval.retrieval.freeze import freeze
from rerankeval.retrieval.text import passage_text
from rerankeval.systems.base import Scores
from tests.test_retrieval import FakeRetriever


class NoisyDense(FakeRetriever):
    """Cosine-like scores with a per-instance perturbation far below the stored precision (another CPU)."""

    noise = 0.0

    def scores(self, queries):
        base = np.array([[((len(q) * 7 + len(p) * 3) % 11) / 11 for p in self.passages] for q in queries])
        return base + self.noise * np.sin(np.arange(base.size)).reshape(base.shape)


def frozen_files(tiny_beir, folder, noise):
    NoisyDense.noise = noise
    collection = load_beir(tiny_beir)
    frozen = freeze(collection.corpus, collection.queries, HybridConfig(top_n=6, fusion_depth=6),
                    lexical_retriever=FakeRetriever, dense_retriever=NoisyDense)
    write_candidates(folder / "candidates.parquet", folder / "passages.parquet", frozen.candidates, frozen.passages,
                     {"test": True})
    return collection, frozen


def test_passages_are_stored_once_and_round_trip_with_hash_checks(tiny_beir, tmp_path):
    collection, frozen = frozen_files(tiny_beir, tmp_path, 0.0)
    stored = pq.read_table(tmp_path / "candidates.parquet")
    assert "passage" not in stored.column_names
    texts = pq.read_table(tmp_path / "passages.parquet").to_pandas()
    assert texts["passage_sha256"].is_unique and len(texts) == stored.to_pandas()["passage_sha256"].nunique()
    assert len(texts) < stored.num_rows  # 16 queries x 6 candidates refer to fewer distinct texts

    frame = load_candidates(tmp_path / "candidates.parquet")
    corpus = collection.corpus.to_pandas().set_index("doc_id")
    expected = [passage_text(corpus.loc[doc, "title"], corpus.loc[doc, "text"]) for doc in frame["doc_id"]]
    assert frame["passage"].tolist() == expected
    assert (frame["passage"].map(sha256_text) == frame["passage_sha256"]).all()
    assert frame.drop(columns="passage").equals(stored.to_pandas())
    some = frame["query_id"].unique()[:3].tolist()
    subset = load_candidates(tmp_path / "candidates.parquet", query_ids=some, columns=["query_id", "doc_id"])
    assert set(subset["query_id"]) == set(some) and list(subset.columns) == ["query_id", "doc_id", "passage_sha256",
                                                                             "passage"]
    ranks = load_candidates(tmp_path / "candidates.parquet", columns=["query_id", "fused_rank"], with_text=False)
    assert list(ranks.columns) == ["query_id", "fused_rank"]


def test_a_changed_or_missing_passage_is_refused_naming_the_file(tiny_beir, tmp_path):
    frozen_files(tiny_beir, tmp_path, 0.0)
    candidates, passages = tmp_path / "candidates.parquet", tmp_path / "passages.parquet"
    table = pq.read_table(passages)
    altered = table.to_pandas()
    altered.loc[0, "passage"] = altered.loc[0, "passage"] + "!"
    pq.write_table(passages_table(altered["passage_sha256"], altered["passage"]), passages)
    with pytest.raises(ContractError, match="passages.parquet: its sha256 is not the one"):
        load_candidates(candidates)
    # Even with a matching file hash recorded, a text that does not match its own hash is refused.
    write_candidates(candidates, passages, pq.read_table(candidates), passages_table(altered["passage_sha256"],
                                                                                     altered["passage"]), {})
    with pytest.raises(ContractError, match="does not match its sha256"):
        load_candidates(candidates)
    assert len(load_candidates(candidates, with_text=False))  # rank-only readers do not need the texts
    # A passages file that lacks a referenced text.
    write_candidates(candidates, passages, pq.read_table(candidates), table.slice(1), {})
    with pytest.raises(ContractError, match="candidates refer to passages that .*passages.parquet does not hold"):
        load_candidates(candidates)
    passages.unlink()
    with pytest.raises(ContractError, match="passages.parquet: not found"):
        load_candidates(candidates)


def test_scores_at_the_declared_precision_make_files_byte_identical_across_last_bit_noise(tiny_beir, tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    _, clean = frozen_files(tiny_beir, tmp_path / "a", 0.0)
    _, noisy = frozen_files(tiny_beir, tmp_path / "b", 3e-12)  # last-bit noise of float64 dot products
    for name in ("candidates.parquet", "passages.parquet"):
        assert sha256_file(tmp_path / "a" / name) == sha256_file(tmp_path / "b" / name), name
    dense = clean.candidates.column("dense_score").to_numpy()
    assert np.array_equal(dense, np.round(dense, SCORE_DECIMALS))
    # Ranks are computed from the stored values: scores equal once rounded are ties, broken by doc id.
    own = clean.first_stage.to_pandas().query("retriever == 'dense'")
    for _, ranking in own.groupby("query_id"):
        keys = list(zip(-ranking["score"], ranking["doc_id"]))
        assert keys == sorted(keys)


def test_model_scores_in_runs_are_stored_rounded_and_ordered_from_the_stored_values():
    frame = pd.DataFrame({"query_id": "q", "doc_id": ["d1", "d2", "d3"], "parent_id": ["d1", "d2", "d3"],
                          "fused_rank": [1, 2, 3]})
    noise = 4e-10  # another CPU's kernels: same score to 9 decimals, order flipped without rounding
    first = assemble(frame, 3, Scores(np.array([0.2, 0.7 + noise, 0.7])))
    second = assemble(frame, 3, Scores(np.array([0.2, 0.7, 0.7 + noise])))
    assert first.order.tolist() == second.order.tolist()
    assert first.columns["score"].tolist() == second.columns["score"].tolist()
    assert frame["doc_id"].to_numpy()[first.order].tolist() == ["d2", "d3", "d1"]  # the tie: the better fused rank
    assert stored_scores(np.array([np.inf, -np.inf, -1e-9])).tolist() == [np.inf, -np.inf, 0.0]
