"""Per-query traffic weights: how often each query (or the kind of need it stands for) is asked in production.

A collection gives them either as ``metadata.weight`` on every query or as ``traffic.tsv`` in its folder (header
``query-id<TAB>weight``, one line per query), not both. A weight is a finite number >= 0 (0: never asked). The
snapshot stores them as the queries table's ``weight`` column (part of each row's hash), and the compare stage adds
weighted means beside the macro average (``stats.weighted``).
"""

from __future__ import annotations

import math
from pathlib import Path

from ..core.errors import CollectionError

TRAFFIC_FILE = "traffic.tsv"
WEIGHT_KEY = "weight"
TRAFFIC_HEADER = ("query-id", "weight")


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise CollectionError(f"{where}: weight {value!r} is not a number. Fix: a number >= 0.")
    try:
        number = float(value)
    except ValueError:
        raise CollectionError(f"{where}: weight {value!r} is not a number. Fix: a number >= 0.") from None
    if not math.isfinite(number) or number < 0:
        raise CollectionError(f"{where}: weight {value!r} must be a finite number >= 0.")
    return number


def query_weights(folder: Path, query_ids: list[str], records: dict[str, tuple[Path, int, dict]]) -> list[float] | None:
    """Each query's weight in ``query_ids`` order, or None when the collection gives none.

    ``records``: query id -> (file, line, JSON record) as read from the queries files."""
    in_metadata = {qid: records[qid] for qid in query_ids if WEIGHT_KEY in (records[qid][2].get("metadata") or {})}
    path = folder / TRAFFIC_FILE
    if path.exists() and in_metadata:
        raise CollectionError(f"{path}: the queries also carry metadata.weight. Fix: give weights in one place.")
    if in_metadata:
        missing = [qid for qid in query_ids if qid not in in_metadata]
        if missing:
            source, line, _ = records[missing[0]]
            raise CollectionError(f"{source}:{line}: query {missing[0]!r} has no metadata.weight while others do "
                                  f"({len(missing)} queries lack one). Fix: give every query a weight "
                                  "(0: never asked).")
        return [_number(records[qid][2]["metadata"][WEIGHT_KEY], f"{records[qid][0]}:{records[qid][1]}")
                for qid in query_ids]
    if not path.exists():
        return None
    return _read_traffic(path, query_ids)


def _read_traffic(path: Path, query_ids: list[str]) -> list[float]:
    weights: dict[str, float] = {}
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    if not lines or tuple(lines[0].split("\t")) != TRAFFIC_HEADER:
        raise CollectionError(f"{path}:1: expected the header 'query-id<TAB>weight'.")
    known = set(query_ids)
    for line_no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise CollectionError(f"{path}:{line_no}: expected 'query-id<TAB>weight', got {line!r}.")
        query_id, value = fields[0].strip(), fields[1].strip()
        if query_id in weights:
            raise CollectionError(f"{path}:{line_no}: query {query_id!r} is listed twice. Fix: one line per query.")
        weights[query_id] = _number(value, f"{path}:{line_no}")
    unknown = sorted(set(weights) - known)
    missing = [qid for qid in query_ids if qid not in weights]
    if missing:
        raise CollectionError(f"{path}: {len(missing)} judged queries have no weight (first: {missing[0]!r}). "
                              "Fix: give every judged query a line (weight 0: never asked).")
    if unknown and len(unknown) == len(weights):
        raise CollectionError(f"{path}: no listed query id is a judged query (first: {unknown[0]!r}).")
    return [weights[qid] for qid in query_ids]
