"""Scorers of learned models: tokenise once, lay pairs out, group them by length, forward in batches.

Both scorers are ``PairScorer``s: they yield scored batches, each pair carrying its compute time (its share of the
batch, plus its share of tokenising the query's pairs) and its token accounting. Raw scores are logits (cosines
for a bi-encoder); the pair-score cache and normalisation around them come from ``rerankeval.systems.pairs``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..pair_scoring import PairBatch
from .layout import PairLayout, best_window, kept_lengths, word_like_ids

SCORER_VERSION = "length-grouped-pairs/v1"
"""Bump when the scorer's token layout or truncation changes: it is part of every cache key."""


@dataclass
class Encoded:
    """A query and its passages, tokenised and laid out; ``lengths`` are the model input lengths."""

    query: str
    passages: list[str]
    inputs: list[Any]
    lengths: np.ndarray
    query_tokens: int
    passage_tokens: np.ndarray
    truncated: np.ndarray
    query_embedding: Any = None


def length_batches(lengths: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Pair indices grouped into batches of similar length, longest first (ties in input order)."""
    order = np.argsort(-lengths, kind="stable")
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


class _BatchedScorer:
    """Shared by both scorers: encode, then collate and forward each length-grouped batch, timing each step."""

    family: str
    batch_size: int

    def encode(self, query: str, passages: list[str]) -> Encoded:
        raise NotImplementedError

    def collate(self, encoded: Encoded, batch: np.ndarray) -> Any:
        raise NotImplementedError

    def forward(self, encoded: Encoded, features: Any) -> np.ndarray:
        raise NotImplementedError

    def score_batches(self, query: str, passages: list[str]) -> Iterator[PairBatch]:
        started = time.perf_counter()
        encoded = self.encode(query, passages)
        encode_s = time.perf_counter() - started
        for batch in length_batches(encoded.lengths, self.batch_size):
            started = time.perf_counter()
            features = self.collate(encoded, batch)
            collated = time.perf_counter()
            scores = self.forward(encoded, features)
            finished = time.perf_counter()
            encode_share = encode_s * len(batch) / len(passages)
            pair_s = (finished - started) / len(batch) + encode_s / len(passages)
            yield PairBatch(batch, scores, np.full(len(batch), pair_s), stats={
                "query_tokens": np.full(len(batch), encoded.query_tokens, dtype=np.int32),
                "passage_tokens": encoded.passage_tokens[batch].astype(np.int32),
                "truncated": encoded.truncated[batch].astype(bool)},
                timings={"tokenize_s": encode_share + collated - started, "forward_s": finished - collated})


class CrossEncoderScorer(_BatchedScorer):
    """A sequence-classification model scoring (query, passage) pairs with one logit each."""

    family = "cross"

    def __init__(self, model, tokenizer, *, max_length: int, truncation: str, batch_size: int):
        if tokenizer.padding_side != "right":
            raise ValueError(f"tokenizer pads on the {tokenizer.padding_side}; the scorer pads on the right")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.layout = PairLayout.probe(tokenizer)
        self.budget = max_length - self.layout.special_count
        self.max_length, self.truncation, self.batch_size = max_length, truncation, batch_size
        self.uses_token_types = "token_type_ids" in tokenizer.model_input_names

    def _ids(self, texts: list[str]) -> list[list[int]]:
        return self.tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]

    def encode(self, query: str, passages: list[str]) -> Encoded:
        query_ids = self._ids([query])[0]
        window_ids = word_like_ids(self.tokenizer, query_ids) if self.truncation == "query_window" else set()
        inputs, passage_tokens, truncated = [], [], []
        for passage_ids in self._ids(passages):
            keep_query, keep_passage = kept_lengths(len(query_ids), len(passage_ids), self.budget)
            start = 0
            if self.truncation == "query_window" and keep_passage < len(passage_ids):
                start = best_window(passage_ids, window_ids, keep_passage)
            inputs.append(self.layout.build(query_ids[:keep_query], passage_ids[start:start + keep_passage]))
            passage_tokens.append(len(passage_ids))
            truncated.append(keep_passage < len(passage_ids))
        return Encoded(query, passages, inputs, np.array([len(ids) for ids, _ in inputs]), len(query_ids),
                       np.array(passage_tokens), np.array(truncated))

    def collate(self, encoded: Encoded, batch: np.ndarray) -> dict[str, Any]:
        import torch

        width = int(encoded.lengths[batch].max())
        ids = torch.full((len(batch), width), self.tokenizer.pad_token_id, dtype=torch.long)
        types = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, index in enumerate(batch):
            pair_ids, pair_types = encoded.inputs[index]
            ids[row, :len(pair_ids)] = torch.tensor(pair_ids)
            types[row, :len(pair_ids)] = torch.tensor(pair_types)
            mask[row, :len(pair_ids)] = 1
        features = {"input_ids": ids, "attention_mask": mask}
        if self.uses_token_types:
            features["token_type_ids"] = types
        return features

    def forward(self, encoded: Encoded, features: dict[str, Any]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            logits = self.model(**features).logits
        return logits[:, 0].float().numpy().astype(np.float64)

    def score_many(self, requests: list[tuple[str, list[str]]]) -> list[np.ndarray]:
        """Every request's pairs forwarded together, grouped by length across requests: a dynamic batch of small
        requests fills the model's batches as one large request would."""
        parts = [self.encode(query, passages) for query, passages in requests]
        merged = Encoded("", [], [ids for part in parts for ids in part.inputs],
                         np.concatenate([part.lengths for part in parts]), 0, np.empty(0), np.empty(0))
        scores = np.empty(len(merged.inputs))
        for batch in length_batches(merged.lengths, self.batch_size):
            scores[batch] = self.forward(merged, self.collate(merged, batch))
        bounds = np.cumsum([0, *(len(part.inputs) for part in parts)])
        return [scores[start:end] for start, end in zip(bounds[:-1], bounds[1:])]


class BiEncoderScorer(_BatchedScorer):
    """A sentence-transformers embedding model: the cosine of the normalised query and passage embeddings."""

    family = "bi"

    def __init__(self, model, *, max_length: int, batch_size: int):
        self.model = model.eval()
        self.model.max_seq_length = max_length
        self.max_length, self.batch_size = max_length, batch_size
        self.special_count = model.tokenizer.num_special_tokens_to_add(pair=False)

    def encode(self, query: str, passages: list[str]) -> Encoded:
        counts = [len(ids) for ids in
                  self.model.tokenizer([query, *passages], add_special_tokens=False, verbose=False)["input_ids"]]
        passage_tokens = np.array(counts[1:])
        budget = self.max_length - self.special_count
        return Encoded(query, passages, passages, np.minimum(passage_tokens, budget) + self.special_count, counts[0],
                       passage_tokens, passage_tokens > budget)

    def collate(self, encoded: Encoded, batch: np.ndarray) -> dict[str, Any]:
        return self.model.preprocess([encoded.passages[index] for index in batch])

    def _embed(self, features: dict[str, Any]):
        import torch

        with torch.inference_mode():
            embeddings = self.model(features)["sentence_embedding"].float()
        return torch.nn.functional.normalize(embeddings, dim=-1)

    def forward(self, encoded: Encoded, features: dict[str, Any]) -> np.ndarray:
        if encoded.query_embedding is None:
            encoded.query_embedding = self._embed(self.model.preprocess([encoded.query]))[0]
        return (self._embed(features) @ encoded.query_embedding).numpy().astype(np.float64)
