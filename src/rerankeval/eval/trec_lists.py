"""trec_eval's measures that are no measure family of rerankeval's, computed as trec_eval computes them: from each
query's list of grades in rank order (its ``results_rel_list``) and the count of judged documents per grade.

They are trec_eval's alone (interpolated precision, precision at multiples of R, inferred AP, utility, the
experimental G family, rank-biased precision, the relevance string), so they live here, beside the command that
prints them (``rerankeval trec_eval``), rather than among the measures the pipeline compares systems by. Each follows
trec_eval 10.0's code (usnistgov/trec_eval, ``m_<name>.c``); where 9.0.8 differs (interpolated precision's recall
cut-offs: 9.0.8 truncates ``p * R + 0.9``, 10.0 rounds ``p * R``) the version asked decides. The tests compare every
one that pytrec_eval (9.0.8's code) has with it, on random runs, and the rest with values worked out by hand.

In the list a document's grade is its qrels grade when judged, ``NONPOOL`` (-1) when the qrels do not name it and
``UNJUDGED`` (-2) when they give it a negative grade (in the pool but not judged: infAP's sample). Values are per
query; the caller averages (or sums, ``SUMMED``) them over the queries as trec_eval does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

NONPOOL, UNJUDGED = -1, -2
INFAP_EPSILON = 0.00001
"""trec_eval.h's smoothing of infAP's estimated precision among the judged documents above a relevant one."""


@dataclass(frozen=True)
class RankedGrades:
    """One query as trec_eval's measures read it: ``grades`` in rank order and ``levels[g]``, the judged documents
    of grade g in the query's qrels (retrieved or not)."""

    grades: np.ndarray
    levels: np.ndarray
    retrieved: bool = True  # False for a query the run lacks (-c): trec_eval leaves its values at 0

    def num_rel(self, level: int) -> int:
        return int(self.levels[max(level, 0):].sum())

    def relevant(self, level: int) -> np.ndarray:
        """Which ranks hold a judged document graded ``level`` or more (trec_eval's num_rel_ret counts these)."""
        return (self.grades >= level) & (self.grades >= 0)


def ranked_grades(run: pd.DataFrame, qrels: pd.DataFrame, queries: Sequence[str],
                  judged_only: bool) -> dict[str, RankedGrades]:
    """Each query's ``RankedGrades`` (``run`` with its ``rank`` column, already cut at ``-M``); ``judged_only`` (``-J``)
    drops what is not judged, as trec_eval does, before the list is ranked."""
    judged = qrels.assign(query_id=qrels["query_id"].astype(str), doc_id=qrels["doc_id"].astype(str))
    grade_of = {key: int(g) for key, g in zip(zip(judged["query_id"], judged["doc_id"]), judged["relevance"])}
    by_query = {q: rows for q, rows in judged[judged["relevance"] >= 0].groupby("query_id")["relevance"]}
    ranked = run.assign(query_id=run["query_id"].astype(str), doc_id=run["doc_id"].astype(str)).sort_values(
        ["query_id", "rank"], kind="stable")
    docs = {q: rows.tolist() for q, rows in ranked.groupby("query_id", sort=False)["doc_id"]}
    found = {}
    for query in queries:
        grades = np.array([_grade(grade_of.get((query, doc))) for doc in docs.get(query, [])], dtype=np.int64)
        if judged_only:
            grades = grades[grades >= 0]
        counted = by_query.get(query)
        levels = (np.bincount(counted.to_numpy(dtype=np.int64)) if counted is not None and len(counted)
                  else np.zeros(0, dtype=np.int64))
        found[query] = RankedGrades(grades, levels, query in docs)
    return found


def _grade(grade: int | None) -> int:
    return NONPOOL if grade is None else UNJUDGED if grade < 0 else grade


