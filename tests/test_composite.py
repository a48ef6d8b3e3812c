"""Composite systems on small hand-computed cases: blend (and its train-split fit), routed (skips keep the fused order
and their latency), cascade, the components' shared cache, and the DVC rule for their single dependency."""

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rerankeval.core.errors import ConfigError
from rerankeval.rerank.driver import RerankSettings, rerank
from rerankeval.serving.config import LatencyConfig
from rerankeval.serving.measure import measure_latency
from rerankeval.systems.base import RERANKED, SKIPPED, Query, QueryCandidates, SplitCandidates
from rerankeval.systems.registry import build_system
from rerankeval.systems.composite.components import normalise
from rerankeval.systems.pair_counts import pair_counts
from rerankeval.systems.composite.features import DEFAULT_IDENTIFIER_PATTERN, QueryFeatures
from tests.composite_fixtures import (QRELS, QUERIES, SCORED, candidates, context, order,  # noqa: F401, F811
                                      systems)  # (fixture)


def test_normalisations_by_hand():
    np.testing.assert_allclose(normalise(np.array([2.0, 4.0, 3.0]), "minmax"), [0.0, 1.0, 0.5])
    np.testing.assert_allclose(normalise(np.array([1.0, 3.0]), "zscore"), [-1.0, 1.0])
    assert normalise(np.array([5.0, 5.0]), "minmax").tolist() == [0.0, 0.0]


def test_blend_of_words_and_bm25_by_hand(systems):
    systems["blend"] = {"kind": "blend", "depth": 4, "components": ["length", "column:bm25_score"], "weight": 0.5}
    run, latency = rerank(candidates(), QUERIES, build_system("blend", systems["blend"], context(systems)),
                          RerankSettings(4))
    # minmax(words 2,4,2,3) = 0, 1, 0, .5; minmax(bm25 2,8,4,0) = .25, 1, .5, 0 -> .125, 1, .25, .25
    q1 = run[run["query_id"] == "q1"]
    assert q1["doc_id"].tolist() == ["d1", "d2", "d3", "d0"]  # d2 and d3 tie at .25: fused rank decides
    np.testing.assert_allclose(q1["score"], [1.0, 0.25, 0.25, 0.125])
    assert set(latency["mode"]) == {RERANKED}
    # Costs add up: the word-count model took 0.01 s a pair, 4 pairs a query.
    np.testing.assert_allclose(latency["compute_s"] + latency["replayed_s"], [0.04, 0.04], atol=1e-3)


def test_a_blend_of_a_cached_model_does_no_inference(systems):
    rerank(candidates(), QUERIES, build_system("length", systems["length"], context(systems)), RerankSettings(4))
    assert len(SCORED) == 8
    systems["blend"] = {"kind": "blend", "depth": 4, "components": ["length", "fusion"], "weight": 0.3}
    shared = context(systems)
    _, latency = rerank(candidates(), QUERIES, build_system("blend", systems["blend"], shared), RerankSettings(4))
    assert len(SCORED) == 8 and latency["cache_hits"].tolist() == [4, 4]
    assert pair_counts(shared).to_dict() == {"scored": 0, "from_cache": 8, "reused": 0}
    np.testing.assert_allclose(latency["replayed_s"], [0.04, 0.04], atol=1e-3)  # the model's cost, replayed


def test_blend_weight_is_fit_on_the_train_split_not_the_evaluated_one(systems):
    train = candidates(("t1", "t2"))
    train_queries = {"t1": Query("t1", "first"), "t2": Query("t2", "second")}
    systems["blend"] = {"kind": "blend", "depth": 4, "components": ["length", "column:bm25_score"],
                        "weight": "fit", "weight_grid": [0.0, 1.0],
                        "fit": {"split": "train", "measure": "RR@10", "folds": 2}}
    asked = []

    def candidates_of(split):
        asked.append(split)
        return SplitCandidates(train, train_queries, QRELS, {"split": split, "fallback": False})

    shared = context(systems, candidates_of=candidates_of)
    system = build_system("blend", systems["blend"], shared)
    # On train, d1 is relevant and first under both components alone: both weights score RR 1; the rule (one_se)
    # keeps the smaller weight, in every fold too.
    assert asked == ["train"] and system.weight == 0.0
    assert [point["mean"] for point in system.fit["curve"]] == [1.0, 1.0]
    assert system.fit["cv"]["fold_weights"] == [0.0, 0.0] and system.fit["cv"]["estimate"]["mean"] == 1.0
    assert pair_counts(shared).to_dict() == {"scored": 8, "from_cache": 0, "reused": 0} and system.fit["queries"] == 2
    with pytest.raises(ConfigError, match="'fit' needs the 'train' split"):
        build_system("blend", systems["blend"], context(systems))


