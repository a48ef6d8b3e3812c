"""The pair-score cache: keys that separate settings, and durability when the scoring process is killed."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import pytest

from rerankeval.core.errors import InfrastructureError
from rerankeval.core.hashing import sha256_text
from rerankeval.systems.base import Query, QueryCandidates
from rerankeval.systems.pair_scoring import PairBatch
from rerankeval.systems.pairs import PairSystem
from rerankeval.systems.cache import DB_NAME, PairScore, ScoreCache, cache_dir
from rerankeval.systems.pair_scoring import LocalExecutor

PARTS = {"model": "local:abc", "scorer": "cross/v1", "passage_template": "t/v1", "max_length": 64,
         "truncation": "head", "dtype": "float32"}
QUERIES = {"q1": [f"first query passage {i}" for i in range(10)],
           "q2": [f"second query passage {i}" for i in range(10)]}
BATCH = 3


class HashScorer:
    """Scores from passage hashes, no model; SIGKILLs its own process when starting batch ``kill_at``."""

    def __init__(self, kill_at: int | None = None):
        self.kill_at, self.batches = kill_at, 0

    def fingerprint(self) -> dict:
        return PARTS

    def describe(self) -> dict:
        return {}

    def score_batches(self, query: str, passages: list[str]):
        words = np.array([len(passage.split()) for passage in passages])
        for start in range(0, len(passages), BATCH):
            if self.batches == self.kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            self.batches += 1
            batch = np.arange(start, min(start + BATCH, len(passages)))
            scores = np.array([int(sha256_text(query + passages[i])[:8], 16) / 2**32 for i in batch])
            yield PairBatch(batch, scores, stats={"query_tokens": np.full(len(batch), len(query.split())),
                                                  "passage_tokens": words[batch], "truncated": words[batch] > 3})


def score_all(directory: str, kill_at: int | None = None) -> dict[str, object]:
    system = PairSystem(HashScorer(kill_at), ScoreCache(directory, PARTS), "none", LocalExecutor())
    queries = [QueryCandidates(Query(query_id, f"text of {query_id}"),
                               pd.DataFrame({"doc_id": [f"{query_id}-{i}" for i in range(len(passages))],
                                             "passage": passages}))
               for query_id, passages in QUERIES.items()]
    return system.score_all(queries, None)


def test_a_killed_run_loses_only_its_batch_in_flight_and_the_rerun_reuses_the_rest(tmp_path):
    killed_dir = tmp_path / "killed"
    child = subprocess.run(
        [sys.executable, "-c", f"import test_score_cache as t; t.score_all({str(killed_dir)!r}, kill_at=6)"],
        cwd=Path(__file__).parent, capture_output=True, text=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr
    # q1 took batches 0-3 (3+3+3+1 pairs); q2 batches 4-5 were committed before batch 6 killed the process.
    assert ScoreCache(killed_dir, PARTS).count() == 10 + 2 * BATCH

    resumed = score_all(str(killed_dir))
    clean = score_all(str(tmp_path / "clean"))
    assert [resumed[q].cache_hits for q in QUERIES] == [10, 2 * BATCH]
    for query_id in QUERIES:
        np.testing.assert_array_equal(resumed[query_id].values, clean[query_id].values)
        for name, values in clean[query_id].pair_stats.items():
            np.testing.assert_array_equal(resumed[query_id].pair_stats[name], values)
    assert [score_all(str(killed_dir))[q].cache_hits for q in QUERIES] == [10, 10]


def test_scores_are_kept_apart_by_every_part_of_the_key(tmp_path):
    stored = {"p1": PairScore(1.5, 3, 700, True, 0.004)}
    ScoreCache(tmp_path, PARTS).store("query", stored)
    assert ScoreCache(tmp_path, PARTS).lookup("query", ["p1", "p2"]) == stored
    assert ScoreCache(tmp_path, PARTS).lookup("other query", ["p1"]) == {}
    for name, value in (("model", "local:def"), ("max_length", 128), ("truncation", "query_window"),
                        ("dtype", "bfloat16"), ("passage_template", "t/v2"), ("scorer", "cross/v2")):
        assert ScoreCache(tmp_path, {**PARTS, name: value}).lookup("query", ["p1"]) == {}, name


def test_the_cache_uses_wal_and_its_directory_comes_from_env_then_config(tmp_path, monkeypatch):
    cache = ScoreCache(tmp_path, PARTS)
    assert cache._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    monkeypatch.delenv("RERANKEVAL_CACHE_DIR", raising=False)
    assert cache_dir(None) == Path("data/score_cache")
    assert cache_dir("elsewhere") == Path("elsewhere")
    monkeypatch.setenv("RERANKEVAL_CACHE_DIR", str(tmp_path / "env"))
    assert cache_dir("elsewhere") == tmp_path / "env"


def test_a_garbage_cache_file_fails_the_stage_naming_the_file(tmp_path):
    (tmp_path / DB_NAME).write_bytes(b"this is not a database" * 100)
    with pytest.raises(InfrastructureError, match=rf"{DB_NAME}: cannot open the pair-score cache .*delete it"):
        ScoreCache(tmp_path, PARTS)
