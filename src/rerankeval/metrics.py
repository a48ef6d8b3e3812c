"""Per-query metrics computed in one vectorised pass, with no Python loop per query.

``evaluate`` factorises query and document ids to integer codes, turns the run into a dense
(queries x list length) matrix of relevance grades in rank order, and computes every
requested measure with numpy on that matrix, which all measures of the call share. Ideal
gains for nDCG come from the qrels, sorted once per call.

Input contract:

- A run is a DataFrame with string columns ``query_id`` and ``doc_id`` and either ``rank``
  (int, 1 = top, tie-free within a query; used when present) or ``score`` (float, higher is
  better). Pipeline runs also carry ``fused_rank`` (int): the document's rank in the original,
  frozen candidate list. Ranks derived from scores follow ``TIE_BREAK_RULE``.
- Qrels is a DataFrame with string columns ``query_id``, ``doc_id`` and an int ``relevance``.
  Grade 0 and negative grades are judged non-relevant; a document absent from the qrels is
  unjudged and counts as non-relevant. (trec_eval agrees except in bpref and -J, where it
  treats negative grades as unjudged.)
- Queries evaluated: ``queries`` if given, else every query of the qrels, as trec_eval does.
  A query without relevant document (no grade >= 1) is dropped or scores 0 on every measure,
  as ``no_relevant`` says; a query absent from the run scores 0, as trec_eval -c.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rerankeval.measures import Measure, as_measure

TIE_BREAK_RULE = (
    "rank ascending when the run has a rank column; otherwise score descending, "
    "then fused_rank ascending (when the run has that column), then doc_id ascending"
)

NO_RELEVANT = ("drop", "zero")

# 2 ** 1024 overflows float64.
_MAX_EXP_GRADE = 1023


@dataclass(frozen=True)
class GradeMatrix:
    """A run turned into relevance grades, shared by every measure of one evaluation.

    ``grades[i, j]`` is the grade of the document at rank j + 1 for ``query_ids[i]``;
    ``unjudged`` marks a document without judgment, ``pad`` the slots past the end of a
    shorter list. ``candidate_grades`` holds the same documents in fused_rank order.
    ``judged_rows`` and ``judged_grades`` list every judgment of the evaluated queries (the
    row it belongs to and its grade), sorted by row and then by grade descending: the ideal
    ordering that nDCG's idcg=qrels normalises by.
    """

    query_ids: pd.Index
    grades: np.ndarray
    candidate_grades: np.ndarray | None
    judged_rows: np.ndarray
    judged_grades: np.ndarray
    has_relevant: np.ndarray

    @property
    def pad(self) -> int:
        return int(np.iinfo(self.grades.dtype).min)

    @property
    def unjudged(self) -> int:
        return self.pad + 1


def evaluate(
    run: pd.DataFrame,
    qrels: pd.DataFrame,
    measures: Iterable[Measure | str],
    *,
    queries: Iterable[str] | None = None,
    no_relevant: str = "drop",
) -> pd.DataFrame:
    """Per-query values: indexed by query_id (sorted), one float64 column per measure.

    Columns are named by the measures' canonical strings, e.g. ``nDCG@10``; measures may be
    given as Measure values or strings. ``queries`` and ``no_relevant`` choose the rows, as the
    module docstring describes. Bad input raises ValueError naming the problem and where it is.
    """
    measures = list(dict.fromkeys(as_measure(m) for m in measures))
    matrix = grade_matrix(
        run,
        qrels,
        queries=queries,
        no_relevant=no_relevant,
        candidate_order=any(m.needs_candidate_order for m in measures),
    )
    return evaluate_matrix(matrix, measures)


def evaluate_matrix(matrix: GradeMatrix, measures: Iterable[Measure | str]) -> pd.DataFrame:
    """``evaluate`` on a prebuilt GradeMatrix: the numpy kernels alone."""
    scorer = _Scorer(matrix)
    columns = {}
    for measure in dict.fromkeys(as_measure(m) for m in measures):
        values = scorer.values(measure)
        values[~matrix.has_relevant] = 0.0
        columns[str(measure)] = values
    return pd.DataFrame(columns, index=matrix.query_ids, dtype=np.float64)


def grade_matrix(
    run: pd.DataFrame,
    qrels: pd.DataFrame,
    *,
    queries: Iterable[str] | None = None,
    no_relevant: str = "drop",
    candidate_order: bool = False,
) -> GradeMatrix:
    """Validate a run and qrels and build the grade matrix ``evaluate`` computes on.

    ``candidate_order`` also builds the fused_rank-ordered grades that CandidateRecall and
    Coverage need; the run must then have a tie-free fused_rank column.
    """
    if no_relevant not in NO_RELEVANT:
        raise ValueError(f"no_relevant must be one of {', '.join(NO_RELEVANT)}, got {no_relevant!r}")
    _check_run(run)
    relevance = _check_qrels(qrels)
    query_ids = [run["query_id"], qrels["query_id"]]
    if queries is not None:
        query_ids.append(_query_list(queries))
    (run_q, qrels_q, *asked_q), query_dictionary = _encode(*query_ids)
    (run_d, qrels_d), doc_dictionary = _encode(run["doc_id"], qrels["doc_id"])
    _check_unique_pairs(qrels, "qrels", qrels_q, qrels_d, len(doc_dictionary))

    has_relevant = np.zeros(len(query_dictionary), dtype=bool)
    has_relevant[qrels_q[relevance >= 1]] = True
    selected = np.unique(asked_q[0] if asked_q else qrels_q)
    if no_relevant == "drop":
        selected = selected[has_relevant[selected]]
    selected = selected[pc.sort_indices(query_dictionary.take(selected)).to_numpy()]
    row_of = np.full(len(query_dictionary), -1, dtype=np.intp)
    row_of[selected] = np.arange(len(selected))

    dtype = _grade_dtype(relevance)
    pad = np.iinfo(dtype).min
    groups = _Groups(run_q)
    _check_unique_docs(run, groups, run_d)
    order = _rank_order(run, groups, run_d, doc_dictionary)
    cells = _lookup_grades(run_q, run_d, qrels_q, qrels_d, relevance, len(doc_dictionary), pad + 1, dtype)
    in_input_order = groups.matrix(cells, fill=pad)
    # The groups' rows are the run's queries; each goes to its output row, if it is evaluated.
    output_row = row_of[: groups.shape[0]]
    present = output_row >= 0

    def sorted_by(order: np.ndarray) -> np.ndarray:
        grades = np.full((len(selected), max(groups.shape[1], 1)), pad, dtype=dtype)
        grades[output_row[present], : groups.shape[1]] = np.take_along_axis(in_input_order, order, axis=1)[present]
        return grades

    candidate_grades = None
    if candidate_order:
        if "fused_rank" not in run.columns:
            raise ValueError(
                "CandidateRecall and Coverage need the run's fused_rank column (the original candidate rank)"
            )
        candidate_grades = sorted_by(_order_by_column(run, groups, _rank_values(run, "fused_rank"), "fused_rank"))

    judged = np.flatnonzero(row_of[qrels_q] >= 0)
    judged_rows = row_of[qrels_q[judged]]
    ideal_order = np.lexsort((-relevance[judged], judged_rows))
    return GradeMatrix(
        query_ids=pd.Index(query_dictionary.take(selected).to_pylist(), dtype="str", name="query_id"),
        grades=sorted_by(order),
        candidate_grades=candidate_grades,
        judged_rows=judged_rows[ideal_order],
        judged_grades=relevance[judged][ideal_order],
        has_relevant=has_relevant[selected],
    )


def assign_ranks(run: pd.DataFrame) -> pd.DataFrame:
    """The run with its ``rank`` column (1 = top), derived by TIE_BREAK_RULE when it has none."""
    _check_run(run)
    (query_codes,), _ = _encode(run["query_id"])
    (doc_codes,), doc_dictionary = _encode(run["doc_id"])
    groups = _Groups(query_codes)
    _check_unique_docs(run, groups, doc_codes)
    return run.assign(rank=groups.positions(_rank_order(run, groups, doc_codes, doc_dictionary)) + 1)


def oracle_run(candidates: pd.DataFrame, qrels: pd.DataFrame) -> pd.DataFrame:
    """The best reranking of each query's candidates, as a run with a ``rank`` column.

    Candidates are sorted by true grade descending (unjudged counts as 0, as trec_eval
    assumes), then by original rank ascending: fused_rank when present, else the candidates'
    own rank (TIE_BREAK_RULE). The oracle can only reorder candidates, so relevant documents
    outside them stay unreachable.
    """
    _check_run(candidates, ("fused_rank", "rank", "score"))
    relevance = _check_qrels(qrels)
    (run_q, qrels_q), _ = _encode(candidates["query_id"], qrels["query_id"])
    (run_d, qrels_d), doc_dictionary = _encode(candidates["doc_id"], qrels["doc_id"])
    _check_unique_pairs(qrels, "qrels", qrels_q, qrels_d, len(doc_dictionary))
    groups = _Groups(run_q)
    _check_unique_docs(candidates, groups, run_d)
    if "fused_rank" in candidates.columns:
        original = _rank_values(candidates, "fused_rank")
    else:
        original = groups.positions(_rank_order(candidates, groups, run_d, doc_dictionary))
    grade = _lookup_grades(run_q, run_d, qrels_q, qrels_d, relevance, len(doc_dictionary), 0, np.int64)
    order = np.lexsort((original, -grade, run_q))
    rank = np.empty(len(candidates), dtype=np.int64)
    rank[order] = np.arange(len(candidates)) - groups.starts[run_q[order]] + 1
    oracle = candidates.drop(columns=[c for c in ("rank", "score") if c in candidates.columns])
    return oracle.assign(rank=rank).iloc[order].reset_index(drop=True)


def oracle_values(
    candidates: pd.DataFrame,
    qrels: pd.DataFrame,
    measures: Iterable[Measure | str],
    *,
    queries: Iterable[str] | None = None,
    no_relevant: str = "drop",
) -> pd.DataFrame:
    """The best value each measure can reach by reordering the candidates, per query."""
    return evaluate(oracle_run(candidates, qrels), qrels, measures, queries=queries, no_relevant=no_relevant)


def headroom(
    run: pd.DataFrame,
    qrels: pd.DataFrame,
    measures: Iterable[Measure | str],
    *,
    queries: Iterable[str] | None = None,
    no_relevant: str = "drop",
) -> pd.DataFrame:
    """Oracle minus achieved value per query: what a better reranking of the same documents could gain."""
    achieved = evaluate(run, qrels, measures, queries=queries, no_relevant=no_relevant)
    return oracle_values(run, qrels, measures, queries=queries, no_relevant=no_relevant) - achieved


# ---------------------------------------------------------------------------------------------
# Input checks and encoding


def _require_columns(frame: pd.DataFrame, what: str, columns: Iterable[str]) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{what} must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {', '.join(missing)}; it has: {', '.join(map(str, frame.columns))}")


def _check_strings(frame: pd.DataFrame, what: str, column: str) -> None:
    values = frame[column]
    if not pd.api.types.is_string_dtype(values):
        raise ValueError(
            f"{what} column {column!r} must hold strings, got dtype {values.dtype}; "
            f"convert it with {what}[{column!r}].astype(str)"
        )
    missing = values.isna().to_numpy()
    if missing.any():
        raise ValueError(f"{what} column {column!r} has a missing value at row {int(np.argmax(missing))}")


def _check_run(run: pd.DataFrame, orderings: tuple[str, ...] = ("rank", "score")) -> None:
    _require_columns(run, "run", ("query_id", "doc_id"))
    if not any(column in run.columns for column in orderings):
        raise ValueError(
            f"run needs a {' or a '.join(orderings)} column; it has: {', '.join(map(str, run.columns))}"
        )
    _check_strings(run, "run", "query_id")
    _check_strings(run, "run", "doc_id")


def _check_qrels(qrels: pd.DataFrame) -> np.ndarray:
    """Validate qrels; return the relevance grades as int64."""
    _require_columns(qrels, "qrels", ("query_id", "doc_id", "relevance"))
    _check_strings(qrels, "qrels", "query_id")
    _check_strings(qrels, "qrels", "doc_id")
    relevance = qrels["relevance"]
    if not pd.api.types.is_integer_dtype(relevance) or relevance.isna().any():
        raise ValueError(
            f"qrels column 'relevance' must hold integers without missing values, got dtype {relevance.dtype}"
        )
    return relevance.to_numpy(dtype=np.int64)


def _query_list(queries: Iterable[str]) -> pd.Series:
    queries = pd.Series(list(queries), dtype=object)
    not_str = ~queries.map(lambda q: isinstance(q, str)).to_numpy(dtype=bool)
    if not_str.any():
        raise ValueError(f"queries must be strings, got {queries[not_str].iloc[0]!r}")
    return queries.astype("str")


def _encode(*columns: pd.Series) -> tuple[list[np.ndarray], pa.Array]:
    """Integer codes for string columns, shared across them, and the strings the codes stand for."""
    chunks = []
    for column in columns:
        array = pa.array(column, from_pandas=True)
        chunks.extend(array.chunks if isinstance(array, pa.ChunkedArray) else [array])
    strings = pa.chunked_array([c.cast(pa.large_string()) for c in chunks], type=pa.large_string())
    encoded = pc.dictionary_encode(strings).combine_chunks()
    codes = encoded.indices.to_numpy()
    return np.split(codes, np.cumsum([len(c) for c in columns])[:-1]), encoded.dictionary


def _check_unique_pairs(frame: pd.DataFrame, what: str, query_codes, doc_codes, n_docs: int) -> None:
    if not pd.Index(query_codes.astype(np.int64) * n_docs + doc_codes).is_unique:
        first = int(np.argmax(frame.duplicated(["query_id", "doc_id"]).to_numpy()))
        pair = (frame["query_id"].iloc[first], frame["doc_id"].iloc[first])
        raise ValueError(f"duplicate (query_id, doc_id) rows in {what}: {pair} repeats at row {first}")


def _grade_dtype(relevance: np.ndarray) -> np.dtype:
    """int8 when the grades fit beside the two sentinels (pad, unjudged), else int16."""
    low, high = (int(relevance.min()), int(relevance.max())) if len(relevance) else (0, 0)
    for dtype in (np.dtype(np.int8), np.dtype(np.int16)):
        if low >= np.iinfo(dtype).min + 2 and high <= np.iinfo(dtype).max:
            return dtype
    raise ValueError(f"relevance grades must lie within [-32766, 32767], got [{low}, {high}]")


def _lookup_grades(run_q, run_d, qrels_q, qrels_d, relevance, n_docs, missing: int, dtype) -> np.ndarray:
    """The grade of each run row as dtype; ``missing`` for rows without judgment."""
    grades = np.full(len(run_q), missing, dtype=dtype)
    judged_doc = np.zeros(n_docs, dtype=bool)
    judged_doc[qrels_d] = True
    # Most documents are judged for no query at all: look up only the others.
    look = np.flatnonzero(judged_doc[run_d])
    qrels_keys = qrels_q.astype(np.int64) * n_docs + qrels_d
    sorter = np.argsort(qrels_keys)
    keys = run_q[look].astype(np.int64) * n_docs + run_d[look]
    # Every looked-up document is judged somewhere, so the qrels are not empty here.
    at = np.minimum(np.searchsorted(qrels_keys, keys, sorter=sorter), len(sorter) - 1)
    found = qrels_keys[sorter[at]] == keys
    grades[look[found]] = relevance[sorter[at[found]]]
    return grades


class _Groups:
    """The rows of a run grouped by query: the slot of each row within its query, in input order."""

    def __init__(self, query_codes: np.ndarray):
        self.codes = query_codes
        n_queries = int(query_codes.max()) + 1 if len(query_codes) else 0
        counts = np.bincount(query_codes, minlength=n_queries)
        self.starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        self.shape = (n_queries, int(counts.max()) if n_queries else 0)
        if np.all(query_codes[1:] >= query_codes[:-1]):
            # Codes number queries by first appearance, so a run grouped by query needs no sort.
            self.slot = np.arange(len(query_codes)) - self.starts[query_codes]
        else:
            grouped = np.argsort(query_codes, kind="stable")
            self.slot = np.empty(len(query_codes), dtype=np.int64)
            self.slot[grouped] = np.arange(len(query_codes)) - self.starts[query_codes[grouped]]

    def matrix(self, values: np.ndarray, fill) -> np.ndarray:
        """(queries x longest list) matrix of per-row values, in input order, padded with fill."""
        matrix = np.full(self.shape, fill, dtype=values.dtype)
        matrix[self.codes, self.slot] = values
        return matrix

    def positions(self, order: np.ndarray) -> np.ndarray:
        """Each row's 0-based place in its query once its slots are sorted by order (a row-wise argsort)."""
        place = np.empty_like(order)
        np.put_along_axis(place, order, np.arange(self.shape[1]), axis=1)
        return place[self.codes, self.slot]


