"""The DVC pipeline end to end on a tiny collection: outputs, caching, byte-identical reruns, hash-driven reruns."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from rerankeval.rerank import check_permutation

REPO = Path(__file__).resolve().parents[1]
CHEAP_SYSTEMS = ["fusion", "bm25", "dense", "oracle", "random"]

pytestmark = pytest.mark.slow


def compose_params(overrides):
    with initialize_config_dir(str(REPO / "conf"), version_base=None):
        config = compose(config_name="config", overrides=overrides)
    OmegaConf.resolve(config)
    return OmegaConf.to_container(config)


def dvc(workdir, *args):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               DVC_NO_ANALYTICS="1", HF_HUB_OFFLINE="1")
    result = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=workdir, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture
def project(tmp_path, tiny_beir):
    workdir = tmp_path / "project"
    workdir.mkdir()
    for name in ("dvc.yaml", "stages", "conf", ".dvc", "src"):
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, workdir / name)
    shutil.rmtree(workdir / ".dvc" / "cache", ignore_errors=True)
    shutil.rmtree(workdir / ".dvc" / "tmp", ignore_errors=True)
    params = compose_params([f"dataset=beir", f"dataset.path={tiny_beir}", "compare.samples=500",
                             "compare.permutations=500", "retrieval.top_n=10", "retrieval.fusion_depth=10",
                             "evaluation.depths=[2,5,10]"])
    params["systems"] = {name: params["systems"][name] for name in CHEAP_SYSTEMS}
    params["system_names"] = CHEAP_SYSTEMS
    (workdir / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    subprocess.run(["git", "init", "-q"], cwd=workdir, check=True)
    return workdir


def test_repro_outputs_cache_and_reproducibility(project, tiny_beir):
    """One flow, since every `dvc repro` here costs seconds: build, no-op, force, change qrels, change one system."""
    dvc(project, "repro")
    for name in CHEAP_SYSTEMS:
        run = pd.read_parquet(project / "data" / "runs" / f"run_{name}.parquet")
        candidates = pd.read_parquet(project / "data" / "candidates.parquet")
        check_permutation(candidates[candidates["query_id"].isin(run["query_id"])], run)
    metrics = json.loads((project / "reports" / "metrics.json").read_text())
    assert metrics["queries"] == 6
    assert metrics["systems"]["oracle"]["nDCG@10"] >= metrics["systems"]["fusion"]["nDCG@10"]
    assert (project / "reports" / "report.md").read_text().startswith("# rerankeval report")
    assert (project / "reports" / "plots" / "depth_curve.png").stat().st_size > 1000

    assert "Data and pipelines are up to date" in dvc(project, "repro")

    frozen = {name: (project / "reports" / name).read_bytes() for name in ("metrics.json", "compare.json")}
    dvc(project, "repro", "--force")
    for name, content in frozen.items():
        assert (project / "reports" / name).read_bytes() == content, f"{name} changed on a forced rerun"

    qrels = tiny_beir / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text().replace("q0\td0b\t2", "q0\td0b\t1"))
    output = dvc(project, "repro")
    assert "Running stage 'snapshot'" in output and "Running stage 'evaluate'" in output
    assert "Running stage 'freeze'" not in output  # candidates depend on corpus and queries, not on qrels
    changed = json.loads((project / "reports" / "metrics.json").read_text())
    assert changed["systems"]["fusion"] != metrics["systems"]["fusion"]

    corpus = tiny_beir / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace("unrelated note 3", "unrelated remark 3"))
    output = dvc(project, "repro")
    assert "Running stage 'freeze'" in output and "Running stage 'rerank@fusion'" in output

    params = yaml.safe_load((project / "params.yaml").read_text())
    params["systems"]["random"]["seed"] = 99
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    output = dvc(project, "repro")
    reran = {line.split("'")[1] for line in output.splitlines() if line.startswith("Running stage")}
    assert reran == {"rerank@random", "evaluate", "compare", "report"}
