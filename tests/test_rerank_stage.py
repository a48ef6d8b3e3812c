"""The rerank stage as DVC runs it (pipeline.rerank.run): its run file is byte-identical across reruns, a deadline gives
the same fallbacks cold and warm, the report counts them per system, and a run copied over another's is refused."""

import json
import shutil
from dataclasses import replace

import pandas as pd
import pytest
import yaml

from rerankeval.core.errors import ContractError
from rerankeval.core.io import write_table
from rerankeval.pipeline import evaluate, rerank
from rerankeval.pipeline.params import load_params
from rerankeval.workspace.paths import SYSTEM_PLACEHOLDER
from rerankeval.workspace.runs import load_latencies, load_runs
from rerankeval.rag.config import RagConfig
from rerankeval.rerank.latency import summarise_latency
from rerankeval.report.markdown import cost_section
from rerankeval.stats.schema import SystemCost
from rerankeval.systems.base import FUSION_FALLBACK
from tests.overlap_scorer import KIND
from tests.stage_fixtures import frozen_tiny_project, tiny_paths


@pytest.fixture
def stage(tmp_path, tiny_beir):
    """A snapshot, frozen candidates and params.yaml with the fusion baseline and a pair scorer with a deadline."""
    params = frozen_tiny_project(tmp_path, tiny_beir)
    # 5 pairs of a Korean query take 0.1 s (over the deadline after 4), of an English one 0.005 s.
    params["systems"] = {"fusion": params["systems"]["fusion"],
                         "slow": {"kind": KIND, "depth": 5, "seconds_per_pair": 0.001, "korean_seconds_per_pair": 0.02,
                                  "deadline_s": 0.06, "cache_dir": str(tmp_path / "cache"), "depends_on": "tests"}}
    params["system_names"] = list(params["systems"])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return tmp_path


def run_stage(folder, system, tag):
    paths = replace(tiny_paths(folder), runs=folder / f"runs{tag}")
    rerank.run(load_params(folder / "params.yaml"), paths, system)
    return paths.run(system), paths.run_latency(system)


def test_run_files_are_byte_identical_across_reruns_and_deadlines_ignore_the_cache(stage, capsys):
    cold_run, cold_latency = run_stage(stage, "slow", "_cold")
    warm_run, warm_latency = run_stage(stage, "slow", "_warm")
    cold, warm = pd.read_parquet(cold_latency), pd.read_parquet(warm_latency)
    assert cold["cache_hits"].sum() == 0 and warm["cache_hits"].sum() > 0
    # The same queries fall back, cold or warm: the Korean ones (q0, q2, q4 of the test split).
    expected = ["q0", "q2", "q4"]
    for latency in (cold, warm):
        assert sorted(latency.loc[latency["mode"] == FUSION_FALLBACK, "query_id"]) == expected
        assert latency.loc[latency["mode"] == FUSION_FALLBACK, "reason"].str.startswith("deadline: ").all()
    assert cold_run.read_bytes() == warm_run.read_bytes()  # timing lives in the latency table only
    assert "3 fallbacks" in capsys.readouterr().out

    first, _ = run_stage(stage, "fusion", "_a")
    second, _ = run_stage(stage, "fusion", "_b")
    assert first.read_bytes() == second.read_bytes()

    # The report's latency table counts the fallbacks (the missed deadlines) per system.
    summary = summarise_latency(warm, warmup_queries=0)
    assert summary["fallbacks"] == summary["timeouts"] == 3 and summary["queries"] == 6  # missed deadlines
    costs = SystemCost(**summary, pairs=int(warm["n_pairs"].sum()), tokens_per_s=None, pair_tokens_p50=None,
                       pair_tokens_p95=None, truncation_rate=None, latency_scale=1.0, cost_per_1k_queries=0.0)
    section = cost_section({"slow": costs}, 1.0, {"slow": 12.5})
    assert "| `slow` | 12.5 | 6 | 3 |" in section and "| system | p95 ms | queries | fallbacks |" in section
    # a first stage's p95 as the decision page writes it (decision.p95_text, markdown.ms), not rounded to 0.0
    assert "| `slow` | 0.02 | 6 | 3 |" in cost_section({"slow": costs}, 1.0, {"slow": 0.0167})


def test_a_run_copied_over_another_systems_or_from_other_candidates_is_refused(stage):
    run_stage(stage, "fusion", "")
    paths = tiny_paths(stage)
    pattern = paths.run(SYSTEM_PLACEHOLDER)
    shutil.copy(paths.run("fusion"), paths.run("oracle"))
    with pytest.raises(ContractError, match=r"run_oracle.parquet: this run was written for system 'fusion', not "
                                            r"'oracle' \(a file copied over another\?\)"):
        load_runs(pattern, ["oracle"])
    assert set(load_runs(pattern, ["fusion"], str(stage / "candidates.parquet"))) == {"fusion"}
    candidates = pd.read_parquet(stage / "candidates.parquet")
    write_table(stage / "other.parquet", pa_table(candidates.assign(bm25_score=candidates["bm25_score"] + 1)))
    with pytest.raises(ContractError, match=r"run_fusion.parquet: reranked candidates \w+, but .*other.parquet is now"):
        load_runs(pattern, ["fusion"], str(stage / "other.parquet"))
    assert len(load_latencies(paths.run_latency(SYSTEM_PLACEHOLDER), ["fusion"])["fusion"]) == 6


def pa_table(frame):
    import pyarrow as pa

    return pa.Table.from_pandas(frame, preserve_index=False)


def test_the_evaluate_stage_writes_metrics_with_the_fusion_weights(stage):
    for system in ("fusion", "slow"):
        run_stage(stage, system, "")
    params = load_params(stage / "params.yaml").model_copy(update={"rag": RagConfig(measures=[])})  # no answers
    evaluate.run(params, tiny_paths(stage))
    metrics = json.loads(tiny_paths(stage).metrics.read_text())
    assert metrics["queries"] == 6 and set(metrics["systems"]) == {"fusion", "slow"}
    assert set(metrics["first_stage"]) == {"bm25", "dense", "hybrid"}
    # The tiny collection's 2 train queries are too few to move the weights: plain RRF, and the record says why.
    assert metrics["fusion"]["weights"] == {"bm25": 1.0, "dense": 1.0} and metrics["fusion"]["fit"]["queries"] == 2
