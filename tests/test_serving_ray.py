"""Ray on this machine, 127.0.0.1 only: the ray executor equals the local one on the demo collection, and
`rerankeval serve` answers http_rerank with the in-process scores, batching requests, then shuts down cleanly.

Ray starts once for the module (it takes seconds); the server is a `rerankeval serve` process of its own, started
at the beginning so it boots while the executor test runs."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest
import yaml

from rerankeval.core.hashing import sha256_text
from rerankeval.data.beir import load_beir
from rerankeval.rerank.driver import RerankSettings, rerank
from rerankeval.retrieval.lexical import Bm25Retriever
from rerankeval.retrieval.text import passage_text
from rerankeval.serving.server import free_port
from rerankeval.systems.base import RERANKED, Query
from rerankeval.systems.registry import BuildContext, build_system
from tests.test_models import save_tiny_bert
from tests.test_serving_validation import BAD_REQUESTS, LIMITS, assert_refusal, raw

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
CONTEXT = BuildContext(qrels=pd.DataFrame({"query_id": [], "doc_id": [], "relevance": []}))
DEPTH = 10


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return save_tiny_bert(tmp_path_factory.mktemp("serving") / "tiny-ce", "BertForSequenceClassification")


@pytest.fixture(scope="module")
def server(tmp_path_factory, tiny_model):
    """`rerankeval serve tiny` in its own process (its own local Ray), booting in the background."""
    folder = tmp_path_factory.mktemp("server")
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["systems"]["tiny"] = {"kind": "cross_encoder", "model": str(tiny_model), "depth": DEPTH,
                                 "max_length": 64, "batch_size": 16}
    params["system_names"].append("tiny")
    params["serving"]["serve"].update(max_batch_size=8, batch_wait_s=0.01, **LIMITS)
    (folder / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    port = free_port()
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("RAY_ADDRESS", None)
    process = subprocess.Popen([sys.executable, "-c", "import sys; from rerankeval.cli import main; sys.exit(main())",
                                "serve", "tiny", "--params",
                                str(folder / "params.yaml"), "--port", str(port)], cwd=folder, env=env,
                               stdout=open(folder / "serve.log", "w"), stderr=subprocess.STDOUT)
    process.log = folder / "serve.log"
    yield process, f"http://127.0.0.1:{port}"
    if process.poll() is None:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def ray_local():
    from rerankeval.systems.ray_executor import ensure_ray

    assert "RAY_ADDRESS" not in os.environ, "these tests start a local Ray"
    ray = ensure_ray()
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def demo():
    """The demo collection's test queries with their BM25 top 10 (the pipeline's freeze needs the dense model)."""
    collection = load_beir(REPO / "datasets" / "demo")
    corpus = collection.corpus.to_pandas()
    queries = collection.queries.to_pandas()
    queries = queries[queries["split"] == "test"]
    passages = [passage_text(title, text) for title, text in zip(corpus["title"], corpus["text"])]
    scores = Bm25Retriever(passages, k1=1.2, b=0.75, method="lucene").scores(queries["text"].tolist())
    rows = []
    for row, query_id in enumerate(queries["query_id"]):
        for rank, doc in enumerate(np.argsort(-scores[row], kind="stable")[:DEPTH]):
            rows.append({"query_id": query_id, "doc_id": corpus["doc_id"][doc], "passage": passages[doc],
                         "passage_sha256": sha256_text(passages[doc]), "fused_rank": rank + 1})
    views = {qid: Query(qid, text) for qid, text in zip(queries["query_id"], queries["text"])}
    return pd.DataFrame(rows), views


def scored(run: pd.DataFrame) -> pd.Series:
    return run.set_index(["query_id", "doc_id"])["score"].sort_index()


def assert_same_order(run: pd.DataFrame, reference: pd.DataFrame) -> None:
    """Each query's order is the reference's, but for near-ties (scores within 1e-5: float noise may flip them)."""
    in_order = scored(reference).reindex(pd.MultiIndex.from_frame(run[["query_id", "doc_id"]]))
    steps = in_order.groupby(level=0).diff().dropna()
    assert steps.max() <= 1e-5, steps.sort_values().tail()


def test_ray_executor_equals_the_local_executor_on_the_demo(server, ray_local, demo, tiny_model, tmp_path):
    candidates, queries = demo
    config = {"kind": "cross_encoder", "model": str(tiny_model), "depth": DEPTH, "max_length": 64, "batch_size": 16}
    local_run, _ = rerank(candidates, queries, build_system("ce", {**config, "cache_dir": str(tmp_path / "local")},
                                                              CONTEXT), RerankSettings(depth=DEPTH))
    ray_config = {**config, "executor": "ray", "cache_dir": str(tmp_path / "ray")}
    ray_system = build_system("ce", ray_config, CONTEXT)
    ray_run, ray_latency = rerank(candidates, queries, ray_system, RerankSettings(depth=DEPTH))
    assert set(ray_run["query_id"]) == set(queries)  # every test query, answerable or not, was scored
    assert (ray_run["mode"] == RERANKED).all()
    assert np.abs(scored(ray_run) - scored(local_run)).max() <= 1e-5
    assert_same_order(ray_run, local_run)
    # The driver wrote the actors' scores to the cache with their compute time: a rerun replays it.
    assert ray_system.cache.count() == len(candidates) and (ray_latency["compute_s"] > 0).all()
    _, again = rerank(candidates, queries, build_system("ce", ray_config, CONTEXT), RerankSettings(depth=DEPTH))
    assert (again["cache_hits"] == DEPTH).all()
    np.testing.assert_allclose(again["replayed_s"].to_numpy(), ray_latency["compute_s"].to_numpy(), rtol=1e-9)


def assert_refuses_bad_requests(endpoint: str) -> None:
    """Every bad case of tests/test_serving_validation.py, posted to the served app: its status and field, as JSON."""
    for _, body, status, field, part in BAD_REQUESTS:
        reply = httpx.post(endpoint, content=raw(body), headers={"content-type": "application/json"}, timeout=30)
        assert_refusal(reply.status_code, reply.json()["message"], status, field, part)
    chunked = httpx.post(endpoint, content=iter([b'{"query": "q", "documents": ["', b"x" * 250_000, b'"]}']),
                         timeout=30)  # no Content-Length: refused while it is read
    assert_refusal(chunked.status_code, chunked.json()["message"], 413, "body", "serving.serve.max_request_bytes")
    echoed = httpx.post(endpoint, json={"model": "tiny", "query": "q", "documents": ["a", {"text": "b"}, "c"],
                                        "top_n": 2, "return_documents": True, "max_tokens_per_doc": 64}, timeout=30)
    results = echoed.json()["results"]
    assert echoed.status_code == 200 and len(results) == 2
    assert all(result["document"] == {"text": "abc"[result["index"]]} for result in results)


def test_http_rerank_against_rerankeval_serve_matches_in_process_scoring(server, demo, tiny_model, tmp_path):
    process, url = server
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert process.poll() is None, process.log.read_text()
        try:
            health = httpx.get(f"{url}/health", timeout=2.0)
            if health.status_code == 200:
                break
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    assert health.json()["status"] == "ok" and health.json()["peak_rss_mib"] > 0
    assert_refuses_bad_requests(f"{url}/v2/rerank")

    candidates, queries = demo
    head = sorted(queries)[:40]
    candidates = candidates[candidates["query_id"].isin(head)]
    queries = {qid: queries[qid] for qid in head}
    api = {"kind": "http_rerank", "base_url": url, "model": "tiny", "depth": DEPTH, "max_concurrency": 8,
           "cache_dir": str(tmp_path / "api")}
    api_run, api_latency = rerank(candidates, queries, build_system("api", api, CONTEXT), RerankSettings(depth=DEPTH))
    local = {"kind": "cross_encoder", "model": str(tiny_model), "depth": DEPTH, "max_length": 64, "batch_size": 16,
             "normalization": "sigmoid", "cache_dir": str(tmp_path / "local")}
    local_run, _ = rerank(candidates, queries, build_system("ce", local, CONTEXT), RerankSettings(depth=DEPTH))
    assert (api_run["mode"] == RERANKED).all()
    assert np.abs(scored(api_run) - scored(local_run)).max() <= 1e-5
    assert_same_order(api_run, local_run)
    timings = [dict(t) for t in api_latency["timings"]]
    assert all(t["server_compute_s"] > 0 and t["network_queue_s"] >= 0 for t in timings)
    assert_served_parity_tells_the_served_model_from_another(url, tiny_model, candidates, queries)

    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 0, process.log.read_text()
    assert "shutting down" in process.log.read_text()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/health", timeout=2.0)


def assert_served_parity_tells_the_served_model_from_another(url, tiny_model, candidates, queries):
    """The load test's parity check (serving.loadtest.score_parity) against the real server: the model it serves,
    loaded in-process, holds; the same weights read with another max length (what a mis-configured replica does)
    fail, naming the largest difference."""
    from rerankeval.serving.config import LoadTestConfig
    from rerankeval.serving.loadtest import Endpoint, Request, score_parity
    from rerankeval.serving.server import serving_recipe
    from rerankeval.systems.pairs import NORMALIZE

    requests = [Request(queries[qid].text, rows["passage"].tolist(), None)
                for qid, rows in candidates.groupby("query_id")][:6]
    same = {"kind": "cross_encoder", "model": str(tiny_model), "depth": DEPTH, "max_length": 64, "batch_size": 16}
    settings = LoadTestConfig()
    for max_length, holds in ((64, True), (16, False)):
        scorer = serving_recipe("tiny", {"tiny": {**same, "max_length": max_length}}).build()
        found = score_parity(Endpoint(url, model="tiny"), requests, scorer, NORMALIZE["sigmoid"], settings, 1e-4)
        assert found["passed"] is holds, found
        assert found["requests"] == 6 and (found["max_abs_diff"] <= 1e-4) is holds