def _check_unique_docs(run: pd.DataFrame, groups: _Groups, doc_codes: np.ndarray) -> None:
    docs = np.sort(groups.matrix(doc_codes, fill=-1), axis=1)
    if np.any((docs[:, 1:] == docs[:, :-1]) & (docs[:, 1:] >= 0)):
        first = int(np.argmax(run.duplicated(["query_id", "doc_id"]).to_numpy()))
        pair = (run["query_id"].iloc[first], run["doc_id"].iloc[first])
        raise ValueError(f"duplicate (query_id, doc_id) rows in run: {pair} repeats at row {first}")


def _rank_values(run: pd.DataFrame, column: str) -> np.ndarray:
    values = run[column]
    if not pd.api.types.is_integer_dtype(values) or values.isna().any():
        raise ValueError(f"run column {column!r} must hold integers without missing values, got dtype {values.dtype}")
    values = values.to_numpy(dtype=np.int64)
    if len(values) and values.min() < 1:
        row = int(np.argmin(values))
        raise ValueError(
            f"run column {column!r} must be >= 1 (1 = top), got {values[row]} at row {row} "
            f"(query_id {run['query_id'].iloc[row]!r}, doc_id {run['doc_id'].iloc[row]!r})"
        )
    return values


def _rank_order(run: pd.DataFrame, groups: _Groups, doc_codes: np.ndarray, doc_dictionary: pa.Array) -> np.ndarray:
    """Per query, the slots of its rows from top to bottom rank (TIE_BREAK_RULE); pads sort last."""
    if "rank" in run.columns:
        return _order_by_column(run, groups, _rank_values(run, "rank"), "rank")
    scores = run["score"]
    if not pd.api.types.is_numeric_dtype(scores) or pd.api.types.is_bool_dtype(scores):
        raise ValueError(f"run column 'score' must hold numbers, got dtype {scores.dtype}")
    scores = scores.to_numpy(dtype=np.float64, na_value=np.nan)
    finite = np.isfinite(scores)
    if not finite.all():
        row = int(np.argmin(finite))
        raise ValueError(
            f"run has a non-finite score ({scores[row]}) at row {row} "
            f"(query_id {run['query_id'].iloc[row]!r}, doc_id {run['doc_id'].iloc[row]!r})"
        )
    descending = groups.matrix(-scores, fill=np.inf)
    order = np.argsort(descending, axis=1, kind="stable")
    in_order = np.take_along_axis(descending, order, axis=1)
    tied = np.flatnonzero(np.any((in_order[:, 1:] == in_order[:, :-1]) & np.isfinite(in_order[:, 1:]), axis=1))
    if len(tied):
        # Few queries have ties; only those pay for the full three-key sort.
        sub = descending[tied]
        doc_rank = _lexicographic_ranks(groups.matrix(doc_codes, fill=-1)[tied], doc_dictionary)
        keys = [doc_rank]
        if "fused_rank" in run.columns:
            fused = _rank_values(run, "fused_rank")
            keys.append(groups.matrix(fused, fill=np.iinfo(np.int64).max)[tied])
        order[tied] = np.lexsort((*keys, sub), axis=-1)
    return order