def _recall_cutoffs(fractions: Sequence[float], num_rel: int, version: str) -> list[int]:
    """Recall fractions as counts of relevant documents: 10.0 rounds (C's lround: halves away from zero), 9.0.8
    truncated ``p * R + 0.9``."""
    if version == "9.0.8":
        return [int(p * num_rel + 0.9) for p in fractions]
    return [_lround(p * num_rel) for p in fractions]


def _lround(x: float) -> int:
    whole = math.floor(abs(x))
    rounded = whole + (1 if abs(x) - whole >= 0.5 else 0)
    return rounded if x >= 0 else -rounded


def interpolated_precision(q: RankedGrades, level: int, fractions: Sequence[float], version: str) -> list[float]:
    """iprec_at_recall: at each recall fraction, the highest precision at that recall or beyond (0 past the recall
    the list reaches)."""
    relevant = q.relevant(level)
    num_ret, num_rel_ret = len(q.grades), int(relevant.sum())
    cuts = _recall_cutoffs(fractions, q.num_rel(level), version)
    places = np.flatnonzero(relevant) + 1  # 1-based ranks of the relevant documents
    precision = np.arange(1, len(places) + 1) / places
    best_from = np.maximum.accumulate(precision[::-1])[::-1] if len(places) else precision
    floor = num_rel_ret / num_ret if num_ret else math.nan  # the last rank's precision (C's 0/0 for no rank: -J)
    overall = max(floor, float(best_from[0])) if len(places) else floor
    return [0.0 if cut > num_rel_ret else overall if cut == 0 else max(floor, float(best_from[cut - 1]))
            for cut in cuts]


def eleven_point_average(q: RankedGrades, level: int, fractions: Sequence[float], version: str) -> float:
    """11pt_avg: interpolated precision averaged over the recall fractions (by default 0, 0.1, ..., 1)."""
    return sum(interpolated_precision(q, level, fractions, version)) / len(fractions)


def precision_at_multiples_of_r(q: RankedGrades, level: int, multiples: Sequence[float]) -> list[float]:
    """Rprec_mult: precision after ``m * R`` documents (truncating ``m * R + 0.9``; in both versions), a list that
    ends early counting its missing places as non-relevant."""
    relevant = np.concatenate([[0], np.cumsum(q.relevant(level))])
    num_rel, num_ret = q.num_rel(level), len(q.grades)
    values = []
    for multiple in multiples:
        cut = int(multiple * num_rel + 0.9)
        values.append(0.0 if cut == 0 else float(relevant[min(cut, num_ret)]) / cut)
    return values


def relative_precision(q: RankedGrades, level: int, cutoffs: Sequence[int]) -> list[float]:
    """relative_P: precision at k over the best precision possible at k, relevant found / min(k, R)."""
    relevant = np.concatenate([[0], np.cumsum(q.relevant(level))])
    num_rel = q.num_rel(level)
    return [_ratio(float(relevant[min(k, len(q.grades))]), min(k, num_rel)) for k in cutoffs]


def set_relative_precision(q: RankedGrades, level: int) -> float:
    """set_relative_P: relevant retrieved / min(retrieved, R)."""
    if not len(q.grades):
        return 0.0
    return _ratio(float(q.relevant(level).sum()), min(len(q.grades), q.num_rel(level)))


def _ratio(numerator: float, denominator: int) -> float:
    """0 for a query without a relevant document (as pytrec_eval, 9.0.8's code, gives it)."""
    return numerator / denominator if denominator else 0.0


def inferred_ap(q: RankedGrades, level: int) -> float:
    """infAP (Yilmaz and Aslam, CIKM 2006): AP estimated from a judged sample of the pool; documents outside the pool
    count as non-relevant, pooled unjudged ones (negative grade) as relevant in the proportion of the judged."""
    total, rel, nonrel, unjudged = 0.0, 0, 0, 0
    for j, grade in enumerate(q.grades.tolist()):
        if grade == NONPOOL:
            continue
        if grade == UNJUDGED:
            unjudged += 1
            continue
        if 0 <= grade < level:
            nonrel += 1
            continue
        rel += 1
        if j == 0:
            total += 1.0
        else:
            total += 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((rel - 1 + nonrel + unjudged) / j) * (
                (rel - 1 + INFAP_EPSILON) / (rel - 1 + nonrel + 2 * INFAP_EPSILON))
    num_rel = q.num_rel(level)
    return total / num_rel if num_rel else total


