"""The train stage: mining never touches another split's queries; training is seeded and writes a loadable model."""

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from rerankeval.core.errors import ConfigError
from rerankeval.core.hashing import sha256_file, sha256_text
from rerankeval.data.beir import load_beir
from rerankeval.data.snapshot import write_snapshot
from rerankeval.models.resolve import local_model_hash, resolve_model
from rerankeval.retrieval.candidates import CANDIDATES_SCHEMA, load_candidates, passages_table, write_candidates
from rerankeval.systems.base import Query, QueryCandidates
from rerankeval.systems.registry import BuildContext, build_system
from rerankeval.training.config import MODEL_CARD, TrainConfig
from rerankeval.training.cross_encoder import mine_examples, train

CONFIG = TrainConfig(backbone="minilm", steps=2, batch_size=4, learning_rate=1e-4, max_length=32,
                     negatives_per_positive=2, seed=3, out_dir="unused", negative_pool_depth=8, unjudged_skip_top=2,
                     frozen_layers=2)


def fused(candidates: pd.DataFrame) -> pd.DataFrame:
    """``candidates`` with RRF (k 60) fused scores and ranks recomputed from their BM25 and dense ranks."""
    candidates = candidates.assign(fused_score=1 / (60 + candidates["bm25_rank"]) + 1 / (60 + candidates["dense_rank"]))
    order = candidates.sort_values(["query_id", "fused_score", "bm25_rank"], ascending=[True, False, True])
    return order.assign(fused_rank=order.groupby("query_id").cumcount() + 1)


def synthetic_split_tables():
    """Train queries t1-t3 and test queries s1-s2 over shared documents; the test side carries LEAK markers. BM25
    ranks d<r> at r; dense ranks them in another order."""
    queries = pd.DataFrame({"query_id": ["t1", "t2", "t3", "s1", "s2"],
                            "text": ["train one", "train two", "train three", "LEAK test one", "LEAK test two"],
                            "split": ["train"] * 3 + ["test"] * 2})
    rows = []
    for query_id in queries["query_id"]:
        test_query = query_id.startswith("s")
        for rank in range(1, 11):
            doc_id = f"{'x' if test_query and rank > 5 else 'd'}{rank}"
            passage = f"LEAK test-only passage {rank}" if doc_id.startswith("x") else f"shared passage {rank}"
            rows.append((query_id, doc_id, passage, rank))
    candidates = pd.DataFrame(rows, columns=["query_id", "doc_id", "passage", "bm25_rank"])
    candidates["dense_rank"] = candidates["bm25_rank"] * 3 % 10 + 1
    candidates["dense_score"] = 1 - candidates["dense_rank"] / 100
    candidates = fused(candidates)
    # d4 is a duplicate of d3's text: a copy of a positive is never a negative.
    candidates.loc[candidates["doc_id"] == "d4", "passage"] = "shared passage 3"
    candidates["passage_sha256"] = candidates["passage"].map(sha256_text)
    qrels = pd.DataFrame([("t1", "d3", 2), ("t1", "d1", 0), ("t2", "d6", 1), ("t3", "d9", 0),
                          ("s1", "d1", 2), ("s1", "x7", 1), ("s2", "d2", 1)],
                         columns=["query_id", "doc_id", "relevance"])
    return queries, qrels, candidates


def test_held_out_queries_are_left_out_of_training_and_listed():
    queries, qrels, candidates = synthetic_split_tables()
    plain = mine_examples(queries, qrels, candidates, CONFIG)
    held = mine_examples(queries, qrels, candidates, CONFIG.model_copy(update={"holdout": 1}))
    kept_out = held.stats["held_out_queries"]
    assert len(kept_out) == 1 and kept_out[0] in {"t1", "t2", "t3"}
    assert kept_out[0] not in set(held.examples["query_id"]) and held.stats["split_queries"] == 2
    assert "held_out_queries" not in plain.stats  # holdout 0: the same examples as before the option existed
    assert mine_examples(queries, qrels, candidates, CONFIG.model_copy(update={"holdout": 1})).stats == held.stats
    with pytest.raises(ValueError, match="leaves none of the 3 'train' queries"):
        mine_examples(queries, qrels, candidates, CONFIG.model_copy(update={"holdout": 3}))


