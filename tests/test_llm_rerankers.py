"""LLM rerankers (issue: LLM rerankers): ``llm_listwise`` (sliding windows, the generated permutation) and
``llm_pointwise`` (P(yes) from logprobs, else the parsed label) over an OpenAI-compatible endpoint (a fake one on
127.0.0.1 that records requests); invalid outputs repaired by the stated rule and counted; pins in ``describe``; a
re-run served from the response cache; the verdict's invalid-output budget."""

import re

import numpy as np
import pandas as pd
import pytest

from rerankeval.core.errors import ConfigError
from rerankeval.core.hashing import sha256_text
from rerankeval.models.chat import describe_backend
from rerankeval.rerank.driver import RerankSettings, rerank
from rerankeval.stats.config import ReleaseRule
from rerankeval.stats.run_checks import InvalidOutputEvidence
from rerankeval.stats.verdict import DeltaEvidence, Evidence, decide
from rerankeval.systems.base import FUSION_FALLBACK, Query, RERANKED
from rerankeval.systems.llm.listwise import first_token_order, parse_permutation
from rerankeval.systems.registry import BuildContext, build_system
from tests.fake_openai import FakeOpenAI

PASSAGES = [f"passage {k} about topic {k}" for k in range(7)]
RELEVANT = {"q1": 5}
"""The passage the fake model prefers for each query."""


def candidates(query_ids=("q1",)) -> pd.DataFrame:
    return pd.DataFrame([{"query_id": q, "doc_id": f"d{i}", "parent_id": f"d{i}", "passage": p,
                          "passage_sha256": sha256_text(p), "fused_rank": i + 1}
                         for q in query_ids for i, p in enumerate(PASSAGES)])


QUERIES = {"q1": Query("q1", "what is topic 5")}


def listwise_responder(messages):
    """Ranks the listed passages by whether they name topic 5, then by their number (a stable fake model)."""
    prompt = messages[-1]["content"]
    listed = re.findall(r"\[(\d+)\] passage (\d+)", prompt)
    ranked = sorted(listed, key=lambda item: (item[1] != "5", int(item[1])))
    return " > ".join(f"[{label}]" for label, _ in ranked)


def config(server, tmp_path, kind="llm_listwise", **extra) -> dict:
    return {"kind": kind, "depth": 7, "endpoint": {"base_url": server.base_url, "model": "fake-llm",
                                                   "api_key_env": None, "cache_dir": str(tmp_path / "cache"),
                                                   "backoff_s": 0.01, "max_retries": 1, "max_tokens": 64},
            **({"window": 4, "stride": 2} if kind == "llm_listwise" else {}), **extra}


def run(system_config, name="llm"):
    system = build_system(name, system_config, BuildContext())
    frame, latency = rerank(candidates(), QUERIES, system, RerankSettings(depth=system_config["depth"]))
    return system, frame, latency


@pytest.mark.parametrize("reply, order, reasons", [
    ("[2] > [1] > [3]", [1, 0, 2], []),
    ("2, 3, 1", [1, 2, 0], []),
    ("[2] > [2] > [9] > [1]", [1, 0, 2], ["missing_labels", "repeated_label", "unknown_label"]),
    ("[3]", [2, 0, 1], ["missing_labels"]),
    ("I cannot rank these passages.", [0, 1, 2], ["no_labels"]),
])
def test_a_reply_is_repaired_by_the_stated_rule_and_its_faults_named(reply, order, reasons):
    assert parse_permutation(reply, 3) == (order, reasons)


