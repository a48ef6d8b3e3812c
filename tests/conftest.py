import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Progress lines are for stage logs, not test logs (tests/test_progress.py checks they stay out); inherited by the
# `dvc repro` subprocesses of the pipeline tests.
os.environ["RERANKEVAL_PROGRESS"] = "0"
SHARED_DATASETS = REPO.parent / "shared" / "datasets"


def write_beir(folder: Path, corpus, queries, qrels_by_split) -> Path:
    """Write a BEIR folder: corpus/queries as lists of dicts, qrels as {split: [(qid, did, grade), ...]}."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as handle:
        for record in corpus:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as handle:
        for record in queries:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    for split, rows in qrels_by_split.items():
        with open(folder / "qrels" / f"{split}.tsv", "w", encoding="utf-8") as handle:
            handle.write("query-id\tcorpus-id\tscore\n")
            for query_id, doc_id, grade in rows:
                handle.write(f"{query_id}\t{doc_id}\t{grade}\n")
    return folder


TOPICS = [
    ("payment retry", "PAY-1042 payment errors must never be retried automatically", "결제 자동 재시도 금지"),
    ("payment twice", "PAY-1041 payment timeouts may be retried at most twice", "결제 시간 초과 두 번 재시도"),
    ("plan basic", "The Basic plan keeps logs for 30 days and the Pro plan for 90 days", "베이직 요금제 30일"),
    ("plan enterprise", "The Pro plan keeps backups 30 days and Enterprise 90 days", "엔터프라이즈 90일 백업"),
    ("orion s1", "Orion S1 manual: emergency shutdown at 85 degrees", "오리온 S1 비상 정지 85도"),
    ("orion s2", "Orion S2 manual: emergency shutdown at 78 degrees", "오리온 S2 비상 정지 78도"),
    ("sso policy", "Emergency recovery needs an admin with SSO enabled", "관리자 SSO 비상 복구"),
    ("api limit", "The API allows 100 requests per minute per token", "API 분당 100회 제한"),
]


@pytest.fixture
def tiny_beir(tmp_path) -> Path:
    """A small graded bilingual collection with train and test splits and a slice label."""
    corpus, queries, test, train = [], [], [], []
    for number, (topic, english, korean) in enumerate(TOPICS):
        corpus.append({"_id": f"d{number}a", "title": topic, "text": english,
                       "metadata": {"parent_id": f"d{number}", "lang": "en"}})
        corpus.append({"_id": f"d{number}b", "title": topic, "text": korean,
                       "metadata": {"parent_id": f"d{number}", "lang": "ko"}})
        corpus.append({"_id": f"d{number}c", "title": "", "text": f"unrelated note {number} about {topic} history"})
        language = "en" if number % 2 else "ko"
        text = english.split(":")[-1][:40] if language == "en" else korean
        queries.append({"_id": f"q{number}", "text": text, "metadata": {"language": language}})
        (test if number < 6 else train).extend(
            [(f"q{number}", f"d{number}a", 3), (f"q{number}", f"d{number}b", 2),
             (f"q{number}", f"d{(number + 1) % 8}a", 0)])
    return write_beir(tmp_path / "tiny", corpus, queries, {"test": test, "train": train})
