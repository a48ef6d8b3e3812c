"""The one reader of passage text for context selection and generation.

Text comes from the frozen candidates (the exact string every system saw, checked against its sha256); a neighbour
chunk that was never a candidate comes from the snapshot's corpus through the same ``passage_text`` the freeze stage
uses. Corpus order defines adjacency: a passage's neighbours are the passages of the same parent right before and
after it in corpus.jsonl.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..data.snapshot import Snapshot
from ..retrieval.candidates import load_candidates
from ..retrieval.text import passage_text


def candidate_passages(candidates_path: str | Path) -> pd.DataFrame:
    """One row per distinct candidate document (doc_id, parent_id, passage), its text verified against its hash."""
    frame = load_candidates(candidates_path, columns=["doc_id", "parent_id", "passage_sha256"])
    return frame.drop_duplicates("doc_id").reset_index(drop=True)[["doc_id", "parent_id", "passage"]]


@dataclass(frozen=True)
class Passages:
    """Passage text, parent and corpus neighbours of every document."""

    text: dict[str, str]
    parent: dict[str, str]
    previous: dict[str, str]
    next: dict[str, str]

    def neighbours(self, doc_id: str, window: int) -> tuple[list[str], list[str]]:
        """Up to ``window`` chunks before (nearest last) and after (nearest first) ``doc_id`` in its parent."""
        before, after = [], []
        current = doc_id
        for _ in range(window):
            current = self.previous.get(current)
            if current is None:
                break
            before.insert(0, current)
        current = doc_id
        for _ in range(window):
            current = self.next.get(current)
            if current is None:
                break
            after.append(current)
        return before, after


def load_passages(snapshot: Snapshot, candidates_path: str | Path) -> Passages:
    corpus = snapshot.table("corpus").select(["doc_id", "title", "text", "parent_id"]).to_pandas()
    text = {doc_id: passage_text(title, body) for doc_id, title, body in
            zip(corpus["doc_id"], corpus["title"], corpus["text"])}
    text.update(zip(*(candidate_passages(candidates_path)[c] for c in ("doc_id", "passage"))))
    parent = dict(zip(corpus["doc_id"], corpus["parent_id"]))
    previous, following = {}, {}
    last_of_parent: dict[str, str] = {}
    for doc_id, parent_id in zip(corpus["doc_id"], corpus["parent_id"]):
        if parent_id in last_of_parent:
            previous[doc_id] = last_of_parent[parent_id]
            following[last_of_parent[parent_id]] = doc_id
        last_of_parent[parent_id] = doc_id
    return Passages(text, parent, previous, following)


def corpus_texts(snapshot: Snapshot) -> list[str]:
    """Every corpus passage's text as the freeze stage built it, in corpus order (a generator's term statistics)."""
    corpus = snapshot.table("corpus")
    return [passage_text(title, text)
            for title, text in zip(corpus.column("title").to_pylist(), corpus.column("text").to_pylist())]
