"""Precision variants: int8 quantizes the Linear layers and scores close to float32 under its own cache key; a run
served from the cache never loads the network; the report pairs each variant with its float32 twin."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rerankeval.pipeline.compare import MEASURED
from rerankeval.rerank.driver import RerankSettings, rerank
from rerankeval.report.precision import precision_rows
from rerankeval.stats.variants import precision_variant, twins
from tests.test_models import PASSAGES, build, candidates, config, query, tiny_ce  # noqa: F401  (fixture)


def test_int8_quantizes_the_linear_layers_and_stays_close_to_float32(tiny_ce, tmp_path):  # noqa: F811
    full = build("cross_encoder", config(tiny_ce, tmp_path))
    quantized = build("cross_encoder", config(tiny_ce, tmp_path, dtype="int8"))
    assert full.cache.fingerprint != quantized.cache.fingerprint
    assert quantized.describe()["precision"]["dtype"] == "int8" and "quantization" in quantized.cache.parts
    reference = full.score(query("q", "payment retry", PASSAGES)).values
    values = quantized.score(query("q", "payment retry", PASSAGES)).values
    import torch

    layers = [type(module) for module in quantized.scorer.scorer.model.modules()]
    assert torch.ao.nn.quantized.dynamic.Linear in layers and torch.nn.Linear not in layers
    spread = reference.max() - reference.min()
    assert not np.array_equal(values, reference) and np.abs(values - reference).max() < 0.1 * spread


def test_bfloat16_records_whether_the_cpu_runs_it_natively(tiny_ce, tmp_path):  # noqa: F811
    described = build("cross_encoder", config(tiny_ce, tmp_path, dtype="bfloat16")).describe()["precision"]
    assert described["dtype"] == "bfloat16" and isinstance(described["native_bf16"], bool)


def test_a_run_served_from_the_cache_never_loads_the_network(tiny_ce, tmp_path):  # noqa: F811
    settings = config(tiny_ce, tmp_path)
    queries = {"q": query("q", "payment retry", PASSAGES).query}
    rerank(candidates("q", PASSAGES), queries, build("cross_encoder", settings), RerankSettings(6))
    warm = build("cross_encoder", settings)
    _, latency = rerank(candidates("q", PASSAGES), queries, warm, RerankSettings(6))
    assert latency["cache_hits"].tolist() == [6] and warm.scorer._scorer is None
    assert "environment" not in warm.describe()  # the run's description holds no machine fact


def test_each_variant_is_paired_with_its_float32_twin_and_timed_against_it():
    systems = {"ce": {"kind": "cross_encoder", "model": "m", "max_length": 96, "depth": 30, "dtype": "float32"},
               "ce_int8": {"kind": "cross_encoder", "model": "m", "max_length": 96, "depth": 30, "dtype": "int8",
                           "batch_size": 8},
               "ce_short_int8": {"kind": "cross_encoder", "model": "m", "max_length": 64, "depth": 30,
                                 "dtype": "int8"},
               "fusion": {"kind": "fusion", "depth": 100}}
    learned = {name for name, config in systems.items() if config["kind"] == "cross_encoder"}
    assert twins(systems, learned) == [("ce_int8", "ce")]  # batch size does not matter; max_length does
    per_query = pd.DataFrame({"system": ["ce"] * 4 + ["ce_int8"] * 4, "query_id": list("abcd") * 2,
                              "nDCG@10": [0.5, 0.6, 0.7, 0.8, 0.5, 0.6, 0.6, 0.8]})
    latency = {name: pd.DataFrame({"query_id": list("abcd"), "position": range(4), "compute_s": seconds,
                                   "replayed_s": 0.0}) for name, seconds in (("ce", [0.4] * 4), ("ce_int8", [0.2] * 4))}
    boot = {"n_samples": 200, "seed": 1, "confidence": 0.95, "method": "percentile"}
    quality = per_query.pivot(index="query_id", columns="system", values="nDCG@10")
    seconds = pd.DataFrame({name: frame.set_index("query_id")["compute_s"] for name, frame in latency.items()})
    row, = precision_rows([precision_variant("ce_int8", "ce", quality, seconds, boot)], {})
    assert row["delta"] == pytest.approx(-0.025) and row["speed_ratio"] == pytest.approx(2.0)
    assert row["ratio_low"] == pytest.approx(2.0)
    # a pair the analysis compares (a claim against the twin) takes that comparison's interval: none resampled here
    assert precision_variant("ce_int8", "ce", quality, seconds, boot, compared=True)["delta"] is None


@pytest.mark.skipif(not Path("reports/verdicts.json").exists() or not Path("data/latency").is_dir(),
                    reason="needs the demo's outputs (`make demo`)")
def test_the_demos_int8_speed_up_is_timed_by_the_measurement_its_latency_claim_reads():
    """One speed-up on the page: the precision table's times are the dedicated measurement's, which the int8
    claim's latency saving pairs, not the quality run's replayed model times."""
    variants = json.loads(Path("reports/verdicts.json").read_text())["variants"]
    entry, = variants["precision"]
    assert entry["timed"] == MEASURED
    for side, key in ((entry["twin"], "twin_ms"), (entry["variant"], "variant_ms")):
        times = json.loads(Path(f"data/latency/{side}.json").read_text())["wall_ms_by_query"]
        assert entry[key] == pytest.approx(np.mean(list(times.values())))
