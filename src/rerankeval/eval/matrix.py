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

How it is built: ids go to Arrow; query ids are dictionary-encoded (pyarrow), doc ids hashed
(polars). Rows are grouped by query into a (queries x longest list) matrix, and one row-wise
numpy sort per step does the rest: sorting each query's run and qrels doc hashes together
finds both the duplicates and each run row's judgment; sorting keys that pack the score's
order bits with the slot gives the ranking. Equal hashes are checked against the strings;
on a collision the join is redone on exact dictionary codes, so hashing never changes a result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

TIE_BREAK_RULE = (
    "rank ascending when the run has a rank column; otherwise score descending, the scores compared "
    "as 32-bit floats, then doc_id descending (trec_eval's order)"
)

NO_RELEVANT = ("drop", "zero")

_U64 = np.dtype(np.uint64)
_ALL_ONES = np.uint64(2**64 - 1)


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

    def __init__(self, run: pd.DataFrame, qrels: pd.DataFrame, asked: pa.Array | None = None,
                 orderings: tuple[str, ...] = ("rank", "score")):
        _check_run(run, orderings)
        self.run = run
        self.relevance = _check_qrels(qrels)
        pieces = [*_strings(run["query_id"]).chunks, *_strings(qrels["query_id"]).chunks]
        codes, self.query_dictionary = _encode_queries(pieces + ([asked] if asked is not None else []))
        n_codes = len(self.query_dictionary)
        n_run, n_qrels = len(run), len(qrels)
        self.layout = _Layout(codes[:n_run], n_codes)
        self.qrels_layout = _Layout(codes[n_run:n_run + n_qrels], n_codes)
        self.asked_codes = codes[n_run + n_qrels:]
        self.run_docs, self.qrels_docs = _strings(run["doc_id"]), _strings(qrels["doc_id"])
        self.run_rows, self.qrels_rows = self._join(run, qrels)

    def grades(self, missing: int, dtype) -> np.ndarray:
        """The grade of each run row; ``missing`` where the qrels do not judge it."""
        cells = np.full(len(self.run), missing, dtype=dtype)
        cells[self.run_rows] = self.relevance[self.qrels_rows]
        return cells

    def _join(self, run: pd.DataFrame, qrels: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(run row, qrels row) of each judged run row; raises on a repeated (query, doc) pair."""
        low_bits = np.uint64(max(self.layout.width, self.qrels_layout.width).bit_length() + 1)
        keep = ~np.uint64(2**int(low_bits) - 1)
        pairs = _equal_keys(_doc_hashes(self.run_docs) & keep, _doc_hashes(self.qrels_docs) & keep,
                            self.layout, self.qrels_layout)
        if not all(_same_strings(*self._sides(kind), *pairs[kind]) for kind in pairs):
            # A hash collision: the same sorts on exact dictionary codes.
            both = pa.chunked_array([*self.run_docs.chunks, *self.qrels_docs.chunks], type=pa.large_string())
            encoded = pc.dictionary_encode(both).combine_chunks()
            exact = encoded.indices.to_numpy().astype(_U64) << low_bits
            pairs = _equal_keys(exact[:len(run)], exact[len(run):], self.layout, self.qrels_layout)
        if len(pairs["qrels"][0]):
            _raise_duplicate(qrels, "qrels")
        if len(pairs["run"][0]):
            _raise_duplicate(run, "run")
        return pairs["mixed"]

    def _sides(self, kind: str) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
        return {"run": (self.run_docs, self.run_docs), "mixed": (self.run_docs, self.qrels_docs),
                "qrels": (self.qrels_docs, self.qrels_docs)}[kind]

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
        order[tied] = self._tie_broken(tied, scores)
        return order

    def _tie_broken(self, queries: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """The order of the given query rows by TIE_BREAK_RULE, from one Arrow sort of their rows.

        A few queries with equal scores pay for the string comparisons; the others never do.
        """
        layout = self.layout
        cells = layout.cells(queries)
        rows = cells[cells >= 0]
        table = pa.table({"query": layout.codes[rows], "score": scores[rows].astype(np.float32) + np.float32(0.0),
                          "doc": _take(self.run_docs, rows)})
        ranked = pc.sort_indices(table, sort_keys=[("query", "ascending"), ("score", "descending"),
                                                   ("doc", "descending")]).to_numpy()
        by_rank = rows[ranked]
        # Queries come out in code order, each with its rows from the top down.
        order = np.full(cells.shape, np.iinfo(np.int64).max, dtype=np.int64)
        row_in_block = np.searchsorted(queries, layout.codes[by_rank])
        place = np.arange(len(by_rank)) - np.repeat(np.cumsum(layout.counts[queries]) - layout.counts[queries],
                                                    layout.counts[queries])
        order[row_in_block, place] = layout.slots[by_rank]
        # Padding slots go last, in slot order, as in the packed sort.
        pad_at = order == np.iinfo(np.int64).max
        order[pad_at] = np.nonzero(cells < 0)[1]
        return order


class _Layout:
    """Rows grouped by query code: matrix row = code, slot = place among the code's rows in input order."""

    def __init__(self, codes: np.ndarray, n_codes: int):
        self.codes = codes
        self.n = len(codes)
        self.counts = np.bincount(codes, minlength=n_codes)
        self.width = max(int(self.counts.max()) if len(codes) else 0, 1)  # one column at least, for the kernels
        starts = np.cumsum(self.counts) - self.counts
        in_code_order = bool(np.all(codes[1:] >= codes[:-1]))
        slots = np.arange(self.n) - np.repeat(starts, self.counts)
        # grouped: the input rows grouped by code, in input order within a code.
        if in_code_order:
            self.grouped, self.slots = np.arange(self.n), slots
        else:
            # A stable sort by code: one sort of code and row packed into one integer.
            row_bits = np.uint64(max(self.n - 1, 0).bit_length())
            packed = np.sort((codes.astype(_U64) << row_bits) | np.arange(self.n, dtype=_U64))
            self.grouped = (packed & np.uint64(2**int(row_bits) - 1)).astype(np.int64)
            self.slots = np.empty(self.n, dtype=np.int64)
            self.slots[self.grouped] = slots
        self.starts = starts
        self.flat = codes * self.width + self.slots
        # Every query with as many rows, grouped in code order (a run as rankers write it): a reshape.
        self.identity = in_code_order and bool(np.all(self.counts == self.width))

    def matrix(self, values: np.ndarray, fill) -> np.ndarray:
        """(codes x width) matrix of per-row values, each query's rows in input order, padded with fill."""
        if self.identity:
            return values.reshape(len(self.counts), self.width)
        out = np.full((len(self.counts), self.width), fill, dtype=values.dtype)
        out.ravel()[self.flat] = values
        return out

    def cells(self, queries: np.ndarray) -> np.ndarray:
        """(len(queries) x width) input row of each cell of the given matrix rows; -1 for padding."""
        slots = np.arange(self.width)
        valid = slots < self.counts[queries][:, None]
        at = np.where(valid, self.starts[queries][:, None] + slots, 0)
        return np.where(valid, self.grouped[at], -1)

    def input_rows(self, queries: np.ndarray, slots: np.ndarray) -> np.ndarray:
        return self.grouped[self.starts[queries] + slots]


def _equal_keys(run_keys: np.ndarray, qrels_keys: np.ndarray, layout: _Layout,
                qrels_layout: _Layout) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Pairs of rows of one query with equal keys: run/run, run/qrels ("mixed") and qrels/qrels.

    Keys have their lowest bits free. Each query's run and qrels keys go into one row of a
    matrix, tagged with their origin and slot in those bits; sorting the rows puts equal keys
    side by side. A numpy row sort: 0.05 s for 10M run rows where polars' join of the same
    integer keys takes 0.5 s and pandas' merge 2.8 s (benchmarks/bench_metrics.py sizes).
    """
    n_codes, run_width, qrels_width = len(layout.counts), layout.width, qrels_layout.width
    width = run_width + qrels_width
    if n_codes * width > 4 * (layout.n + qrels_layout.n) + 4096:
        return _equal_keys_flat(run_keys, qrels_keys, layout, qrels_layout)
    slot_bits = max(run_width, qrels_width).bit_length()
    origin = np.uint64(1 << slot_bits)
    cells = np.full((n_codes, width), _ALL_ONES, dtype=_U64)
    flat = cells.ravel()
    flat[layout.codes * width + layout.slots] = run_keys | layout.slots.astype(_U64)
    flat[qrels_layout.codes * width + run_width + qrels_layout.slots] = (
        qrels_keys | origin | qrels_layout.slots.astype(_U64))
    cells.sort(axis=1)
    same = ((cells[:, 1:] ^ cells[:, :-1]) < (origin << np.uint64(1))) & (cells[:, 1:] != _ALL_ONES)
    at = np.flatnonzero(same)
    left = at + at // max(width - 1, 1)
    rows, left_cell, right_cell = left // width, flat[left], flat[left + 1]
    left_qrels, right_qrels = (left_cell & origin) > 0, (right_cell & origin) > 0
    slot_mask = origin - np.uint64(1)
    left_slot, right_slot = (left_cell & slot_mask).astype(np.int64), (right_cell & slot_mask).astype(np.int64)
    pairs = {}
    # Equal keys of one query sort the run's rows first, so a mixed pair is (run, qrels).
    for kind, which, left_layout, right_layout in (("run", ~right_qrels, layout, layout),
                                                   ("mixed", ~left_qrels & right_qrels, layout, qrels_layout),
                                                   ("qrels", left_qrels, qrels_layout, qrels_layout)):
        pairs[kind] = (left_layout.input_rows(rows[which], left_slot[which]),
                       right_layout.input_rows(rows[which], right_slot[which]))
    return pairs


def _equal_keys_flat(run_keys, qrels_keys, layout: _Layout, qrels_layout: _Layout):
    """_equal_keys by one stable sort of all rows, for queries of very uneven length."""
    keys = np.concatenate((run_keys, qrels_keys))
    codes = np.concatenate((layout.codes, qrels_layout.codes))
    order = np.lexsort((keys, codes))  # stable: among equal keys, run rows (first in keys) come first
    equal = (keys[order[1:]] == keys[order[:-1]]) & (codes[order[1:]] == codes[order[:-1]])
    a, b = order[:-1][equal], order[1:][equal]
    n_run = layout.n
    return {kind: (np.where(a[which] >= n_run, a[which] - n_run, a[which]),
                   np.where(b[which] >= n_run, b[which] - n_run, b[which]))
            for kind, which in (("run", b < n_run), ("mixed", (a < n_run) & (b >= n_run)), ("qrels", a >= n_run))}


def _encode_queries(chunks: list[pa.Array]) -> tuple[np.ndarray, pa.Array]:
    """Dictionary codes (int64) of the query ids of all chunks together, and the ids they stand for."""
    encoded = pc.dictionary_encode(pa.chunked_array(chunks, type=pa.large_string())).combine_chunks()
    return encoded.indices.to_numpy().astype(np.int64), encoded.dictionary


def _doc_hashes(docs: pa.ChunkedArray) -> np.ndarray:
    """A 64-bit hash of each string, equal for equal strings (polars': 0.01 s for 10M ids, where
    pyarrow's dictionary_encode of the same ids takes 1.6 s)."""
    import polars as pl

    return pl.from_arrow(docs).hash().to_numpy().astype(_U64, copy=False)


def _same_strings(left: pa.ChunkedArray, right: pa.ChunkedArray, left_rows, right_rows) -> bool:
    if not len(left_rows):
        return True
    return bool(pc.all(pc.equal(_take(left, left_rows), _take(right, right_rows))).as_py())


def _take(strings: pa.ChunkedArray, rows: np.ndarray) -> pa.Array:
    return strings.take(pa.array(rows)).combine_chunks() if strings.num_chunks != 1 else strings.chunk(0).take(rows)


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


def _query_list(queries: Iterable[str]) -> pa.Array:
    queries = list(queries)
    not_str = [q for q in queries if not isinstance(q, str)]
    if not_str:
        raise ValueError(f"queries must be strings, got {not_str[0]!r}")
    return pa.array(queries, type=pa.large_string())


def _strings(column: pd.Series) -> pa.ChunkedArray:
    """A string column as Arrow large_string chunks (uncopied when it is Arrow-backed already)."""
    array = pa.array(column, from_pandas=True)
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    return pa.chunked_array([c if pa.types.is_large_string(c.type) else c.cast(pa.large_string()) for c in chunks],
                            type=pa.large_string())


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