def test_listwise_windows_slide_bottom_up_and_a_rerun_is_served_from_the_cache(tmp_path):
    with FakeOpenAI(responder=listwise_responder) as server:
        server.served_model = "fake-llm-2026-06"
        system, frame, latency = run(config(server, tmp_path))
        assert frame["doc_id"].tolist()[0] == "d5" and set(frame["mode"]) == {RERANKED}
        # 7 passages, window 4, stride 2: windows [3:7], [1:5], [0:3]... until the top is reached.
        assert len(server.requests) == 3
        described = system.describe()
        assert described["served_models"] == {"fake-llm-2026-06": 3} and described["model"] == "fake-llm"
        assert described["template_sha256"] == sha256_text(open(described["template"], encoding="utf-8").read())
        assert described["window"] == {"window": 4, "stride": 2, "passes": 1, "direction": "bottom to top",
                                       "ordering": "generated"}
        assert described["invalid_outputs"]["calls"] == 3 and described["invalid_outputs"]["invalid_calls"] == 0
        again, frame_again, latency_again = run(config(server, tmp_path))
        assert len(server.requests) == 3  # nothing asked again
        assert frame_again.equals(frame)
        assert latency_again["replayed_s"].sum() > 0 and latency_again["compute_s"].sum() == 0
        slowest = [dict(timings)["slowest_window_s"] for timings in (latency["timings"].iloc[0],
                                                                      latency_again["timings"].iloc[0])]
        # a hit replays the seconds of the attempt that answered (the first run's also hold the request's overhead)
        assert 0 < slowest[0] <= latency["compute_s"].iloc[0] and 0 < slowest[1] <= slowest[0]


@pytest.mark.parametrize("passes, first_of_d5, requests, calls", [(1, 2, 3, 3), (2, 0, 5, 6)])
def test_top_down_windows_settle_the_head_first_and_a_deep_passage_needs_more_passes(tmp_path, passes, first_of_d5,
                                                                                     requests, calls):
    with FakeOpenAI(responder=listwise_responder) as server:
        system, frame, latency = run(config(server, tmp_path, direction="top_down", passes=passes))
        # 7 passages, window 4, stride 2: windows [0:4], [2:6], [4:7]; d5 (fused 6th) rises into the second window's
        # head (3rd place) in the first pass, and to the top in the second, whose last window (d3, d4, d6 again) is
        # the first pass's: answered from the response cache
        assert frame["doc_id"].tolist().index("d5") == first_of_d5 and len(server.requests) == requests
        assert system.describe()["window"]["direction"] == "top to bottom"
        timings = dict(latency["timings"].iloc[0])
        assert timings["llm_calls"] == calls
        assert 0 < timings["mean_window_s"] <= timings["slowest_window_s"]


LLAMA_CPP_PAGES = {
    "/v1/models": {"object": "list", "data": [{"id": "fake-llm", "object": "model", "owned_by": "llamacpp"}]},
    "/props": {"build_info": "b5123-8c4f2a1", "model_path": "/models/qwen2.5-0.5b-instruct-q4_k_m.gguf"},
}


def test_the_server_s_backend_and_fingerprint_are_pins_asked_once_and_replayed_from_the_cache(tmp_path):
    with FakeOpenAI(responder=listwise_responder) as server:
        server.pages, server.fingerprint = LLAMA_CPP_PAGES, "b5123-8c4f2a1"
        system, frame, _ = run(config(server, tmp_path))
        described = system.describe()
        backend = "owned_by=llamacpp; build=b5123-8c4f2a1; model_file=qwen2.5-0.5b-instruct-q4_k_m.gguf"
        assert described["backends"] == {backend: 3} and described["system_fingerprints"] == {"b5123-8c4f2a1": 3}
        assert sorted(server.gets) == ["/api/tags", "/api/version", "/props", "/v1/models", "/version"]  # once
        server.pages, server.fingerprint = {}, None  # a cached rerun asks nothing and records the same pins
        again, frame_again, _ = run(config(server, tmp_path))
        assert len(server.gets) == 5 and frame_again.equals(frame)
        assert again.describe()["backends"] == {backend: 3}
        assert again.describe()["system_fingerprints"] == {"b5123-8c4f2a1": 3}
        silent, _, _ = run(config(server, tmp_path / "silent"))  # a server that says nothing of itself still ranks
        assert silent.describe()["backends"] == {} and silent.describe()["system_fingerprints"] == {}
        # behind a gateway's path the host's root may be another service: only {base_url}/models is asked
        gateway = config(server, tmp_path / "gateway")
        gateway["endpoint"]["base_url"] = server.base_url.replace("/v1", "/llm/v1")
        server.gets.clear()
        run(gateway)
        assert server.gets == ["/llm/v1/models"]