def utility(q: RankedGrades, level: int, weights: Sequence[float], num_docs: int) -> float:
    """utility: weights (a, b, c, d) times relevant retrieved, non-relevant retrieved, relevant missed and
    non-relevant not retrieved (this last needs ``-N``, the documents in the collection)."""
    if len(weights) != 4:
        raise ValueError(f"utility takes 4 weights (a,b,c,d), got {len(weights)}: {list(weights)}")
    ret, rel_ret, num_rel = len(q.grades), int(q.relevant(level).sum()), q.num_rel(level)
    a, b, c, d = weights
    return a * rel_ret + b * (ret - rel_ret) + c * (num_rel - rel_ret) + d * (num_docs + rel_ret - ret - num_rel)


def relevance_string(q: RankedGrades, length: int) -> str:
    """relstring: the first ``length`` grades, one character each ('>' above 9, '-' not in the pool, '.' pooled but
    unjudged)."""
    return "".join(">" if g > 9 else str(g) if g >= 0 else "-" if g == NONPOOL else "." if g == UNJUDGED else "<"
                   for g in q.grades[:max(int(length), 0)].tolist())


def nonrelevant_judged_retrieved(q: RankedGrades, level: int) -> int:
    """num_nonrel_judged_ret: judged documents retrieved below ``level``."""
    return int(((q.grades >= 0) & (q.grades < level)).sum())


def binary_g(q: RankedGrades, level: int) -> float:
    """binG: over the relevant documents, 1 / log2(2 + the non-relevant ranked above each), over R."""
    relevant = q.relevant(level)
    places = np.flatnonzero(relevant)
    if not len(places):
        return 0.0
    above = places - np.arange(len(places))  # non-relevant documents above each relevant one
    return float(np.sum(1.0 / np.log2(2.0 + above))) / q.num_rel(level)


def _gains(q: RankedGrades, pairs: Sequence[tuple[str, float]]) -> list[tuple[int, float, int]]:
    """trec_eval's setup_gains: (grade, gain, judged at that grade) for the grades named in ``pairs`` (``grade=gain``)
    and every grade up to the query's highest (gain = grade by default), by increasing gain."""
    gains = {int(name): [float(value), 0] for name, value in pairs if re.fullmatch(r"[+-]?\d+", name)}
    for grade, count in enumerate(q.levels.tolist()):
        gains.setdefault(grade, [float(grade), 0])[1] = count
    return sorted(((grade, gain, count) for grade, (gain, count) in gains.items()), key=lambda item: item[1])


def _ideal(gains: list[tuple[int, float, int]]):
    """The ideal list's gains, best first, as trec_eval walks it: every judged document at each gain level, highest
    level first, then 0 for ever."""
    for _, gain, count in reversed(gains):
        for _ in range(count):
            yield gain
    while True:
        yield 0.0


def _gain_of(gains: list[tuple[int, float, int]]) -> Callable[[int], float]:
    table = {grade: gain for grade, gain, _ in gains}
    return lambda grade: table.get(grade, 0.0)


def _ideal_sequence(gains: list[tuple[int, float, int]]) -> list[float]:
    """The ideal gains while positive (the ideal's walk stops at the first gain that is not)."""
    found = []
    for gain in _ideal(gains):
        if gain <= 0.0:
            return found
        found.append(gain)


def dcg(q: RankedGrades, pairs: Sequence[tuple[str, float]]) -> float:
    """dcg: the run's discounted cumulative gain over its whole list, gain / log2(rank + 1)."""
    gain_of = _gain_of(_gains(q, pairs))
    return float(sum(gain_of(g) / math.log2(i + 2) for i, g in enumerate(q.grades.tolist()) if gain_of(g) != 0))


