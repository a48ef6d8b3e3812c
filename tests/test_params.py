"""params.yaml is what `dvc repro` reads; it must equal the Hydra composition of conf/ that `dvc exp run` writes."""

from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from rerankeval.core.errors import ConfigError
from rerankeval.pipeline.params import load_params
from rerankeval.serving.config import LatencyConfig
from rerankeval.systems.registry import parse_system_config

REPO = Path(__file__).resolve().parents[1]


def composed() -> dict:
    with initialize_config_dir(str(REPO / "conf"), version_base=None):
        config = compose(config_name="config")
    OmegaConf.resolve(config)
    return OmegaConf.to_container(config)


def test_params_yaml_equals_composition_of_conf():
    on_disk = yaml.safe_load((REPO / "params.yaml").read_text())
    assert on_disk == composed(), "params.yaml is stale: regenerate it with `dvc exp run` or see README (Configuration)"


def test_params_and_every_system_config_are_valid():
    params = load_params(REPO / "params.yaml")
    for name, config in params.systems.items():
        assert parse_system_config(name, config).depends_on, f"systems.{name} needs depends_on (see dvc.yaml)"
    for path in sorted((REPO / "conf" / "system").glob("*.yaml")):
        with initialize_config_dir(str(REPO / "conf"), version_base=None):
            config = compose(config_name="config", overrides=[f"+system@systems.probe={path.stem}",
                                                              *(["systems.probe.path=run.trec"]
                                                                if path.stem == "trec_run" else [])])
        OmegaConf.resolve(config)
        parse_system_config(path.stem, OmegaConf.to_container(config)["systems"]["probe"])


def test_every_system_becomes_a_rerank_stage_watching_its_own_model():
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())
    rerank = dvc["stages"]["rerank"]
    assert rerank["foreach"] == "${systems}"
    # its settings (systems.<name>, its components') are in its code dep, written by the code stage from its params
    assert "systems" in dvc["stages"]["code"]["params"] and "params" not in rerank["do"]
    assert "data/code/rerank_${key}.json" in rerank["do"]["deps"] and "${item.depends_on}" in rerank["do"]["deps"]
    # The model or run a system reads comes through its depends_on alone (code deps, src/..., are the import closure).
    data_deps = [dep for dep in rerank["do"]["deps"] if "item" not in dep and not dep.startswith(("src/", "stages/"))]
    assert not any("models" in dep or "train" in dep for dep in data_deps), data_deps


def test_a_misspelt_nested_setting_lists_the_settings_of_its_own_block(tmp_path):
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["serving"]["loadtest"]["timeuot_s"] = 5
    params["retrieval"]["dense"]["modle"] = "minilm"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    with pytest.raises(ConfigError) as refused:
        load_params(tmp_path / "params.yaml")
    message = str(refused.value)
    loadtest = next(line for line in message.splitlines() if "serving.loadtest.timeuot_s" in line)
    dense = next(line for line in message.splitlines() if "retrieval.dense.modle" in line)
    assert "unknown setting" in loadtest and "request_timeout_s" in loadtest and "concurrency" in loadtest
    assert "unknown setting" in dense and "batch_size" in dense and "model" in dense and "see the docs" not in message


def test_a_collection_of_ones_own_gets_the_general_system_set():
    """`dataset=beir` selects conf/system_set/general.yaml: no routing rule on the demo's error codes, no unfiltered
    system and no freshness rule, which only the demo's access and validity labels make meaningful; its claim on the
    routed system decides nothing; no online readout or shadow replay of the demo's logs."""
    from rerankeval.pipeline.params import Params
    from tests.test_candidate_sources import composed_with

    demo = Params.parse(composed_with(), "")
    own = Params.parse(composed_with("dataset=beir", "dataset.path=somewhere"), "")
    assert set(demo.system_names) - set(own.system_names) == {"routed_blend", "ce_minilm_ft_unfiltered",
                                                              "ce_minilm_ft_current_first"}
    assert set(own.system_names) < set(demo.system_names) and own.system_names[0] == "fusion"
    assert own.compare.inactive_claims(own.system_names) == ["routed_blend"]
    # nor the demo's online logs: they ask the demo's queries, so a readout of them here would decide on nothing
    assert demo.online.readouts and demo.online.shadows and not own.online.readouts and not own.online.shadows
    # nor the demo's quicker latency measurement (conf/serving/demo.yaml): a collection of one's own times the default
    assert demo.serving.latency.queries < own.serving.latency.queries == LatencyConfig().queries
    own.compare.refuse_unknown(own.system_names)
    # a user's choice still wins: the demo's set on their collection, or a system dropped or added
    assert Params.parse(composed_with("dataset=beir", "dataset.path=x", "system_set@_global_=demo"),
                        "").system_names == demo.system_names
    dropped = Params.parse(composed_with("dataset=beir", "dataset.path=x", "~system@systems.bm25"), "")
    assert "bm25" not in dropped.system_names