OLLAMA_TAGS = {"models": [{"name": "qwen2.5:7b", "model": "qwen2.5:7b", "details": {"quantization_level": "Q8_0"}},
                          {"name": "fake-llm", "model": "fake-llm", "details": {"quantization_level": "Q4_K_M"}}]}
"""Ollama's ``GET /api/tags`` (its documented shape): the local models, each with its quantisation."""


@pytest.mark.parametrize("answers, said", [
    ((LLAMA_CPP_PAGES["/v1/models"], None, None, LLAMA_CPP_PAGES["/props"], None),
     "owned_by=llamacpp; build=b5123-8c4f2a1; model_file=qwen2.5-0.5b-instruct-q4_k_m.gguf"),
    (({"data": [{"id": "other", "owned_by": "x"}, {"id": "fake-llm", "owned_by": "vllm"}]}, {"version": "0.6.3"},
      None, None, None), "owned_by=vllm; version=0.6.3"),
    (({"data": [{"id": "fake-llm", "owned_by": "library"}]}, None, {"version": "0.5.1"}, None, OLLAMA_TAGS),
     "owned_by=library; version=0.5.1; quantisation=Q4_K_M"),
    (({"data": [{"id": "a", "owned_by": "x"}, {"id": "b", "owned_by": "y"}]}, "not json we know", None, [],
      {"models": "?"}), None),
])
def test_a_backend_is_described_by_what_its_server_answers(answers, said):
    assert describe_backend(*answers, model="fake-llm") == said


def test_a_gguf_file_type_is_named_as_llama_cpp_names_it():
    from rerankeval.models.llama_inprocess import quantisation_name

    assert [quantisation_name(value) for value in ("15", "7", "1", "99", None, "x")] == \
        ["Q4_K_M", "Q8_0", "F16", "type 99", None, None]


def test_invalid_outputs_are_counted_per_query_and_in_total(tmp_path):
    replies = iter(["[1] > [1] > [7]", "no ranking today", "[2] > [1] > [3]"])  # windows of 4, 4 and 3
    with FakeOpenAI(responder=lambda messages: next(replies)) as server:
        system, frame, latency = run(config(server, tmp_path))
    record = system.describe()["invalid_outputs"]
    assert record["calls"] == 3 and record["invalid_calls"] == 2
    assert record["by_reason"] == {"missing_labels": 1, "no_labels": 1, "repeated_label": 1, "unknown_label": 1}
    timings = dict(latency["timings"].iloc[0])
    assert (timings["llm_calls"], timings["invalid_outputs"]) == (3.0, 2.0)
    assert sorted(frame["doc_id"]) == sorted(f"d{i}" for i in range(7))  # still a permutation


def test_pointwise_reads_logprobs_and_falls_back_to_the_parsed_label(tmp_path):
    def responder(messages):
        passage = re.search(r"Passage: passage (\d+)", messages[-1]["content"]).group(1)
        if passage == "5":
            return {"text": "Yes", "top_logprobs": [("Yes", -0.1), (" no", -2.4)]}
        if passage == "6":
            return "Maybe, it depends."  # unreadable: 0.5, counted
        return {"text": "no", "top_logprobs": [("no", -0.2), ("yes", -1.7)]}

    with FakeOpenAI(responder=responder) as server:
        system, frame, _ = run(config(server, tmp_path, kind="llm_pointwise"))
        assert all(request.get("logprobs") is True and request["top_logprobs"] == 5 for request in server.requests)
        scores = frame.set_index("doc_id")["score"]
        assert scores["d5"] == pytest.approx(np.exp(-0.1) / (np.exp(-0.1) + np.exp(-2.4)), abs=1e-6)
        assert scores["d6"] == 0.5 and frame["doc_id"].iloc[0] == "d5"
        described = system.describe()
        assert described["score_from"] == {"logprobs": 6, "unreadable": 1}
        assert described["invalid_outputs"]["by_reason"] == {"unreadable_label": 1}
        plain, frame_plain, _ = run(config(server, tmp_path / "no_logprobs", kind="llm_pointwise", top_logprobs=0))
        assert not any("logprobs" in request for request in server.requests[7:])
        assert plain.describe()["score_from"] == {"parsed label": 6, "unreadable": 1}
        assert frame_plain.set_index("doc_id")["score"]["d5"] == 1.0