def ideal_dcg(q: RankedGrades, pairs: Sequence[tuple[str, float]]) -> float:
    """ideal_dcg: the DCG of every judged document with a positive gain, best first (not cut at the run's length)."""
    return float(sum(gain / math.log2(i + 2) for i, gain in enumerate(_ideal_sequence(_gains(q, pairs)))))


def normalized_gain(q: RankedGrades, pairs: Sequence[tuple[str, float]]) -> float:
    """G (trec_eval's experimental normalized gain): each document's gain / log2(2 + the ideal's cumulative cost so
    far - the run's cumulative gain), summed, over the ideal's total gain."""
    gains = _gains(q, pairs)
    gain_of, ideal = _gain_of(gains), _ideal_sequence(gains)
    sum_results = sum_cost = total = 0.0
    for i, grade in enumerate(q.grades.tolist()):
        gain = gain_of(grade)
        sum_results += gain
        ideal_gain = ideal[i] if i < len(ideal) else 0.0
        sum_cost += ideal_gain if ideal_gain >= 1.0 else 1.0  # min_cost 1
        if gain != 0:
            total += gain / math.log2(2 + sum_cost - sum_results)
    ideal_total = sum(ideal)
    return total / ideal_total if ideal_total > 0.0 else 0.0


def r_ndcg(q: RankedGrades, level: int, pairs: Sequence[tuple[str, float]]) -> float:
    """Rndcg: nDCG averaged at the R levels, the ranks where the ideal list's gain changes (and at the run's end)."""
    if q.num_rel(level) == 0:
        return 0.0
    gains = _gains(q, pairs)
    gain_of, ideal = _gain_of(gains), _ideal_sequence(gains)
    grades = q.grades.tolist()
    results = best = 0.0
    at_changes = []  # nDCG where the ideal gain changes

    def ideal_at(i: int) -> float:
        return ideal[i] if i < len(ideal) else 0.0

    ideal_gain = previous = ideal_at(0)
    i = 0
    while i < len(grades) and ideal_gain > 0.0:
        ideal_gain = ideal_at(i)
        if previous != ideal_gain:
            at_changes += [results / best] if best > 0.0 else []
            previous = ideal_gain
        gain = gain_of(grades[i])
        results += gain / math.log2(i + 2) if gain != 0 else 0.0
        best += ideal_gain / math.log2(i + 2) if ideal_gain > 0.0 else 0.0
        i += 1
    if i < len(grades):
        results += sum(gain_of(g) / math.log2(k + 2) for k, g in enumerate(grades[i:], start=i) if gain_of(g) != 0)
        at_changes += [results / best] if best > 0.0 else []
    while ideal_gain > 0.0:
        ideal_gain = ideal_at(i)
        if previous != ideal_gain:
            at_changes += [results / best] if best > 0.0 else []
            previous = ideal_gain
        best += ideal_gain / math.log2(i + 2) if ideal_gain > 0.0 else 0.0
        i += 1
    return sum(at_changes) / len(at_changes) if at_changes else math.nan


def ndcg_at_relevant(q: RankedGrades, pairs: Sequence[tuple[str, float]]) -> float:
    """ndcg_rel: nDCG averaged over the documents with a positive gain, a missed one taking the nDCG of the whole
    list."""
    gains = _gains(q, pairs)
    gain_of, ideal = _gain_of(gains), _ideal_sequence(gains)
    results = best = total = 0.0
    found = 0
    for i, grade in enumerate(q.grades.tolist()):
        gain = gain_of(grade)
        if gain != 0:
            results += gain / math.log2(i + 2)
        if i < len(ideal):
            best += ideal[i] / math.log2(i + 2)
        if gain > 0:
            total += results / best if best else math.nan
            found += 1
    best = sum(gain / math.log2(k + 2) for k, gain in enumerate(ideal))
    if not ideal:
        return 0.0
    total += (len(ideal) - found) * results / best
    return total / len(ideal) if total > 0.0 else 0.0


