"""Context selection: from one system's ranking, the passages a generator reads, under a declared budget.

The rule, per query (``SelectConfig`` holds every number):

1. The pool is the system's top ``pool_depth`` passages, in rank order.
2. Without MMR the pool is walked in rank order; with ``mmr_lambda`` the next passage is the eligible one maximising
   ``lambda * relevance - (1 - lambda) * max similarity to the passages already selected``, where relevance is
   ``1 - (rank - 1) / pool_depth`` (from the rank, not the score, so every system is treated alike whatever its score
   scale) and similarity is token-set Jaccard or the cosine of dense embeddings.
3. A passage is eligible while its parent has fewer than ``max_per_parent`` selected passages and it fits the
   remaining token budget; one that does not fit is skipped and the walk goes on. Selection stops at
   ``max_passages`` or when the pool is exhausted.
4. Neighbour expansion (``neighbours`` > 0) then adds, around each selected passage, the adjacent chunks of its
   parent in corpus order, budget permitting (passages and tokens; not the per-parent cap, which limits what the
   ranking contributes). The context lists each selected passage with its neighbours around it in document order.

Tokens are words and punctuation marks (``count_tokens``): a rough, language-neutral count that is the same for
every system. Each context passage records whether its parent was already in the context (redundancy) and whether
it near-duplicates an earlier passage (token Jaccard >= ``near_duplicate_jaccard``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from ..retrieval.text import tokenize
from .config import SelectConfig
from .passages import Passages

CONTEXT_SCHEMA = pa.schema([
    ("query_id", pa.string()),
    ("position", pa.int32()),
    ("doc_id", pa.string()),
    ("parent_id", pa.string()),
    ("rank", pa.int32()),
    ("source", pa.string()),
    ("tokens", pa.int32()),
    ("redundant", pa.bool_()),
    ("near_duplicate", pa.bool_()),
])
RANKED, NEIGHBOUR = "ranked", "neighbour"
_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def jaccard(a: frozenset, b: frozenset) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


@dataclass(frozen=True)
class Ranked:
    doc_id: str
    parent_id: str
    rank: int


@dataclass(frozen=True)
class ContextPassage:
    doc_id: str
    parent_id: str
    rank: int | None
    source: str
    tokens: int


Similarity = Callable[[str, str], float]


def token_similarity(passages: Passages) -> Similarity:
    cache: dict[str, frozenset] = {}

    def tokens(doc_id: str) -> frozenset:
        if doc_id not in cache:
            cache[doc_id] = frozenset(tokenize(passages.text[doc_id]))
        return cache[doc_id]

    return lambda a, b: jaccard(tokens(a), tokens(b))


def select_context(ranking: Sequence[Ranked], passages: Passages, config: SelectConfig,
                   similarity: Similarity | None = None,
                   visible: Callable[[str], bool] | None = None) -> list[ContextPassage]:
    """The context of one query from its ranking (any order; sorted by rank here). ``visible``: whether the asking
    user may see a document (``data.access``); a neighbour they may not see ends the expansion on its side, so no
    unauthorized text reaches the generator through the corpus's adjacency."""
    pool = sorted(ranking, key=lambda item: item.rank)[: config.pool_depth]
    similarity = similarity or token_similarity(passages)
    budget = config.max_tokens
    chosen: list[Ranked] = []
    per_parent: dict[str, int] = {}
    used_tokens = 0
    remaining = list(pool)
    while remaining and len(chosen) < config.max_passages:
        eligible = [item for item in remaining
                    if (config.max_per_parent is None or per_parent.get(item.parent_id, 0) < config.max_per_parent)
                    and (budget is None or used_tokens + count_tokens(passages.text[item.doc_id]) <= budget)]
        if not eligible:
            break
        pick = eligible[0] if config.mmr_lambda is None else _mmr_pick(eligible, chosen, config, similarity)
        chosen.append(pick)
        remaining.remove(pick)
        per_parent[pick.parent_id] = per_parent.get(pick.parent_id, 0) + 1
        used_tokens += count_tokens(passages.text[pick.doc_id])
    return _expand(chosen, passages, config, used_tokens, visible)


def _mmr_pick(eligible: list[Ranked], chosen: list[Ranked], config: SelectConfig, similarity: Similarity) -> Ranked:
    best, best_score = eligible[0], -np.inf
    for item in eligible:  # in rank order, so ties keep the better-ranked passage
        relevance = 1.0 - (item.rank - 1) / config.pool_depth
        redundancy = max((similarity(item.doc_id, other.doc_id) for other in chosen), default=0.0)
        score = config.mmr_lambda * relevance - (1.0 - config.mmr_lambda) * redundancy
        if score > best_score:
            best, best_score = item, score
    return best