def test_pointwise_with_graded_labels_scores_the_expected_grade(tmp_path):
    def responder(messages):
        assert "Grade (0, 1, 2 or 3):" in messages[-1]["content"]
        passage = re.search(r"Passage: passage (\d+)", messages[-1]["content"]).group(1)
        if passage == "5":
            return {"text": "3", "top_logprobs": [("3", -0.2), ("2", -1.8), ("yes", -3.0)]}
        if passage == "6":
            return "Grade: n/a"  # no label: the middle of the range, counted
        return {"text": "0", "top_logprobs": [("0", -0.1), ("1", -2.5)]}

    graded = {"grades": {"0": 0, "1": 1, "2": 2, "3": 3}, "template": "conf/prompts/llm_pointwise_graded_v1.txt"}
    with FakeOpenAI(responder=responder) as server:
        system, frame, _ = run(config(server, tmp_path, kind="llm_pointwise", **graded))
        scores = frame.set_index("doc_id")["score"]
        p3, p2 = np.exp(-0.2), np.exp(-1.8)  # "yes" is no label of this scale
        assert scores["d5"] == pytest.approx((3 * p3 + 2 * p2) / (p3 + p2), abs=1e-6)
        assert scores["d0"] == pytest.approx(np.exp(-2.5) / (np.exp(-0.1) + np.exp(-2.5)), abs=1e-6)
        assert scores["d6"] == 1.5 and frame["doc_id"].iloc[0] == "d5"
        described = system.describe()
        assert described["grades"] == graded["grades"] and "yes_words" not in described
        assert described["invalid_outputs"]["by_reason"] == {"unreadable_label": 1}
        parsed, frame_parsed, _ = run(config(server, tmp_path / "parsed", kind="llm_pointwise", top_logprobs=0,
                                             **graded))
        assert frame_parsed.set_index("doc_id")["score"]["d5"] == 3.0
        assert parsed.describe()["score_from"] == {"parsed label": 6, "unreadable": 1}
    with pytest.raises(ConfigError, match="grades replaces yes_words and no_words"):
        build_system("bad", {**config(server, tmp_path, kind="llm_pointwise", **graded), "yes_words": ["yes"]},
                     BuildContext())
    with pytest.raises(ConfigError, match="at least two distinct finite grades"):
        build_system("bad", {**config(server, tmp_path, kind="llm_pointwise"), "grades": {"a": 1, "b": 1}},
                     BuildContext())


def test_a_model_answering_in_another_language_is_counted_or_read_in_that_language(tmp_path):
    def korean(messages):  # "아니요" (no) first, then an English word that must not decide
        passage = re.search(r"Passage: passage (\d+)", messages[-1]["content"]).group(1)
        return "예, 관련 있습니다." if passage == "5" else "아니요, yes 라는 단어는 없습니다."

    with FakeOpenAI(responder=korean) as server:
        english, frame, _ = run(config(server, tmp_path, kind="llm_pointwise", top_logprobs=0))
        assert english.describe()["invalid_outputs"]["by_reason"] == {"unreadable_label": 7}  # counted, not misread
        assert set(frame["score"]) == {0.5}
        read, frame_read, _ = run(config(server, tmp_path / "ko", kind="llm_pointwise", top_logprobs=0,
                                         yes_words=["yes", "예"], no_words=["no", "아니요"]))
        assert read.describe()["score_from"] == {"parsed label": 7}
        assert frame_read.set_index("doc_id")["score"].to_dict() == {f"d{i}": float(i == 5) for i in range(7)}


