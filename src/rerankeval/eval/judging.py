"""What to judge next: the unjudged (query, document) pairs in the compared systems' top k, ordered by how far
judging them could move the primary Δ (challenger-minus-baseline mean of the metric).

For each pair and each challenger, the metric engine re-scores the pair's query for both systems twice, with the
document judged 0 and judged the qrels' top grade, on the systems' own rankings; the Δ over the query set is
recomputed each time (a query the metric is undefined on, e.g. one without a relevant document under
``no_relevant: drop``, enters or leaves the mean as the judgment makes it defined). A pair's ``swing`` is the
change of that Δ between the two judgments (relevant minus non-relevant); the pair is credited to the challenger
whose Δ it moves most. Pairs come from the top k of the baseline and of every challenger (a pair in both
systems' tops is one pair, counted for every challenger). Every qrels line judges its pair, a negative grade too
(as ``Judged`` counts them).

A large swing matters only if the judgment can come out relevant: a query the collection marks unanswerable
(``answerable: false``, built so that no document answers it) swings most when a document enters it judged relevant,
and is the least likely to get one. The queue is ordered by the expected move, ``chance_relevant x |swing|``, where
``chance_relevant`` is the rule of succession over the query's class (``relevant_chance``): (queries of the class with
a relevant judgment + 1) / (queries of the class + 2). Pure: DataFrames in, DataFrames and text out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .engine import assign_ranks, evaluate
from .measures import Measure, as_measure

QUEUE_COLUMNS = ("priority", "query_id", "doc_id", "expected_move", "chance_relevant", "swing", "challenger",
                 "delta_if_nonrelevant", "delta_if_relevant", "top_grade", "in_top", "query", "title", "excerpt")
"""The TSV's columns: ``swing`` = ``delta_if_relevant - delta_if_nonrelevant`` for ``challenger``;
``expected_move`` = ``chance_relevant x |swing|``, what orders the queue; ``in_top`` lists ``system@rank`` for every
compared system that ranks the document in its top k."""
EXCERPT_CHARS = 400
_SPACE, _BREAKS = re.compile(r"\s+"), re.compile(r"[\t\r\n]")


def judging_queue(runs: Mapping[str, pd.DataFrame], qrels: pd.DataFrame, *, baseline: str,
                  challengers: Sequence[str], metric: Measure | str, k: int, queries: Sequence[str],
                  no_relevant: str = "drop", chance_relevant: Mapping[str, float] | None = None) -> pd.DataFrame:
    """The queue without the assessor's text (``with_assessor_text`` adds it): one row per unjudged pair in the
    top ``k`` of the baseline or a challenger among ``queries``, largest expected move first (ties: query id, doc
    id). ``chance_relevant``: per query, the chance a judgment finds its document relevant (``relevant_chance``;
    None: 1 for every query, the swing alone orders)."""
    if not challengers:
        raise ValueError(f"a judging queue needs at least one challenger beside the baseline {baseline!r}")
    if k < 1:
        raise ValueError(f"the judged depth k must be >= 1, got {k}")
    measure = as_measure(metric)
    systems = [baseline, *[name for name in challengers if name != baseline]]
    queries = sorted(set(map(str, queries)))
    top_grade = int(qrels["relevance"].max()) if len(qrels) else 0
    if top_grade < 1:
        raise ValueError("the qrels judge no document relevant (no grade >= 1), so there is no top grade to "
                         "judge a document with. Fix: pass qrels that hold the relevant judgments too")
    ranked = {system: _ranked(runs[system], queries) for system in systems}
    pairs = unjudged_pairs(ranked, qrels, k)
    columns = list(QUEUE_COLUMNS[:11])
    if pairs.empty:
        return pd.DataFrame({column: pd.Series(dtype=object) for column in columns})

    column = str(measure)
    now = {system: evaluate(frame, qrels, [measure], queries=queries, no_relevant=no_relevant)[column]
           .reindex(queries).to_numpy(dtype=np.float64) for system, frame in ranked.items()}
    judged = _judged_variants(pairs, qrels, top_grade)
    hypothetical = {system: _hypothetical(frame, pairs, judged, measure, no_relevant)
                    for system, frame in ranked.items()}
    where = pd.Index(queries).get_indexer(pairs["query_id"])
    swings, deltas = [], []
    for challenger in systems[1:]:
        current = now[challenger] - now[baseline]
        total, count = np.nansum(current), np.count_nonzero(~np.isnan(current))
        old = current[where]
        moved = []
        for variant in (0, 1):
            new = hypothetical[challenger][variant] - hypothetical[baseline][variant]
            size = count - ~np.isnan(old) + ~np.isnan(new)
            with np.errstate(invalid="ignore", divide="ignore"):
                moved.append(np.where(size > 0, (total - np.nan_to_num(old) + np.nan_to_num(new)) / size, np.nan))
        deltas.append(moved)
        swings.append(moved[1] - moved[0])
    swing = np.vstack(swings)
    best = np.argmax(np.where(np.isnan(swing), -np.inf, np.abs(swing)), axis=0)
    pick = np.arange(len(pairs))
    queue = pairs.assign(
        swing=swing[best, pick], challenger=np.asarray(systems[1:], dtype=object)[best],
        delta_if_nonrelevant=np.vstack([d[0] for d in deltas])[best, pick],
        delta_if_relevant=np.vstack([d[1] for d in deltas])[best, pick], top_grade=top_grade)
    chance = queue["query_id"].map(chance_relevant or {}).fillna(1.0) if chance_relevant else 1.0
    queue = queue.assign(chance_relevant=np.round(chance, 6),
                         expected_move=np.round(chance * np.abs(queue["swing"].fillna(0.0)), 6))
    queue = queue.assign(_size=-queue["expected_move"]).sort_values(
        ["_size", "query_id", "doc_id"], kind="stable").drop(columns="_size").reset_index(drop=True)
    queue.insert(0, "priority", np.arange(1, len(queue) + 1))
    return queue[columns]


def relevant_chance(classes: pd.Series, qrels: pd.DataFrame) -> dict[str, float]:
    """Per query (``classes``: its class, e.g. its ``answerable`` label, indexed by query id): the rule of succession
    over its class, (queries of the class with a relevant judgment + 1) / (queries of the class + 2)."""
    relevant = set(qrels.loc[qrels["relevance"] >= 1, "query_id"].astype(str))
    frame = pd.DataFrame({"cls": classes.astype(str).to_numpy(),
                          "hit": [str(query) in relevant for query in classes.index]}, index=classes.index.astype(str))
    rate = frame.groupby("cls")["hit"].agg(lambda hits: (hits.sum() + 1) / (len(hits) + 2))
    return {query: float(rate[cls]) for query, cls in frame["cls"].items()}


def unjudged_pairs(ranked: Mapping[str, pd.DataFrame], qrels: pd.DataFrame, k: int) -> pd.DataFrame:
    """(query_id, doc_id, in_top) of every pair in some system's top ``k`` (``ranked``: each system's run with a
    rank column) that the qrels do not judge, in query and doc id order."""
    tops = pd.concat([frame.loc[frame["rank"] <= k, ["query_id", "doc_id", "rank"]].assign(system=system)
                      for system, frame in ranked.items()], ignore_index=True)
    judged = pd.MultiIndex.from_arrays([qrels["query_id"].astype(str), qrels["doc_id"].astype(str)])
    tops = tops[~pd.MultiIndex.from_frame(tops[["query_id", "doc_id"]]).isin(judged)]
    tops = tops.assign(found=tops["system"] + "@" + tops["rank"].astype(str))
    pairs = tops.groupby(["query_id", "doc_id"], sort=True)["found"].agg(" ".join).rename("in_top")
    return pairs.reset_index()


def with_assessor_text(queue: pd.DataFrame, query_texts: Mapping[str, str], corpus: pd.DataFrame) -> pd.DataFrame:
    """The queue with what an assessor reads: the query's text, the document's title and the start of its text
    (whitespace runs as one space, cut at ``EXCERPT_CHARS``). ``corpus``: doc_id, title, text."""
    documents = corpus.set_index("doc_id")
    titles = queue["doc_id"].map(documents["title"]) if "title" in documents.columns else None
    return queue.assign(
        query=queue["query_id"].map(lambda query_id: one_line(query_texts.get(query_id, ""))),
        title="" if titles is None else titles.fillna("").map(one_line),
        excerpt=queue["doc_id"].map(documents["text"]).fillna("").map(lambda text: excerpt(text, EXCERPT_CHARS)),
    )[list(QUEUE_COLUMNS)]


def one_line(text: str) -> str:
    """Text as one TSV cell: tabs, line breaks and runs of spaces become one space."""
    return _SPACE.sub(" ", str(text)).strip()


def excerpt(text: str, chars: int) -> str:
    text = one_line(text)
    return text if len(text) <= chars else text[:chars].rstrip() + "…"


def queue_tsv(queue: pd.DataFrame) -> str:
    """The queue as TSV: a header of ``QUEUE_COLUMNS``, one pair a line, numbers with 6 decimals (Δs signed)."""
    lines = ["\t".join(QUEUE_COLUMNS)]
    for row in queue[list(QUEUE_COLUMNS)].itertuples(index=False):
        cells = [_cell(value, signed=column not in UNSIGNED) for column, value in zip(QUEUE_COLUMNS, row)]
        lines.append("\t".join(cells))
    return "\n".join(lines) + "\n"


def read_queue_tsv(text: str, where: str) -> pd.DataFrame:
    """A queue written by ``queue_tsv`` back as a DataFrame (numbers as floats); ``where`` names it in errors."""
    lines = text.rstrip("\n").split("\n")
    if tuple(lines[0].split("\t")) != QUEUE_COLUMNS:
        raise ValueError(f"{where}: not a judging queue (header {lines[0]!r}). Fix: rewrite it with the stage "
                         "that makes it (`dvc repro compare`) or `rerankeval judging-queue`")
    rows = [line.split("\t") for line in lines[1:]]
    frame = pd.DataFrame(rows, columns=list(QUEUE_COLUMNS), dtype=object)
    numbers = ["expected_move", "chance_relevant", "swing", "delta_if_nonrelevant", "delta_if_relevant"]
    frame[numbers] = frame[numbers].apply(pd.to_numeric, errors="coerce")
    return frame.astype({"priority": np.int64, "top_grade": np.int64})


UNSIGNED = ("expected_move", "chance_relevant")
"""Columns that are a size or a share, not a Δ: written without a sign."""


def _cell(value: object, signed: bool = True) -> str:
    if isinstance(value, (float, np.floating)):
        return "" if np.isnan(value) else f"{value:+.6f}" if signed else f"{value:.6f}"
    return _BREAKS.sub(" ", str(value))  # ids keep their spaces; the texts are one line already


def _ranked(run: pd.DataFrame, queries: Sequence[str]) -> pd.DataFrame:
    """query_id, doc_id, rank of the run's rows of ``queries`` (ranks by TIE_BREAK_RULE when it has none)."""
    run = run[run["query_id"].isin(queries)]
    return assign_ranks(run[[c for c in ("query_id", "doc_id", "rank", "score") if c in run.columns]])[
        ["query_id", "doc_id", "rank"]].reset_index(drop=True)


