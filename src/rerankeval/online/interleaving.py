"""Interleaving two rankings into the one page a user sees, and crediting the user's clicks to one side.

``team_draft`` (Radlinski, Kurup and Joachims 2008): in each round a coin decides which side picks first, and each side
adds its highest-ranked result not yet shown; a click counts for the side whose pick it was. ``balanced`` (Joachims
2003): one coin decides which side leads, the sides alternate from their own ranks; the clicks are counted in each
ranking's top k, where k is the smaller of the two ranks of the deepest clicked result. Both enumerate every page a
pair of rankings can give with its probability (at most 2^(depth/2) pages for team-draft, 2 for balanced), so a
simulation draws pages by index and credits clicks with array operations.

An outcome is +1 when the clicks prefer side A, -1 when they prefer side B, 0 for a tie (no clicks included).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

METHODS = ("team_draft", "balanced")
ABSENT = 1 << 20
"""The rank of a result in a ranking that does not hold it (deeper than any click)."""


@dataclass(frozen=True)
class Page:
    """One interleaved page: the results shown, in order; each position's side (+1 A, -1 B; team-draft) and its rank
    in A and in B (1-based, ``ABSENT`` if not there; balanced); the page's probability."""

    shown: tuple[str, ...]
    team: tuple[int, ...]
    rank_a: tuple[int, ...]
    rank_b: tuple[int, ...]
    probability: float


def _ranks(shown: Sequence[str], ranking: Sequence[str]) -> tuple[int, ...]:
    where = {doc: rank for rank, doc in enumerate(ranking, start=1)}
    return tuple(where.get(doc, ABSENT) for doc in shown)


def team_draft(a: Sequence[str], b: Sequence[str], depth: int) -> list[Page]:
    """Every team-draft page of ``a`` and ``b`` (each cut to ``depth``) with its probability."""
    a, b = list(a[:depth]), list(b[:depth])
    pool = len(set(a) | set(b))
    pages: list[Page] = []

    def pick(ranking: list[str], shown: list[str]) -> str | None:
        return next((doc for doc in ranking if doc not in shown), None)

    def grow(shown: list[str], team: list[int], count_a: int, count_b: int, probability: float) -> None:
        if len(shown) == min(depth, pool):
            pages.append(Page(tuple(shown), tuple(team), _ranks(shown, a), _ranks(shown, b), probability))
            return
        next_a, next_b = pick(a, shown), pick(b, shown)
        options = []
        if next_b is None or (next_a is not None and count_a < count_b):  # B has run out, or it is A's turn
            options = [(1, next_a, 1.0)]
        elif next_a is None or count_b < count_a:
            options = [(-1, next_b, 1.0)]
        else:  # equal teams: the coin
            options = [(1, next_a, 0.5), (-1, next_b, 0.5)]
        for side, doc, chance in options:
            grow([*shown, doc], [*team, side], count_a + (side == 1), count_b + (side == -1), probability * chance)

    grow([], [], 0, 0, 1.0)
    return pages


def balanced(a: Sequence[str], b: Sequence[str], depth: int) -> list[Page]:
    """Both balanced pages of ``a`` and ``b`` (A leads, B leads), each with probability 1/2."""
    a, b = list(a[:depth]), list(b[:depth])
    pool = len(set(a) | set(b))
    pages = []
    for a_first in (True, False):
        shown: list[str] = []
        at_a = at_b = 0
        while len(shown) < min(depth, pool):
            take_a = at_b >= len(b) or (at_a < len(a) and (at_a < at_b or (at_a == at_b and a_first)))
            doc = a[at_a] if take_a else b[at_b]
            at_a, at_b = (at_a + 1, at_b) if take_a else (at_a, at_b + 1)
            if doc not in shown:
                shown.append(doc)
        pages.append(Page(tuple(shown), (0,) * len(shown), _ranks(shown, a), _ranks(shown, b), 0.5))
    return pages


INTERLEAVE = {"team_draft": team_draft, "balanced": balanced}


def credit(method: str, clicks: np.ndarray, team: np.ndarray, rank_a: np.ndarray, rank_b: np.ndarray) -> np.ndarray:
    """(sessions,) outcomes in {-1, 0, +1} for (sessions, depth) clicks on pages with these per-position arrays."""
    if method == "team_draft":
        return np.sign((clicks * team).sum(axis=1)).astype(np.int8)
    clicked = clicks.any(axis=1)
    deepest = clicks.shape[1] - 1 - np.argmax(clicks[:, ::-1], axis=1)
    rows = np.arange(len(clicks))
    cut = np.minimum(rank_a[rows, deepest], rank_b[rows, deepest])[:, None]
    hits_a = (clicks & (rank_a <= cut)).sum(axis=1)
    hits_b = (clicks & (rank_b <= cut)).sum(axis=1)
    return np.where(clicked, np.sign(hits_a - hits_b), 0).astype(np.int8)