def keep_the_end(prompt: str) -> str:
    """What a server that keeps a long prompt's end only lets through: a window's first passages never reach it."""
    starts = [found.start() for found in re.finditer(r"\[\d+\] passage", prompt)]
    return prompt[starts[-2]:] if len(starts) > 2 else prompt


@pytest.mark.parametrize("reports", ["the tokens it kept", "its whole window", "no usage"])
def test_an_endpoint_that_truncates_the_prompt_is_counted_and_not_read(tmp_path, reports):
    """Ollama cuts a prompt longer than its num_ctx without an error and reports the tokens it kept. Where the
    reported count says so (fewer tokens than words, or the whole context window), the window keeps its input order
    and counts ``prompt_truncated``; an endpoint that reports no usage shows it only as the labels it never saw."""
    def truncating(messages):
        kept = keep_the_end(messages[-1]["content"])
        prompt_tokens = {"the tokens it kept": len(kept.split()), "its whole window": 2048, "no usage": 0}[reports]
        return {"text": listwise_responder([{"content": kept}]), "usage": {"prompt_tokens": prompt_tokens}}

    with FakeOpenAI(responder=truncating) as server:
        system, frame, latency = run(config(server, tmp_path, context_tokens=2048))
    record = system.describe()["invalid_outputs"]
    reason = "missing_labels" if reports == "no usage" else "prompt_truncated"
    assert record["by_reason"] == {reason: record["invalid_calls"]} and record["invalid_calls"] == 3
    assert sorted(frame["doc_id"]) == sorted(f"d{i}" for i in range(7))  # still a permutation, counted
    assert dict(latency["timings"].iloc[0])["invalid_outputs"] == record["invalid_calls"]
    if reason == "prompt_truncated":  # nothing read: every window kept its order, so the fused order stands
        assert list(frame.sort_values("rank")["doc_id"]) == [f"d{i}" for i in range(7)]


def test_a_reply_cut_by_max_tokens_is_counted_as_cut_off_and_repaired(tmp_path):
    def cut(messages):
        return {"text": listwise_responder(messages)[:9], "finish_reason": "length"}  # "[3] > [1]" of four

    with FakeOpenAI(responder=cut) as server:
        system, frame, _ = run(config(server, tmp_path))
    assert system.describe()["invalid_outputs"]["by_reason"] == {"reply_cut_off": 3}
    assert parse_permutation("[2] > [3", 3, "length") == ([1, 0, 2], ["reply_cut_off"])
    assert parse_permutation("Here is the ran", 3, "length") == ([0, 1, 2], ["reply_cut_off"])
    assert parse_permutation("[2] > [1] > [3] because", 3, "length") == ([1, 0, 2], [])  # all named: nothing lost
    assert sorted(frame["doc_id"]) == sorted(f"d{i}" for i in range(7))


def test_a_pointwise_judgment_of_a_cut_prompt_is_not_read(tmp_path):
    def judging(messages):  # the passage of d5 never reached the model: a "yes" about a prompt cut to 3 tokens
        passage = re.search(r"Passage: passage (\d+)", messages[-1]["content"]).group(1)
        return {"text": "yes", "usage": {"prompt_tokens": 3}} if passage == "5" else "no"

    with FakeOpenAI(responder=judging) as server:
        system, frame, _ = run(config(server, tmp_path, kind="llm_pointwise", top_logprobs=0))
    described = system.describe()
    assert described["invalid_outputs"]["by_reason"] == {"prompt_truncated": 1}
    assert described["score_from"] == {"parsed label": 6, "prompt truncated": 1}
    assert frame.set_index("doc_id")["score"]["d5"] == 0.5  # the middle, as an unreadable reply