def test_mining_uses_the_train_split_only_and_avoids_likely_unjudged_positives():
    queries, qrels, candidates = synthetic_split_tables()
    mined = mine_examples(queries, qrels, candidates, CONFIG)
    examples = mined.examples
    assert set(examples["query_id"]) == {"t1", "t2"}  # t3 has no positive
    assert not examples["text"].str.contains("LEAK").any()
    assert not examples["passage"].str.contains("LEAK").any()
    for _, group in examples.groupby("group"):
        assert group["query_id"].nunique() == 1 and len(group) == CONFIG.group_size
        assert group["label"].iloc[0] > 0 and (group["label"].iloc[1:] == 0).all()
    positives = examples[examples["label"] > 0]
    assert sorted(zip(positives["query_id"], positives["doc_id"], positives["label"])) == [
        ("t1", "d3", 1.0), ("t2", "d6", 0.5)]  # graded labels: grade / max grade of the train split
    negatives = examples[examples["label"] == 0]
    assert (negatives["bm25_rank"] <= CONFIG.negative_pool_depth).all()
    assert "d4" not in set(negatives[negatives["query_id"] == "t1"]["doc_id"])  # a copy of t1's positive
    judged = set(zip(qrels["query_id"], qrels["doc_id"]))
    unjudged_ranks = [rank for q, d, rank in zip(negatives["query_id"], negatives["doc_id"], negatives["bm25_rank"])
                      if (q, d) not in judged]
    assert min(unjudged_ranks) > CONFIG.unjudged_skip_top
    assert mined.stats == {"split_queries": 3, "queries_with_groups": 2, "groups": 2,
                           "positives_short_of_negatives": 0, "judged_positives_outside_candidates": 0,
                           "queries_with_bm25_pool_cut_short": 0}

    again = mine_examples(queries, qrels, candidates, CONFIG)
    pd.testing.assert_frame_equal(again.examples, examples)
    assert again.sha256 == mined.sha256


def test_mined_examples_do_not_move_with_the_dense_retriever():
    """Dense scores differ in the last bits from one CPU to another, and dense and fused ranks with them (issue 21):
    the examples must not; BM25's ranks are the same everywhere and do decide them."""
    queries, qrels, candidates = synthetic_split_tables()
    qrels = pd.concat([qrels, pd.DataFrame([("t3", "d2", 1), ("t3", "d7", 2)], columns=qrels.columns)])
    mined = mine_examples(queries, qrels, candidates, CONFIG)
    assert mined.stats["groups"] == 4
    rng = np.random.default_rng(5)
    for _ in range(5):
        other_cpu = candidates.assign(
            dense_rank=candidates.groupby("query_id")["dense_rank"].transform(lambda ranks: rng.permutation(ranks)),
            dense_score=candidates["dense_score"] * (1 + 1e-6 * rng.standard_normal(len(candidates))))
        other_cpu = fused(other_cpu).sample(frac=1, random_state=rng.integers(1 << 30))
        ranks = candidates.merge(other_cpu, on=["query_id", "doc_id"], suffixes=("", "_other"))
        assert (ranks["fused_rank"] != ranks["fused_rank_other"]).any()
        assert mine_examples(queries, qrels, other_cpu, CONFIG).sha256 == mined.sha256
    # A candidate below BM25's pool that fusion keeps on one CPU and drops on another changes nothing either.
    beyond_pool = (candidates["query_id"] == "t1") & (candidates["bm25_rank"] == CONFIG.negative_pool_depth + 1)
    assert mine_examples(queries, qrels, candidates[~beyond_pool], CONFIG).sha256 == mined.sha256

    t1 = candidates["query_id"] == "t1"
    other_bm25 = candidates.assign(bm25_rank=np.where(t1, 11 - candidates["bm25_rank"], candidates["bm25_rank"]))
    assert mine_examples(queries, qrels, other_bm25, CONFIG).sha256 != mined.sha256


def test_a_bm25_pool_with_a_rank_missing_stops_there_and_is_counted():
    queries, qrels, candidates = synthetic_split_tables()
    missing = (candidates["query_id"] == "t1") & (candidates["bm25_rank"] == 6)
    mined = mine_examples(queries, qrels, candidates[~missing], CONFIG)
    examples = mined.examples
    assert examples[examples["query_id"] == "t1"]["bm25_rank"].max() < 6
    assert examples[examples["query_id"] == "t2"]["bm25_rank"].max() > 6
    assert mined.stats["queries_with_bm25_pool_cut_short"] == 1


