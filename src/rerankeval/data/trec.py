"""Read and write TREC run and qrels files, BEIR qrels TSV, and Parquet runs and qrels.

- TREC run: one line per document, ``query_id Q0 doc_id rank score tag``, whitespace-separated.
  trec_eval orders documents by score and ignores the rank column, so ``read_trec_run``
  returns query_id, doc_id and score; ``write_trec_run`` writes scores that give trec_eval the run's own order.
- TREC qrels: ``query_id iteration doc_id relevance``, the iteration ignored.
- BEIR qrels: a TSV whose header is ``query-id<TAB>corpus-id<TAB>score`` (read by ``rerankeval.data.beir``).

A malformed line raises ValueError naming the file, the line number and the expected layout. A file named ``*.gz``
is read gzip-compressed; other compressed, binary or non-UTF-8 files are refused saying which they are.
Writing is atomic: a temporary file beside the target, renamed over it once complete.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd

from ..core.io import atomic_write_text
from ..eval.ranks import assign_ranks
from .beir import INTEGER, QRELS_HEADER, open_binary, read_qrels_tsv, utf8_lines


@dataclass(frozen=True)
class _Layout:
    name: str
    fields: tuple[str, ...]
    numbers: dict[int, type]  # field position -> int or float
    separator: str | None  # None: any run of whitespace
    header: tuple[str, ...] | None
    example: str
    number_fix: str = ""  # the fix for a malformed number field, said before the layout
    trailing: bool = False  # text after the last field is ignored (trec_eval reads a run's first six fields)

    def describe(self) -> str:
        separator = "whitespace" if self.separator is None else "tab"
        layout = " ".join(self.fields)
        return f"each line of a {self.name} reads '{layout}' ({separator}-separated), e.g. {self.example!r}"


_RUN = _Layout(
    "TREC run", ("query_id", "Q0", "doc_id", "rank", "score", "tag"), {4: float}, None, None, "q1 Q0 doc7 1 12.5 bm25",
    trailing=True)
_QRELS = _Layout("TREC qrels", ("query_id", "iteration", "doc_id", "relevance"), {3: int}, None, None, "q1 0 doc7 2",
                 "relevance grades must be integers (0 = judged non-relevant)")
INT64 = range(-(2**63), 2**63)


def read_trec_run(path: str | os.PathLike) -> pd.DataFrame:
    """A TREC run file as a run: query_id (str), doc_id (str), score (float64)."""
    frame = _read(path, _RUN)
    return frame[[0, 2, 4]].set_axis(["query_id", "doc_id", "score"], axis=1)


def read_trec_qrels(path: str | os.PathLike) -> pd.DataFrame:
    """A TREC qrels file as qrels: query_id (str), doc_id (str), relevance (int64)."""
    frame = _read(path, _QRELS)
    return frame[[0, 2, 3]].set_axis(["query_id", "doc_id", "relevance"], axis=1)


def read_run(path: str | os.PathLike) -> pd.DataFrame:
    """A run from a Parquet file (by its .parquet suffix) or else a TREC run file."""
    if Path(path).suffix == ".parquet":
        return _read_parquet(path)
    return read_trec_run(path)


def run_tag(path: str | os.PathLike) -> str:
    """The run's tag as trec_eval's ``runid`` prints it: the sixth field of its first line (comment and blank lines
    skipped); for a Parquet run its ``tag`` column's first value, else the file's name without suffix."""
    if Path(path).suffix == ".parquet":
        run = _read_parquet(path)
        return str(run["tag"].iloc[0]) if "tag" in run.columns and len(run) else Path(path).stem
    for _, line in utf8_lines(Path(path)):
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            return fields[5] if len(fields) > 5 else ""
    return ""


IR_METADATA_START, IR_METADATA_END = "ir_metadata.start", "ir_metadata.end"


def read_ir_metadata(path: str | os.PathLike) -> dict | None:
    """The ir_metadata record a TREC run file opens with (``# ir_metadata.start`` ... ``# ir_metadata.end``, as
    ``rerankeval export-run --ir-metadata`` writes it), or None: a Parquet run, no record, or one that is not YAML
    (a record is a description, never a reason to refuse the run)."""
    import yaml

    if Path(path).suffix == ".parquet":
        return None
    header = []  # the comment lines the file opens with, each without its "# "
    for _, line in utf8_lines(Path(path)):
        if not line.startswith("#"):
            break
        header.append(line[1:].rstrip("\r\n").removeprefix(" "))
    marks = [line.strip() for line in header]
    if not marks or marks[0] != IR_METADATA_START or IR_METADATA_END not in marks:
        return None
    try:
        record = yaml.safe_load("\n".join(header[1:marks.index(IR_METADATA_END)]))
    except yaml.YAMLError:
        return None
    return record if isinstance(record, dict) else None


def read_qrels(path: str | os.PathLike) -> pd.DataFrame:
    """Qrels from Parquet (.parquet: query_id, doc_id, relevance), BEIR TSV (by its header) or TREC qrels."""
    if Path(path).suffix == ".parquet":
        return _read_parquet(path, ["query_id", "doc_id", "relevance"])
    with open_binary(Path(path)) as handle:
        first_line = handle.readline().decode("utf-8", errors="replace")
    if tuple(first_line.lstrip("\ufeff").rstrip("\r\n").split("\t")[:2]) == QRELS_HEADER[:2]:
        return read_qrels_tsv(path).drop(columns="line")
    return read_trec_qrels(path)


def _read_parquet(path: str | os.PathLike, columns: list[str] | None = None) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..core.io import DIGEST_KEY, METADATA_KEY, read_table

    try:
        recorded = pq.read_schema(path).metadata or {}
        if DIGEST_KEY in recorded or METADATA_KEY in recorded:  # written by the pipeline: verify its digests
            return read_table(path, columns=columns).to_pandas()
        return pd.read_parquet(path, columns=columns)
    except (pa.ArrowException, OSError, ValueError) as err:
        raise ValueError(f"{path}: cannot read as Parquet ({type(err).__name__}: {err}); is it truncated or "
                         "corrupted?") from None


def write_trec_run(run: pd.DataFrame, path: str | os.PathLike, tag: str, header: str = "") -> int:
    """Write a run as a TREC run file, sorted by query_id and rank; return how many scores were nudged. ``header``:
    comment lines (each starting with #) written first, which trec_eval 10 and ``read_trec_run`` skip (an ir_metadata
    record).

    Ranks come from the run's rank column, or from its scores by trec_eval's order. trec_eval reads only the scores,
    so the scores written must give that same order (``trec_eval_scores``): each row's own score, but where trec_eval
    would not rebuild the order from it (a tie it breaks the other way, or no score).
    """
    if not tag or any(character.isspace() for character in tag):
        raise ValueError(f"the run tag must be one word without whitespace, got {tag!r}")
    ranked = assign_ranks(run).sort_values(["query_id", "rank"])
    for column in ("query_id", "doc_id"):
        _check_one_word(ranked[column], f"run column {column!r}")
    score, nudged = trec_eval_scores(ranked)
    lines = pd.DataFrame(
        {"query_id": ranked["query_id"], "q0": "Q0", "doc_id": ranked["doc_id"], "rank": ranked["rank"],
         "score": score, "tag": tag}
    )
    if any(line and not line.startswith("#") for line in header.splitlines()):
        raise ValueError("a run file's header must be comment lines, each starting with #")

    def write(handle) -> None:
        handle.write(header)
        _write_lines(lines, handle)

    atomic_write_text(path, write)
    return nudged


def trec_eval_scores(ranked: pd.DataFrame) -> tuple[np.ndarray, int]:
    """Scores from which trec_eval rebuilds ``ranked``'s order (rows in rank order within each query), and how many
    of the rows' own scores had to change.

    trec_eval compares scores as 32-bit floats, equal ones by doc id descending. A row keeps its own score when that
    puts it after the row above; where it does not (the two tie as 32-bit floats and the doc ids run the other way,
    or it is above the row above) it gets the largest 32-bit float below the row above: the smallest nudge that
    keeps the order, made only there. A row without a score (NaN or infinite: a pipeline run's rows in the fused
    order, beyond the rerank depth or of a degraded query, as ``rerankeval export-run`` hands them) gets the whole
    number below the row above's score (-1 for a query's first row): below every scored row, in rank order, and
    plainly not a score.
    """
    n = len(ranked)
    own = ranked["score"].to_numpy(dtype=np.float64) if "score" in ranked.columns else np.full(n, np.nan)
    usable = np.isfinite(own)
    query_ids, doc_ids = ranked["query_id"].to_numpy(dtype=object), ranked["doc_id"].to_numpy(dtype=object)
    first = np.ones(n, dtype=bool)
    first[1:] = query_ids[1:] != query_ids[:-1]
    written = _fill_unscored(own, usable, first)
    wrong = ~first
    single = written.astype(np.float32)
    wrong[1:] &= ~((single[1:] < single[:-1]) | ((single[1:] == single[:-1]) & (doc_ids[1:] < doc_ids[:-1])))
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], n)
    for query in np.unique(np.searchsorted(starts, np.flatnonzero(wrong), side="right") - 1):
        rows = slice(starts[query], ends[query])
        written[rows] = _in_order(own[rows], usable[rows], doc_ids[rows])
    return written, int((usable & (written != own)).sum())


def _fill_unscored(own: np.ndarray, usable: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Own scores where usable; an unscored row the floor of the last usable score above it in its query minus its
    distance from that row (0 at the row before the query's first if none). Right but where a score is too large to
    step by 1 or a usable score is out of order, which the check after it finds and ``_in_order`` redoes."""
    positions = np.arange(len(own))
    setter = np.maximum.accumulate(np.where(usable | first, positions, -1))  # the anchor row: usable, or the first
    anchored = usable[setter]
    anchor_at = np.where(anchored, setter, setter - 1)
    anchor = np.where(anchored, np.floor(own[setter]), 0.0)
    return np.where(usable, own, anchor - (positions - anchor_at))


