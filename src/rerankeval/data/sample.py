"""A seeded, slice-stratified sample of the evaluated split's queries (``dataset.sample``), for a quick first run.

Only the evaluated split is sampled: the other splits (what a reranker is trained or a blend fitted on) stay whole,
as they have their own caps (``blend.fit.max_queries``) and a sample of them would change a trained model rather
than shorten the evaluation. The corpus stays whole too, so the candidates are retrieved as from the full
collection. Each stratum (a value of the ``stratify`` slice column; a query without one is its own stratum) gets its
proportional share by largest remainder, at least one query each when there are as many queries as strata, drawn
by a generator seeded with the seed and the stratum's value: the same settings give the same sample on any machine.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.errors import ConfigError
from .beir import Collection
from .config import SampleConfig

NO_VALUE = "(none)"
"""The stratum of queries without a value in the stratify column."""


def allocate(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    """Queries per stratum for a sample of ``n``: proportional, largest remainder first (ties: the larger stratum,
    then the value), every stratum at least one when ``n`` allows; every query when ``n`` is at least their number."""
    total = sum(sizes.values())
    if n >= total:
        return dict(sizes)
    least = 1 if n >= len(sizes) else 0
    quota = {stratum: n * size / total for stratum, size in sizes.items()}
    counts = {stratum: min(size, max(least, math.floor(quota[stratum]))) for stratum, size in sizes.items()}
    while sum(counts.values()) < n:
        stratum = min((s for s in sizes if counts[s] < sizes[s]),
                      key=lambda s: (counts[s] - quota[s], -sizes[s], s))
        counts[stratum] += 1
    while sum(counts.values()) > n:  # the minimum of one pushed the total over n
        stratum = min((s for s in sizes if counts[s] > least), key=lambda s: (quota[s] - counts[s], sizes[s], s))
        counts[stratum] -= 1
    return counts


def sample_collection(collection: Collection, config: SampleConfig, split: str,
                      where: str = "dataset.sample") -> tuple[Collection, dict[str, Any]]:
    """The collection with ``split`` cut to the sample (and the qrels of the queries left out dropped), and the
    sample's record for the snapshot manifest (its settings, the counts per stratum and the sampled ids)."""
    if config.stratify is not None and config.stratify not in collection.slice_columns:
        raise ConfigError(f"{where}.stratify: {config.stratify!r} is not a slice column of this collection (its "
                          f"slice columns: {', '.join(collection.slice_columns) or 'none'}). Fix: set "
                          f"{where}.stratify to one of them, or to null for an unstratified sample.")
    queries = collection.queries.to_pandas()
    evaluated = queries[queries["split"] == split].sort_values("query_id")
    labels = (evaluated[config.stratify].map(lambda value: NO_VALUE if value is None else str(value))
              if config.stratify else evaluated["query_id"].map(lambda _: NO_VALUE))
    groups = {str(value): ids.tolist() for value, ids in evaluated["query_id"].groupby(labels.to_numpy(), sort=True)}
    counts = allocate({value: len(ids) for value, ids in groups.items()}, config.queries)
    chosen: list[str] = []
    for value, ids in groups.items():
        rng = np.random.default_rng([config.seed, zlib.crc32(value.encode("utf-8"))])
        chosen += [ids[i] for i in sorted(rng.choice(len(ids), counts[value], replace=False))]
    chosen.sort()
    keep = pc.or_(pc.not_equal(collection.queries.column("split"), split),
                  pc.is_in(collection.queries.column("query_id"), value_set=pa.array(chosen, pa.string())))
    kept_queries = collection.queries.filter(keep)
    kept_qrels = collection.qrels.filter(pc.is_in(collection.qrels.column("query_id"),
                                                  value_set=kept_queries.column("query_id")))
    record = {"split": split, "queries": len(chosen), "of": len(evaluated), "requested": config.queries,
              "stratify": config.stratify, "seed": config.seed,
              "strata": {value: {"sampled": counts[value], "of": len(ids)} for value, ids in groups.items()},
              "query_ids": chosen}
    return replace(collection, queries=kept_queries, qrels=kept_qrels,
                   notes=[*collection.notes, sample_text(record)]), record


def sample_text(record: Mapping[str, Any]) -> str:
    """How the report and the snapshot stage state a sample: ``sampled N of M queries, stratified by X, seed S``."""
    how = f"stratified by {record['stratify']}" if record["stratify"] else "not stratified"
    return (f"sampled {record['queries']} of {record['of']} queries, {how}, seed {record['seed']} (the "
            f"{record['split']} split; the other splits whole)")
