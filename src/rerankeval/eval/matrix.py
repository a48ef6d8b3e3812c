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
buffers or the Python str objects): query ids get codes, and each query's run and qrels
documents meet in a small hash table of their own, which finds each run row's judgment and any
repeated (query, doc) pair; equal hashes are always confirmed on the bytes. Rows are grouped by
query into a (queries x longest list) matrix; one row-wise numpy sort of keys that pack the
score's order bits with the slot gives the ranking, and equal scores, where there are any, are
put in doc_id order by the kernel.
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
        selected = np.flatnonzero(np.bincount(rows.qrels_layout.codes, minlength=n_codes))
    if no_relevant == "drop":
        selected = selected[has_relevant[selected]]
    selected_ids = rows.query_dictionary.take(selected)
    if len(selected) > 1 and not pc.all(pc.less(selected_ids[:-1], selected_ids[1:])).as_py():
        by_id = pc.sort_indices(selected_ids).to_numpy()
        selected, selected_ids = selected[by_id], selected_ids.take(by_id)

    dtype = _grade_dtype(rows.relevance)
    pad = np.iinfo(dtype).min
    cells = rows.grades(missing=pad + 1, dtype=dtype)
    everything = len(selected) == n_codes and np.array_equal(selected, np.arange(n_codes))

    def ranked_grades(column: str) -> np.ndarray:
        ranked = np.take_along_axis(rows.layout.matrix(cells, pad), rows.order(column), axis=1)
        return ranked if everything else ranked[selected]

    grades = ranked_grades("rank" if "rank" in run.columns else "score")
    candidate_grades = ranked_grades("fused_rank") if candidate_order else None

    row_of = np.full(n_codes, -1, dtype=np.intp)
    row_of[selected] = np.arange(len(selected))
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
        self.layout = _Layout(codes[:n_run], n_codes)
        self.qrels_layout = _Layout(codes[n_run:n_run + n_qrels], n_codes)
        self.asked_codes = codes[n_run + n_qrels:]
        self.run_docs, self.qrels_docs = _column(run["doc_id"]), _column(qrels["doc_id"])
        self.run_rows, self.qrels_rows = self._join(run, qrels)

    def grades(self, missing: int, dtype) -> np.ndarray:
        """The grade of each run row; ``missing`` where the qrels do not judge it."""
        cells = np.full(len(self.run), missing, dtype=dtype)
        cells[self.run_rows] = self.relevance[self.qrels_rows]
        return cells

    def _join(self, run: pd.DataFrame, qrels: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(run row, qrels row) of each judged run row; raises on a repeated (query, doc) pair."""
        run_rows, qrels_rows = np.empty(len(run), dtype=np.int64), np.empty(len(run), dtype=np.int64)
        sources = [(run, "run", "doc_id"), (qrels, "qrels", "doc_id")]
        hashes = [_grouped_hashes(column, layout, [source]) for column, layout, source in
                  ((self.run_docs, self.layout, sources[0]), (self.qrels_docs, self.qrels_layout, sources[1]))]
        pairs, qrels_duplicate, run_duplicate = _native(
            sources, _strings.join, self.run_docs, self.qrels_docs, self.layout.bounds, self.layout.grouped,
            self.qrels_layout.bounds, self.qrels_layout.grouped, *hashes, run_rows, qrels_rows, _HASH_MASK)
        if qrels_duplicate:
            _raise_duplicate(qrels, "qrels")
        if run_duplicate:
            _raise_duplicate(run, "run")
        return run_rows[:pairs], qrels_rows[:pairs]

    def order(self, column: str) -> np.ndarray:
        """Per query row, its run rows' slots from the top rank down (TIE_BREAK_RULE); padding last.

        ``column`` is "score" or a tie-free integer rank column ("rank", "fused_rank"). One
        sort per query row of keys that pack the value's order bits above the slot.
        """
        layout = self.layout
        slot_bits = np.uint64(max(layout.width - 1, 0).bit_length())
        if column == "score":
            scores = _checked_scores(self.run)
            values = _descending_float32_keys(scores)
        else:
            values = _rank_values(self.run, column)
            if len(values) and int(values.max()) >= 2 ** (63 - int(slot_bits)):
                values = np.unique(values, return_inverse=True)[1]  # same order, small enough to pack
        slot_mask = np.uint64(2**int(slot_bits) - 1)
        # Padding: all ones above the slot, so it sorts last (no value's key reaches that).
        keys = layout.matrix(values.astype(_U64) << slot_bits, ~slot_mask)
        keys |= np.arange(layout.width, dtype=_U64)
        keys.sort(axis=1)
        same = ((keys[:, 1:] ^ keys[:, :-1]) <= slot_mask) & (keys[:, 1:] < ~slot_mask)
        keys &= slot_mask
        order = keys.view(np.int64)
        if not same.any():
            return order
        if column != "score":
            query, slot = np.argwhere(same)[0]
            _raise_repeated_rank(self.run, column, layout, values, int(query), order[query, slot])
        tied = np.flatnonzero(same.any(axis=1))
        # Equal scores: doc_id descending, by the kernel, in the tied queries only. Rows out of query
        # order get their ids' sort keys read in input order first, as _grouped_hashes does.
        keys = None
        if not layout.in_order and layout.counts[tied].sum() > layout.n // 8:  # a few tied queries: read in place
            keys = np.empty((layout.n, 2), dtype=np.uint64)
            _native([(self.run, "run", "doc_id")], _strings.row_keys, self.run_docs, keys, _HASH_MASK, True)
            # Gathered as one 16-byte item per row (complex128, bits copied as they are): numpy's
            # 1-D take, 0.05 s for 10M rows where the same gather of (n, 2) rows takes 0.6 s.
            keys = keys.view(np.complex128).ravel()[layout.grouped].view(np.uint64)
        _strings.break_ties(order, np.ascontiguousarray(same).view(np.uint8), tied, layout.width, layout.starts,
                            layout.grouped, self.run_docs, keys)
        return order


class _Layout:
    """Rows grouped by query code: matrix row = code, slot = place among the code's rows in input order."""

    def __init__(self, codes: np.ndarray, n_codes: int):
        self.codes = codes
        self.n = len(codes)
        self.counts = np.bincount(codes, minlength=n_codes)
        self.width = max(int(self.counts.max()) if len(codes) else 0, 1)  # one column at least, for the kernels
        self.starts = np.cumsum(self.counts) - self.counts
        self.bounds = np.append(self.starts, self.n)  # code q's rows: grouped[bounds[q]:bounds[q + 1]]
        self.in_order = bool(np.all(codes[1:] >= codes[:-1]))
        # grouped: the input rows grouped by code, in input order within a code.
        if self.in_order:
            self.grouped = np.arange(self.n)
        else:
            # A stable sort by code: one sort of code and row packed into one integer.
            row_bits = np.uint64(max(self.n - 1, 0).bit_length())
            packed = np.sort((codes.astype(_U64) << row_bits) | np.arange(self.n, dtype=_U64))
            self.grouped = (packed & np.uint64(2**int(row_bits) - 1)).astype(np.int64)
        # Every query with as many rows (a run as rankers write it): the matrix is the rows in grouped order.
        self.full = bool(np.all(self.counts == self.width))

    @cached_property
    def slots(self) -> np.ndarray:
        """Each input row's slot."""
        in_grouped_order = np.arange(self.n) - np.repeat(self.starts, self.counts)
        if self.in_order:
            return in_grouped_order
        slots = np.empty(self.n, dtype=np.int64)
        slots[self.grouped] = in_grouped_order
        return slots

    @cached_property
    def flat(self) -> np.ndarray:
        """Each input row's cell in the raveled matrix."""
        return self.codes * self.width + self.slots

    def matrix(self, values: np.ndarray, fill) -> np.ndarray:
        """(codes x width) matrix of per-row values, each query's rows in input order, padded with fill."""
        if self.full:
            # A gather (a reshape when the rows are in order already), where the scatter below
            # writes at random: 0.03 s instead of 0.10 s for 10M shuffled rows.
            grouped = values if self.in_order else values[self.grouped]
            return grouped.reshape(len(self.counts), self.width)
        out = np.full((len(self.counts), self.width), fill, dtype=values.dtype)
        out.ravel()[self.flat] = values
        return out

    def input_rows(self, queries: np.ndarray, slots: np.ndarray) -> np.ndarray:
        return self.grouped[self.starts[queries] + slots]


def _column(values: pd.Series) -> tuple:
    """A string column as the kernels read it: (0 or 1, offsets, data) for Arrow, (2, objects).

    Arrow-backed columns are read in place (one chunk); object columns and pandas' python-backed
    strings as their array of str objects (turning those into Arrow costs 0.24 s per 10M ids).
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


def _grouped_hashes(column: tuple, layout: _Layout, sources) -> np.ndarray | None:
    """Each row's hash in the layout's grouped order, for rows not in query order already (the
    kernel hashes those as it meets them): hashed in input order, then gathered, both sequential
    passes where hashing in grouped order would read the bytes at random."""
    if layout.in_order:
        return None
    hashes = np.empty(layout.n, dtype=np.uint64)
    _native(sources, _strings.row_keys, column, hashes, _HASH_MASK, False)
    return hashes[layout.grouped]


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


def _descending_float32_keys(scores: np.ndarray) -> np.ndarray:
    """uint32 keys, smallest for the highest score, equal for scores equal as float32 (0.0 == -0.0)."""
    as_float32 = scores.astype(np.float32)
    as_float32 += np.float32(0.0)  # -0.0 becomes 0.0
    bits = as_float32.view(np.uint32)
    # Order-preserving bits of a float flip every bit of negatives, the sign bit of the others;
    # inverting them all gives descending order.
    negative = bits >> np.uint32(31) == 1
    return np.where(negative, bits, ~bits ^ np.uint32(2**31))


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
