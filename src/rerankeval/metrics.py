"""Per-query metrics computed in one vectorised pass, with no Python loop per query.

``evaluate`` turns the run into a dense (queries x list length) matrix of relevance grades in
rank order, and computes every requested measure with numpy on that matrix, which all measures
of the call share. Ideal gains for nDCG come from the qrels, sorted once per call.

Building the matrix reads the Arrow buffers behind the id columns and never makes a Python
object per row. Query ids are coded once per run of equal ids (runs and qrels list a query's
rows together; any order works, only slower). Document ids are hashed; each query's run and
qrels hashes are sorted together, in blocks of queries that stay in cache, which finds both
the duplicate (query, doc) pairs and every run row's judgment. Equal hashes are checked
against the strings; on a collision the same is done on exact dictionary codes, so hashing
never changes a result. Ranks come from one sort per query of keys that pack the score's
order-preserving bits with the slot; queries with (nearly) equal scores are sorted again on
the exact scores, by TIE_BREAK_RULE.

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
    asked = _query_list(queries) if queries is not None else None
    codes = _encode_queries(_Strings(run["query_id"]), _Strings(qrels["query_id"]), asked)
    groups, qrels_groups, query_dictionary = codes.run, codes.qrels, codes.dictionary
    qrels_q = qrels_groups.codes
    join = _join_docs(_Strings(run["doc_id"]), _Strings(qrels["doc_id"]), groups, qrels_groups)
    if join.qrels_duplicate:
        _raise_duplicate(qrels, "qrels")

    has_relevant = np.zeros(len(query_dictionary), dtype=bool)
    has_relevant[qrels_q[relevance >= 1]] = True
    if asked is not None:
        selected = np.unique(codes.asked)
    else:
        selected = np.flatnonzero(np.bincount(qrels_q, minlength=len(query_dictionary)))
    if no_relevant == "drop":
        selected = selected[has_relevant[selected]]
    selected_ids = query_dictionary.take(selected)
    if len(selected) > 1 and not pc.all(pc.less(selected_ids[:-1], selected_ids[1:])).as_py():
        order_of_ids = pc.sort_indices(selected_ids).to_numpy()
        selected, selected_ids = selected[order_of_ids], selected_ids.take(order_of_ids)
    row_of = np.full(len(query_dictionary), -1, dtype=np.intp)
    row_of[selected] = np.arange(len(selected))

    dtype = _grade_dtype(relevance)
    pad = np.iinfo(dtype).min
    if join.run_duplicate:
        _raise_duplicate(run, "run")
    cells = np.full(len(run), pad + 1, dtype=dtype)
    cells[join.run_rows] = relevance[join.qrels_rows]
    # The groups' rows are the run's queries; each goes to its output row, if it is evaluated.
    n_rows, width = groups.shape
    output_row = row_of[:n_rows]
    present = output_row >= 0
    same_rows = width > 0 and len(selected) == n_rows and np.array_equal(output_row, np.arange(n_rows))

    def sorted_by(column: str) -> np.ndarray:
        ranked = np.empty(groups.shape, dtype=dtype)
        for rows, order in _order_blocks(run, groups, column):
            order += (np.arange(len(order)) * width)[:, None]
            np.take(groups.block(cells, rows, pad).ravel(), order, out=ranked[rows])
        if same_rows:
            return ranked
        grades = np.full((len(selected), max(width, 1)), pad, dtype=dtype)
        grades[output_row[present], :width] = ranked[present]
        return grades

    grades = sorted_by("rank" if "rank" in run.columns else "score")
    candidate_grades = None
    if candidate_order:
        if "fused_rank" not in run.columns:
            raise ValueError(
                "CandidateRecall and Coverage need the run's fused_rank column (the original candidate rank)"
            )
        candidate_grades = sorted_by("fused_rank")

    judged_rows = row_of[qrels_q]
    judged = judged_rows >= 0
    if judged.all():
        judged_rows, judged_grades = _ideal_order(judged_rows, relevance)
    else:
        judged_rows, judged_grades = _ideal_order(judged_rows[judged], relevance[judged])
    return GradeMatrix(
        query_ids=pd.Index(pd.array(selected_ids, dtype="str"), name="query_id"),
        grades=grades,
        candidate_grades=candidate_grades,
        judged_rows=judged_rows,
        judged_grades=judged_grades,
        has_relevant=has_relevant[selected],
    )


def assign_ranks(run: pd.DataFrame) -> pd.DataFrame:
    """The run with its ``rank`` column (1 = top), derived by TIE_BREAK_RULE when it has none."""
    _check_run(run)
    (query_codes,), _ = _encode(run["query_id"])
    (doc_codes,), _ = _encode(run["doc_id"])
    groups = _groups_of(query_codes)
    _check_unique_docs(run, groups, doc_codes)
    return run.assign(rank=groups.positions(_rank_order(run, groups)) + 1)


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
    groups = _groups_of(run_q)
    _check_unique_docs(candidates, groups, run_d)
    if "fused_rank" in candidates.columns:
        original = _rank_values(candidates, "fused_rank")
    else:
        original = groups.positions(_rank_order(candidates, groups))
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
    return _encode_arrays([_Strings(column).chunks for column in columns])


def _encode_arrays(pieces: list[list[pa.Array]]) -> tuple[list[np.ndarray], pa.Array]:
    """Like _encode, for lists of Arrow chunks. Codes number the strings by first appearance."""
    strings = pa.chunked_array([c.cast(pa.large_string()) for chunks in pieces for c in chunks], type=pa.large_string())
    encoded = pc.dictionary_encode(strings).combine_chunks()
    codes = encoded.indices.to_numpy()
    lengths = [sum(len(c) for c in chunks) for chunks in pieces]
    return np.split(codes, np.cumsum(lengths)[:-1]), encoded.dictionary


def _check_unique_pairs(frame: pd.DataFrame, what: str, query_codes, doc_codes, n_docs: int) -> None:
    if not pd.Index(query_codes.astype(np.int64) * n_docs + doc_codes).is_unique:
        _raise_duplicate(frame, what)


def _raise_duplicate(frame: pd.DataFrame, what: str) -> None:
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


def _ideal_order(rows: np.ndarray, grades: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Judgments (their row, their grade) sorted by row, then by grade descending.

    One sort of a combined integer key; judgments of one row with the same grade are
    interchangeable, so no stable sort is needed.
    """
    if not len(rows):
        return rows, grades
    high = int(grades.max())
    bits = (high - int(grades.min())).bit_length()
    key = np.subtract(high, grades)
    key |= rows.astype(np.int64, copy=False) << bits
    key.sort()
    grades = key & (2**bits - 1)
    np.subtract(high, grades, out=grades)
    key >>= bits
    return key.astype(np.intp, copy=False), grades


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