def test_train_params_refuse_the_test_split_unknown_keys_and_wrong_types():
    params = {"backbone": "minilm", "steps": 1, "batch_size": 2, "learning_rate": 1e-5, "max_length": 32,
              "negatives_per_positive": 1, "seed": 0, "out_dir": "x"}
    assert TrainConfig.parse(params, "train").split == "train"
    with pytest.raises(ConfigError, match="evaluation split"):
        TrainConfig.parse({**params, "split": "test"}, "train")
    with pytest.raises(ConfigError, match="train.epochs: unknown setting"):
        TrainConfig.parse({**params, "epochs": 3}, "train")
    with pytest.raises(ConfigError, match="holds no group"):
        TrainConfig.parse({**params, "negatives_per_positive": 3, "batch_size": 3}, "train")
    with pytest.raises(ConfigError, match="train.train_embeddings: expected true or false"):
        TrainConfig.parse({**params, "train_embeddings": "false"}, "train")
    with pytest.raises(ConfigError, match="train.steps: expected an integer, got float 30.9"):
        TrainConfig.parse({**params, "steps": 30.9}, "train")
    for outside in ("../../x/escaped", "/tmp/model", "data/../../x", "C:\\models"):
        with pytest.raises(ConfigError, match=r"train: out_dir: .* is outside the workspace.*Fix: a relative path"):
            TrainConfig.parse({**params, "out_dir": outside}, "train")
    assert TrainConfig.parse({**params, "out_dir": "data/./models/../models/ce"}, "train").out_dir


@pytest.fixture
def stage_inputs(tiny_beir, tmp_path):
    """A verified snapshot of the tiny collection and candidates listing every document for every query."""
    collection = load_beir(tiny_beir)
    write_snapshot(collection, tmp_path / "snapshot", {"name": "tiny"})
    corpus = collection.corpus.to_pandas()
    passages = (corpus["title"] + " " + corpus["text"]).str.strip()
    rows = [(query_id, doc_id, passage, rank)
            for query_id in collection.queries.column("query_id").to_pylist()
            for rank, (doc_id, passage) in enumerate(zip(corpus["doc_id"], passages), 1)]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "passage", "fused_rank"])
    frame["passage_sha256"] = frame["passage"].map(sha256_text)
    frame["parent_id"] = frame["doc_id"]
    for column in ("bm25_score", "dense_score", "fused_score"):
        frame[column] = 0.0
    for column in ("bm25_rank", "dense_rank", "fused_rank"):
        frame[column] = frame["fused_rank"].astype(np.int32)
    write_candidates(tmp_path / "candidates.parquet", tmp_path / "passages.parquet",
                     pa.Table.from_pandas(frame[CANDIDATES_SCHEMA.names], schema=CANDIDATES_SCHEMA,
                                          preserve_index=False),
                     passages_table(frame["passage_sha256"].tolist(), frame["passage"].tolist()), {})
    return tmp_path


