"""core.http and core.sqlite_cache under every caller: one set of knobs, secrets redacted from everything recorded,
replies checked on receipt (clamped logits, absurd token counts), cache messages naming the file and the fix."""

import asyncio
import base64
import io
import json
import urllib.parse
import re
import sqlite3
import tempfile
import threading
from contextlib import closing
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from rerankeval.core.errors import ConfigError, InfrastructureError
from rerankeval.core.http import AsyncHttpClient, HttpClient, HttpFailure, RetrySettings, redact
from rerankeval.core.sqlite_cache import LOOKUP_CHUNK, SqliteCache
from rerankeval.models.chat import ChatClient, ChatConfig
from rerankeval.rerank.driver import RerankSettings, rerank
from rerankeval.systems.base import FUSION_FALLBACK, RERANKED
from rerankeval.systems.registry import build_system
from rerankeval.systems.cache import PairScore, ScoreCache
from tests.conftest import REPO
from tests.fake_openai import send_json
from tests.test_generators import _mini_pipeline_inputs
from tests.test_http_rerank import CONTEXT, QUERIES, candidates, fake_api  # noqa: F401  (the fixture)

SECRET = "sk-live-0a1b2c3d4e5f60718293"
KEY_ENV = "RERANKEVAL_TEST_KEY"
ECHO_FORMS = {
    "raw": lambda key: key,
    "json_escaped": lambda key: "".join(f"\\u{ord(char):04x}" for char in key),
    "json_mixed": lambda key: key.replace("-", "\\u002d"),
    "url_encoded": lambda key: "".join(f"%{byte:02X}" for byte in key.encode()),
    "base64": lambda key: base64.b64encode(f"Bearer {key}".encode()).decode(),
}
"""How a server may echo the key (JSON-escaped as a serializer writes it, URL-encoded, inside base64)."""


def readable(data: bytes) -> str:
    """``data`` as its reader sees it, whatever compression it stores: a Parquet file's rows and key-value metadata
    (zstd pages hide a string from a byte search), a SQLite file's dump, else its bytes as text."""
    if data[:4] == b"PAR1":  # each value as stored (no JSON re-escaping, which would hide an escaped form)
        table = pq.read_table(io.BytesIO(data))
        values = [str(value) for row in table.to_pylist() for value in row.values()]
        metadata = [part.decode("utf-8", "replace") for item in (table.schema.metadata or {}).items() for part in item]
        return "\n".join(values + metadata)
    if data[:16] == b"SQLite format 3\x00":
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "db").write_bytes(data)
            with closing(sqlite3.connect(Path(folder) / "db")) as database:
                return "\n".join(database.iterdump())
    return data.decode("utf-8", "replace")


def leaked(data: bytes | str) -> list[str]:
    """The forms of the key found in ``data``, decoded as the reader of a file would: raw, as JSON would decode it, as
    a URL would, and in base64."""
    text = readable(data) + data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    found = [form for form, encode in ECHO_FORMS.items() if encode(SECRET) in text]
    decoded = urllib.parse.unquote(re.sub(r"\\u([0-9a-fA-F]{4})", lambda match: chr(int(match.group(1), 16)), text))
    return found + (["decoded"] if SECRET in decoded else [])


