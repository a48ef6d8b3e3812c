"""The grade matrix: a run and its qrels turned into per-query relevance grades in rank order.

Input contract:

- A run is a DataFrame with string columns ``query_id`` and ``doc_id`` and either ``rank``
  (int, 1 = top, tie-free within a query; used when present) or ``score`` (float, higher is
  better). Pipeline runs also carry ``fused_rank`` (int): the document's rank in the original,
  frozen candidate list. Ranks derived from scores follow ``TIE_BREAK_RULE``, which is
  trec_eval's: scores compared as 32-bit floats (trec_eval stores them so), equal scores
  ordered by doc_id descending (byte order, as trec_eval's strcmp).
- Qrels is a DataFrame with string columns ``query_id``, ``doc_id`` and an int ``relevance``.
  A grade >= rel is relevant; grade 0 and below are not. A document absent from the qrels is
  unjudged and counts as non-relevant. A negative grade is trec_eval's "in the pool but
  unjudged": non-relevant everywhere, skipped by bpref and removed by judged_only (-J).
- Queries evaluated: ``queries`` if given, else every query of the qrels, as trec_eval does.
  A query without relevant document (no grade >= 1) is dropped or scores 0 on every measure,
  as ``no_relevant`` says; a query absent from the run scores 0, as trec_eval -c.

How it is built: the compiled kernels of ``_strings.c`` read every id once, in place (Arrow's
buffers or the Python str objects), and always in input order: query ids get codes; rows out of
query order are grouped by a counting sort that carries each doc id's hash along (``_group.c``); each query's
run and qrels documents then meet in a small hash table of their own, which finds each run
row's judgment and any repeated (query, doc) pair. Equal hashes are always confirmed on the
bytes. The score keys (``_ranking.c``) go straight into a (queries x longest list) matrix; one
row-wise numpy sort of keys that pack the score's order bits with the slot gives the ranking,
equal scores, where there are any, are put in doc_id order by the kernel, and the grades are
read out in that order. Where a step reads memory at random on shuffled rows, it is written as
a scatter (writes do not wait for memory) or prefetched; ``benchmarks/bench_metrics.py
--profile`` shows where the time goes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

try:
    from . import _strings
except ImportError as error:  # a source checkout that was never installed
    raise ImportError(
        "rerankeval's compiled kernels (rerankeval/eval/_strings.c) are not built: install the package "
        "(`pip install -e .`, or `make test`), which compiles them; it needs a C compiler and Python's headers"
    ) from error

TIE_BREAK_RULE = (
    "rank ascending when the run has a rank column; otherwise score descending, the scores compared "
    "as 32-bit floats, then doc_id descending (trec_eval's order)"
)

NO_RELEVANT = ("drop", "zero")

_U64 = np.dtype(np.uint64)
# Mask applied to every id's 64-bit hash; a test sets it to 0, so that every id collides.
_HASH_MASK = 2**64 - 1


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
    sources: Mapping[str, object] = field(default_factory=dict)
    """Per-query inputs other than the run (e.g. ``rag``: generated answers), for the input builders."""

    @property
    def pad(self) -> int:
        return int(np.iinfo(self.grades.dtype).min)

    @property
    def unjudged(self) -> int:
        return self.pad + 1


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
    if candidate_order and isinstance(run, pd.DataFrame) and "fused_rank" not in run.columns:
        raise ValueError("CandidateRecall and Coverage need the run's fused_rank column (the original candidate rank)")
    asked = _query_list(queries) if queries is not None else None
    rows = JudgedRun(run, qrels, asked)
    n_codes = len(rows.query_dictionary)

    has_relevant = np.zeros(n_codes, dtype=bool)
    has_relevant[rows.qrels_layout.codes[rows.relevance >= 1]] = True
    if asked is not None:
        selected = np.unique(rows.asked_codes)
    else:
        selected = np.flatnonzero(rows.qrels_layout.counts)
    if no_relevant == "drop":
        selected = selected[has_relevant[selected]]
    selected_ids = rows.query_dictionary.take(selected)
    if len(selected) > 1 and not pc.all(pc.less(selected_ids[:-1], selected_ids[1:])).as_py():
        by_id = pc.sort_indices(selected_ids).to_numpy()
        selected, selected_ids = selected[by_id], selected_ids.take(by_id)

    dtype = _grade_dtype(rows.relevance)
    pad = np.iinfo(dtype).min
    cells = rows.grades(missing=pad + 1, dtype=dtype, grouped=True)
    row_of = np.full(n_codes, -1, dtype=np.intp)  # each query's row in the matrix, if selected
    row_of[selected] = np.arange(len(selected))

    def ranked_grades(column: str) -> np.ndarray:
        """The selected queries' grades in ``column``'s ranked order."""
        layout = rows.layout
        ranked = np.empty((len(selected), layout.width), dtype=dtype)
        _strings.ranked_values(cells, rows.order(column), row_of, layout.starts, layout.counts, pad, ranked)
        return ranked

    grades = ranked_grades("rank" if "rank" in run.columns else "score")
    candidate_grades = ranked_grades("fused_rank") if candidate_order else None

    judged_rows = row_of[rows.qrels_layout.codes]
    judged = judged_rows >= 0
    judged_rows, judged_grades = _ideal_order(judged_rows[judged], rows.relevance[judged])
    return GradeMatrix(
        query_ids=pd.Index(pd.array(selected_ids, dtype="str"), name="query_id"),
        grades=grades,
        candidate_grades=candidate_grades,
        judged_rows=judged_rows,
        judged_grades=judged_grades,
        has_relevant=has_relevant[selected],
    )


class JudgedRun:
    """A validated run and its qrels, their rows grouped by query and each run row's judgment found.

    Query codes number the query ids of the run, the qrels and ``asked`` together; both
    layouts have one matrix row per code.
    """

    def __init__(self, run: pd.DataFrame, qrels: pd.DataFrame, asked: np.ndarray | None = None,
                 orderings: tuple[str, ...] = ("rank", "score")):
        _check_run(run, orderings)
        self.run = run
        self.relevance = _check_qrels(qrels)
        sources = [(run, "run", "query_id"), (qrels, "qrels", "query_id")]
        columns = [_column(frame[name]) for frame, _, name in sources] + ([(2, asked)] if asked is not None else [])
        codes = np.empty(len(run) + len(qrels) + (len(asked) if asked is not None else 0), dtype=np.int64)
        ids = _native(sources, _strings.factorize, tuple(columns), codes, _HASH_MASK)
        self.query_dictionary = pa.array(ids, type=pa.large_string())
        n_codes = len(ids)
        n_run, n_qrels = len(run), len(qrels)
        self.run_docs, self.qrels_docs = _column(run["doc_id"]), _column(qrels["doc_id"])
        # Both sides pack their rows below the same number of bits, so that their hashes compare.
        self.row_bits = max(n_run - 1, n_qrels - 1, 0).bit_length()
        self.layout = _Layout(codes[:n_run], n_codes, self.run_docs, (run, "run", "doc_id"), self.row_bits)
        self.qrels_layout = _Layout(codes[n_run:n_run + n_qrels], n_codes, self.qrels_docs,
                                    (qrels, "qrels", "doc_id"), self.row_bits)
        self.asked_codes = codes[n_run + n_qrels:]
        self.run_positions, self.qrels_rows = self._join(run, qrels)

    def grades(self, missing: int, dtype, grouped: bool = False) -> np.ndarray:
        """The grade of each run row, in input order or the layout's grouped order; ``missing``
        where the qrels do not judge it."""
        cells = np.full(len(self.run), missing, dtype=dtype)
        cells[self.run_positions if grouped else self.layout.grouped[self.run_positions]] = \
            self.relevance[self.qrels_rows]
        return cells

    def _join(self, run: pd.DataFrame, qrels: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(place in the run's grouped order, qrels row) of each judged run row; raises on a
        repeated (query, doc) pair."""
        run_positions, qrels_rows = np.empty(len(run), dtype=np.int64), np.empty(len(run), dtype=np.int64)
        sources = [(run, "run", "doc_id"), (qrels, "qrels", "doc_id")]
        pairs, qrels_duplicate, run_duplicate = _native(
            sources, _strings.join, self.run_docs, self.qrels_docs, self.layout.bounds, self.layout.packed,
            self.qrels_layout.bounds, self.qrels_layout.packed, self.row_bits, run_positions, qrels_rows, _HASH_MASK)
        if qrels_duplicate:
            _raise_duplicate(qrels, "qrels")
        if run_duplicate:
            _raise_duplicate(run, "run")
        return run_positions[:pairs], qrels_rows[:pairs]

    def order(self, column: str) -> np.ndarray:
        """Per query row, its run rows' slots from the top rank down (TIE_BREAK_RULE); padding last.

        ``column`` is "score" or a tie-free integer rank column ("rank", "fused_rank"). One
        sort per query row of keys that pack the value's order bits above the slot.
        """
        layout = self.layout
        slot_bits = max(layout.width - 1, 0).bit_length()
        slot_mask = np.uint64(2**slot_bits - 1)
        # Padding: all ones above the slot, so it sorts last (no value's key reaches that).
        shape = (len(layout.counts), layout.width)
        if column == "score":
            keys = np.empty(shape, dtype=_U64) if layout.full else np.full(shape, ~slot_mask, dtype=_U64)
            scores = np.ascontiguousarray(_checked_scores(self.run))
            _strings.score_keys(scores, None if layout.full and layout.in_order else layout.flat, slot_bits, keys)
        else:
            values = _rank_values(self.run, column)
            if len(values) and int(values.max()) >= 2 ** (63 - slot_bits):
                values = np.unique(values, return_inverse=True)[1]  # same order, small enough to pack
            keys = layout.matrix(values.astype(_U64), ~slot_mask >> np.uint64(slot_bits))
            keys <<= np.uint64(slot_bits)
        keys |= np.arange(layout.width, dtype=_U64)
        keys.sort(axis=1)
        any_tie = _strings.find_ties(keys, layout.width, slot_bits, None)
        if any_tie:
            same = np.empty((shape[0], layout.width - 1), dtype=np.uint8)  # same[q, j]: slots j and j + 1 tie
            _strings.find_ties(keys, layout.width, slot_bits, same)
        keys &= slot_mask
        order = keys.view(np.int64)
        if not any_tie:
            return order
        if column != "score":
            query, slot = np.argwhere(same)[0]
            _raise_repeated_rank(self.run, column, layout, values, int(query), order[query, slot])
        tied = np.flatnonzero(same.any(axis=1))
        # Equal scores: doc_id descending, by the kernel, in the tied queries only. Rows out of query
        # order get their ids' sort keys read in input order first, as _Layout reads their hashes.
        keys = None
        if not layout.in_order and layout.counts[tied].sum() > layout.n // 8:  # a few tied queries: read in place
            keys = np.empty((layout.n, 2), dtype=np.uint64)
            _native([(self.run, "run", "doc_id")], _strings.sort_keys, self.run_docs, keys, layout.positions)
        _strings.break_ties(order, same, tied, layout.width, layout.starts, layout.grouped, self.run_docs, keys)
        return order


