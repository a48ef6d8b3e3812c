"""rerankeval's qrels and runs as ranx's ``Qrels`` and ``Run``, and back; ranx is imported only here (the ``ranx``
extra).

ranx orders a query's documents by score with an unstable sort (``numpy.argsort`` reversed), so tied scores come out in
no stated order, where rerankeval and trec_eval break ties by a rule. ``to_ranx_run`` therefore hands ranx scores that
keep the run's own order (``frames.untied_scores``): the run's scores (``frames.ordered_scores`` below a reranked head),
each tie moved below the document ranked above it by the smallest float64 step. ranx then measures the ranking
rerankeval measured (``tests/test_ranx.py``: equal values for every measure the two share). Coming back,
``from_ranx_run`` ranks by score with rerankeval's tie rule (``eval.ranks.assign_ranks``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..eval.ranks import assign_ranks
from .frames import untied_scores


def to_ranx_qrels(qrels: pd.DataFrame):
    """Qrels (``query_id``, ``doc_id``, ``relevance``) as a ``ranx.Qrels``."""
    from ranx import Qrels

    grouped = {}
    for query, doc, grade in zip(qrels["query_id"].astype(str), qrels["doc_id"].astype(str), qrels["relevance"]):
        grouped.setdefault(query, {})[doc] = int(grade)
    return Qrels.from_dict(grouped)


def to_ranx_run(run: pd.DataFrame, name: str | None = None):
    """A run (``query_id``, ``doc_id``, ``score``, optionally ``rank``) as a ``ranx.Run`` that ranx orders as the run
    is ordered (``untied_scores``)."""
    from ranx import Run

    grouped = {}
    scores = untied_scores(run)
    for query, doc, score in zip(run["query_id"].astype(str), run["doc_id"].astype(str), scores):
        grouped.setdefault(query, {})[doc] = float(score)
    return Run.from_dict(grouped, name=name)


def from_ranx_qrels(qrels) -> pd.DataFrame:
    """A ``ranx.Qrels`` as qrels: ``query_id``, ``doc_id``, ``relevance`` (int64)."""
    rows = [(query, doc, int(grade)) for query, docs in qrels.to_dict().items() for doc, grade in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"]).astype({"relevance": np.int64})


def from_ranx_run(run) -> pd.DataFrame:
    """A ``ranx.Run`` as a run: ``query_id``, ``doc_id``, ``score`` and ``rank`` by rerankeval's tie rule."""
    rows = [(query, doc, float(score)) for query, docs in run.to_dict().items() for doc, score in docs.items()]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    return assign_ranks(frame).sort_values(["query_id", "rank"], kind="stable").reset_index(drop=True)