def test_a_failing_endpoint_degrades_the_query_with_its_reason(tmp_path):
    with FakeOpenAI(responder=listwise_responder) as server:
        server.script = ["500"] * 100  # every window of every query
        system, frame, latency = run(config(server, tmp_path))
    assert set(frame["mode"]) == {FUSION_FALLBACK}
    assert frame["degraded_reason"].iloc[0].startswith("http_5xx")
    assert latency_invalid(system) == 0  # each query counts as a fallback, not as invalid outputs besides


def latency_invalid(system) -> int:
    return system.describe()["invalid_outputs"]["invalid_calls"]


def test_a_failed_window_keeps_its_order_and_is_counted_while_the_others_reorder(tmp_path):
    """depth 7, window 4, stride 2: windows (3, 7), (1, 5), (0, 3), bottom up, over d0..d6. The first query's second
    window fails (both attempts). The first lifts d5 to its head (d0 d1 d2 d5 d3 d4 d6); the failed one keeps its
    order, where it would have lifted d5 to rank 2 and the third to rank 1; the third still reorders its own."""
    with FakeOpenAI(responder=listwise_responder) as server:
        server.script = ["ok", "500", "500"]
        system, frame, latency = run(config(server, tmp_path))
    assert set(frame["mode"]) == {RERANKED}
    failed = [query for query, found in zip(latency["query_id"], latency["timings"]) if dict(found)["failed_windows"]]
    assert len(failed) == 1
    ranked = frame[frame["query_id"] == failed[0]].sort_values("rank")["doc_id"].tolist()
    assert ranked == ["d0", "d1", "d2", "d5", "d3", "d4", "d6"], ranked
    counted = system.describe()["invalid_outputs"]
    assert counted["by_reason"] == {"window_failed:http_5xx": 1} and counted["invalid_calls"] == 1
    timings = dict(latency.set_index("query_id").loc[failed[0], "timings"])
    assert timings["invalid_outputs"] == 1.0 and timings["llm_calls"] == 3.0
    # the failed window's attempts count in the query's time (latency, deadline), not only the answered windows'
    assert latency.set_index("query_id").loc[failed[0], "compute_s"] > 2 * timings["mean_window_s"]


def test_bad_settings_are_refused_with_the_numbers(tmp_path):
    with FakeOpenAI() as server:
        with pytest.raises(ConfigError, match="stride 5 is larger than window 4"):
            build_system("llm", config(server, tmp_path, stride=5), BuildContext())
        with pytest.raises(ConfigError, match=r"needs about \d+ tokens with max_tokens 64, more than context_tokens "
                                              r"256"):
            build_system("llm", config(server, tmp_path, context_tokens=256), BuildContext())
        template = tmp_path / "no_query.txt"
        template.write_text("Rank {count} passages:\n{passages}\n")
        with pytest.raises(ConfigError, match=r"has placeholders \['count', 'passages'\].*missing: \['query'\]"):
            build_system("llm", config(server, tmp_path, template=str(template)), BuildContext())


def test_too_many_invalid_outputs_block_accept():
    rule = ReleaseRule(primary_metric="nDCG@10", min_delta=0.01, max_invalid_rate=0.05)
    good = Evidence(primary=DeltaEvidence("nDCG@10", 0.08, 0.05, 0.11), slices=(),
                    invalid_outputs=InvalidOutputEvidence(2, 100))
    assert decide(rule, good).decision == "ACCEPT"
    bad = Evidence(primary=good.primary, slices=(), invalid_outputs=InvalidOutputEvidence(9, 100))
    verdict = decide(rule, bad)
    assert verdict.decision == "INCONCLUSIVE"
    assert verdict.decided_by == ("9/100 LLM calls (9.0%) gave an invalid output (repaired by the kind's rule), above "
                                  "max_invalid_rate 5.0%; blocks ACCEPT")