def _expand(chosen: list[Ranked], passages: Passages, config: SelectConfig, used_tokens: int,
            visible: Callable[[str], bool] | None = None) -> list[ContextPassage]:
    def entry(doc_id: str, rank: int | None, source: str) -> ContextPassage:
        return ContextPassage(doc_id, passages.parent[doc_id], rank, source, count_tokens(passages.text[doc_id]))

    taken = {item.doc_id for item in chosen}
    count = len(chosen)
    context: list[ContextPassage] = []
    for item in chosen:
        before, after = passages.neighbours(item.doc_id, config.neighbours) if config.neighbours else ([], [])
        if visible is not None:  # stop at the first neighbour the user may not see, on each side
            before = before[len(before) - next((k for k, doc in enumerate(reversed(before)) if not visible(doc)),
                                               len(before)):]
            after = after[:next((k for k, doc in enumerate(after) if not visible(doc)), len(after))]
        accepted = set()
        # Nearest first: next chunk, previous chunk, the one after that, ... while the budget lasts.
        nearest = [doc for pair in zip([*after, *[None] * len(before)], [*reversed(before), *[None] * len(after)])
                   for doc in pair if doc is not None]
        for doc_id in nearest:
            tokens = count_tokens(passages.text[doc_id])
            if doc_id in taken or count >= config.max_passages or (
                    config.max_tokens is not None and used_tokens + tokens > config.max_tokens):
                continue
            taken.add(doc_id)
            accepted.add(doc_id)
            count += 1
            used_tokens += tokens
        context += [entry(doc_id, None, NEIGHBOUR) for doc_id in before if doc_id in accepted]
        context.append(entry(item.doc_id, item.rank, RANKED))
        context += [entry(doc_id, None, NEIGHBOUR) for doc_id in after if doc_id in accepted]
    return context


def context_rows(query_id: str, context: Sequence[ContextPassage], passages: Passages,
                 near_duplicate_jaccard: float) -> dict[str, list]:
    """The context as CONTEXT_SCHEMA columns, with the redundancy and near-duplicate flags."""
    rows: dict[str, list] = {name: [] for name in CONTEXT_SCHEMA.names}
    seen_parents: set[str] = set()
    seen_tokens: list[frozenset] = []
    for position, passage in enumerate(context, start=1):
        tokens = frozenset(tokenize(passages.text[passage.doc_id]))
        rows["query_id"].append(query_id)
        rows["position"].append(position)
        rows["doc_id"].append(passage.doc_id)
        rows["parent_id"].append(passage.parent_id)
        rows["rank"].append(passage.rank)
        rows["source"].append(passage.source)
        rows["tokens"].append(passage.tokens)
        rows["redundant"].append(passage.parent_id in seen_parents)
        rows["near_duplicate"].append(any(jaccard(tokens, other) >= near_duplicate_jaccard for other in seen_tokens))
        seen_parents.add(passage.parent_id)
        seen_tokens.append(tokens)
    return rows


def context_table(ranked: pd.DataFrame, passages: Passages, config: SelectConfig,
                  similarity: Similarity | None = None,
                  may_see: Callable[[str, str], bool] | None = None) -> pa.Table:
    """CONTEXT_SCHEMA rows for every query of ``ranked`` (query_id, doc_id, parent_id, rank), in query-id order.
    ``may_see(query_id, doc_id)``: the access check neighbour expansion obeys (``select_context``)."""
    columns: dict[str, list] = {name: [] for name in CONTEXT_SCHEMA.names}
    similarity = similarity or token_similarity(passages)
    for query_id, frame in ranked.sort_values(["query_id", "rank"]).groupby("query_id", sort=True):
        ranking = [Ranked(d, p, int(r)) for d, p, r in zip(frame["doc_id"], frame["parent_id"], frame["rank"])]
        visible = None if may_see is None else (lambda doc_id, query_id=query_id: may_see(query_id, doc_id))
        chosen = select_context(ranking, passages, config, similarity, visible)
        for name, values in context_rows(query_id, chosen, passages, config.near_duplicate_jaccard).items():
            columns[name] += values
    return pa.table(columns, schema=CONTEXT_SCHEMA)


def context_lists(table: pa.Table) -> dict[str, list[str]]:
    """query_id -> its context's doc ids in position order (from a CONTEXT_SCHEMA table)."""
    frame = table.select(["query_id", "position", "doc_id"]).to_pandas().sort_values(["query_id", "position"])
    return {query_id: list(group["doc_id"]) for query_id, group in frame.groupby("query_id", sort=True)}