# ---------------------------------------------------------------------------------------------
# String columns read straight from their Arrow buffers

_U64 = np.dtype("<u8")
_ALL_ONES = np.uint64(2**64 - 1)
# Steps that make a pass per row work on blocks of about this many cells, which stay in cache.
_BLOCK_CELLS = 1 << 16


class _Unhashable(Exception):
    """Hashing a column would cost too much (very uneven string lengths): use exact codes."""


def _splitmix(k: int) -> int:
    z = (0x9E3779B97F4A7C15 * (k + 1)) % 2**64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % 2**64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % 2**64
    return (z ^ (z >> 31)) | 1


_MULTIPLIERS: list[np.uint64] = []


def _multiplier(k: int) -> np.uint64:
    """Odd 64-bit multiplier of the string hash, k >= 1 for the (k - 1)th 8-byte word."""
    while len(_MULTIPLIERS) <= k:
        _MULTIPLIERS.append(np.uint64(_splitmix(len(_MULTIPLIERS))))
    return _MULTIPLIERS[k]


class _Strings:
    """A string column as Arrow chunks (string, large_string or dictionary of strings), uncopied."""

    def __init__(self, column: pd.Series):
        array = pa.array(column, from_pandas=True)
        chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
        self.chunks = [c if _is_plain(c.type) or _is_plain_dictionary(c.type) else c.cast(pa.large_string())
                       for c in chunks if len(c)]
        self.length = sum(len(c) for c in self.chunks)
        self.chunk_starts = np.cumsum([0] + [len(c) for c in self.chunks])
        self._dictionary_hashes: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return self.length

    def take(self, rows: np.ndarray) -> pa.Array:
        """The strings at rows, as large_string.

        Chunk by chunk: a ChunkedArray's take would first concatenate every chunk.
        """
        if len(self.chunks) <= 1 or not len(rows):
            if not len(rows):
                return pa.array([], type=pa.large_string())
            return self.chunks[0].take(rows).cast(pa.large_string())
        chunk_of = np.searchsorted(self.chunk_starts, rows, side="right") - 1
        order = None
        if np.any(chunk_of[1:] < chunk_of[:-1]):
            order = np.argsort(chunk_of, kind="stable")
            rows, chunk_of = rows[order], chunk_of[order]
        bounds = np.searchsorted(chunk_of, np.arange(len(self.chunks) + 1))
        pieces = [
            self.chunks[i].take(rows[bounds[i]:bounds[i + 1]] - self.chunk_starts[i]).cast(pa.large_string())
            for i in range(len(self.chunks)) if bounds[i + 1] > bounds[i]
        ]
        taken = pa.concat_arrays(pieces)
        if order is not None:
            inverse = np.empty_like(order)
            inverse[order] = np.arange(len(order))
            taken = taken.take(inverse)
        return taken

    def segment_starts(self) -> np.ndarray | None:
        """The row starting each run of equal values, or None when runs are too short to pay off."""
        if not self.length:
            return np.empty(0, dtype=np.int64)
        change = np.ones(self.length, dtype=bool)
        previous = None
        for chunk, at in zip(self.chunks, self.chunk_starts):
            change[at + 1:at + len(chunk)] = _differs_from_previous(chunk)
            if previous is not None:
                change[at] = chunk[0].as_py() != previous
            previous = chunk[len(chunk) - 1].as_py()
        starts = np.flatnonzero(change)
        return starts if 2 * len(starts) <= self.length else None

    def hashes(self, start: int = 0, stop: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """A 64-bit hash of the strings of rows start .. stop - 1: equal strings, equal hashes.

        hash(s) = sum over k of word_k(s) * m(k + 1) modulo 2**64, word_k holding bytes
        8k .. 8k + 7 of s (little-endian, zero past its end). It depends on the bytes alone,
        whatever the array layout, so two columns' hashes compare. Different strings may collide
        (those that differ only by trailing NUL bytes always do): every use checks equal hashes
        against the strings. Raises _Unhashable when too costly.
        """
        stop = self.length if stop is None else stop
        out = np.empty(stop - start, dtype=_U64) if out is None else out
        first = int(np.searchsorted(self.chunk_starts, start, side="right")) - 1
        for i in range(max(first, 0), len(self.chunks)):
            at = int(self.chunk_starts[i])
            if at >= stop:
                break
            lo, hi = max(start, at), min(stop, at + len(self.chunks[i]))
            piece = out[lo - start:hi - start]
            chunk = self.chunks[i]
            if pa.types.is_dictionary(chunk.type):
                if i not in self._dictionary_hashes:
                    self._dictionary_hashes[i] = _hash_strings(chunk.dictionary)
                np.take(self._dictionary_hashes[i], chunk.indices.slice(lo - at, hi - lo).to_numpy(), out=piece)
            else:
                _hash_strings(chunk.slice(lo - at, hi - lo), piece)
        return out


def _is_plain(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _is_plain_dictionary(kind: pa.DataType) -> bool:
    return pa.types.is_dictionary(kind) and _is_plain(kind.value_type)


def _offsets(chunk: pa.Array) -> np.ndarray:
    dtype = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
    return np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk) + 1, offset=chunk.offset * dtype().itemsize)