class EchoingApi(BaseHTTPRequestHandler):
    """Rerank (/v2/rerank) and chat (/v1/chat/completions) by the server's script, one behaviour per request."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server, auth = self.server, self.headers.get("Authorization", "")
        with server.lock:
            behaviour = server.script.pop(0) if server.script else "ok"
            server.calls += 1
        if behaviour == "echo_401":
            return self._reply(401, {"message": f"invalid key, you sent Authorization: {auth}"})
        if behaviour.startswith("form_"):  # the key in one of its encoded forms, in an error, a result or an answer
            form, where = behaviour.removeprefix("form_").rsplit("@", 1)
            echoed = ECHO_FORMS[form](SECRET)
            if where == "error":
                return send_json(self, 401, ('{"message": "you sent Bearer ' + echoed + '"}').encode())
            if self.path.endswith("/chat/completions"):
                return send_json(self, 200, ('{"choices": [{"index": 0, "message": {"role": "assistant", "content": '
                                             '"The key is ' + echoed + ' [1]."}}], "usage": {"prompt_tokens": 1, '
                                             '"completion_tokens": 1}}').encode())
            return send_json(self, 200, ('{"results": [{"index": "' + echoed + '", "relevance_score": 0.5}]}')
                             .encode())
        if self.path.endswith("/chat/completions"):
            usage = {"prompt_tokens": 10 ** 15 if behaviour == "huge_usage" else 12,
                     "completion_tokens": -3 if behaviour == "negative_usage" else 4}
            text = f"The key is {SECRET} and {auth} [1]." if behaviour == "echo_200" else "Never retry it [1]."
            return self._reply(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                                     "usage": usage})
        n = len(body["documents"])
        scores = [float(n - i) for i in range(n)] if behaviour == "logits" else [1.0 / (i + 2) for i in range(n)]
        return self._reply(200, {"results": [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]})

    def _reply(self, status, payload):
        send_json(self, status, json.dumps(payload).encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def api():
    server = ThreadingHTTPServer(("127.0.0.1", 0), EchoingApi)
    server.script, server.calls, server.lock, server.daemon_threads = [], 0, threading.Lock(), True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def url(server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def rerank_config(server, tmp_path, **overrides):
    return {"kind": "http_rerank", "base_url": url(server), "model": "m", "depth": 5, "backoff_s": 0.01,
            "cache_dir": str(tmp_path / "cache"), **overrides}


def chat_config(server, tmp_path, **overrides):
    return ChatConfig.parse({"base_url": url(server) + "/v1", "model": "m", "api_key_env": KEY_ENV,
                             "cache_dir": str(tmp_path / "cache"), "backoff_s": 0.01, **overrides}, "rag.generator")


@pytest.mark.parametrize("old, new", [("timeout_s", "request_timeout_s"), ("backoff_max_s", "max_backoff_s"),
                                      ("max_attempts", "max_retries")])
def test_old_knob_names_are_refused_naming_the_new_one(tmp_path, old, new):
    with pytest.raises(ConfigError, match=f"systems.api: {old} was renamed: use {new}"):
        build_system("api", {"kind": "http_rerank", "base_url": "http://127.0.0.1:9", "depth": 5, old: 1}, CONTEXT)
    with pytest.raises(ConfigError, match=f"rag.generator: {old} was renamed: use {new}"):
        ChatConfig.parse({"base_url": "http://127.0.0.1:9/v1", "model": "m", old: 1}, "rag.generator")


def test_redaction_removes_configured_secrets_and_any_authorization_value():
    text = 'you sent Authorization: Bearer abc.DEF-123 and {"authorization": "Basic Zm9v"}, key sk-x'
    cleaned = redact(text, ["sk-x"])
    assert "abc.DEF-123" not in cleaned and "Zm9v" not in cleaned and "sk-x" not in cleaned
    assert json.loads(redact('{"m": "Bearer tok123"}')) == {"m": "Bearer [redacted]"}


def post_with_both_clients(urls, settings, headers=None, secrets=()):
    """The same POST through HttpClient and AsyncHttpClient (seeded alike), to ``urls`` (one each): each one's reply
    or HttpFailure."""
    body = {"model": "m", "query": "alpha", "documents": ["alpha", "beta"]}

    def blocking():
        client = HttpClient(settings, headers, secrets, seed=1)
        try:
            return client.post_json(urls[0], body)
        except HttpFailure as failure:
            return failure
        finally:
            client.close()

    async def concurrent():
        async with AsyncHttpClient(settings, headers, secrets, seed=1) as client:
            try:
                return await client.post_json(urls[1], body)
            except HttpFailure as failure:
                return failure

    return blocking(), asyncio.run(concurrent())


@pytest.mark.parametrize("script, reason", [([503, 429, "ok"], None), ([503], "http_5xx"), ([400], "http_4xx")])
def test_the_async_client_follows_the_one_retry_policy(fake_api, script, reason):  # noqa: F811
    settings = RetrySettings(max_retries=2, backoff_s=0.01, max_backoff_s=0.02)
    servers = [fake_api(script), fake_api(script)]
    blocking, concurrent = post_with_both_clients([f"{url(server)}/v2/rerank" for server in servers], settings)
    if reason is None:  # retried twice, waiting the same jittered backoff
        assert blocking.attempts == concurrent.attempts == 3 and blocking.backoff_s == concurrent.backoff_s > 0
        assert blocking.body == concurrent.body
    else:
        assert isinstance(concurrent, HttpFailure) and concurrent.reason == blocking.reason == reason
        assert concurrent.attempts == blocking.attempts == (3 if reason == "http_5xx" else 1)
        assert concurrent.detail == blocking.detail
    assert [server.calls for server in servers] == [blocking.attempts, concurrent.attempts]


def test_the_async_client_redacts_what_the_server_echoes(api):
    api.script = ["echo_401", "echo_401"]
    for failure in post_with_both_clients([f"{url(api)}/v2/rerank"] * 2, RetrySettings(),
                                          {"Authorization": f"Bearer {SECRET}"}, [SECRET]):
        assert failure.reason == "http_4xx" and SECRET not in str(failure) and "[redacted]" in failure.detail


def test_clamp_refuses_logits_as_a_bad_response(api, tmp_path):
    api.script = ["logits", "ok"]
    system = build_system("api", rerank_config(api, tmp_path, normalization="clamp"), CONTEXT)
    run, latency = rerank(candidates(), QUERIES, system, RerankSettings(depth=5))
    assert sorted(latency["mode"]) == sorted([FUSION_FALLBACK, RERANKED])  # whichever query got the logits
    reason = latency.loc[latency["mode"] == FUSION_FALLBACK, "reason"].iloc[0]
    assert reason.startswith("bad_response: 4 of 5 scores outside [0, 1]") and "normalization: none" in reason


@pytest.mark.parametrize("behaviour, field", [("huge_usage", "prompt_tokens"), ("negative_usage", "completion_tokens")])
def test_absurd_usage_is_a_bad_response_and_not_cached(api, tmp_path, monkeypatch, behaviour, field):
    monkeypatch.setenv(KEY_ENV, SECRET)
    api.script = [behaviour]
    reply = ChatClient(chat_config(api, tmp_path)).complete([{"role": "user", "content": "q"}])
    assert reply.text is None and reply.reason.startswith(f"bad_response: usage.{field} = ")
    again = ChatClient(chat_config(api, tmp_path)).complete([{"role": "user", "content": "q"}])
    assert api.calls == 2 and not again.cache_hit and (again.prompt_tokens, again.completion_tokens) == (12, 4)


def test_no_secret_reaches_any_file_a_stage_writes(api, tmp_path, monkeypatch, capsys, caplog):
    from rerankeval.core.io import write_table
    from rerankeval.pipeline.answer import generate
    from rerankeval.pipeline.params import load_params
    from rerankeval.rerank.assemble import run_table
    from rerankeval.rerank.latency import latency_table

    monkeypatch.setenv(KEY_ENV, SECRET)
    api.script = ["echo_401", "ok"]  # rerank: one query's 401 body echoes the header
    system = build_system("api", rerank_config(api, tmp_path, api_key_env=KEY_ENV), CONTEXT)
    run, latency = rerank(candidates(), QUERIES, system, RerankSettings(depth=5))
    assert [reason[:18] for reason in latency["reason"] if isinstance(reason, str)] == ["http_4xx: HTTP 401"]
    write_table(tmp_path / "run.parquet", run_table(run), {"reasons": latency["reason"].tolist()})
    write_table(tmp_path / "latency.parquet", latency_table(latency), {"describe": system.describe()})
    system.cache.close()

    paths = _mini_pipeline_inputs(tmp_path)
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["rag"]["generator"] = {"kind": "openai_compatible", "base_url": url(api) + "/v1", "model": "m",
                                  "api_key_env": KEY_ENV, "cache_dir": str(tmp_path / "cache"), "max_retries": 0}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    api.script = ["echo_401", "echo_200"]  # generate: a 401 echoing the header, then a 200 answer echoing the key
    generate(load_params(tmp_path / "params.yaml"), paths, ["s"])
    answers = pq.read_table(paths.answer("s")).to_pylist()
    assert answers[0]["reason"].startswith("http_4xx: HTTP 401") and "[redacted]" in answers[1]["answer"]

    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert {"responses.sqlite", "pair_scores.v3.sqlite", "answers_s.parquet", "run.parquet"} <= {
        path.name for path in written}
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), f"the API key was written to {path}"
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err + caplog.text


def test_pair_score_lookups_are_chunked(tmp_path):
    cache = ScoreCache(tmp_path, {"scorer": "x"})
    keys = [f"p{i}" for i in range(3 * LOOKUP_CHUNK + 7)]
    cache.store("q", {key: PairScore(0.5, None, None, None, 0.001) for key in keys})
    assert len(cache.lookup("q", keys)) == len(keys)


def test_a_full_disk_and_a_damaged_file_get_their_own_fix(tmp_path):
    cache = SqliteCache(tmp_path, "c.sqlite", "CREATE TABLE IF NOT EXISTS t (k TEXT);", "test cache")
    with pytest.raises(InfrastructureError, match=r"c\.sqlite: cannot write the test cache .*Fix: free disk space"):
        with cache.guard("write"):
            raise sqlite3.OperationalError("database or disk is full")
    (tmp_path / "bad.sqlite").write_bytes(b"not a database" * 100)
    with pytest.raises(InfrastructureError, match=r"bad\.sqlite: cannot open the test cache .*damaged: delete it"):
        SqliteCache(tmp_path, "bad.sqlite", "CREATE TABLE IF NOT EXISTS t (k TEXT);", "test cache")


@pytest.mark.parametrize("form", sorted(ECHO_FORMS))
@pytest.mark.parametrize("where", ["error", "result"])
def test_no_form_of_the_key_an_api_echoes_reaches_a_run_or_the_pair_cache(api, tmp_path, monkeypatch, form, where):
    from rerankeval.core.io import write_table
    from rerankeval.rerank.assemble import run_table
    from rerankeval.rerank.latency import latency_table

    monkeypatch.setenv(KEY_ENV, SECRET)
    api.script = [f"form_{form}@{where}"] * 2
    system = build_system("api", rerank_config(api, tmp_path, api_key_env=KEY_ENV, max_retries=0), CONTEXT)
    run, latency = rerank(candidates(), QUERIES, system, RerankSettings(depth=5))
    write_table(tmp_path / "run.parquet", run_table(run), {"reasons": latency["reason"].tolist()})
    write_table(tmp_path / "latency.parquet", latency_table(latency), {"describe": system.describe()})
    system.cache.close()
    assert any(isinstance(reason, str) for reason in latency["reason"])  # the echo degraded the query
    for path in (p for p in tmp_path.rglob("*") if p.is_file()):
        assert not leaked(path.read_bytes()), f"{form} key in {path}"


@pytest.mark.parametrize("form", sorted(ECHO_FORMS))
def test_no_form_of_the_key_an_llm_endpoint_echoes_reaches_the_answer_or_its_cache(api, tmp_path, monkeypatch, form):
    monkeypatch.setenv(KEY_ENV, SECRET)
    api.script = [f"form_{form}@answer"]
    client = ChatClient(chat_config(api, tmp_path, api_key_env=KEY_ENV))
    reply = client.complete([{"role": "user", "content": "q"}])
    assert reply.text is not None and not leaked(reply.text) and "[redacted]" in reply.text
    for path in (p for p in tmp_path.rglob("*") if p.is_file()):
        assert not leaked(path.read_bytes()), f"{form} key in {path}"


@pytest.mark.parametrize("url", ["https://user:sk-live-secret@api.example.com", "http://:pw@127.0.0.1:8000/v1"])
def test_credentials_in_a_base_url_are_refused_without_echoing_them(tmp_path, url):
    from rerankeval.core.errors import ConfigError

    for config in ({"kind": "http_rerank", "base_url": url, "model": "m", "depth": 5},):
        with pytest.raises(ConfigError, match="credentials in the URL") as raised:
            build_system("api", config, CONTEXT)
        assert "sk-live-secret" not in str(raised.value) and ":pw@" not in str(raised.value)
    with pytest.raises(ConfigError, match="credentials in the URL") as raised:
        ChatClient(ChatConfig.parse({"base_url": url, "model": "m"}, "rag.generator"))
    assert "sk-live-secret" not in str(raised.value)


@pytest.mark.parametrize("message", ["unable to open database file", "attempt to write a readonly database"])
def test_a_cache_on_a_read_only_disk_is_told_to_be_made_writable_not_deleted(message):
    import sqlite3

    from rerankeval.core.sqlite_cache import _fix

    fix = _fix(sqlite3.OperationalError(message))
    assert "writable" in fix and "damaged" not in fix
    assert "damaged" in _fix(sqlite3.DatabaseError("file is not a database"))
