"""Shared by the composite-system and policy tests: a word-count pair scorer registered once, four hand-made
candidates per query and their build context."""

from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest

from rerankeval.core.hashing import sha256_text
from rerankeval.systems.base import Query
from rerankeval.systems.pair_scoring import PairBatch
from rerankeval.systems.pairs import PairScorerConfig, register_pair_scorer
from rerankeval.systems.registry import BuildContext

SCORED: list[tuple[str, str]] = []
"""Every (query, passage) pair the test scorer computed, across instances."""


class LengthConfig(PairScorerConfig):
    model_dir: str | None = None
    """Where a model card would be (the blend's fit reads it)."""


class LengthScorer:
    """Scores a passage by its number of words: easy to compute by hand."""

    def fingerprint(self) -> dict:
        return {"scorer": "test-length/v1"}

    def score_batches(self, query: str, passages: list[str]) -> Iterator[PairBatch]:
        SCORED.extend((query, passage) for passage in passages)
        yield PairBatch(np.arange(len(passages)), np.array([len(p.split()) for p in passages], dtype=float),
                        np.full(len(passages), 0.01))

    def __init__(self, model_dir: str | None = None):
        self.model_dir = model_dir

    def describe(self) -> dict:
        return {"scorer": "word count", **({"model_dir": self.model_dir} if self.model_dir else {})}


register_pair_scorer("test_length", LengthConfig)(lambda config, context: LengthScorer(config.model_dir))


class TokenCountingScorer(LengthScorer):
    """The word count with token accounting, as a model's tokenizer reports it: query tokens 3, passage tokens its
    words, truncated past 3 words."""

    def fingerprint(self) -> dict:
        return {"scorer": "test-length-tokens/v1"}

    def score_batches(self, query: str, passages: list[str]) -> Iterator[PairBatch]:
        for batch in super().score_batches(query, passages):
            words = batch.scores.astype(np.int32)
            yield PairBatch(batch.indices, batch.scores, batch.compute_s,
                            stats={"query_tokens": np.full(len(words), 3, dtype=np.int32), "passage_tokens": words,
                                   "truncated": words > 3})


register_pair_scorer("test_length_tokens", LengthConfig)(lambda config, context: TokenCountingScorer())

# Four candidates per query in fused order; word counts 1, 4, 2, 3; BM25 scores 2, 8, 4, 0.
PASSAGES = ["PAY-1041 retry", "PAY-1042 never retry charges", "orion manual", "plan tiers table"]
WORDS = [2, 4, 2, 3]
BM25 = [2.0, 8.0, 4.0, 0.0]


def candidates(query_ids=("q1", "q2")) -> pd.DataFrame:
    rows = []
    for query_id in query_ids:
        for i, passage in enumerate(PASSAGES):
            rows.append({"query_id": query_id, "doc_id": f"d{i}", "parent_id": f"d{i}", "passage": passage,
                         "passage_sha256": sha256_text(passage), "fused_rank": i + 1, "fused_score": 1.0 / (61 + i),
                         "bm25_score": BM25[i], "bm25_rank": [3, 1, 2, 4][i], "dense_score": 1.0 - 0.1 * i,
                         "dense_rank": i + 1})
    return pd.DataFrame(rows)


QUERIES = {"q1": Query("q1", "What does PAY-1042 mean?", {"intent": "exact_id"}),
           "q2": Query("q2", "how do retries work", {"intent": "troubleshooting"})}
QRELS = pd.DataFrame({"query_id": ["q1", "q2", "t1", "t2"], "doc_id": ["d1", "d0", "d1", "d1"],
                      "relevance": [1, 1, 1, 1]})


@pytest.fixture
def systems(tmp_path, monkeypatch):
    monkeypatch.delenv("RERANKEVAL_CACHE_DIR", raising=False)
    SCORED.clear()
    return {"length": {"kind": "test_length", "depth": 4, "cache_dir": str(tmp_path / "cache")},
            "fusion": {"kind": "fusion", "depth": 4}}


def context(systems, **extra) -> BuildContext:
    return BuildContext(qrels=QRELS, systems=systems, **extra)


def order(run, query_id="q1"):
    return run[run["query_id"] == query_id]["doc_id"].tolist()
