"""PyTerrier: a rerankeval system as a pt.Transformer, the frozen candidates as a PyTerrier source, runs both ways,
and pt.Experiment beside rerankeval's own evaluation, on the demo's outputs (`make demo` first)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pt = pytest.importorskip("pyterrier")

from rerankeval.core.errors import ContractError  # noqa: E402
from rerankeval.data.snapshot import Snapshot  # noqa: E402
from rerankeval.eval.engine import evaluate  # noqa: E402
from rerankeval.interop.frames import from_ranked_frame, run_frame  # noqa: E402
from rerankeval.interop.pyterrier import Reranker, candidates_source  # noqa: E402
from rerankeval.systems.base import RERANKED  # noqa: E402
from rerankeval.workspace.paths import PipelinePaths  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SYSTEM = "ce_minilm_ft"


@pytest.fixture(scope="module")
def demo():
    paths = PipelinePaths.load(REPO / "dvc.yaml")
    if not (REPO / paths.run(SYSTEM)).is_file():
        pytest.skip("the demo's outputs are not here: run `make demo` first")
    return paths


@pytest.mark.parametrize("system", [SYSTEM, "blend_ce_fusion", "routed_blend"])  # the last two: a fitted weight
def test_the_transformer_reproduces_the_pipeline_s_run(demo, monkeypatch, system):
    monkeypatch.chdir(REPO)
    snapshot = Snapshot(demo.snapshot)
    queries = snapshot.queries_of("test")
    topics = pd.DataFrame({"qid": queries["query_id"], "query": queries["text"]})
    reranker = Reranker.from_params(system)
    reranked = (candidates_source() >> reranker)(topics)
    pipeline = pd.read_parquet(demo.run(system))
    ours = from_ranked_frame(reranked)
    merged = ours.merge(pipeline[["query_id", "doc_id", "rank"]], on=["query_id", "doc_id"], suffixes=("", "_stage"))
    assert len(merged) == len(pipeline) == len(ours)
    assert (merged["rank"] == merged["rank_stage"]).all()  # the rerank stage's order, query by query
    # the rerank stage's pair-score cache served every pair scored (a routed system's skipped queries score none),
    # and the latency table says so
    scored = reranker.latency[reranker.latency["mode"] == RERANKED]
    assert scored["cache_hits"].sum() == scored["n_pairs"].sum() > 0
    # below the reranked head, scores keep the order (PyTerrier sorts by score)
    for _, found in reranked.groupby("qid"):
        assert (np.diff(found.sort_values("rank")["score"].to_numpy()) <= 0).all()


def test_pt_experiment_agrees_with_rerankeval_under_the_same_convention(demo, monkeypatch):
    monkeypatch.chdir(REPO)
    snapshot = Snapshot(demo.snapshot)
    queries = snapshot.queries_of("test")
    topics = pd.DataFrame({"qid": queries["query_id"], "query": queries["text"]})
    qrels = snapshot.table("qrels").to_pandas()
    pt_qrels = qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})
    run = pd.read_parquet(demo.run(SYSTEM))
    source = pt.Transformer.from_df(run_frame(run, dict(zip(queries["query_id"], queries["text"]))))
    found = pt.Experiment([source], topics, pt_qrels, ["ndcg_cut_10"], names=[SYSTEM])
    zero = evaluate(run, qrels, ["nDCG@10"], queries=sorted(queries["query_id"]), no_relevant="zero")["nDCG@10"]
    assert found["ndcg_cut_10"].iloc[0] == pytest.approx(zero.mean(), abs=1e-9)
    # rerankeval's pipeline drops the queries without a relevant document (evaluation.no_relevant: drop): its mean
    # is over the answerable ones, so PyTerrier's is smaller by their share
    drop = evaluate(run, qrels, ["nDCG@10"], queries=sorted(queries["query_id"]), no_relevant="drop")["nDCG@10"]
    assert found["ndcg_cut_10"].iloc[0] == pytest.approx(drop.mean() * drop.notna().sum() / len(zero), abs=1e-9)


def test_tied_scores_are_measured_in_the_run_s_order_not_by_document_id():
    """Passages whose truncated inputs are equal get equal scores; trec_eval (and pytrec_eval under pt.Experiment)
    reads a score as a C float and breaks ties by document id, so the frame moves ties apart in the run's order."""
    run = pd.DataFrame({"query_id": ["q"] * 4, "doc_id": ["a", "b", "c", "d"], "score": [2.0, 1.0, 1.0 + 1e-12, 1.0],
                        "rank": [1, 2, 3, 4]})
    qrels = pd.DataFrame({"query_id": ["q"], "doc_id": ["b"], "relevance": [1]})
    topics = pd.DataFrame({"qid": ["q"], "query": ["x"]})
    source = pt.Transformer.from_df(run_frame(run, {"q": "x"}))
    found = pt.Experiment([source], topics, qrels.rename(columns={"query_id": "qid", "doc_id": "docno",
                                                                  "relevance": "label"}), ["ndcg_cut_2"], names=["r"])
    ours = evaluate(run, qrels, ["nDCG@2"], queries=["q"], no_relevant="zero")["nDCG@2"]
    assert ours.iloc[0] == pytest.approx(1 / np.log2(3)) and found["ndcg_cut_2"].iloc[0] == pytest.approx(ours.iloc[0])


def test_runs_round_trip_and_a_frame_without_text_is_refused(demo, monkeypatch):
    monkeypatch.chdir(REPO)
    run = pd.read_parquet(demo.run(SYSTEM))
    back = from_ranked_frame(run_frame(run, {}))
    expected = run.sort_values(["query_id", "rank"])[["query_id", "doc_id", "score", "rank"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(back[["query_id", "doc_id", "rank"]], expected[["query_id", "doc_id", "rank"]],
                                  check_dtype=False)
    # the reranked head keeps its scores, but for ties moved apart by a float32 step (trec_eval reads a C float and
    # breaks ties by document id); the tail gets ordered stand-ins
    scored = expected["score"].notna()
    tied = expected[scored].duplicated(["query_id", "score"], keep="first")
    np.testing.assert_array_equal(back["score"][scored][~tied], expected["score"][scored][~tied])
    np.testing.assert_allclose(back["score"][scored][tied], expected["score"][scored][tied], rtol=1e-6)
    assert (back.groupby("query_id")["score"].diff().dropna().astype(np.float32) < 0).all()
    assert back["score"].notna().all()
    with pytest.raises(ContractError, match=r"no column text"):
        Reranker.from_params(SYSTEM)(pd.DataFrame({"qid": ["q"], "query": ["x"], "docno": ["d"], "score": [1.0]}))
    with pytest.raises(ContractError, match=r"no column docno"):
        from_ranked_frame(pd.DataFrame({"qid": ["q"], "score": [1.0]}))


def test_a_fitted_weight_is_the_pipeline_s_and_refused_by_name_before_the_pipeline_ran(demo, monkeypatch, tmp_path):
    from dataclasses import replace

    from rerankeval.core.errors import ConfigError
    from rerankeval.core.io import table_metadata

    monkeypatch.chdir(REPO)
    reranker = Reranker.from_params("blend_ce_fusion")
    assert reranker.config.weight == table_metadata(demo.run("blend_ce_fusion"))["describe"]["weight"]
    with pytest.raises(ConfigError, match=r"systems\.blend_ce_fusion\.weight: 'fit' needs the 'train' split"):
        Reranker.from_params("blend_ce_fusion", paths=replace(demo, runs=tmp_path))
