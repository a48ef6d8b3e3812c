"""What the fine-tuned reranker trains on and a blend fits its weight on: the dataset's train split, or, for a dataset
without one (most BEIR sets), the declared fallback's (train.fallback_path); the model card and the blend's fit record
say which and the report says it."""

import functools
from pathlib import Path

import pytest
import yaml

from rerankeval.core.errors import ConfigError
from rerankeval.data.beir import load_beir
from rerankeval.data.snapshot import Snapshot, retrieval_inputs, write_snapshot
from rerankeval.models.resolve import resolve_model
from rerankeval.pipeline import fallback as fallback_stage
from rerankeval.pipeline import train as train_stage
from rerankeval.systems import splits
from rerankeval.pipeline.params import load_params
from rerankeval.report.training import training_section
from rerankeval.retrieval.candidates import write_candidates
from rerankeval.retrieval.config import HybridConfig
from rerankeval.retrieval.freeze import freeze
from rerankeval.systems.registry import BuildContext, build_system
from rerankeval.training.seeds import seed_models, seeded_systems, write_seed_set
from tests.stage_fixtures import tiny_paths
from tests.test_params import composed
from tests.test_retrieval import FakeRetriever, PriorRetriever

fake_freeze = functools.partial(freeze, lexical_retriever=FakeRetriever, dense_retriever=PriorRetriever)


@pytest.fixture
def stage(tmp_path, tiny_beir, monkeypatch):
    """Runs the train stage on the tiny collection (all splits, or some) with freeze and training faked."""
    seen = {}

    def fake_train(training_set, config, source):
        seen.update(training_set=training_set, source=source)
        return {"split": config.split, "source": source, "train_queries": training_set.stats["split_queries"],
                "data": training_set.stats, "steps": config.steps, "train_s": 0.0, "pairs_per_s": 0.0}

    monkeypatch.setattr(fallback_stage, "freeze", fake_freeze)
    monkeypatch.setattr(train_stage, "train", fake_train)

    def run(splits, eval_split="test", **train_overrides):
        write_snapshot(load_beir(tiny_beir, splits), tmp_path / "snapshot", source={})
        snapshot = Snapshot(tmp_path / "snapshot")
        frozen = fake_freeze(snapshot.table("corpus"), snapshot.table("queries"),
                             HybridConfig(top_n=24, fusion_depth=24))
        write_candidates(tmp_path / "candidates.parquet", tmp_path / "passages.parquet", frozen.candidates,
                         frozen.passages, {"snapshot": retrieval_inputs(snapshot)})
        params = composed()
        params["dataset"] = {"name": "tiny", "path": str(tiny_beir), "splits": splits, "eval_split": eval_split}
        params["train"].update(negatives_per_positive=1, batch_size=4, holdout=0, **train_overrides)
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        fallback_stage.run(load_params(tmp_path / "params.yaml"), tiny_paths(tmp_path))
        train_stage.run(load_params(tmp_path / "params.yaml"), tiny_paths(tmp_path))
        return seen

    return run


def test_a_dataset_with_a_train_split_trains_on_it(stage, capsys):
    seen = stage(None)
    assert seen["source"] == {"dataset": "tiny", "path": seen["source"]["path"], "split": "train", "fallback": False}
    assert set(seen["training_set"].examples["query_id"]) == {"q6", "q7"}
    assert "train: on the 'train' split of" in capsys.readouterr().out


def test_a_dataset_without_one_trains_on_the_declared_fallback_and_the_report_says_so(stage, tiny_beir):
    seen = stage(["test"], fallback_path=str(tiny_beir))
    assert seen["source"] == {"dataset": "tiny", "path": str(tiny_beir), "split": "train", "fallback": True,
                              "reason": f"{tiny_beir} has no split 'train'"}
    assert set(seen["training_set"].examples["query_id"]) == {"q6", "q7"}  # the fallback's train queries
    card = {"source": seen["source"], "train_queries": 2, "steps": 200}
    systems = {"fusion": {"kind": "fusion"}, "ce": {"kind": "cross_encoder", "model": "data/models/ce-minilm-ft/"}}
    assert training_section(card, "data/models/ce-minilm-ft", systems) == (
        f"- Fine-tuned `ce`: trained on the fallback, the `train` split of `{tiny_beir}` ({tiny_beir} has no split "
        "'train'; train.fallback_path), 2 queries, 200 steps.")
    own = {**card, "source": {"split": "train", "fallback": False}}
    assert training_section(own, "data/models/ce-minilm-ft", systems) == (
        "- Fine-tuned `ce`: trained on the `train` split of this dataset, 2 queries, 200 steps.")
    assert training_section(card, "data/models/other", systems) == ""  # no system uses the trained model