def _lexicographic_ranks(doc_codes: np.ndarray, doc_dictionary: pa.Array) -> np.ndarray:
    """Replace doc codes (pad: -1) by the rank of their doc_id in string order."""
    used = np.unique(doc_codes[doc_codes >= 0])
    rank_of_code = np.full(len(doc_dictionary) + 1, len(used), dtype=np.int64)  # last slot: pad
    rank_of_code[used[pc.sort_indices(doc_dictionary.take(used)).to_numpy()]] = np.arange(len(used))
    return rank_of_code[doc_codes]


def _order_by_column(run: pd.DataFrame, groups: _Groups, values: np.ndarray, column: str) -> np.ndarray:
    """Like _rank_order, from a tie-free integer rank column."""
    pad = np.iinfo(np.int64).max
    keys = groups.matrix(values, fill=pad)
    order = np.argsort(keys, axis=1)
    in_order = np.take_along_axis(keys, order, axis=1)
    repeated = (in_order[:, 1:] == in_order[:, :-1]) & (in_order[:, 1:] != pad)
    if repeated.any():
        query, slot = np.argwhere(repeated)[0]
        value = in_order[query, slot]
        rows = np.flatnonzero((groups.codes == query) & (values == value))
        docs = run["doc_id"].iloc[rows[:2]].tolist()
        raise ValueError(
            f"duplicate {column} {value} in query {run['query_id'].iloc[rows[0]]!r} "
            f"(doc_ids {docs[0]!r} and {docs[1]!r}); {column} must be tie-free within a query"
        )
    return order