def test_the_stage_writes_a_seeded_model_that_loads_as_a_cross_encoder(stage_inputs, monkeypatch):
    monkeypatch.delenv("RERANKEVAL_CACHE_DIR", raising=False)
    config = CONFIG.model_copy(update={"out_dir": str(stage_inputs / "model")})
    queries = pd.read_parquet(stage_inputs / "snapshot" / "queries.parquet")
    qrels = pd.read_parquet(stage_inputs / "snapshot" / "qrels.parquet")
    candidates = load_candidates(stage_inputs / "candidates.parquet")
    source = {"dataset": "tiny", "split": "train", "fallback": False}
    card = train(mine_examples(queries, qrels, candidates, config), config, source)
    model_dir = stage_inputs / "model"
    assert (model_dir / "model.safetensors").exists() and not (model_dir / "pytorch_model.bin").exists()
    assert card["split"] == "train" and card["train_queries"] == 2 and card["steps"] == 2 and card["source"] == source
    assert len(card["loss_curve"]) == 2 and card["backbone"]["sha256"] == local_model_hash(
        resolve_model("minilm", None).directory)
    written = json.loads((model_dir / MODEL_CARD).read_text())
    assert written == {key: value for key, value in card.items() if key not in ("train_s", "pairs_per_s")}
    assert card["train_s"] > 0  # timings are returned (the stage logs them), never written into the model

    # Frozen parts stay as pretrained, the rest moves.
    from safetensors.numpy import load_file

    backbone = load_file(resolve_model("minilm", None).directory / "model.safetensors")
    tuned = load_file(model_dir / "model.safetensors")
    for name in ("embeddings.word_embeddings.weight", "encoder.layer.0.attention.self.query.weight",
                 "encoder.layer.1.output.dense.weight"):
        np.testing.assert_array_equal(tuned["bert." + name], backbone[name], err_msg=name)
    for name in ("encoder.layer.2.attention.self.query.weight", "encoder.layer.5.output.dense.weight"):
        assert not np.array_equal(tuned["bert." + name], backbone[name]), name

    files = {path.name: sha256_file(path) for path in model_dir.iterdir()}
    system = build_system("ce", {"kind": "cross_encoder", "model": str(model_dir), "depth": 2, "max_length": 32,
                                 "batch_size": 8, "cache_dir": str(stage_inputs / "cache")},
                          BuildContext(qrels=qrels))
    frame = pd.DataFrame({"doc_id": ["a", "b"], "passage": ["payment errors are never retried", "api limit"]})
    assert np.ptp(system.score(QueryCandidates(Query("q", "payment retry"), frame)).values) > 0

    # A rerun writes a byte-identical model directory (weights and card), so DVC sees nothing new.
    train(mine_examples(queries, qrels, candidates, config), config, source)
    assert {path.name: sha256_file(path) for path in model_dir.iterdir()} == files


def test_a_source_without_bm25_pools_negatives_by_the_rank_column_given():
    """A run or replay source ran no BM25: the stage pools by its own order (fused_rank), named, not renamed."""
    queries, qrels, candidates = synthetic_split_tables()
    by_bm25 = mine_examples(queries, qrels, candidates, CONFIG)
    no_bm25 = candidates.assign(fused_rank=candidates["bm25_rank"], bm25_rank=np.nan)
    by_own_order = mine_examples(queries, qrels, no_bm25, CONFIG, rank_column="fused_rank")
    assert "bm25_rank" not in by_own_order.examples and by_own_order.sha256 == by_bm25.sha256
    pd.testing.assert_frame_equal(by_own_order.examples.rename(columns={"fused_rank": "bm25_rank"}),
                                  by_bm25.examples, check_dtype=False)
    # Pooled by the fused order itself, other negatives come out (the pool really follows the column).
    assert mine_examples(queries, qrels, candidates, CONFIG, rank_column="fused_rank").sha256 != by_bm25.sha256
    with pytest.raises(ConfigError, match=r"'bm25_rank' is missing for some rows.*Fix: pool by"):
        mine_examples(queries, qrels, no_bm25, CONFIG)


def test_train_seeds_one_as_before_several_as_seed_folders():
    params = {"backbone": "minilm", "steps": 1, "batch_size": 2, "learning_rate": 1e-5, "max_length": 32,
              "negatives_per_positive": 1, "out_dir": "models/ce/"}
    legacy, one = TrainConfig.parse({**params, "seed": 17}, "train"), TrainConfig.parse({**params, "seeds": [17]},
                                                                                       "train")
    assert legacy.seed_dirs() == one.seed_dirs() == {17: "models/ce/"}
    assert one.for_seed(17).card_settings() == legacy.card_settings()  # the one-seed model card is unchanged
    several = TrainConfig.parse({**params, "seeds": [19, 17]}, "train")
    assert several.seed_dirs() == {19: "models/ce/seed-19", 17: "models/ce/seed-17"}
    assert several.for_seed(17).only_seed == 17 and several.for_seed(17).out_dir == "models/ce/seed-17"
    with pytest.raises(ValueError, match="one model takes one seed"):
        several.only_seed  # noqa: B018
    for bad, message in (({}, "got neither"), ({"seed": 1, "seeds": [1]}, "got both"),
                         ({"seeds": [1, 1]}, "distinct"), ({"seeds": []}, "distinct")):
        with pytest.raises(ConfigError, match=message):
            TrainConfig.parse({**params, **bad}, "train")
