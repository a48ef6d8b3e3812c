"""What would settle the verdicts, for the compare stage: the judging queue (``eval.judging``). The queries that would
give an INCONCLUSIVE verdict's test its power are part of the analysis (``stats.comparison``, ``stats.power``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pandas as pd

from ..core.io import write_text
from ..data.snapshot import Snapshot
from ..eval.judging import QUEUE_COLUMNS, judging_queue, queue_tsv, relevant_chance, with_assessor_text
from ..eval.measures import parse_measure
from ..systems.roles import KindTraits
from ..workspace.paths import PipelinePaths
from .params import Params


def write_judging_queue(params: Params, paths: PipelinePaths, runs: Mapping[str, pd.DataFrame],
                        traits: Mapping[str, KindTraits], qrels: pd.DataFrame, queries: pd.DataFrame,
                        snapshot: Snapshot, redact: Callable[[str], str] = str) -> int:
    """Write ``paths.judging_queue``: the unjudged pairs in the top k (the unjudged watch's cutoff) of the baseline
    and of every reranker under test (reference systems, i.e. first stages and bounds, are no release candidates),
    ordered by how far judging each moves the primary Δ against the (first) baseline, ``redact`` applied to the
    text an assessor reads (``core.privacy``). Returns the pairs written;
    a primary metric that is not a ranking measure, or no reranker to compare, gives the header alone."""
    settings = params.compare
    metric = parse_measure(settings.release.primary_metric)
    watch = parse_measure(settings.unjudged.measure)
    challengers = [system for system in params.system_names
                   if system != settings.baseline and not traits[system].reference]
    if metric.family.needs != "ranking" or not challengers:
        write_text(paths.judging_queue, queue_tsv(pd.DataFrame(columns=list(QUEUE_COLUMNS))))
        return 0
    # A query the collection marks unanswerable is the least likely to get a relevant judgment (eval.judging).
    classes = queries["answerable"] if "answerable" in queries.columns else pd.Series("all", index=queries.index)
    queue = judging_queue(runs, qrels, baseline=settings.baseline, challengers=challengers, metric=metric,
                          k=watch.cutoff or params.retrieval.top_n, queries=list(queries.index),
                          no_relevant=params.evaluation.no_relevant,
                          chance_relevant=relevant_chance(classes.fillna(True), qrels))
    corpus = snapshot.table("corpus").select(["doc_id", "title", "text"]).to_pandas()
    write_text(paths.judging_queue, redact(queue_tsv(with_assessor_text(queue, queries["text"].to_dict(), corpus))))
    return len(queue)
