"""Candidate sources: where the frozen candidates come from (``retrieval.source``), one module each. A source is its
config class, registered under its name in ``retrieval.config.SOURCES`` (the ``rerankeval.sources`` entry-point group
for a plugin), which names its ``freeze`` function as ``module:function``; ``freeze_candidates`` imports that module
only, so freezing a replay file loads no retriever.

- ``hybrid`` (``sources.hybrid``): BM25 and a dense encoder over the whole corpus, fused with RRF (the default).
- ``run`` (``sources.run``): the team's first stage as a TREC run; each query's top ``top_n`` in trec_eval's order,
  the texts from the snapshot's corpus.
- ``replay`` (``sources.replay``): a replay file, one JSON line per query whose candidates carry their own text.

Every source freezes a snapshot into a ``FrozenSet`` (``sources.base``). A source that does not rank the whole corpus
(``SourceConfig.retrievers`` empty) encodes nothing: no dense model is loaded to freeze it.
"""

from __future__ import annotations

from importlib import import_module

from ...data.snapshot import Snapshot
from ..access import filter_frozen
from ..config import SourceConfig
from .base import FrozenSet


def freeze_candidates(snapshot: Snapshot, config: SourceConfig) -> FrozenSet:
    """The candidates of ``config``'s source (``retrieval.source``) for every query of ``snapshot``, without what
    each query's user may not see (``retrieval.access``: whatever the source, before any system reads them)."""
    module, _, function = type(config).implementation.partition(":")
    frozen = getattr(import_module(module, __package__.rpartition(".")[0]), function)(snapshot, config)
    return filter_frozen(frozen, snapshot, config.access)


__all__ = ["FrozenSet", "freeze_candidates"]
