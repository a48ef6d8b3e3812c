"""The system seam: strict configs, the open registry, and what a new pair-scoring kind gets for free."""


import numpy as np
import pandas as pd
import pytest

from rerankeval.core.errors import ConfigError
from rerankeval.core.hashing import sha256_text
from rerankeval.rerank.driver import RerankSettings, rerank
from rerankeval.systems.base import FUSION_FALLBACK, Query
from rerankeval.systems.registry import BuildContext, build_system
from tests.overlap_scorer import KIND

CONTEXT = BuildContext(qrels=pd.DataFrame({"query_id": [], "doc_id": [], "relevance": []}))


PASSAGES = ["alpha beta", "beta gamma delta", "gamma", "alpha beta gamma", "omega"]


def candidates(query_ids=("q1", "q2")):
    return pd.DataFrame([{"query_id": q, "doc_id": f"{q}-d{i}", "passage": p, "passage_sha256": sha256_text(p),
                          "fused_rank": i + 1} for q in query_ids for i, p in enumerate(PASSAGES)])


QUERIES = {"q1": Query("q1", "alpha beta gamma"), "q2": Query("q2", "gamma delta")}


def test_a_kind_registered_in_a_test_file_gets_caching_and_latency_replay(tmp_path, monkeypatch):
    monkeypatch.delenv("RERANKEVAL_CACHE_DIR", raising=False)
    config = {"kind": KIND, "depth": 4, "cache_dir": str(tmp_path / "cache")}
    first_system = build_system("overlap", config, CONTEXT)
    run, cold = rerank(candidates(), QUERIES, first_system, RerankSettings(depth=4))
    assert run[run["query_id"] == "q1"]["doc_id"].tolist()[:2] == ["q1-d3", "q1-d0"]
    assert cold["cache_hits"].sum() == 0 and (cold["compute_s"] >= 4 * 0.002).all()
    assert first_system.scorer.calls == 8

    second_system = build_system("overlap", {**config, "depth": 5}, CONTEXT)  # a deeper run reuses every pair
    again, warm = rerank(candidates(), QUERIES, second_system, RerankSettings(depth=5))
    assert second_system.scorer.calls == 2 and warm["cache_hits"].tolist() == [4, 4]
    # Cache hits replay the compute time measured when they were scored: latency stays the model's.
    np.testing.assert_allclose(warm["replayed_s"], cold["compute_s"], rtol=1e-9)
    assert again[again["query_id"] == "q1"]["doc_id"].tolist()[:2] == ["q1-d3", "q1-d0"]
    described = second_system.describe()
    assert described["scorer"] == "word overlap" and described["cache"]["key"]["scorer"] == "overlap/v1"


def test_deadlines_are_judged_on_cold_compute_so_the_cache_cannot_change_the_result(tmp_path):
    config = {"kind": KIND, "depth": 5, "seconds_per_pair": 0.02, "cache_dir": str(tmp_path / "c")}
    settings = RerankSettings(depth=5, deadline_s=0.07)
    cold_run, _ = rerank(candidates(["q1"]), QUERIES, build_system("o", config, CONTEXT), settings)
    warm_run, warm = rerank(candidates(["q1"]), QUERIES, build_system("o", config, CONTEXT), settings)
    assert set(cold_run["mode"]) == set(warm_run["mode"]) == {FUSION_FALLBACK}
    assert warm["reason"].iloc[0].startswith("deadline: ")


@pytest.mark.parametrize("override, message", [
    ({"kind": "nope"}, "systems.s.kind: unknown system kind 'nope'"),
    ({"depth": 30.9}, "systems.s.depth: expected an integer, got float 30.9"),
    ({"depth": "abc"}, "systems.s.depth: expected an integer, got str 'abc'"),
    ({"depth": 0}, "systems.s.depth: Input should be greater than or equal to 1"),
    ({"trust_remote_code": "false"}, "systems.s.trust_remote_code: expected true or false (a YAML boolean, unquoted), "
                                     "got str 'false'"),
    ({"use_safetensors": 1}, "systems.s.use_safetensors: expected true or false"),
    ({"max_lenght": 128}, "systems.s.max_lenght: unknown setting"),
    ({"truncation": "tail"}, "systems.s.truncation: 'tail' is not one of 'head' or 'query_window'"),
    ({"executor": "gpu-farm"}, "systems.s.executor: unknown executor 'gpu-farm'"),
    ({"max_length": 100000}, "max_length 100000 exceeds the 512 positions of minilm (config.json's "
                             "max_position_embeddings). Fix: set max_length to at most 512"),
])
def test_bad_system_settings_are_refused_with_the_key_and_the_fix(override, message):
    config = {"kind": "cross_encoder", "model": "minilm", "depth": 5, "max_length": 64, **override}
    with pytest.raises(ConfigError) as raised:
        build_system("s", config, CONTEXT)
    assert message in str(raised.value)


def test_a_local_model_or_run_file_must_be_what_dvc_watches(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    with pytest.raises(ConfigError, match="set depends_on: .*model"):
        build_system("s", {"kind": "cross_encoder", "model": str(model), "depth": 5, "max_length": 64,
                           "depends_on": "src/rerankeval/systems/learned"}, CONTEXT)
    with pytest.raises(ConfigError, match="set depends_on: runs/a.trec"):
        build_system("s", {"kind": "trec_run", "path": "runs/a.trec", "depth": 5, "depends_on": "runs/b.trec"},
                     CONTEXT)
