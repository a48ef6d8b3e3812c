"""Candidate sources: where the frozen candidates come from (``retrieval.source``), one module each, registered in
``SOURCES`` under the name ``retrieval.source`` gives them (their settings: ``retrieval.config``).

- ``hybrid`` (``sources.hybrid``): BM25 and a dense encoder over the whole corpus, fused with RRF (the default).
- ``run`` (``sources.run``): the team's first stage as a TREC run; each query's top ``top_n`` in trec_eval's order,
  the texts from the snapshot's corpus.
- ``replay`` (``sources.replay``): a replay file, one JSON line per query whose candidates carry their own text.

Every source freezes a snapshot into a ``FrozenSet`` (``sources.base``). A source that does not rank the whole corpus
(``SourceConfig.retrievers`` empty) encodes nothing: no dense model is loaded to freeze it.
"""

from __future__ import annotations

from collections.abc import Callable

from ...core.registry import Registry
from ...data.snapshot import Snapshot
from ..config import SourceConfig
from .base import FrozenSet

SOURCES: Registry[Callable[[Snapshot, SourceConfig], FrozenSet]] = Registry("candidate source")


def register_source(name: str):
    """Decorator registering ``freeze(snapshot, config) -> FrozenSet`` as the candidate source ``name``."""

    def register(freeze: Callable[[Snapshot, SourceConfig], FrozenSet]):
        SOURCES.add(name, freeze)
        return freeze

    return register


def freeze_candidates(snapshot: Snapshot, config: SourceConfig) -> FrozenSet:
    """The candidates of ``config``'s source (``retrieval.source``) for every query of ``snapshot``."""
    from . import hybrid, replay, run  # noqa: F401  (register the built-in sources)

    return SOURCES.get(config.source, "retrieval.source")(snapshot, config)


__all__ = ["SOURCES", "FrozenSet", "freeze_candidates", "register_source"]