def test_a_hosted_endpoints_tokens_are_its_cost_a_local_ones_machine_time(tmp_path):
    from rerankeval.rerank.cost import llm_cost_per_1k

    latency = pd.DataFrame({"timings": [{"prompt_tokens": 1000.0, "completion_tokens": 100.0},
                                        {"prompt_tokens": 3000.0, "completion_tokens": 300.0}]})
    hosted = {"endpoint": {"price_per_1k_input_tokens": 0.5, "price_per_1k_output_tokens": 1.5}}
    # per query: 1.0 x 0.5 + 0.1 x 1.5 = 0.65 and 3.0 x 0.5 + 0.3 x 1.5 = 1.95 dollars; per 1,000 queries: 1300
    assert llm_cost_per_1k(hosted, latency, machine_cost=0.01) == pytest.approx(1300.0)
    assert llm_cost_per_1k({"endpoint": {}}, latency, machine_cost=0.01) == 0.01
    with FakeOpenAI(responder=listwise_responder) as server:
        _, _, measured = run(config(server, tmp_path))
    timings = dict(measured["timings"].iloc[0])
    assert (timings["prompt_tokens"], timings["completion_tokens"]) == (300.0, 30.0)  # the fake's 100 and 10 a call


def test_the_details_page_lists_each_llm_rerankers_invalid_outputs_and_pins(tmp_path):
    from rerankeval.report.llm import llm_section

    replies = iter(["[1] > [1] > [7]", "[2] > [1] > [3] > [4]", "[2] > [1] > [3]"])  # the first one invalid
    with FakeOpenAI(responder=lambda messages: next(replies)) as server:
        system, _, _ = run(config(server, tmp_path))
    section = llm_section(["fusion", "llm"], {"fusion": {"describe": {"kind": "fusion"}},
                                              "llm": {"describe": system.describe()}},
                          {"llm": {"per_query_mean": 0.25, "low": 0.1, "high": 0.4}})
    row = next(line for line in section.splitlines() if line.startswith("| `llm`"))
    assert ("| 3 | 1 (33.3%) | 25.0% [10.0%, 40.0%] |" in row
            and "missing_labels 1, repeated_label 1, unknown_label 1" in row)
    assert "fake-llm (served: fake-llm x3)" in row and "window 4, stride 2, passes 1" in row
    assert "| not said (fingerprints: not said) |" in row  # the fake server says nothing of itself
    assert llm_section(["fusion"], {"fusion": {"describe": {}}}) == ""


def test_the_compare_stage_gives_the_invalid_share_per_query_with_its_ci():
    from rerankeval.stats.guardrails import invalid_output_record

    boot = {"n_samples": 2000, "seed": 17, "confidence": 0.95}
    record = invalid_output_record(np.array([1.0, 0.0, 3.0, 0.0]), np.array([2.0, 2.0, 3.0, 0.0]), boot)
    assert (record["invalid"], record["calls"], record["queries"]) == (4, 7, 3)  # a query without a call is not one
    assert record["rate"] == pytest.approx(4 / 7, abs=1e-6)
    assert record["per_query_mean"] == pytest.approx((0.5 + 0.0 + 1.0) / 3, abs=1e-6)
    assert record["low"] <= record["per_query_mean"] <= record["high"]


def test_the_compare_stage_reads_the_counts_from_the_latency_tables(tmp_path):
    from rerankeval.core.io import read_table, write_table
    from rerankeval.pipeline.compare import invalid_outputs
    from rerankeval.rerank.latency import latency_table

    replies = iter(["[1] > [1] > [7]", "[2] > [1] > [3] > [4]", "[2] > [1] > [3]"])  # the first one invalid
    with FakeOpenAI(responder=lambda messages: next(replies)) as server:
        _, _, latency = run(config(server, tmp_path))
    write_table(tmp_path / "latency_llm.parquet", latency_table(latency), {})
    stored = read_table(tmp_path / "latency_llm.parquet").to_pandas()  # as the compare stage reads it
    found = invalid_outputs({"llm": stored}, {"n_samples": 500, "seed": 17, "confidence": 0.95})
    assert (found["llm"]["invalid"], found["llm"]["calls"]) == (1, 3)
    assert found["llm"]["per_query_mean"] == pytest.approx(1 / 3, abs=1e-6)


