"""params.yaml is what `dvc repro` reads; it must equal the Hydra composition of conf/ that `dvc exp run` writes."""

from pathlib import Path

import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[1]


def composed() -> dict:
    with initialize_config_dir(str(REPO / "conf"), version_base=None):
        config = compose(config_name="config")
    OmegaConf.resolve(config)
    return OmegaConf.to_container(config)


def test_params_yaml_equals_composition_of_conf():
    on_disk = yaml.safe_load((REPO / "params.yaml").read_text())
    assert on_disk == composed(), "params.yaml is stale: regenerate it with `dvc exp run` or see README (Configuration)"


def test_every_system_becomes_a_rerank_stage():
    params = composed()
    assert params["system_names"] == list(params["systems"])
    assert params["compare"]["baseline"] in params["systems"]
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())
    assert dvc["stages"]["rerank"]["matrix"]["system"] == "${system_names}"
    assert "systems.${item.system}" in dvc["stages"]["rerank"]["params"]
