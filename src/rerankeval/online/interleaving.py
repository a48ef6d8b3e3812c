"""Interleaving two rankings into the one page a user sees, and crediting the user's clicks to one side.

``team_draft`` (Radlinski, Kurup and Joachims 2008): in each round a coin decides which side picks first, and each side
adds its highest-ranked result not yet shown; a click counts for the side whose pick it was. ``balanced`` (Joachims
2003): one coin decides which side leads, the sides alternate from their own ranks; the clicks are counted in each
ranking's top k, where k is the smaller of the two ranks of the deepest clicked result. ``probabilistic`` (Hofmann,
Whiteson and de Rijke 2011): at each position a coin picks a side, which draws a result from a softmax over its ranks;
a click counts for the side that drew it. Team-draft and balanced enumerate every page a pair of rankings can give
with its probability (at most 2^(depth/2) pages for team-draft, 2 for balanced); probabilistic's pages are too many,
so a seeded sample of them stands in (``probabilistic``). A simulation draws pages by index and credits clicks with
array operations.

An outcome is +1 when the clicks prefer side A, -1 when they prefer side B, 0 for a tie (no clicks included).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

METHODS = ("team_draft", "balanced", "probabilistic")
CREDIT_BY_ORIGIN = ("team_draft", "probabilistic")
"""The methods whose clicks count for the side that put the clicked result on the page (its origin)."""
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


PROBABILISTIC_TAU = 3.0
"""Probabilistic interleaving's softmax exponent: a side draws the result at rank r with weight 1 / r^tau (the paper's
value)."""
PROBABILISTIC_DRAWS = 128
"""Pages drawn per pair of rankings (64 with their mirror images): the page distribution the simulation samples."""


def probabilistic(a: Sequence[str], b: Sequence[str], depth: int) -> list[Page]:
    """Probabilistic interleaving (Hofmann, Whiteson and de Rijke 2011) of ``a`` and ``b`` (each cut to ``depth``):
    at each position a coin picks a side, which draws one of its results not yet shown with weight 1 / rank^tau
    (``PROBABILISTIC_TAU``); a side with none left gives way to the other. A click counts for the side that drew the
    result (the paper's naive credit; its marginalised credit, which weighs every side that could have drawn it, is
    not implemented). Its pages are too many to enumerate, so ``PROBABILISTIC_DRAWS`` are drawn by a generator seeded
    with the two rankings (a pair always gets the same pages), in mirrored halves: the second half flips every coin
    of the first and reuses its draws, so each position's side is A exactly as often as B wherever both sides have
    results left, and users whose clicks ignore the grade prefer neither side on the drawn pages, as on the method's
    own. Each distinct page carries its share of the draws, in the order first drawn."""
    a, b = list(a[:depth]), list(b[:depth])
    union = list(dict.fromkeys(a + b))
    size = min(depth, len(union))
    where = {doc: column for column, doc in enumerate(union)}
    weight = np.zeros((2, len(union)))
    for row, ranking in enumerate((a, b)):
        for rank, doc in enumerate(ranking, start=1):
            weight[row, where[doc]] = rank ** -PROBABILISTIC_TAU
    seed = hashlib.sha256("\x1e".join(["\x1f".join(a), "\x1f".join(b), str(depth)]).encode()).digest()
    rng = np.random.default_rng(int.from_bytes(seed[:8], "big"))
    half = PROBABILISTIC_DRAWS // 2
    coins, draws = rng.random((half, size)) < 0.5, rng.random((half, size))  # coin True: A's turn
    coins, draws = np.concatenate([coins, ~coins]), np.concatenate([draws, draws])
    rows = np.arange(len(coins))
    left = np.ones((len(coins), len(union)), dtype=bool)
    picked = np.zeros((len(coins), size), dtype=np.int64)
    sides = np.zeros((len(coins), size), dtype=np.int64)
    for position in range(size):  # every draw at once, one position at a time
        mass_a, mass_b = weight[0] * left, weight[1] * left
        take_a = np.where(coins[:, position], mass_a.sum(axis=1) > 0, ~(mass_b.sum(axis=1) > 0))
        mass = np.where(take_a[:, None], mass_a, mass_b)
        cumulative = np.cumsum(mass, axis=1)
        # the first result whose cumulative weight passes the draw (one with weight: the draw is below the total, and
        # the last result with weight where rounding says otherwise)
        last = mass.shape[1] - 1 - np.argmax(mass[:, ::-1] > 0, axis=1)
        picked[:, position] = np.minimum((cumulative <= (draws[:, position] * cumulative[:, -1])[:, None]).sum(axis=1),
                                         last)
        sides[:, position] = np.where(take_a, 1, -1)
        left[rows, picked[:, position]] = False
    drawn: dict[tuple[tuple[str, ...], tuple[int, ...]], int] = {}
    for columns, team in zip(picked.tolist(), sides.tolist()):
        page = (tuple(union[column] for column in columns), tuple(team))
        drawn[page] = drawn.get(page, 0) + 1
    return [Page(shown, team, _ranks(shown, a), _ranks(shown, b), count / len(coins))
            for (shown, team), count in drawn.items()]


INTERLEAVE = {"team_draft": team_draft, "balanced": balanced, "probabilistic": probabilistic}


def credit(method: str, clicks: np.ndarray, team: np.ndarray, rank_a: np.ndarray, rank_b: np.ndarray) -> np.ndarray:
    """(sessions,) outcomes in {-1, 0, +1} for (sessions, depth) clicks on pages with these per-position arrays."""
    if method in CREDIT_BY_ORIGIN:
        return np.sign((clicks * team).sum(axis=1)).astype(np.int8)
    clicked = clicks.any(axis=1)
    deepest = clicks.shape[1] - 1 - np.argmax(clicks[:, ::-1], axis=1)
    rows = np.arange(len(clicks))
    cut = np.minimum(rank_a[rows, deepest], rank_b[rows, deepest])[:, None]
    hits_a = (clicks & (rank_a <= cut)).sum(axis=1)
    hits_b = (clicks & (rank_b <= cut)).sum(axis=1)
    return np.where(clicked, np.sign(hits_a - hits_b), 0).astype(np.int8)
