"""Read and write TREC run and qrels files, BEIR qrels TSV, and Parquet runs and qrels.

- TREC run: one line per document, ``query_id Q0 doc_id rank score tag``, whitespace-separated.
  trec_eval orders documents by score and ignores the rank column, so ``read_trec_run``
  returns query_id, doc_id and score; ``write_trec_run`` writes scores that give trec_eval the run's own order.
- TREC qrels: ``query_id iteration doc_id relevance``, the iteration ignored.
- BEIR qrels: a TSV whose header is ``query-id<TAB>corpus-id<TAB>score`` (read by ``rerankeval.data.beir``).

A malformed line raises ValueError naming the file, the line number and the expected layout.
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
from ..eval import assign_ranks
from .beir import QRELS_HEADER, read_qrels_tsv, utf8_lines


@dataclass(frozen=True)
class _Layout:
    name: str
    fields: tuple[str, ...]
    numbers: dict[int, type]  # field position -> int or float
    separator: str | None  # None: any run of whitespace
    header: tuple[str, ...] | None
    example: str

    def describe(self) -> str:
        separator = "whitespace" if self.separator is None else "tab"
        layout = " ".join(self.fields)
        return f"each line of a {self.name} reads '{layout}' ({separator}-separated), e.g. {self.example!r}"


_RUN = _Layout(
    "TREC run", ("query_id", "Q0", "doc_id", "rank", "score", "tag"), {4: float}, None, None, "q1 Q0 doc7 1 12.5 bm25"
)
_QRELS = _Layout("TREC qrels", ("query_id", "iteration", "doc_id", "relevance"), {3: int}, None, None, "q1 0 doc7 2")


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


def read_qrels(path: str | os.PathLike) -> pd.DataFrame:
    """Qrels from Parquet (.parquet: query_id, doc_id, relevance), BEIR TSV (by its header) or TREC qrels."""
    if Path(path).suffix == ".parquet":
        return _read_parquet(path, ["query_id", "doc_id", "relevance"])
    with open(path, "rb") as handle:
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


def write_trec_run(run: pd.DataFrame, path: str | os.PathLike, tag: str) -> None:
    """Write a run as a TREC run file, sorted by query_id and rank.

    Ranks come from the run's rank column, or from its scores by trec_eval's order. trec_eval reads only the scores,
    so the scores written must give that same order: the run's own scores when they are finite and strictly
    decreasing down every query's ranking, otherwise ``-rank`` for every row (e.g. a pipeline run whose candidates
    beyond the rerank depth have no score, or whose scores tie).
    """
    if not tag or any(character.isspace() for character in tag):
        raise ValueError(f"the run tag must be one word without whitespace, got {tag!r}")
    ranked = assign_ranks(run).sort_values(["query_id", "rank"])
    for column in ("query_id", "doc_id"):
        _check_one_word(ranked[column], f"run column {column!r}")
    score = ranked["score"] if _scores_give_the_order(ranked) else -ranked["rank"]
    lines = pd.DataFrame(
        {"query_id": ranked["query_id"], "q0": "Q0", "doc_id": ranked["doc_id"], "rank": ranked["rank"],
         "score": score, "tag": tag}
    )
    atomic_write_text(path, lambda handle: _write_lines(lines, handle))


def _scores_give_the_order(ranked: pd.DataFrame) -> bool:
    """Whether trec_eval would rebuild the rank order from the scores (``ranked`` is in rank order): finite scores,
    decreasing within each query, equal scores in doc id descending order (trec_eval's tie-break)."""
    if "score" not in ranked.columns:
        return False
    scores = ranked["score"].to_numpy(dtype=np.float64)
    if not np.isfinite(scores).all():
        return False
    doc_ids = ranked["doc_id"].to_numpy(dtype=object)
    same_query = ranked["query_id"].to_numpy()[1:] == ranked["query_id"].to_numpy()[:-1]
    decreasing = scores[1:] < scores[:-1]
    tie_in_order = (scores[1:] == scores[:-1]) & (doc_ids[1:] < doc_ids[:-1])
    return bool(np.all((decreasing | tie_in_order)[same_query]))


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
    dtypes = {i: {int: np.int64, float: np.float64}.get(layout.numbers.get(i), str) for i in range(len(layout.fields))}
    try:
        frame = pd.read_csv(
            path,
            sep=r"\s+" if layout.separator is None else layout.separator,
            header=None,
            skiprows=1 if layout.header else 0,
            dtype=dtypes,
            quoting=csv.QUOTE_NONE,
            na_filter=False,  # doc ids such as "NA" or "null" stay strings
            engine="c",
        )
    except pd.errors.EmptyDataError:
        return pd.DataFrame({i: pd.Series(dtype=dtype) for i, dtype in dtypes.items()})
    except UnicodeDecodeError:
        for _ in utf8_lines(Path(path)):  # raises naming the line and the byte
            pass
        raise
    except ValueError as exc:  # pandas' ParserError is a ValueError too
        _raise_first_malformed(path, layout)
        raise ValueError(f"{path}: cannot read as a {layout.name}: {exc}") from exc
    # pandas pads short lines and drops nothing else silently: recheck the cheap invariants.
    if frame.shape[1] != len(layout.fields) or not _complete(frame, layout):
        _raise_first_malformed(path, layout)
        raise ValueError(f"{path}: cannot read as a {layout.name}; {layout.describe()}")
    return frame


def _complete(frame: pd.DataFrame, layout: _Layout) -> bool:
    for position in range(len(layout.fields)):
        column = frame[position]
        if position in layout.numbers:
            if layout.numbers[position] is float and not np.isfinite(column.to_numpy()).all():
                return False
        elif column.isna().any() or (column == "").any():
            return False
    return True


def _raise_first_malformed(path: str | os.PathLike, layout: _Layout) -> None:
    """Find the first malformed line (slowly, line by line: only on the error path) and raise for it."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if layout.header is not None and number == 1:
                continue
            text = line.rstrip("\r\n")
            fields = text.split() if layout.separator is None else text.split(layout.separator)
            if not text.strip():
                continue
            problem = _line_problem(fields, layout)
            if problem:
                raise ValueError(f"{path}, line {number}: {problem} in {text!r}. Fix: {layout.describe()}")


def _line_problem(fields: list[str], layout: _Layout) -> str | None:
    if len(fields) != len(layout.fields):
        return f"expected {len(layout.fields)} fields, found {len(fields)}"
    for position, field in enumerate(fields):
        name = layout.fields[position]
        if not field:
            return f"empty {name}"
        kind = layout.numbers.get(position)
        try:
            if kind is int:
                int(field)
            elif kind is float and not math.isfinite(float(field)):
                return f"{name} {field!r} is not a finite number"
        except ValueError:
            return f"{name} {field!r} is not {'an integer' if kind is int else 'a number'}"
    return None


def _check_one_word(column: pd.Series, what: str) -> None:
    spaced = column.str.contains(r"\s", regex=True).to_numpy(dtype=bool)
    if spaced.any():
        value = column.iloc[int(np.argmax(spaced))]
        raise ValueError(f"{what} holds {value!r}; TREC files need ids without whitespace")


def _write_lines(lines: pd.DataFrame, handle: TextIO) -> None:
    lines.to_csv(handle, sep=" ", header=False, index=False, quoting=csv.QUOTE_NONE, lineterminator="\n")