class _Layout:
    """Rows grouped by query code: matrix row = code, slot = place among the code's rows in input order.

    ``packed``: for rows out of query order, each row in grouped order with the hash of its id
    (``ids``, a kernel column; ``source`` names it in messages) above ``row_bits``; None for
    rows in query order already (the join reads and hashes those itself).
    """

    def __init__(self, codes: np.ndarray, n_codes: int, ids: tuple, source: tuple, row_bits: int):
        self.codes = codes
        self.n = len(codes)
        self.counts = np.zeros(n_codes, dtype=np.int64)
        self.in_order = _strings.count_codes(codes, self.counts)
        self.width = max(int(self.counts.max()) if n_codes else 0, 1)  # one column at least, for the kernels
        self.starts = np.cumsum(self.counts) - self.counts
        self.bounds = np.append(self.starts, self.n)  # code q's rows: grouped[bounds[q]:bounds[q + 1]]
        self.row_bits = row_bits
        self.packed = None
        if self.in_order:
            self.positions = np.arange(self.n)
        else:
            # positions: each input row's place in grouped order.
            self.packed, self.positions = np.empty(self.n, dtype=_U64), np.empty(self.n, dtype=np.int64)
            _native([source], _strings.group, codes, self.starts.copy(), self.packed, self.positions, ids,
                    self.row_bits, _HASH_MASK)
        # Every query with as many rows (a run as rankers write it): the matrix is the rows in grouped order.
        self.full = bool(np.all(self.counts == self.width))

    @cached_property
    def grouped(self) -> np.ndarray:
        """The input rows grouped by code, in input order within a code."""
        if self.packed is None:
            return np.arange(self.n)
        return (self.packed & np.uint64(2**self.row_bits - 1)).view(np.int64)

    @cached_property
    def slots(self) -> np.ndarray:
        """Each input row's slot."""
        return self.positions - self.starts[self.codes]

    @cached_property
    def flat(self) -> np.ndarray:
        """Each input row's cell in the raveled matrix."""
        return self.positions if self.full else self.codes * self.width + self.slots

    def matrix(self, values: np.ndarray, fill) -> np.ndarray:
        """(codes x width) matrix of per-row values, each query's rows in input order, padded with fill.

        A reshape when the rows are grouped already and every query has as many; else a scatter
        (faster than the matching gather: a write does not wait for memory; bench_metrics.py's
        shuffled scenario exercises it).
        """
        shape = (len(self.counts), self.width)
        if self.full and self.in_order:
            return values.reshape(shape)
        out = np.empty(shape, dtype=values.dtype) if self.full else np.full(shape, fill, dtype=values.dtype)
        out.ravel()[self.flat] = values
        return out

    def input_rows(self, queries: np.ndarray, slots: np.ndarray) -> np.ndarray:
        return self.grouped[self.starts[queries] + slots]


