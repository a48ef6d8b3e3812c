"""How many pairs a composite's model components needed (``PairCounts``), summed over every component built in a
process (``pair_counts``). Apart from ``composite.components``, which builds the components and counts: every rerank
stage records the counts, and a stage that runs no composite should not depend on composite code."""

from __future__ import annotations

from dataclasses import dataclass, fields

from .registry import BuildContext


@dataclass
class PairCounts:
    """Pairs a composite's model components needed: scored by a model now, read from the pair-score cache, or
    served again from this process's memory (a component shared by several settings or composites)."""

    scored: int = 0
    from_cache: int = 0
    reused: int = 0

    def __add__(self, other: "PairCounts") -> "PairCounts":
        return PairCounts(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def __sub__(self, other: "PairCounts") -> "PairCounts":
        return PairCounts(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(self)))

    def to_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def pair_counts(context: BuildContext) -> PairCounts:
    """Pairs scored, read from the cache and reused by every component built in this process so far (each keeps its
    ``counts``, a ``PairCounts``)."""
    total = PairCounts()
    for built in context.shared.get("components", {}).values():
        total = total + built.counts
    return total