def _in_order(own: np.ndarray, usable: np.ndarray, doc_ids: np.ndarray) -> np.ndarray:
    """One query's written scores row by row (the rule of ``trec_eval_scores``), for a query that needs a nudge."""
    written = np.empty(len(own), dtype=np.float64)
    above = None
    for row in range(len(own)):
        if not usable[row]:
            value = -1.0 if above is None else float(np.floor(above) - 1.0)
            if above is not None and not np.float32(value) < np.float32(above):
                value = float(np.nextafter(np.float32(above), np.float32(-np.inf)))
        elif above is None or np.float32(own[row]) < np.float32(above) or (
                np.float32(own[row]) == np.float32(above) and doc_ids[row] < doc_ids[row - 1]):
            value = own[row]
        else:
            value = float(np.nextafter(np.float32(above), np.float32(-np.inf)))
        written[row] = above = value
    return written


def write_trec_qrels(qrels: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write qrels as a TREC qrels file (iteration 0), sorted by query_id and doc_id."""
    missing = {"query_id", "doc_id", "relevance"} - set(qrels.columns)
    if missing:
        raise ValueError(f"qrels lacks column(s) {', '.join(sorted(missing))}")
    if not pd.api.types.is_integer_dtype(qrels["relevance"]) or qrels["relevance"].isna().any():
        raise ValueError(f"qrels column 'relevance' must hold integers, got dtype {qrels['relevance'].dtype}")
    ordered = qrels.sort_values(["query_id", "doc_id"])
    for column in ("query_id", "doc_id"):
        _check_one_word(ordered[column], f"qrels column {column!r}")
    lines = pd.DataFrame({"query_id": ordered["query_id"], "iteration": 0, "doc_id": ordered["doc_id"],
                          "relevance": ordered["relevance"]})
    atomic_write_text(path, lambda handle: _write_lines(lines, handle))


def _read(path: str | os.PathLike, layout: _Layout) -> pd.DataFrame:
    if layout.header is not None:
        with open(path, encoding="utf-8") as handle:
            first_line = handle.readline().rstrip("\r\n")
        if tuple(first_line.split(layout.separator)) != layout.header:
            raise ValueError(
                f"{path}, line 1: expected the header {'<TAB>'.join(layout.header)!r}, got {first_line!r}. "
                f"Fix: {layout.describe()}, after that header line"
            )
    # Integers are read as text and checked here: pandas would take "1e5" for 100000 and warn on "1e309".
    dtypes = {i: np.float64 if layout.numbers.get(i) is float else str for i in range(len(layout.fields))}
    integers = [i for i, kind in layout.numbers.items() if kind is int]
    try:
        with open_binary(Path(path)) as handle:
            frame = pd.read_csv(
                handle,
                sep=r"\s+" if layout.separator is None else layout.separator,
                header=None,
                skiprows=1 if layout.header else 0,
                dtype=dtypes,
                quoting=csv.QUOTE_NONE,
                na_filter=False,  # doc ids such as "NA" or "null" stay strings
                engine="c",
                encoding="utf-8",
                compression=None,  # open_binary decompresses *.gz; any other compressed file is refused as binary
            )
    except pd.errors.EmptyDataError:
        return pd.DataFrame({i: pd.Series(dtype=np.int64 if i in integers else dtype) for i, dtype in dtypes.items()})
    except UnicodeDecodeError:
        for _ in utf8_lines(Path(path)):  # raises naming the line and the byte, or what kind of file this is
            pass
        raise
    except ValueError:  # pandas' ParserError is a ValueError too: a comment, trailing text or a malformed line
        return _read_lines(path, layout)
    # pandas pads short lines and drops nothing else silently: recheck the cheap invariants. A line whose first
    # field starts with # is a comment to trec_eval 10, even one that happens to hold the right number of fields.
    if frame.shape[1] != len(layout.fields) or not _complete(frame, layout) or frame[0].str.startswith("#").any():
        return _read_lines(path, layout)
    try:
        return frame.astype({i: np.int64 for i in integers})
    except OverflowError:  # an integer beyond int64
        return _read_lines(path, layout)


def _read_lines(path: str | os.PathLike, layout: _Layout) -> pd.DataFrame:
    """The file line by line, as trec_eval 10 reads it: blank lines and lines starting with # skipped, a run's
    fields after the sixth ignored; the first malformed line refused with its number, the problem and the fix. The
    slow path: only for a file the fast reader could not take whole."""
    rows = []
    for number, line in utf8_lines(Path(path)):
        if layout.header is not None and number == 1:
            continue
        text = line.rstrip("\r\n")
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        fields = text.split() if layout.separator is None else text.split(layout.separator)
        if layout.trailing and len(fields) > len(layout.fields):
            fields = fields[:len(layout.fields)]
        found = _line_problem(fields, layout)
        if found:
            problem, fix = found
            raise ValueError(f"{path}, line {number}: {problem} in {text!r}. Fix: {fix}")
        rows.append(fields)
    columns = {}
    for position in range(len(layout.fields)):
        values = [row[position] for row in rows]
        kind = layout.numbers.get(position)
        columns[position] = pd.Series(values, dtype=np.int64 if kind is int else np.float64 if kind is float
                                      else object).astype(np.int64 if kind is int else np.float64 if kind is float
                                                          else str)
    return pd.DataFrame(columns)


def _complete(frame: pd.DataFrame, layout: _Layout) -> bool:
    for position in range(len(layout.fields)):
        column = frame[position]
        if layout.numbers.get(position) is float:
            if not np.isfinite(column.to_numpy()).all():
                return False
        elif layout.numbers.get(position) is int:
            if not column.str.fullmatch(INTEGER.pattern).all():
                return False
        elif column.isna().any() or (column == "").any():
            return False
    return True


def _line_problem(fields: list[str], layout: _Layout) -> tuple[str, str] | None:
    """What is wrong with a line and the fix, or None."""
    fix = layout.describe()
    number_fix = f"{layout.number_fix}; {fix}" if layout.number_fix else fix
    if len(fields) != len(layout.fields):
        return f"expected {len(layout.fields)} fields, found {len(fields)}", fix
    for position, field in enumerate(fields):
        name = layout.fields[position]
        if not field:
            return f"empty {name}", fix
        kind = layout.numbers.get(position)
        if kind is int and not INTEGER.fullmatch(field):
            return f"{name} {field!r} is not an integer", number_fix
        if kind is int and int(field) not in INT64:
            return f"{name} {field} is out of range", number_fix
        try:
            if kind is float and not math.isfinite(float(field)):
                return f"{name} {field!r} is not a finite number", number_fix
        except ValueError:
            return f"{name} {field!r} is not a number", number_fix
    return None


def _check_one_word(column: pd.Series, what: str) -> None:
    spaced = column.str.contains(r"\s", regex=True).to_numpy(dtype=bool)
    if spaced.any():
        value = column.iloc[int(np.argmax(spaced))]
        raise ValueError(f"{what} holds {value!r}; TREC files need ids without whitespace")


def _write_lines(lines: pd.DataFrame, handle: TextIO) -> None:
    lines.to_csv(handle, sep=" ", header=False, index=False, quoting=csv.QUOTE_NONE, lineterminator="\n")