def _column(values: pd.Series) -> tuple:
    """A string column as the kernels read it: (0 or 1, offsets, data) for Arrow, (2, objects).

    Arrow-backed columns are read in place (one chunk); object columns and pandas' python-backed
    strings as their array of str objects (turning those into Arrow would cost more than the kernels' read).
    """
    if values.dtype == object or getattr(values.dtype, "storage", None) == "python":
        return 2, np.ascontiguousarray(values.to_numpy(dtype=object))
    array = pa.array(values, from_pandas=True)
    if isinstance(array, pa.ChunkedArray):
        array = array.chunk(0) if array.num_chunks == 1 else array.combine_chunks()
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        array = array.cast(pa.large_string())
    kind, offset_type = (0, np.int32) if pa.types.is_string(array.type) else (1, np.int64)
    _, offsets, data = array.buffers()
    offsets = np.frombuffer(offsets, dtype=offset_type, count=len(array) + 1,
                            offset=array.offset * np.dtype(offset_type).itemsize)
    data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(1, dtype=np.uint8)
    return kind, offsets, data


def _native(sources: list[tuple[pd.DataFrame, str, str]], kernel, *args):
    """Call a kernel; a value that is not a str becomes a message naming its column and row.

    ``sources`` names the kernel's string columns in order: (frame, "run" or "qrels", column).
    """
    try:
        return kernel(*args)
    except ValueError as error:
        if error.args[:1] != ("not a str",):
            raise
        frame, what, column = sources[error.args[1]]
        row = error.args[2]
        value = frame[column].iloc[row]
        if pd.api.types.is_scalar(value) and pd.isna(value):
            raise ValueError(f"{what} column {column!r} has a missing value at row {row}") from None
        raise ValueError(
            f"{what} column {column!r} must hold strings, got {type(value).__name__} {value!r} at row {row}; "
            f"convert it with {what}[{column!r}].astype(str)"
        ) from None