@pytest.mark.parametrize("held_out, queries, in_sample", [(["t2", "t3"], 2, []), ([], 3, ["length"])])
def test_blend_fit_uses_the_queries_held_out_of_the_models_training(systems, tmp_path, held_out, queries, in_sample):
    card = {"split": "train", "data": {"held_out_queries": held_out} if held_out else {}}
    (tmp_path / "model_card.json").write_text(json.dumps(card))
    systems["length"]["model_dir"] = str(tmp_path)
    systems["blend"] = {"kind": "blend", "depth": 4, "components": ["length", "column:bm25_score"],
                        "weight": "fit", "weight_grid": [0.0, 1.0], "fit": {"split": "train", "folds": 2}}
    train_queries = {qid: Query(qid, text) for qid, text in [("t1", "first"), ("t2", "second"), ("t3", "third")]}
    qrels = pd.concat([QRELS, pd.DataFrame({"query_id": ["t3"], "doc_id": ["d1"], "relevance": [1]})])
    system = build_system("blend", systems["blend"], context(systems, candidates_of=lambda split: SplitCandidates(
        candidates(tuple(train_queries)), train_queries, qrels, {"split": split, "fallback": False})))
    assert system.fit["queries"] == queries and system.fit["in_sample"] == in_sample
    assert system.fit["held_out_of_training"] == bool(held_out)


def test_routed_skips_keep_the_fused_order_zero_model_cost_and_their_latency(systems):
    systems["routed"] = {"kind": "routed", "depth": 4, "default": "length", "rules": [
        {"when": {"identifier_in_query": True, "identifier_in_lexical_top1": True}, "then": "skip"}]}
    system = build_system("routed", systems["routed"], context(systems))
    run, latency = rerank(candidates(), QUERIES, system, RerankSettings(4))
    # q1 names PAY-1042 and BM25's top-1 passage (d1) leads with PAY-1042: skipped, fused order kept.
    assert order(run, "q1") == ["d0", "d1", "d2", "d3"] and set(run[run["query_id"] == "q1"]["mode"]) == {SKIPPED}
    skipped = latency.set_index("query_id").loc["q1"]
    assert skipped["mode"] == SKIPPED and skipped["compute_s"] == 0 and skipped["replayed_s"] == 0
    assert skipped["cache_hits"] == 0 and skipped["wall_s"] > 0  # the routing took real time
    # q2 has no identifier: sent to the word-count model (4, 3, 2, 2 words; ties by fused rank).
    assert order(run, "q2") == ["d1", "d3", "d0", "d2"]
    assert latency.set_index("query_id").loc["q2", "compute_s"] == pytest.approx(0.04, abs=1e-3)
    assert system.describe()["routes"] == {"length": 1, "skip": 1}
    assert len(SCORED) == 4  # the skipped query cost no model call


def test_routed_rules_on_labels_margin_and_agreement(systems):
    systems["routed"] = {"kind": "routed", "depth": 4, "default": "skip", "rules": [
        {"when": {"labels": {"intent": ["troubleshooting"]}, "margin": {"column": "bm25_score", "below": 5.0}},
         "then": "length"}]}
    run, latency = rerank(candidates(), QUERIES, build_system("routed", systems["routed"], context(systems)),
                          RerankSettings(4))
    # BM25 margin is 8 - 4 = 4 < 5 for both; only q2 is troubleshooting.
    assert latency.set_index("query_id")["mode"].to_dict() == {"q1": SKIPPED, "q2": RERANKED}
    pattern = re.compile(DEFAULT_IDENTIFIER_PATTERN)
    features = QueryFeatures(QueryCandidates(QUERIES["q1"], candidates(("q1",))), pattern)
    assert not features.first_stage_agree and features.margin("bm25_score", relative=True) == 0.5


def test_identifier_pattern_finds_codes_followed_by_korean_particles():
    pattern = re.compile(DEFAULT_IDENTIFIER_PATTERN)
    text = "ORN-E210에 어떻게 대응해야 하나요? PAY-1042 vs xPAY-1042 or PAY-10421x"
    assert pattern.findall(text) == ["ORN-E210", "PAY-1042"]


def test_cascade_by_hand(systems):
    systems["cascade"] = {"kind": "cascade", "depth": 4, "first": "column:bm25_score", "second": "length",
                          "second_depth": 2}
    run, latency = rerank(candidates(), QUERIES, build_system("cascade", systems["cascade"], context(systems)),
                          RerankSettings(4))
    # BM25 order d1 (8), d2 (4), d0 (2), d3 (0); words rescore d1 (4), d2 (2): d1, d2, then d0, d3 in BM25 order.
    assert order(run) == ["d1", "d2", "d0", "d3"]
    assert len(SCORED) == 4 and latency["compute_s"].tolist() == pytest.approx([0.02, 0.02], abs=1e-3)
    with pytest.raises(ConfigError, match="second_depth 5 exceeds depth 4"):
        build_system("cascade", {**systems["cascade"], "second_depth": 5}, context(systems))