def _data(chunk: pa.Array) -> np.ndarray:
    buffer = chunk.buffers()[2]
    return np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(0, dtype=np.uint8)


def _differs_from_previous(chunk: pa.Array) -> np.ndarray:
    """value[i] != value[i - 1] for i >= 1 within one chunk."""
    if pa.types.is_dictionary(chunk.type):
        if pc.count_distinct(chunk.dictionary).as_py() == len(chunk.dictionary):
            indices = chunk.indices.to_numpy()
            return indices[1:] != indices[:-1]
        chunk = chunk.cast(pa.large_string())
    n = len(chunk)
    out = np.empty(max(n - 1, 0), dtype=bool)
    data, scratch = _data(chunk), np.empty(_BLOCK_CELLS + 1, dtype=_U64)
    for at in range(1, n, _BLOCK_CELLS):
        # Rows at - 1 .. stop - 1, compared with the row before.
        stop = min(at + _BLOCK_CELLS, n)
        block = chunk.slice(at - 1, stop - at + 1)
        offsets = _offsets(block)
        lengths = offsets[1:] - offsets[:-1]
        width = int(lengths[0])
        flags = out[at - 1:stop - 1]
        if (lengths == width).all() and width <= 32:
            # Equal widths: compare the 8-byte words of neighbours.
            flags[...] = False
            for k in range(-(-width // 8)):
                n_bytes = min(8, width - 8 * k)
                at_word = int(offsets[0]) + (8 * k if n_bytes == 8 else width - 8)
                words = _read_u64(data, at_word, width, len(block), scratch)
                if n_bytes < 8:
                    words = np.right_shift(words, np.uint64(8 * (8 - n_bytes)), out=scratch[:len(block)])
                flags |= words[1:] != words[:-1]
        else:
            flags[...] = pc.not_equal(block.slice(1), block.slice(0, len(block) - 1)).to_numpy(zero_copy_only=False)
    return out


def _hash_strings(chunk: pa.Array, out: np.ndarray | None = None) -> np.ndarray:
    """_Strings.hashes of one plain string array, in blocks that stay in cache."""
    n = len(chunk)
    out = np.empty(n, dtype=_U64) if out is None else out
    step = _BLOCK_CELLS
    scratch = np.empty(min(n, step), dtype=_U64)
    for at in range(0, n, step):
        _hash_block(chunk.slice(at, step), out[at:at + step], scratch)
    return out


def _hash_block(chunk: pa.Array, out: np.ndarray, scratch: np.ndarray) -> None:
    n = len(chunk)
    offsets, data = _offsets(chunk), _data(chunk)
    total = int(offsets[-1]) - int(offsets[0])
    width = total // n
    lengths = out.view(np.int64)
    np.subtract(offsets[1:], offsets[:-1], out=lengths)
    # Offsets never decrease, so the lengths are all equal when none is below their mean.
    if width * n != total or int(lengths.min()) != width:
        width = int(lengths.max())
        if width > 64 and n * width > 4 * total + (1 << 20):
            raise _Unhashable  # padding every string to the longest would cost too much
        # Pad with NUL bytes to the longest, which leaves every word as defined.
        chunk = pc.ascii_rpad(chunk, width, padding="\x00")
        offsets, data = _offsets(chunk), _data(chunk)
    start, scratch = int(offsets[0]), scratch[:n]
    out[...] = 0
    for k in range(-(-width // 8)):
        # A partial last word is read as the 8 bytes that end the string, shifted right, so no
        # read passes the end of the data.
        n_bytes = min(8, width - 8 * k)
        words = _read_u64(data, start + (8 * k if n_bytes == 8 else width - 8), width, n, scratch)
        if n_bytes < 8:
            words = np.right_shift(words, np.uint64(8 * (8 - n_bytes)), out=scratch)
        if k == 0:
            np.multiply(words, _multiplier(1), out=out)
        else:
            np.multiply(words, _multiplier(k + 1), out=scratch)
            out += scratch


def _read_u64(data: np.ndarray, start: int, stride: int, n: int, scratch: np.ndarray) -> np.ndarray:
    """The little-endian u64 at data[start + i * stride] for i < n, bytes outside data read as 0.

    A strided view of data when every read lies inside it; else scratch, filled.
    """
    # Rows whose 8 bytes lie inside data are read through a strided view; the few others by hand.
    first = 0 if start >= 0 else min(n, -(start // stride))
    last = max(first, min(n, (len(data) - 8 - start) // stride + 1)) if len(data) - 8 - start >= 0 else first
    if first == 0 and last == n:
        return np.ndarray((n,), dtype=_U64, buffer=data, offset=start, strides=(stride,))
    words = scratch[:n]
    if last > first:
        words[first:last] = np.ndarray(
            (last - first,), dtype=_U64, buffer=data, offset=start + first * stride, strides=(stride,)
        )
    for i in [*range(first), *range(last, n)]:
        at = start + i * stride
        raw = bytes(max(0, -at)) + bytes(data[max(at, 0):max(min(at + 8, len(data)), 0)])
        words[i] = int.from_bytes(raw + bytes(8 - len(raw)), "little")
    return words


# ---------------------------------------------------------------------------------------------
# Query codes and groups


@dataclass(frozen=True)
class _QueryCodes:
    dictionary: pa.Array  # the query_id of each code
    run: _Groups  # rows: the run's queries, codes 0 .. n - 1
    qrels: _Groups  # rows: the queries of the run and the qrels
    asked: np.ndarray | None  # codes of the queries asked for


def _encode_queries(run: _Strings, qrels: _Strings, asked: pd.Series | None) -> _QueryCodes:
    """Codes of the query ids, read once per run of equal ids: runs and qrels list a query's rows together."""
    starts = [run.segment_starts(), qrels.segment_starts()]
    pieces = [[column.take(s)] if s is not None else column.chunks for column, s in zip((run, qrels), starts)]
    if asked is not None:
        pieces.append([pa.array(asked, from_pandas=True, type=pa.large_string())])
    (run_codes, qrels_codes, *asked_codes), dictionary = _encode_arrays(pieces)
    run_segments = _segments(run_codes, starts[0])
    n_run_queries = int(run_segments[0].max()) + 1 if len(run) else 0
    qrels_segments = _segments(qrels_codes, starts[1])
    n_queries = max(n_run_queries, int(qrels_segments[0].max()) + 1 if len(qrels) else 0)
    return _QueryCodes(
        dictionary=dictionary,
        run=_Groups(n_run_queries, *run_segments, len(run)),
        qrels=_Groups(n_queries, *qrels_segments, len(qrels)),
        asked=asked_codes[0] if asked_codes else None,
    )


def _segments(codes: np.ndarray, starts: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(code, first row) of each run of equal codes; codes are per run already when starts is given."""
    if starts is not None:
        return codes, starts
    starts = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1]))) if len(codes) else codes
    return codes[starts], starts.astype(np.int64)


def _groups_of(codes: np.ndarray) -> _Groups:
    """_Groups from the code of each row; codes number queries 0 .. n - 1."""
    return _Groups(int(codes.max()) + 1 if len(codes) else 0, *_segments(codes, None), len(codes))


class _Groups:
    """The rows of a run (or qrels) grouped by query code: matrix row = code, slot = place in input order.

    Built from the runs of equal codes (segments), so grouping sorts segments, not rows. When
    every query has the same number of rows, in one segment, in code order (a run as rankers
    write it), the (queries x longest list) matrix is a reshape of the rows: ``identity``.
    """

    def __init__(self, n_rows: int, segment_codes: np.ndarray, segment_starts: np.ndarray, n: int):
        segment_lengths = np.diff(np.append(segment_starts, n))
        self.n = n
        self.counts = np.bincount(segment_codes, weights=segment_lengths, minlength=n_rows).astype(np.int64)
        # Where each query's rows start once grouped (in code order, input order within a query).
        self.starts = np.concatenate(([0], np.cumsum(self.counts)[:-1])).astype(np.int64)
        width = int(self.counts.max()) if n_rows else 0
        self.shape = (n_rows, width)
        self.full = bool(np.all(self.counts == width))
        self.in_order = bool(np.all(segment_codes[1:] > segment_codes[:-1]))  # grouped, in code order
        self.identity = self.in_order and self.full and len(segment_codes) == n_rows
        self._segments = (segment_codes, segment_starts, segment_lengths)
        self._codes = self._slot = self._flat = self._perm = None

    @property
    def codes(self) -> np.ndarray:
        """The code of each input row."""
        if self._codes is None:
            codes, _, lengths = self._segments
            self._codes = np.repeat(codes, lengths)
        return self._codes

    @property
    def perm(self) -> np.ndarray:
        """Input rows grouped: by code, in input order within a code (a stable argsort of codes)."""
        if self._perm is None:
            if self.in_order:
                self._perm = np.arange(self.n)
            else:
                codes, starts, lengths = self._segments
                by_code = np.argsort(codes, kind="stable")
                grouped_lengths = lengths[by_code]
                shift = starts[by_code] - (np.cumsum(grouped_lengths) - grouped_lengths)
                self._perm = np.arange(self.n) + np.repeat(shift, grouped_lengths)
        return self._perm

    @property
    def slot(self) -> np.ndarray:
        """The place of each input row within its query, in input order."""
        if self._slot is None:
            in_group = np.arange(self.n) - np.repeat(self.starts, self.counts)
            if self.in_order:
                self._slot = in_group
            else:
                self._slot = np.empty(self.n, dtype=np.int64)
                self._slot[self.perm] = in_group
        return self._slot

    @property
    def flat(self) -> np.ndarray:
        """Index of each input row in the raveled matrix."""
        if self._flat is None:
            if self.identity:
                self._flat = np.arange(self.n)
            elif self.in_order:
                shift = np.arange(self.shape[0]) * self.shape[1] - self.starts
                self._flat = np.arange(self.n) + np.repeat(shift, self.counts)
            else:
                self._flat = self.codes * self.shape[1] + self.slot
        return self._flat

    def block_layout(self, rows: slice, width: int) -> tuple[slice | np.ndarray, np.ndarray, np.ndarray]:
        """Where matrix rows `rows` take their values from, in a (len(rows) x width) matrix.

        Returns the input rows they hold (a slice when contiguous), and for each its index in
        that matrix, raveled, and its slot.
        """
        counts = self.counts[rows]
        if self.in_order:
            start = int(self.starts[rows.start]) if rows.stop > rows.start else 0
            stop = start + int(counts.sum())
            slots = np.arange(stop - start) - np.repeat(self.starts[rows] - start, counts)
            at = slots + np.repeat(np.arange(0, len(counts) * width, width), counts)
            return slice(start, stop), at, slots
        cells = self.cells(np.arange(rows.start, rows.stop))
        valid = cells >= 0
        block_rows, slots = np.nonzero(valid)
        return cells[valid], block_rows * width + slots, slots

    def block(self, values: np.ndarray, rows: slice, fill) -> np.ndarray:
        """Rows `rows` of matrix(values, fill), built for those rows alone (a view of values when the layout allows)."""
        width = self.shape[1]
        if self.identity:
            return values[rows.start * width:rows.stop * width].reshape(-1, width)
        out = np.full((rows.stop - rows.start, width), fill, dtype=values.dtype)
        source, at, _ = self.block_layout(rows, width)
        out.ravel()[at] = values[source]
        return out

    def input_rows(self, rows: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """The input row at (matrix row, slot); slot must be below that row's count."""
        at = self.starts[rows] + slots
        return at if self.in_order else self.perm[at]

    def cells(self, rows: np.ndarray) -> np.ndarray:
        """(len(rows) x width) input row of each cell of the given matrix rows; -1 for padding."""
        slots = np.arange(self.shape[1])
        at = self.starts[rows][:, None] + slots
        valid = slots < self.counts[rows][:, None]
        if not self.in_order:
            at[valid] = self.perm[at[valid]]
        at[~valid] = -1
        return at

    def matrix(self, values: np.ndarray, fill) -> np.ndarray:
        """(queries x longest list) matrix of per-row values, in input order, padded with fill.

        A reshape of values when the layout allows (then it is a view of values).
        """
        if self.identity:
            return values.reshape(self.shape)
        matrix = np.full(self.shape, fill, dtype=values.dtype)
        matrix.ravel()[self.flat] = values
        return matrix

    def positions(self, order: np.ndarray) -> np.ndarray:
        """Each row's 0-based place in its query once its slots are sorted by order (a row-wise argsort)."""
        place = np.empty_like(order)
        np.put_along_axis(place, order, np.arange(self.shape[1]), axis=1)
        return place.ravel()[self.flat]


def _row_blocks(shape: tuple[int, int]):
    step = max(1, _BLOCK_CELLS // max(shape[1], 1))
    for start in range(0, shape[0], step):
        yield slice(start, min(start + step, shape[0]))


# ---------------------------------------------------------------------------------------------
# Documents: duplicates and the join with the qrels


@dataclass(frozen=True)
class _Join:
    qrels_duplicate: bool
    run_duplicate: bool
    run_rows: np.ndarray  # run rows judged in the qrels...
    qrels_rows: np.ndarray  # ...and the qrels row judging each


class _Pairs:
    """Pairs of rows with equal keys in one query: run/run, run/qrels and qrels/qrels."""

    def __init__(self):
        self.parts = {kind: ([], []) for kind in ("run", "mixed", "qrels")}

    def add(self, kind: str, left: np.ndarray, right: np.ndarray) -> None:
        self.parts[kind][0].append(left)
        self.parts[kind][1].append(right)

    def get(self, kind: str) -> tuple[np.ndarray, np.ndarray]:
        left, right = self.parts[kind]
        if not left:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        return np.concatenate(left), np.concatenate(right)


def _join_docs(run: _Strings, qrels: _Strings, groups: _Groups, qrels_groups: _Groups) -> _Join:
    """Find repeated (query, doc) pairs in the run and in the qrels, and the judgment of each run row.

    Every document of a query, in the run and in the qrels, goes into that query's row of a key
    matrix; sorting the rows brings equal documents side by side. The keys are string hashes,
    each match checked against the strings; on a collision (or where hashing would cost too
    much) the same is done on exact codes from a dictionary encoding.
    """
    try:
        pairs = _pairs(run.hashes, qrels.hashes(), groups, qrels_groups, exact=False)
    except _Unhashable:
        pairs = None
    if pairs is not None:
        for kind, left, right in (("run", run, run), ("mixed", run, qrels), ("qrels", qrels, qrels)):
            left_rows, right_rows = pairs.get(kind)
            if len(left_rows) and not pc.all(pc.equal(left.take(left_rows), right.take(right_rows))).as_py():
                pairs = None  # a hash collision
                break
    if pairs is None:
        (run_codes, qrels_codes), _ = _encode_arrays([run.chunks, qrels.chunks])
        run_codes, qrels_codes = run_codes.astype(_U64), qrels_codes.astype(_U64)
        pairs = _pairs(lambda start, stop: run_codes[start:stop].copy(), qrels_codes, groups, qrels_groups, exact=True)
    matched = pairs.get("mixed")
    return _Join(
        qrels_duplicate=len(pairs.get("qrels")[0]) > 0,
        run_duplicate=len(pairs.get("run")[0]) > 0,
        run_rows=matched[0],
        qrels_rows=matched[1],
    )


def _pairs(run_keys, qrels_keys: np.ndarray, groups: _Groups, qrels_groups: _Groups, exact: bool) -> _Pairs:
    """Adjacent equal keys once each query's run and qrels keys are sorted together.

    run_keys(start, stop) gives the (fresh) keys of run rows start .. stop - 1; qrels_keys is
    overwritten. Query rows go in blocks through a small matrix: the run part of a row holds its
    run keys, the qrels part its qrels keys. A cell holds the key's high bits, then 1 bit for
    run (0) or qrels (1), then the slot, so the sorted cells say where each came from.
    """
    n_run_rows, run_width = groups.shape
    n_rows, qrels_width = qrels_groups.shape
    width = run_width + qrels_width
    if n_rows * width > 2 * (n_run_rows * run_width + qrels_groups.n) + 4096:
        # A few queries with many more judgments than the rest: one flat sort instead.
        return _pairs_flat(run_keys(0, groups.n), qrels_keys, groups, qrels_groups, exact)
    slot_bits = max(run_width, qrels_width).bit_length()  # 2**slot_bits - 1 is no slot: all ones is padding
    low_bits = np.uint64(slot_bits + 1)
    high = np.uint64(2**64 - 2**(slot_bits + 1))

    def prefix(keys: np.ndarray) -> np.ndarray:
        """The key's bits above the origin and slot, in place."""
        if exact:
            keys <<= low_bits
        else:
            keys &= high
        return keys

    qrels_keys = prefix(qrels_keys)
    run_all = None if groups.identity or groups.in_order else prefix(run_keys(0, groups.n))
    run_slots = np.arange(run_width, dtype=_U64)
    padded = n_run_rows < n_rows or not groups.full or not qrels_groups.full
    step = max(1, _BLOCK_CELLS // max(width, 1))
    buffer = np.empty((min(step, n_rows), width), dtype=_U64)
    differ = np.empty((len(buffer), max(width - 1, 0)), dtype=_U64)
    same = np.empty(differ.shape, dtype=bool)
    lefts, rights, block_rows = [], [], []
    for start in range(0, n_rows, step):
        stop = min(start + step, n_rows)
        cells = buffer[:stop - start]
        run_part, qrels_part = cells[:, :run_width], cells[:, run_width:]
        run_stop = min(stop, n_run_rows)
        if groups.identity:
            run_part[max(run_stop - start, 0):] = _ALL_ONES
            if start < run_stop:
                keys = prefix(run_keys(start * run_width, run_stop * run_width)).reshape(-1, run_width)
                np.bitwise_or(keys, run_slots, out=run_part[:run_stop - start])
        else:
            run_part[...] = _ALL_ONES
            _fill_part(cells, 0, groups, slice(start, stop),
                       run_all if run_all is not None else lambda a, b: prefix(run_keys(a, b)), 0)
        qrels_part[...] = _ALL_ONES
        _fill_part(cells, run_width, qrels_groups, slice(start, stop), qrels_keys, 1 << slot_bits)
        cells.sort(axis=1)
        if width < 2:
            continue
        d, e = differ[:len(cells)], same[:len(cells)]
        np.bitwise_xor(cells[:, :-1], cells[:, 1:], out=d)
        np.less(d, np.uint64(1) << low_bits, out=e)
        if padded:
            e &= cells[:, 1:] != _ALL_ONES
        at = np.flatnonzero(e)
        if len(at):
            left = at + at // (width - 1)
            flat = cells.ravel()
            lefts.append(flat[left])
            rights.append(flat[left + 1])
            block_rows.append(left // width + start)
    pairs = _Pairs()
    if not lefts:
        return pairs
    rows = np.concatenate(block_rows)
    left, right = np.concatenate(lefts), np.concatenate(rights)
    origin, slot_mask = np.uint64(slot_bits), np.uint64(2**slot_bits - 1)
    left_qrels = ((left >> origin) & np.uint64(1)).astype(bool)
    right_qrels = ((right >> origin) & np.uint64(1)).astype(bool)
    left, right = (left & slot_mask).astype(np.int64), (right & slot_mask).astype(np.int64)
    # Equal keys of one query sort the run's rows first, so a mixed pair is (run, qrels).
    for kind, which, left_groups, right_groups in (
        ("run", ~right_qrels, groups, groups),
        ("mixed", ~left_qrels & right_qrels, groups, qrels_groups),
        ("qrels", left_qrels, qrels_groups, qrels_groups),
    ):
        if which.all():
            pairs.add(kind, left_groups.input_rows(rows, left), right_groups.input_rows(rows, right))
        elif which.any():
            r = rows[which]
            pairs.add(kind, left_groups.input_rows(r, left[which]), right_groups.input_rows(r, right[which]))
    return pairs


def _fill_part(cells: np.ndarray, offset: int, groups: _Groups, rows: slice, keys, origin: int) -> None:
    """One part of cells (a block of matrix rows `rows`), from column offset on: key | origin | slot
    for each row of those queries; the rest of the part (padding) must be all ones already.

    keys: the key prefixes of all input rows, or a function giving those of a range of rows.
    """
    if groups.shape[1] == 0 or rows.start >= groups.shape[0]:
        return
    rows = slice(rows.start, min(rows.stop, groups.shape[0]))
    source, at, slots = groups.block_layout(rows, cells.shape[1])
    values = keys(source.start, source.stop) if callable(keys) else keys[source]
    tags = slots.astype(_U64)
    if origin:
        tags |= np.uint64(origin)
    cells.ravel()[at + offset] = values | tags


def _pairs_flat(run_keys, qrels_keys, groups: _Groups, qrels_groups: _Groups, exact: bool) -> _Pairs:
    """Like _pairs, with one sort of (query, key) over all rows."""
    row_bits = max(qrels_groups.shape[0] - 1, 0).bit_length()
    keys = np.concatenate((run_keys, qrels_keys))
    codes = np.concatenate((groups.codes, qrels_groups.codes)).astype(_U64)
    if exact:
        assert int(keys.max(initial=0)).bit_length() + row_bits <= 64
    elif row_bits:
        keys >>= np.uint64(row_bits)
    if row_bits:
        keys |= codes << np.uint64(64 - row_bits)
    # Stable: among equal keys the run's rows (first in keys) come first, as in _pairs.
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    at = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1])
    a, b = order[at], order[at + 1]
    n_run = groups.n
    pairs = _Pairs()
    for kind, which in (("run", b < n_run), ("mixed", (a < n_run) & (b >= n_run)), ("qrels", a >= n_run)):
        left, right = a[which], b[which]
        pairs.add(kind, np.where(left >= n_run, left - n_run, left), np.where(right >= n_run, right - n_run, right))
    return pairs


# ---------------------------------------------------------------------------------------------
# Rank order


def _check_unique_docs(run: pd.DataFrame, groups: _Groups, doc_codes: np.ndarray) -> None:
    docs = np.sort(groups.matrix(doc_codes, fill=-1), axis=1)
    if np.any((docs[:, 1:] == docs[:, :-1]) & (docs[:, 1:] >= 0)):
        _raise_duplicate(run, "run")


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


def _rank_order(run: pd.DataFrame, groups: _Groups) -> np.ndarray:
    """Per query, the slots of its rows from top to bottom rank (TIE_BREAK_RULE); pads sort last.

    The run's (query, doc_id) pairs must be unique.
    """
    order = np.empty(groups.shape, dtype=np.intp)
    for rows, block in _order_blocks(run, groups, "rank" if "rank" in run.columns else "score"):
        order[rows] = block
    return order


def _order_blocks(run: pd.DataFrame, groups: _Groups, column: str):
    """_rank_order by blocks of query rows: yields (rows, their order), after checking the column.

    column is "score" (TIE_BREAK_RULE) or a tie-free integer rank column ("rank", "fused_rank").
    Each block sorts one key per cell: the value's sort key, its low bits replaced by the slot
    (which the sort carries along). Where no two keys of a row share their high bits, that is
    the exact order; rows where some do are sorted again on the exact values.
    """
    n_rows, width = groups.shape
    slot_bits = max(width - 1, 0).bit_length()
    slot_mask = np.uint64(2**slot_bits - 1)
    if column == "score":
        values = _checked_scores(run)
        low, high = (float(values.min()), float(values.max())) if len(values) else (0.0, 0.0)
    else:
        values = _rank_values(run, column)
        if len(values) and int(values.max()) >= 2 ** (63 - slot_bits):
            # Ranks too large to pack beside the slot.
            yield slice(0, n_rows), _order_by_column(run, groups, values, column)
            return
    slots = np.arange(width, dtype=_U64)
    fused = []  # fused_rank, read once when first needed
    for rows in _row_blocks(groups.shape):
        cells = groups.block(values, rows, 0)
        if column == "score":
            keys = _descending_keys(cells, low, high, slot_mask)
        else:
            keys = cells.astype(_U64) << np.uint64(slot_bits)
        keys |= slots
        if not groups.full:
            keys[slots >= groups.counts[rows, None].astype(_U64)] |= ~slot_mask  # padding sorts last
        keys.sort(axis=1)
        same = (keys[:, 1:] ^ keys[:, :-1]) <= slot_mask
        if not groups.full:
            same &= (keys[:, 1:] | slot_mask) != _ALL_ONES
        if column != "score" and same.any():
            query, slot = np.argwhere(same)[0]
            value = keys[query, slot] >> np.uint64(slot_bits)
            _raise_repeated_rank(run, groups, values, column, rows.start + query, value)
        keys &= slot_mask
        order = keys.view(np.intp)
        if column != "score":
            yield rows, order
            continue
        close = np.flatnonzero(same.any(axis=1)) if same.any() else ()
        if len(close):
            # Rows with equal (or nearly equal) scores: sort on the exact values.
            descending = np.negative(cells[close])
            if not groups.full:
                descending[np.arange(width) >= groups.counts[rows][close, None]] = np.inf
            exact = np.argsort(descending, axis=1)
            in_order = np.sort(descending, axis=1)
            repeated = (in_order[:, 1:] == in_order[:, :-1]) & np.isfinite(in_order[:, 1:])
            tied = np.flatnonzero(repeated.any(axis=1))
            if len(tied):
                # Few queries have ties; only those pay for the full three-key sort.
                tied_cells = groups.cells(rows.start + close[tied])
                keys = [_lexicographic_ranks(run["doc_id"], tied_cells)]
                if "fused_rank" in run.columns:
                    if not fused:
                        fused.append(_rank_values(run, "fused_rank"))
                    keys.append(np.where(tied_cells >= 0, fused[0][tied_cells], np.iinfo(np.int64).max))
                exact[tied] = np.lexsort((*keys, descending[tied]), axis=-1)
            order[close] = exact
        yield rows, order


def _descending_keys(scores: np.ndarray, low: float, high: float, low_bits: np.uint64) -> np.ndarray:
    """Unsigned integers in the order of the scores, highest score first, with the bits low_bits
    cleared; equal scores (0.0 and -0.0 too), equal integers. low and high bound the (finite)
    scores. No key has its high bits all ones."""
    bits = scores.view(_U64)
    if low >= 0:
        # -0.0 is then the only score with its sign bit set: clear it; reverse the order with the
        # other bits (the top bit stays 0, as all ones marks padding).
        high_bits = np.uint64(2**63 - 1) & ~low_bits
        keys = np.bitwise_and(bits, high_bits)
        keys ^= high_bits
        return keys
    if high <= 0:
        keys = np.bitwise_or(bits, np.uint64(2**63))
    else:
        keys = np.negative(scores)
        keys += 0.0  # -0.0 becomes 0.0
        keys = keys.view(_U64)
        # Order-preserving bits of a float: flip the sign bit of positives, every bit of negatives.
        flip = keys >> np.uint64(63)
        np.subtract(np.uint64(0), flip, out=flip)
        flip |= np.uint64(2**63)
        keys ^= flip
    keys &= ~low_bits
    return keys


def _checked_scores(run: pd.DataFrame) -> np.ndarray:
    scores = run["score"]
    if not pd.api.types.is_numeric_dtype(scores) or pd.api.types.is_bool_dtype(scores):
        raise ValueError(f"run column 'score' must hold numbers, got dtype {scores.dtype}")
    scores = scores.to_numpy(dtype=np.float64, na_value=np.nan)
    # min and max are NaN when any score is.
    if len(scores) and not (np.isfinite(scores.min()) and np.isfinite(scores.max())):
        finite = np.isfinite(scores)
        row = int(np.argmin(finite))
        raise ValueError(
            f"run has a non-finite score ({scores[row]}) at row {row} "
            f"(query_id {run['query_id'].iloc[row]!r}, doc_id {run['doc_id'].iloc[row]!r})"
        )
    return scores


def _lexicographic_ranks(doc_ids: pd.Series, cells: np.ndarray) -> np.ndarray:
    """Replace run rows (pad: -1) by ranks in doc_id string order, pads last.

    Distinct documents of one query get distinct ranks.
    """
    valid = cells >= 0
    strings = _Strings(doc_ids).take(cells[valid])
    ranks = np.full(cells.shape, len(strings), dtype=np.int64)
    ranks[valid] = np.argsort(pc.sort_indices(strings).to_numpy())
    return ranks


def _raise_repeated_rank(run, groups: _Groups, values: np.ndarray, column: str, query, value) -> None:
    value = int(value)
    rows = np.flatnonzero((groups.codes == query) & (values == value))
    docs = run["doc_id"].iloc[rows[:2]].tolist()
    raise ValueError(
        f"duplicate {column} {value} in query {run['query_id'].iloc[rows[0]]!r} "
        f"(doc_ids {docs[0]!r} and {docs[1]!r}); {column} must be tie-free within a query"
    )


def _order_by_column(run: pd.DataFrame, groups: _Groups, values: np.ndarray, column: str) -> np.ndarray:
    """Like _rank_order, from a tie-free integer rank column (any int64 values)."""
    pad = np.iinfo(np.int64).max
    keys = groups.matrix(values, fill=pad)
    order = np.argsort(keys, axis=1)
    for block in _row_blocks(keys.shape):
        in_order = np.sort(keys[block], axis=1)
        repeated = (in_order[:, 1:] == in_order[:, :-1]) & (in_order[:, 1:] != pad)
        if repeated.any():
            query, slot = np.argwhere(repeated)[0]
            _raise_repeated_rank(run, groups, values, column, query + block.start, in_order[query, slot])
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