# ---------------------------------------------------------------------------------------------
# Input checks


def _require_columns(frame: pd.DataFrame, what: str, columns: Iterable[str]) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{what} must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {', '.join(missing)}; it has: {', '.join(map(str, frame.columns))}")


def _check_strings(frame: pd.DataFrame, what: str, column: str) -> None:
    values = frame[column]
    if values.dtype == object:
        return  # every value is checked by the kernels as they read it (_native words the message)
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
        raise ValueError(f"run needs a {' or a '.join(orderings)} column; it has: {', '.join(map(str, run.columns))}")
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


def _query_list(queries: Iterable[str]) -> np.ndarray:
    queries = list(queries)
    not_str = [q for q in queries if not isinstance(q, str)]
    if not_str:
        raise ValueError(f"queries must be strings, got {not_str[0]!r}")
    return np.array(queries, dtype=object)


def _raise_duplicate(frame: pd.DataFrame, what: str) -> None:
    first = int(np.argmax(frame.duplicated(["query_id", "doc_id"]).to_numpy()))
    pair = (frame["query_id"].iloc[first], frame["doc_id"].iloc[first])
    raise ValueError(f"duplicate (query_id, doc_id) rows in {what}: {pair} repeats at row {first}")


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


def _raise_repeated_rank(run: pd.DataFrame, column: str, layout: _Layout, values, query: int, slot) -> None:
    value = values[layout.input_rows(np.array([query]), np.array([slot]))[0]]
    rows = np.flatnonzero((layout.codes == query) & (values == value))
    value = run[column].iloc[rows[0]]
    docs = run["doc_id"].iloc[rows[:2]].tolist()
    raise ValueError(
        f"duplicate {column} {value} in query {run['query_id'].iloc[rows[0]]!r} "
        f"(doc_ids {docs[0]!r} and {docs[1]!r}); {column} must be tie-free within a query"
    )