def test_a_cascade_records_its_model_stages_token_counts_on_the_rows_it_scored(systems):
    systems["tokens"] = {"kind": "test_length_tokens", "depth": 4, "cache_dir": systems["length"]["cache_dir"]}
    systems["cascade"] = {"kind": "cascade", "depth": 4, "first": "column:bm25_score", "second": "tokens",
                          "second_depth": 2}
    run, _ = rerank(candidates(), QUERIES, build_system("cascade", systems["cascade"], context(systems)),
                    RerankSettings(4))
    q1 = run[run["query_id"] == "q1"].set_index("doc_id")
    # The model rescored BM25's top 2 (d1: 4 words, d2: 2 words); d0 and d3 were ordered by the BM25 column only.
    assert q1.loc[["d1", "d2"], "passage_tokens"].tolist() == [4, 2]
    assert q1.loc[["d1", "d2"], "truncated"].tolist() == [True, False]
    assert q1.loc[["d0", "d3"], "passage_tokens"].isna().all() and q1.loc[["d0", "d3"], "query_tokens"].isna().all()
    # A first stage that counts tokens scored every row; a second that does not adds no counts.
    systems["cascade"] = {**systems["cascade"], "first": "tokens", "second": "length"}
    first, _ = rerank(candidates(), QUERIES, build_system("cascade", systems["cascade"], context(systems)),
                      RerankSettings(4))
    assert first[first["query_id"] == "q1"].set_index("doc_id").loc[["d0", "d1", "d2", "d3"], "passage_tokens"] \
        .tolist() == [2, 4, 2, 3]
    # Two stages that count tokens tokenise a shortlisted row twice: no one count stands for it, none is recorded.
    systems["tokens_again"] = dict(systems["tokens"])
    systems["cascade"] = {**systems["cascade"], "first": "tokens", "second": "tokens_again"}
    twice, _ = rerank(candidates(), QUERIES, build_system("cascade", systems["cascade"], context(systems)),
                      RerankSettings(4))
    assert twice["passage_tokens"].isna().all()


def test_a_composite_is_timed_with_its_components_cold(systems):
    """Its latency measurement scores every pair with the model, as a served blend would, not from the pair-score
    cache the quality run filled (whose times were taken under a load nobody recorded), and writes nothing there."""
    systems["blend"] = {"kind": "blend", "depth": 4, "components": ["length", "column:bm25_score"], "weight": 0.5}
    blend = build_system("blend", systems["blend"], context(systems))
    rerank(candidates(), QUERIES, blend, RerankSettings(4))
    cache_files = {path: path.stat().st_mtime_ns for path in Path(systems["length"]["cache_dir"]).rglob("*")}
    SCORED.clear()
    queries = [QueryCandidates(QUERIES[query_id], frame.reset_index(drop=True))
               for query_id, frame in candidates().groupby("query_id")]
    result = measure_latency(blend, queries, LatencyConfig(queries=1, warmup_queries=1, repeats=2))
    # 1 warm-up and 1 timed query, the timed one in each of 2 rounds: every time its 4 pairs by the model.
    assert len(SCORED) == 4 * 3 and result["replayed_share"] == 0.0
    assert not (result["untrusted"] or "").startswith("most of it is compute replayed")
    assert {path: path.stat().st_mtime_ns for path in cache_files} == cache_files
    SCORED.clear()
    rerank(candidates(), QUERIES, blend, RerankSettings(4))
    assert SCORED == []  # the cache is read again after the measurement


def test_a_component_failure_fails_the_composite_on_that_query_only(systems):
    systems["blend"] = {"kind": "blend", "depth": 4, "components": ["length", "column:bm25_score"], "weight": 0.5,
                        "deadline_s": 0.03}
    run, latency = rerank(candidates(), QUERIES, build_system("blend", systems["blend"], context(systems)),
                          RerankSettings(4, deadline_s=0.03))
    assert set(latency["mode"]) == {"FUSION_FALLBACK"} and latency["reason"].str.startswith("deadline").all()


@pytest.mark.parametrize("mapping, message", [
    ({"kind": "blend", "depth": 4, "components": ["length", "nope"], "weight": 0.5},
     "systems.bad.components: no system 'nope'"),
    ({"kind": "blend", "depth": 4, "components": ["length", "column:rank"], "weight": 0.5}, "a score column is one of"),
    ({"kind": "blend", "depth": 4, "components": ["length", "fusion"], "weight": 1.5}, "weights must lie in [0, 1]"),
    ({"kind": "blend", "depth": 4, "components": ["model_a", "model_b"], "weight": 0.5,
      "depends_on": "data/runs/run_model_a.parquet"}, "'model_a', 'model_b' each depend on a model or run file"),
    ({"kind": "blend", "depth": 4, "components": ["model_a", "fusion"], "weight": 0.5,
      "depends_on": "data/models/a"}, "set it to the run file of 'model_a' (data/runs/run_model_a.parquet)"),
    ({"kind": "routed", "depth": 4, "default": "bad", "rules": [{"when": {}, "then": "skip"}]},
     "a system cannot contain itself"),
])
def test_bad_compositions_are_refused_with_the_key_and_the_fix(systems, mapping, message):
    systems["bad"] = mapping
    systems["model_a"] = {"kind": "test_length", "depth": 4, "depends_on": "data/models/a"}
    systems["model_b"] = {"kind": "test_length", "depth": 4, "depends_on": "data/models/b"}
    with pytest.raises(ConfigError) as raised:
        build_system("bad", mapping, context(systems))
    assert message in str(raised.value)