@pytest.mark.parametrize("alternatives, text, order, reasons", [
    # labels by log probability, whatever their spelling; a label absent from the alternatives after, in input order
    ((("C", -0.1), (" B", -1.0), ("[A", -2.0), ("x", -0.05), ("B", -3.0)), "C", [2, 1, 0, 3], []),
    ((("C", -0.5), ("A", -0.5)), "A", [0, 2, 1, 3], []),  # a tie keeps input order
    ((("Z", -0.1), ("the", -0.2)), "The", [0, 1, 2, 3], ["no_labels"]),  # Z is no label of a window of 4
    ((("", -0.1), ("AB", -0.2), ("B", -0.3)), "", [1, 0, 2, 3], []),  # an empty token or "AB" is no label
    (None, "B > A", [1, 0, 2, 3], ["no_logprobs"]),  # no logprobs: the reply's first label goes first
    (None, "none", [0, 1, 2, 3], ["no_logprobs"]),
])
def test_a_window_is_ordered_by_its_first_token_s_log_probabilities(alternatives, text, order, reasons):
    assert first_token_order(alternatives, text, 4) == (order, reasons)


def first_token_responder(messages):
    """The first token's alternatives: the passage naming topic 5 most likely, then the others by their number."""
    listed = re.findall(r"\[([A-Z])\] passage (\d+)", messages[-1]["content"])
    ranked = sorted(listed, key=lambda item: (item[1] != "5", int(item[1])))
    return {"text": ranked[0][0], "top_logprobs": [(label, -0.5 * k) for k, (label, _) in enumerate(ranked)]}


def test_first_token_ordering_asks_one_token_with_its_logprobs_and_ranks_by_them(tmp_path):
    with FakeOpenAI(responder=first_token_responder) as server:
        system, frame, _ = run(config(server, tmp_path, ordering="first_token",
                                      template="conf/prompts/llm_listwise_first_v1.txt"))
        assert frame["doc_id"].tolist()[:3] == ["d5", "d0", "d1"] and set(frame["mode"]) == {RERANKED}
        assert all(request["max_tokens"] == 1 and request["top_logprobs"] == 20 for request in server.requests)
        described = system.describe()
        assert described["window"]["ordering"] == "first_token" and described["decoding"]["max_tokens"] == 1
        assert described["invalid_outputs"]["invalid_calls"] == 0
    with FakeOpenAI(responder=lambda messages: "B") as silent:  # an endpoint that gives no logprobs
        plain, frame_plain, _ = run(config(silent, tmp_path / "plain", ordering="first_token",
                                           template="conf/prompts/llm_listwise_first_v1.txt"))
    assert plain.describe()["invalid_outputs"]["by_reason"] == {"no_logprobs": 3}  # counted, never hidden
    assert set(frame_plain["mode"]) == {RERANKED}
    with pytest.raises(ConfigError, match="more passages than the 26 letter labels"):
        build_system("llm", {**config(server, tmp_path, ordering="first_token"), "window": 27, "depth": 30},
                     BuildContext())


def test_a_first_token_that_is_a_space_is_read_by_its_alternatives_not_failed(tmp_path):
    def spacer(messages):  # the reply's one token is a space; its alternatives still name the labels
        return {**first_token_responder(messages), "text": " "}

    with FakeOpenAI(responder=spacer) as server:
        system, frame, _ = run(config(server, tmp_path, ordering="first_token",
                                      template="conf/prompts/llm_listwise_first_v1.txt"))
    assert set(frame["mode"]) == {RERANKED} and frame["doc_id"].iloc[0] == "d5"
    assert system.describe()["invalid_outputs"]["invalid_calls"] == 0
    with pytest.raises(ConfigError, match="top_logprobs is read only with ordering: first_token"):
        build_system("llm", config(server, tmp_path, top_logprobs=5), BuildContext())