def _checked_scores(run: pd.DataFrame) -> np.ndarray:
    scores = run["score"]
    if not pd.api.types.is_numeric_dtype(scores) or pd.api.types.is_bool_dtype(scores):
        raise ValueError(f"run column 'score' must hold numbers, got dtype {scores.dtype}")
    scores = scores.to_numpy(dtype=np.float64, na_value=np.nan)
    # min and max are NaN when any score is.
    if len(scores) and not (np.isfinite(scores.min()) and np.isfinite(scores.max())):
        row = int(np.argmin(np.isfinite(scores)))
        raise ValueError(
            f"run has a non-finite score ({scores[row]}) at row {row} "
            f"(query_id {run['query_id'].iloc[row]!r}, doc_id {run['doc_id'].iloc[row]!r})"
        )
    return scores


def _grade_dtype(relevance: np.ndarray) -> np.dtype:
    """int8 when the grades fit beside the two sentinels (pad, unjudged), else int16."""
    low, high = (int(relevance.min()), int(relevance.max())) if len(relevance) else (0, 0)
    for dtype in (np.dtype(np.int8), np.dtype(np.int16)):
        if low >= np.iinfo(dtype).min + 2 and high <= np.iinfo(dtype).max:
            return dtype
    raise ValueError(f"relevance grades must lie within [-32766, 32767], got [{low}, {high}]")


def _ideal_order(rows: np.ndarray, grades: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Judgments (their row, their grade) sorted by row, then by grade descending.

    One sort of a combined integer key; judgments of one row with the same grade are
    interchangeable, so no stable sort is needed.
    """
    if not len(rows):
        return rows.astype(np.intp), grades
    high = int(grades.max())
    bits = (high - int(grades.min())).bit_length()
    key = np.subtract(high, grades)
    key |= rows.astype(np.int64, copy=False) << bits
    key.sort()
    grades = key & (2**bits - 1)
    np.subtract(high, grades, out=grades)
    key >>= bits
    return key.astype(np.intp, copy=False), grades