def rank_biased_precision(q: RankedGrades, pairs: Sequence[tuple[str, float]]) -> float:
    """rbp (Moffat and Zobel, TOIS 2008): (1 - p) sum gain_i p^(i-1), p from ``p=`` (default 0.9); gains are the
    grades (or ``grade=gain``) scaled into [0, 1] by the query's lowest and highest when they leave it."""
    p = next((value for name, value in pairs if name == "p"), 0.9)
    gains = _gains(q, pairs)
    low, high = min((g for _, g, _ in gains), default=0.0), max((g for _, g, _ in gains), default=0.0)
    scale = (lambda g: (g - low) / (high - low)) if (low < 0 or high > 1) and high > low else (lambda g: g)
    table = {grade: scale(gain) for grade, gain, _ in gains}
    return (1.0 - p) * float(sum(table.get(g, 0.0) * p ** i for i, g in enumerate(q.grades.tolist())
                                 if table.get(g, 0.0) != 0))


def rbp_residual(q: RankedGrades) -> float:
    """rbp_resid, as trec_eval 10.0 computes it: with an unjudged document in the list, p^n + (1 - p) sum p^i over
    the unjudged ones (p = 0.9); 0 without one."""
    p, grades = 0.9, q.grades.tolist()
    unjudged = [i for i, g in enumerate(grades) if g < 0]
    return p ** len(grades) + (1 - p) * sum(p ** i for i in unjudged) if unjudged else 0.0


@dataclass(frozen=True)
class ListMeasure:
    """One measure of this module as named on trec_eval's command line (``name`` or ``name.params``)."""

    name: str
    params: tuple = ()
    printable: str | None = None  # the parameters as typed: trec_eval appends them to a single value's name

    def columns(self) -> list[str]:
        spec = LIST_MEASURES[self.name]
        if spec.shape == "cut_double":
            return [f"{self.name}_{value:3.2f}" for value in self.params]
        if spec.shape == "cut_long":
            return [f"{self.name}_{value}" for value in self.params]
        return [self.name if self.printable is None else f"{self.name}_{self.printable}"]

    def values(self, q: RankedGrades, level: int, version: str, num_docs: int) -> list:
        return LIST_MEASURES[self.name].compute(q, level, self.params, version, num_docs)


@dataclass(frozen=True)
class _Spec:
    shape: str  # cut_double, cut_long (one value per cut-off), single (one value from its params), pairs (name=value)
    defaults: tuple
    compute: Callable[..., list]
    summary: str = "mean"  # mean, sum (a count) or none (relstring: per query only)