def _judged_variants(pairs: pd.DataFrame, qrels: pd.DataFrame, top_grade: int) -> pd.DataFrame:
    """The qrels of every pair's query twice, under synthetic query ids ``<pair>:0`` (the document judged 0) and
    ``<pair>:1`` (judged ``top_grade``), each with that judgment added."""
    groups = qrels.groupby("query_id").indices
    frames = []
    for variant, grade in ((0, 0), (1, top_grade)):
        rows, ids = _rows_per_pair(groups, pairs["query_id"], variant)
        frames.append(pd.DataFrame({"query_id": ids, "doc_id": qrels["doc_id"].to_numpy()[rows],
                                    "relevance": qrels["relevance"].to_numpy(dtype=np.int64)[rows]}))
        frames.append(pd.DataFrame({"query_id": _synthetic(len(pairs), variant), "doc_id": pairs["doc_id"],
                                    "relevance": np.int64(grade)}))
    return pd.concat(frames, ignore_index=True)


def _hypothetical(ranked: pd.DataFrame, pairs: pd.DataFrame, judged: pd.DataFrame, measure: Measure,
                  no_relevant: str) -> np.ndarray:
    """(2, pairs): the system's metric on each pair's query with the document judged 0 (row 0) and top (row 1)."""
    groups = ranked.groupby("query_id").indices
    frames = []
    for variant in (0, 1):
        rows, ids = _rows_per_pair(groups, pairs["query_id"], variant)
        frames.append(pd.DataFrame({"query_id": ids, "doc_id": ranked["doc_id"].to_numpy()[rows],
                                    "rank": ranked["rank"].to_numpy(dtype=np.int64)[rows]}))
    names = [*_synthetic(len(pairs), 0), *_synthetic(len(pairs), 1)]
    values = evaluate(pd.concat(frames, ignore_index=True), judged, [measure], queries=names,
                      no_relevant=no_relevant)[str(measure)]
    return values.reindex(names).to_numpy(dtype=np.float64).reshape(2, len(pairs))


def _rows_per_pair(groups: Mapping[str, np.ndarray], pair_queries: pd.Series, variant: int):
    """The rows of each pair's query, one copy per pair, and the synthetic query id of each copied row."""
    empty = np.empty(0, dtype=np.intp)
    found = [groups.get(query_id, empty) for query_id in pair_queries]
    rows = np.concatenate(found) if found else empty
    ids = np.repeat(_synthetic(len(found), variant), [len(part) for part in found])
    return rows, ids


def _synthetic(n: int, variant: int) -> np.ndarray:
    return np.array([f"{i}:{variant}" for i in range(n)], dtype=object)
