"""The http_rerank system against fake servers on 127.0.0.1: protocols, retries, timeouts, bad replies, the API key."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rerankeval.core.errors import ConfigError
from rerankeval.core.hashing import sha256_text
from rerankeval.rerank.driver import RerankSettings, rerank
from rerankeval.systems.base import FUSION_FALLBACK, RERANKED, Query
from rerankeval.systems.registry import BuildContext, build_system
from tests.fake_openai import send_json

CONTEXT = BuildContext(qrels=pd.DataFrame({"query_id": [], "doc_id": [], "relevance": []}))
SECRET = "sk-test-7f3a9c0e1d2b4a6f"
PASSAGES = ["alpha beta", "beta gamma delta", "gamma", "alpha beta gamma", "omega"]
QUERIES = {"q1": Query("q1", "alpha beta gamma"), "q2": Query("q2", "gamma delta")}


def overlap(query: str, document: str) -> float:
    words = set(query.split())
    return len(words & set(document.split())) / (len(words) + 1)


class FakeApi(BaseHTTPRequestHandler):
    """Answers by the script of its server: a list of behaviours, one per request, the last one repeating."""

    def do_POST(self):
        server = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with server.lock:
            behaviour = server.script[min(server.calls, len(server.script) - 1)]
            server.calls += 1
            server.requests.append((self.path, body, self.headers.get("Authorization")))
        if behaviour == "hang":
            time.sleep(2.0)
            return self._reply(200, {"results": []})
        if isinstance(behaviour, int):
            return self._reply(behaviour, {"message": "slow down"}, {"Retry-After": "0"} if behaviour == 429 else {})
        if behaviour == "malformed":
            return self._reply(200, {"results": [{"index": 0, "relevance_score": "high"}]})
        if behaviour == "truncated":
            self.send_response(200)
            self.end_headers()
            return self.wfile.write(b'{"results": [')
        documents = body["texts"] if self.path == "/rerank" else body["documents"]
        scores = [overlap(body["query"], document) for document in documents]
        results = sorted(range(len(scores)), key=lambda i: -scores[i])
        if self.path == "/rerank":
            return self._reply(200, [{"index": i, "score": scores[i]} for i in results])
        # The reported 1.5 ms must fit inside the request the client times, which a fast machine answers sooner:
        # the system trusts a server time only when it is no longer than the request.
        time.sleep(0.002)
        return self._reply(200, {"results": [{"index": i, "relevance_score": scores[i]} for i in results],
                                 "usage": {"total_tokens": 10 * len(documents)}}, {"x-compute-time": "1.5"})

    def _reply(self, status, payload, headers=None):
        send_json(self, status, json.dumps(payload).encode(), headers)

    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def fake_api():
    servers = []

    def start(script):
        server = ThreadingHTTPServer(("127.0.0.1", 0), FakeApi)
        server.script, server.calls, server.requests, server.lock = list(script), 0, [], threading.Lock()
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def candidates(query_ids=("q1", "q2")):
    return pd.DataFrame([{"query_id": q, "doc_id": f"{q}-d{i}", "passage": p, "passage_sha256": sha256_text(p),
                          "fused_rank": i + 1} for q in query_ids for i, p in enumerate(PASSAGES)])


def system_config(server, tmp_path, **overrides):
    return {"kind": "http_rerank", "base_url": f"http://127.0.0.1:{server.server_address[1]}", "model": "fake-1",
            "depth": 5, "cache_dir": str(tmp_path / "cache"), "backoff_s": 0.01, "request_timeout_s": 5.0, **overrides}


@pytest.mark.parametrize("protocol, path", [("cohere", "/v2/rerank"), ("jina", "/v1/rerank"), ("tei", "/rerank")])
def test_each_protocol_orders_by_the_service_scores_and_the_cache_replays_them(fake_api, tmp_path, protocol, path):
    server = fake_api(["ok"])
    config = system_config(server, tmp_path, protocol=protocol)
    run, latency = rerank(candidates(), QUERIES, build_system("api", config, CONTEXT), RerankSettings(depth=5))
    assert [p for p, _, _ in server.requests] == [path, path]
    assert set(run["mode"]) == {RERANKED}
    q1 = run[run["query_id"] == "q1"]
    assert q1["doc_id"].tolist()[0] == "q1-d3"
    np.testing.assert_allclose(q1["score"].iloc[0], overlap("alpha beta gamma", PASSAGES[3]))
    timings = dict(latency["timings"].iloc[0])
    if protocol == "tei":  # no server time reported: one figure for network, queue and compute
        assert "request_s" in timings and "server_compute_s" not in timings
    else:
        assert timings["server_compute_s"] == pytest.approx(0.0015)
        assert timings["network_queue_s"] > 0
    _, again = rerank(candidates(), QUERIES, build_system("api", config, CONTEXT), RerankSettings(depth=5))
    assert len(server.requests) == 2 and again["cache_hits"].tolist() == [5, 5]
    np.testing.assert_allclose(again["replayed_s"], latency["compute_s"], rtol=1e-9)


def test_429_then_200_is_retried(fake_api, tmp_path):
    server = fake_api([429, 503, "ok"])
    run, latency = rerank(candidates(["q1"]), QUERIES, build_system("api", system_config(server, tmp_path), CONTEXT),
                          RerankSettings(depth=5))
    assert server.calls == 3 and set(run["mode"]) == {RERANKED}
    assert dict(latency["timings"].iloc[0])["backoff_s"] >= 0


@pytest.mark.parametrize("script, reason", [(["hang"], "timeout"), ([429], "http_429"), ([502], "http_5xx"),
                                            (["malformed"], "bad_response"), (["truncated"], "bad_response"),
                                            ([401], "http_4xx")])
def test_failures_fall_back_to_the_fused_order_with_the_reason(fake_api, tmp_path, script, reason):
    server = fake_api(script)
    config = system_config(server, tmp_path, request_timeout_s=0.3, max_retries=1, deadline_s=0.8)
    started = time.perf_counter()
    run, latency = rerank(candidates(["q1"]), QUERIES, build_system("api", config, CONTEXT), RerankSettings(depth=5))
    assert time.perf_counter() - started < 2.0  # the deadline bounds retries of a hanging server
    assert set(run["mode"]) == {FUSION_FALLBACK}
    assert run["doc_id"].tolist() == [f"q1-d{i}" for i in range(5)]
    assert latency["reason"].iloc[0].startswith(f"{reason}: ")
    assert server.calls == (1 if reason in ("bad_response", "http_4xx") else 2)


def test_concurrent_requests_are_capped_by_max_concurrency(fake_api, tmp_path):
    server = fake_api(["ok"])
    queries = {f"q{i}": Query(f"q{i}", "alpha gamma") for i in range(8)}
    config = system_config(server, tmp_path, max_concurrency=3)
    run, latency = rerank(candidates(list(queries)), queries, build_system("api", config, CONTEXT),
                          RerankSettings(depth=5))
    assert set(run["mode"]) == {RERANKED} and server.calls == 8


def test_the_api_key_is_sent_but_never_written_anywhere(fake_api, tmp_path, monkeypatch, capsys):
    from rerankeval.core.io import write_table
    from rerankeval.rerank.assemble import run_table
    from rerankeval.rerank.latency import latency_table

    monkeypatch.setenv("RERANKEVAL_TEST_KEY", SECRET)
    server = fake_api([503, "ok", "malformed"])
    config = system_config(server, tmp_path, api_key_env="RERANKEVAL_TEST_KEY")
    system = build_system("api", config, CONTEXT)
    run, latency = rerank(candidates(), QUERIES, system, RerankSettings(depth=5))
    assert {auth for _, _, auth in server.requests} == {f"Bearer {SECRET}"}
    assert set(latency["mode"]) == {RERANKED, FUSION_FALLBACK}  # a failure message may not carry it either
    metadata = {"config": config, "describe": system.describe(), "reasons": latency["reason"].tolist(),
                "repr": repr(system.scorer)}
    write_table(tmp_path / "out" / "run.parquet", run_table(run), metadata)
    write_table(tmp_path / "out" / "latency.parquet", latency_table(latency), metadata)
    system.cache.close()
    written = [path for path in Path(tmp_path).rglob("*") if path.is_file()]
    assert any(path.suffix == ".sqlite" for path in written) and len(written) >= 3
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err


def test_a_missing_key_or_a_key_pasted_as_its_name_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("RERANKEVAL_ABSENT_KEY", raising=False)
    base = {"kind": "http_rerank", "base_url": "http://127.0.0.1:9", "depth": 5, "cache_dir": str(tmp_path)}
    with pytest.raises(ConfigError, match="RERANKEVAL_ABSENT_KEY, which is not set"):
        build_system("api", {**base, "api_key_env": "RERANKEVAL_ABSENT_KEY"}, CONTEXT)
    with pytest.raises(ConfigError) as raised:
        build_system("api", {**base, "api_key_env": "sk-live-123/abc"}, CONTEXT)
    assert "systems.api.api_key_env: expected the NAME" in str(raised.value) and "sk-live" not in str(raised.value)
    with pytest.raises(ConfigError, match="Use clamp"):
        build_system("api", {**base, "normalization": "sigmoid"}, CONTEXT)