_ELEVEN = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
LIST_MEASURES: dict[str, _Spec] = {
    "iprec_at_recall": _Spec("cut_double", _ELEVEN,
                             lambda q, lv, ps, v, n: interpolated_precision(q, lv, ps, v)),
    "relstring": _Spec("single", (10.0,), lambda q, lv, ps, v, n: [relevance_string(q, int(ps[0]))], "none"),
    "infAP": _Spec("single", (), lambda q, lv, ps, v, n: [inferred_ap(q, lv)]),
    "Rprec_mult": _Spec("cut_double", (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0),
                        lambda q, lv, ps, v, n: precision_at_multiples_of_r(q, lv, ps)),
    "utility": _Spec("single", (1.0, -1.0, 0.0, 0.0), lambda q, lv, ps, v, n: [utility(q, lv, ps, n)]),
    "11pt_avg": _Spec("single", _ELEVEN, lambda q, lv, ps, v, n: [eleven_point_average(q, lv, ps, v)]),
    "ideal_dcg": _Spec("pairs", (), lambda q, lv, ps, v, n: [ideal_dcg(q, ps)]),
    "dcg": _Spec("pairs", (), lambda q, lv, ps, v, n: [dcg(q, ps)]),
    "relative_P": _Spec("cut_long", (5, 10, 15, 20, 30, 100, 200, 500, 1000),
                        lambda q, lv, ps, v, n: relative_precision(q, lv, ps)),
    "ndcg_rel": _Spec("pairs", (), lambda q, lv, ps, v, n: [ndcg_at_relevant(q, ps)]),
    "Rndcg": _Spec("pairs", (), lambda q, lv, ps, v, n: [r_ndcg(q, lv, ps)]),
    "binG": _Spec("single", (), lambda q, lv, ps, v, n: [binary_g(q, lv)]),
    "G": _Spec("pairs", (), lambda q, lv, ps, v, n: [normalized_gain(q, ps)]),
    "set_relative_P": _Spec("single", (), lambda q, lv, ps, v, n: [set_relative_precision(q, lv)]),
    "num_nonrel_judged_ret": _Spec("single", (), lambda q, lv, ps, v, n: [nonrelevant_judged_retrieved(q, lv)],
                                   "sum"),
    "rbp": _Spec("pairs", (), lambda q, lv, ps, v, n: [rank_biased_precision(q, ps)]),
    "rbp_resid": _Spec("single", (), lambda q, lv, ps, v, n: [rbp_residual(q)]),
}
"""The measures of this module by trec_eval name, with trec_eval's default parameters."""


def parse_list_measure(text: str) -> ListMeasure | None:
    """A name as trec_eval's ``-m`` takes it (``iprec_at_recall``, ``iprec_at_recall.0.25,0.5``, ``utility.2,-1,0,0``,
    ``G.1=3.5,2=9``, ``rbp.p=0.95``) if it names a measure of this module, else None; bad parameters are refused."""
    name, _, given = text.partition(".")
    if name not in LIST_MEASURES:
        return None
    spec = LIST_MEASURES[name]
    if not given:
        return ListMeasure(name, spec.defaults)
    items = given.split(",")
    try:
        if spec.shape == "pairs":
            pairs = tuple((key, float(value)) for key, _, value in (item.partition("=") for item in items))
            if any(not key or not value for key, _, value in (item.partition("=") for item in items)):
                raise ValueError
            return ListMeasure(name, pairs, given)
        if spec.shape == "cut_long":
            cuts = tuple(sorted(int(item) for item in items))
            if cuts[0] <= 0 or len(set(cuts)) < len(cuts):
                raise ValueError
            return ListMeasure(name, cuts)
        values = tuple(float(item) for item in items)
    except ValueError:
        kind = {"pairs": "grade=gain pairs (or p=0.95 for rbp)", "cut_long": "distinct positive whole cut-offs"}.get(
            spec.shape, "numbers")
        raise ValueError(f"{text!r}: {name}'s parameters must be comma-separated {kind}") from None
    if spec.shape == "cut_double":
        values = tuple(sorted(values))
        if len(set(values)) < len(values):
            raise ValueError(f"{text!r}: {name}'s cut-offs must be distinct")
        return ListMeasure(name, values)
    return ListMeasure(name, values, given)


def list_values(lists: dict[str, RankedGrades], measures: Sequence[ListMeasure], level: int, version: str,
                num_docs: int) -> pd.DataFrame:
    """Per query (rows, in ``lists``' order) the value of every column of ``measures``; a query the run lacks
    (``-c``) scores 0, as trec_eval leaves it."""
    rows = {}
    for query, q in lists.items():
        row = {}
        for measure in measures:
            found = (measure.values(q, level, version, num_docs) if q.retrieved
                     else ["" if LIST_MEASURES[measure.name].summary == "none" else 0.0] * len(measure.columns()))
            row.update(zip(measure.columns(), found))
        rows[query] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def summary_of(measure: ListMeasure) -> str:
    """How trec_eval's summary line treats the measure's values: mean, sum or none."""
    return LIST_MEASURES[measure.name].summary