def test_no_train_split_and_no_usable_fallback_is_refused_with_the_fix(stage, tmp_path, tiny_beir):
    with pytest.raises(ConfigError, match=r"no 'train' split \(splits: \['test'\]\) and "
                                          r"train.fallback_path is not set. Fix: set train.fallback_path"):
        stage(["test"], fallback_path=None)
    with pytest.raises(ConfigError, match=r"no 'dev' split .* and train.fallback_path \(.*\) has none. Fix"):
        stage(["test"], fallback_path=str(tiny_beir), split="dev")
    with pytest.raises(ConfigError, match=r"train.split 'train' is the evaluation split \(dataset.eval_split\)"):
        stage(None, eval_split="train")


def test_a_blend_weight_fit_on_a_dataset_without_the_split_uses_the_fallback(stage, tmp_path, tiny_beir):
    stage(["test"], fallback_path=str(tiny_beir))
    params = load_params(tmp_path / "params.yaml")
    snapshot = Snapshot(tmp_path / "snapshot")
    candidates_of = splits.split_candidates(params, snapshot, tmp_path / "candidates.parquet",
                                            tiny_paths(tmp_path).fallback)
    systems = {"fusion": {"kind": "fusion", "depth": 5},
               "blend": {"kind": "blend", "depth": 5, "components": ["column:bm25_score", "fusion"],
                         "weight": "fit", "weight_grid": [0.0, 0.5, 1.0], "fit": {"split": "train", "folds": 2}}}
    # The evaluated snapshot's qrels hold no train query: the fit must score against the fallback's.
    qrels = snapshot.table("qrels").to_pandas()
    assert not set(qrels["query_id"]) & {"q6", "q7"}
    blend = build_system("blend", systems["blend"], BuildContext(qrels=qrels, systems=systems,
                                                                 candidates_of=candidates_of))
    assert blend.fit["source"] == {"dataset": "tiny", "path": str(tiny_beir), "split": "train", "fallback": True,
                                   "reason": f"{tiny_beir} has no split 'train'"}
    assert blend.fit["queries"] == 2 and all(point["queries"] == 2 for point in blend.fit["curve"])


def test_several_seeds_train_one_model_each_and_systems_on_them_are_built_per_seed(stage, tmp_path, monkeypatch):
    trained = []
    monkeypatch.setattr(train_stage, "train", lambda training_set, config, source: trained.append(
        (config.only_seed, config.out_dir, training_set.sha256)) or {key: 0 for key in (
            "split", "train_queries", "data", "steps", "train_s", "pairs_per_s")})
    monkeypatch.chdir(tmp_path)  # the workspace: train.out_dir is a path inside it
    out_dir = Path("data/models/ce")
    (out_dir / "stale").mkdir(parents=True)  # a previous single-seed model's file must not survive
    stage(None, seeds=[17, 18], out_dir=str(out_dir))
    assert [(seed, folder) for seed, folder, _ in trained] == [(17, f"{out_dir}/seed-17"), (18, f"{out_dir}/seed-18")]
    assert trained[0][2] != trained[1][2]  # each seed mines its own negatives
    assert sorted(path.name for path in out_dir.iterdir()) == ["seeds.json"]  # train() (faked) writes the folders
    assert seed_models(str(out_dir)) == {17: out_dir / "seed-17", 18: out_dir / "seed-18"}
    with pytest.raises(ConfigError, match=r"holds one model per training seed .*Fix: name one seed's folder"):
        resolve_model(str(out_dir), None)  # a learned system built on the set itself, not on one seed's model

    systems = {"ce": {"kind": "cross_encoder", "model": str(out_dir)}, "fusion": {"kind": "fusion"},
               "blend": {"kind": "blend", "components": ["ce", "fusion"]}}
    per_seed = seeded_systems(systems)
    assert list(per_seed) == [17, 18]
    assert per_seed[18] == {**systems, "ce": {"kind": "cross_encoder", "model": str(out_dir / "seed-18")}}
    assert seeded_systems({"fusion": {"kind": "fusion"}, "hub": {"kind": "cross_encoder", "model": "org/x"}}) is None
    other = tmp_path / "other"
    write_seed_set(other, {17: str(other / "seed-17")})
    with pytest.raises(ConfigError, match="seed sets of different seeds"):
        seeded_systems({**systems, "other": {"kind": "cross_encoder", "model": str(other)}})
