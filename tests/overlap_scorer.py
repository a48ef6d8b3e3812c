"""One pair-scoring kind defined outside the package, for the tests: word overlap of query and passage (ties
galore), taking a set time per pair, slower on Korean queries or failing on them."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from rerankeval.systems.pair_scoring import PairBatch
from rerankeval.systems.pairs import PairScorerConfig, register_pair_scorer

KIND = "test_overlap"


class OverlapConfig(PairScorerConfig):
    seconds_per_pair: float = 0.002
    korean_seconds_per_pair: float | None = None
    """A Korean query's time per pair; None: ``seconds_per_pair``."""
    fail_on_korean: bool = False
    """A Korean query raises (a model error: its rows stay in the fused order)."""


def is_korean(text: str) -> bool:
    return any("\uac00" <= character <= "\ud7a3" for character in text)


class OverlapScorer:
    def __init__(self, config: OverlapConfig):
        self.config, self.calls = config, 0

    def fingerprint(self) -> dict:
        return {"scorer": "overlap/v1", **self.config.model_dump(include={"seconds_per_pair", "korean_seconds_per_pair",
                                                                          "fail_on_korean"})}

    def score_batches(self, query: str, passages: list[str]) -> Iterator[PairBatch]:
        korean = is_korean(query)
        if korean and self.config.fail_on_korean:
            raise ValueError("no Korean")
        seconds = self.config.korean_seconds_per_pair if korean and self.config.korean_seconds_per_pair is not None \
            else self.config.seconds_per_pair
        words = set(query.split())
        for start in range(0, len(passages), 2):
            indices = np.arange(start, min(start + 2, len(passages)))
            self.calls += len(indices)
            time.sleep(seconds * len(indices))
            yield PairBatch(indices, np.array([len(words & set(passages[i].split())) for i in indices], float))

    def describe(self) -> dict:
        return {"scorer": "word overlap"}


register_pair_scorer(KIND, OverlapConfig)(lambda config, context: OverlapScorer(config))