# ---------------------------------------------------------------------------------------------
# Measures


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0 (no relevant document, empty list)."""
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.broadcast_to(np.asarray(denominator, dtype=np.float64), numerator.shape)
    return np.divide(numerator, denominator, out=np.zeros_like(numerator), where=denominator > 0)


def _top(matrix: np.ndarray, cutoff: int | None) -> np.ndarray:
    return matrix if cutoff is None else matrix[:, :cutoff]


def _gain(grades: np.ndarray, gain: str) -> np.ndarray:
    """Gain of each grade; non-positive grades (and the sentinels, which are negative) gain 0."""
    positive = np.maximum(grades, 0).astype(np.float64)
    return np.exp2(positive) - 1.0 if gain == "exp" else positive


def _discount(length: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, length + 2))


class _Scorer:
    """Computes measures on one GradeMatrix, caching what several measures share."""

    def __init__(self, matrix: GradeMatrix):
        self.matrix = matrix
        self.n = len(matrix.query_ids)
        self._cache: dict[tuple, np.ndarray] = {}

    def _cached(self, key: tuple, compute) -> np.ndarray:
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def lists(self, judged_only: bool) -> np.ndarray:
        """The grade matrix, or its condensed form: unjudged documents removed, later ones moved up."""
        if not judged_only:
            return self.matrix.grades
        return self._cached(("condensed",), self._condensed)

    def _condensed(self) -> np.ndarray:
        grades = self.matrix.grades
        keep = grades > self.matrix.unjudged
        rows, cols = np.nonzero(keep)
        condensed = np.full_like(grades, self.matrix.pad)
        condensed[rows, (np.cumsum(keep, axis=1) - 1)[rows, cols]] = grades[rows, cols]
        return condensed

    def lengths(self, judged_only: bool) -> np.ndarray:
        return self._cached(
            ("lengths", judged_only), lambda: np.count_nonzero(self.lists(judged_only) != self.matrix.pad, axis=1)
        )

    def relevant(self, rel: int, judged_only: bool) -> np.ndarray:
        # rel >= 1 while both sentinels are negative, so padding and unjudged never count.
        return self._cached(("relevant", rel, judged_only), lambda: self.lists(judged_only) >= rel)

    def n_relevant(self, rel: int) -> np.ndarray:
        m = self.matrix
        return self._cached(
            ("n_relevant", rel), lambda: np.bincount(m.judged_rows[m.judged_grades >= rel], minlength=self.n)
        )

    def ideal_ranks(self) -> np.ndarray:
        """0-based position of each judgment in its query's ideal ordering."""

        def compute():
            rows = self.matrix.judged_rows
            starts = np.searchsorted(rows, np.arange(self.n))
            return np.arange(len(rows)) - starts[rows]

        return self._cached(("ideal_ranks",), compute)

    def gains(self, grades: np.ndarray, gain: str) -> np.ndarray:
        """Gains of a grade matrix through a lookup table indexed by the grades' bit pattern."""
        unsigned = np.dtype(f"u{grades.dtype.itemsize}")

        def table():
            if gain == "exp" and len(self.matrix.judged_grades) and self.matrix.judged_grades.max() > _MAX_EXP_GRADE:
                raise ValueError(f"gain=exp overflows for grades above {_MAX_EXP_GRADE}")
            every_pattern = np.arange(2 ** (8 * grades.dtype.itemsize)).astype(unsigned).view(grades.dtype)
            with np.errstate(over="ignore"):  # int16 patterns beyond the grades in use overflow exp2
                return _gain(every_pattern, gain)

        return self._cached(("gain_table", gain, grades.dtype.str), table)[grades.view(unsigned)]

    def dcg(self, grades: np.ndarray, cutoff: int | None, gain: str) -> np.ndarray:
        top = _top(grades, cutoff)
        return self.gains(top, gain) @ _discount(top.shape[1])

    def ideal_dcg(self, cutoff: int | None, gain: str, idcg: str) -> np.ndarray:
        if idcg == "candidates":
            ideal = self._cached(("sorted",), lambda: np.sort(self.matrix.grades, axis=1)[:, ::-1])
            return self.dcg(ideal, cutoff, gain)
        ranks = self.ideal_ranks()
        within = ranks < cutoff if cutoff is not None else np.ones(len(ranks), dtype=bool)
        weights = _gain(self.matrix.judged_grades[within], gain) / np.log2(ranks[within] + 2)
        return np.bincount(self.matrix.judged_rows[within], weights=weights, minlength=self.n)

    def values(self, m: Measure) -> np.ndarray:
        return getattr(self, f"_{m.name}")(m)

    def _Success(self, m: Measure) -> np.ndarray:
        return _top(self.relevant(m.rel, m.judged_only), m.cutoff).any(axis=1).astype(np.float64)

    def _P(self, m: Measure) -> np.ndarray:
        found = np.count_nonzero(_top(self.relevant(m.rel, m.judged_only), m.cutoff), axis=1)
        # trec_eval divides by k even when the list is shorter; without cutoff P is set precision.
        return _ratio(found, m.cutoff if m.cutoff is not None else self.lengths(m.judged_only))

    def _R(self, m: Measure) -> np.ndarray:
        found = np.count_nonzero(_top(self.relevant(m.rel, m.judged_only), m.cutoff), axis=1)
        return _ratio(found, self.n_relevant(m.rel))

    def _Rprec(self, m: Measure) -> np.ndarray:
        relevant = self.relevant(m.rel, m.judged_only)
        n_relevant = self.n_relevant(m.rel)
        within_r = np.arange(relevant.shape[1]) < n_relevant[:, None]
        return _ratio(np.count_nonzero(relevant & within_r, axis=1), n_relevant)

    def _RR(self, m: Measure) -> np.ndarray:
        top = _top(self.relevant(m.rel, m.judged_only), m.cutoff)
        first = top.argmax(axis=1)
        found = top[np.arange(self.n), first]
        return np.where(found, 1.0 / (first + 1), 0.0)

    def _AP(self, m: Measure) -> np.ndarray:
        top = _top(self.relevant(m.rel, m.judged_only), m.cutoff)
        found_so_far = np.cumsum(top, axis=1, dtype=np.int32)
        precision_sum = (found_so_far * top) @ (1.0 / np.arange(1, top.shape[1] + 1))
        # Normalised by all relevant documents, not min(k, R), as trec_eval's map_cut.
        return _ratio(precision_sum, self.n_relevant(m.rel))

    def _DCG(self, m: Measure) -> np.ndarray:
        return self.dcg(self.lists(m.judged_only), m.cutoff, m.gain)

    def _nDCG(self, m: Measure) -> np.ndarray:
        return _ratio(self._DCG(m), self.ideal_dcg(m.cutoff, m.gain, m.idcg))

    def _Bpref(self, m: Measure) -> np.ndarray:
        grades = self.matrix.grades
        relevant = self.relevant(m.rel, False)
        judged_nonrelevant = (grades > self.matrix.unjudged) & ~relevant
        nonrelevant_above = np.cumsum(judged_nonrelevant, axis=1, dtype=np.int32) - judged_nonrelevant
        n_relevant = self.n_relevant(m.rel)
        n_nonrelevant = np.bincount(
            self.matrix.judged_rows[self.matrix.judged_grades < m.rel], minlength=self.n
        )
        # trec_eval: each relevant document scores 1 - min(nonrel above, R) / min(N, R).
        penalty = _ratio(
            np.minimum(nonrelevant_above, n_relevant[:, None]),
            np.minimum(n_nonrelevant, n_relevant)[:, None],
        )
        return _ratio(np.sum(np.where(relevant, 1.0 - penalty, 0.0), axis=1), n_relevant)

    def _Judged(self, m: Measure) -> np.ndarray:
        judged = np.count_nonzero(_top(self.matrix.grades, m.cutoff) > self.matrix.unjudged, axis=1)
        shown = self.lengths(False)
        return _ratio(judged, shown if m.cutoff is None else np.minimum(shown, m.cutoff))

    def _candidates(self) -> np.ndarray:
        if self.matrix.candidate_grades is None:
            raise ValueError("this GradeMatrix was built without candidate_order; CandidateRecall and Coverage need it")
        return self.matrix.candidate_grades

    def _CandidateRecall(self, m: Measure) -> np.ndarray:
        return (_top(self._candidates(), m.cutoff) >= m.rel).any(axis=1).astype(np.float64)

    def _Coverage(self, m: Measure) -> np.ndarray:
        found = np.count_nonzero(_top(self._candidates(), m.cutoff) >= m.rel, axis=1)
        return _ratio(found, self.n_relevant(m.rel))
