"""Shadow replay, the step between the offline decision and a guarded online experiment: a production query log
replayed, without judgments, through the frozen first stage and every system (``pipeline.shadow`` runs them); this
module reads the log and measures what the replay can say without qrels.

One logged query per JSON line (or Parquet row)::

    {"query": "how do statins lower cholesterol", "time": "2026-11-02T09:00:03Z", "segment": "mobile", "count": 3,
     "user_groups": ["staff"]}

``segment``, ``count`` (how many times the query arrived at that time, default 1) and ``user_groups`` (the asking
user's groups, for the access filter; none: the public documents only) are optional. What cannot be read is refused
with the file, the line and the field; doubtful lines (a time earlier than the line above) are counted and reported.

What is measured per system, against the baseline's ranking of the same candidates: how far the rankings agree
(``stats.agreement``) and the share of queries whose top k changes; the latency at the log's own arrival pattern (each
query's measured cold service time pushed through one FIFO server at the logged arrival times, compressed by
``speed``: ``queue_latency``); the machine time the log's traffic costs; and per segment the guardrails a replay can
see (queries with no candidate at all, fallbacks to the fused order, timeouts). The log's queries then enter the
judging queue ordered by how much a judgment would matter: traffic times how far the systems disagree there.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import CollectionError, is_timeout
from .logs import log_records, log_time, refusal, text_field

@dataclass(frozen=True)
class QueryLog:
    """The log's window of arrivals (``arrivals``: query_id, seconds since the first arrival, segment, count; in time
    order) and its distinct queries (``queries``: query_id, text, user_groups), with what was doubtful
    (``out_of_order``) and, above ``max_queries`` distinct queries, the seeded sample's record (``distinct``,
    ``sampled``, ``seed``)."""

    arrivals: pd.DataFrame
    queries: pd.DataFrame
    lines: int
    out_of_order: int
    distinct: int | None
    """Distinct query texts in the log; None when there were more than ``max_queries`` (sampled)."""
    traffic: pd.Series
    """Each sampled query's arrivals over the whole log (summed counts), the window's and those after it."""
    sampled: bool = False
    seed: int | None = None
    window_lines: int | None = None
    """Where ``arrivals`` stop: the log line at which the sampled queries' arrivals reached ``window_arrivals``
    (None: the whole log is in them)."""
    after_window: int = 0
    """Arrivals (summed counts) of the sampled queries after that line: in ``traffic``, not in ``arrivals``."""


def log_query_id(text: str) -> str:
    """A logged query's id: the same text is the same query, whatever line it is on."""
    return "log-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _priority(seed: int, query_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}:{query_id}".encode(), digest_size=8).digest(), "big")


def read_query_log(path: str | Path, *, max_queries: int | None = None, seed: int = 0,
                   window_arrivals: int | None = None, now: datetime | None = None) -> QueryLog:
    """The query log at ``path`` (JSON lines or Parquet), streamed twice. The first pass checks every field, counts
    each query's traffic and, above ``max_queries`` distinct query texts, keeps the ``max_queries`` whose seeded hash
    of the id is smallest (a bottom-k sample). The second keeps the sampled queries' arrivals from the log's start up
    to the line where they number ``window_arrivals`` (counts summed): a contiguous stretch of the arrival pattern;
    the sampled arrivals after it are only counted (``traffic``, ``after_window``). Memory is bounded by
    ``max_queries`` and ``window_arrivals``, whatever the log's length."""
    path = Path(path)
    if not path.exists():
        raise CollectionError(f"{path}: no such query log. Fix: point online.shadows.<name>.log at a JSON lines or "
                              "Parquet file of logged queries (docs/online.md, \"Shadow replay\")")
    now = now or datetime.now(timezone.utc)
    texts: dict[str, tuple[str, tuple[str, ...] | None]] = {}
    heap: list[tuple[int, str]] = []
    seen: set[str] = set()
    traffic: dict[str, int] = {}
    lines, out_of_order, last = 0, 0, None
    for number, record in log_records(path):
        lines += 1
        text, moment, count, groups, _ = _logged(record, f"{path}:{number}", now)
        if last is not None and moment < last:
            out_of_order += 1
        last = moment if last is None else max(last, moment)
        query_id = log_query_id(text)
        if max_queries is None or len(seen) <= max_queries:  # distinct queries, counted up to one past the bound
            seen.add(query_id)
        if query_id not in texts:
            priority = _priority(seed, query_id)
            if max_queries is None or len(heap) < max_queries:
                heapq.heappush(heap, (-priority, query_id))
            elif priority < -heap[0][0]:
                _, dropped = heapq.heapreplace(heap, (-priority, query_id))
                del texts[dropped], traffic[dropped]
            else:
                continue
        if texts.setdefault(query_id, (text, groups))[1] != groups:
            raise refusal(f"{path}:{number}", "user_groups", "the same query text was logged with other groups above",
                          "log one user group set per query text, or tell the texts apart")
        traffic[query_id] = traffic.get(query_id, 0) + count
    if not texts:
        raise CollectionError(f"{path}: no logged query. Fix: one JSON object per line with at least query and time")
    rows, kept, closing = [], 0, None
    for number, record in log_records(path):  # the sample is final: keep its arrivals from the start
        text, moment, count, _, segment = _logged(record, f"{path}:{number}", now)
        query_id = log_query_id(text)
        if query_id in texts:
            rows.append({"query_id": query_id, "time": moment, "segment": segment, "count": count})
            kept += count
            if window_arrivals is not None and kept >= window_arrivals:
                closing = number
                break
    after_window = sum(traffic.values()) - kept
    arrivals = pd.DataFrame(rows).sort_values(["time", "query_id"], kind="stable").reset_index(drop=True)
    arrivals["seconds"] = (arrivals["time"] - arrivals["time"].iloc[0]).dt.total_seconds()
    queries = pd.DataFrame([{"query_id": qid, "text": text, "user_groups": None if groups is None else list(groups)}
                            for qid, (text, groups) in sorted(texts.items())])
    sampled = max_queries is not None and len(seen) > max_queries
    return QueryLog(arrivals[["query_id", "seconds", "segment", "count"]], queries, lines, out_of_order,
                    None if sampled else len(seen), pd.Series(traffic, name="traffic").sort_index(), sampled,
                    seed if sampled else None, closing if after_window else None, after_window)


def _logged(record: Any, where: str, now: datetime) -> tuple[str, datetime, int, tuple[str, ...] | None, str]:
    """One logged query's text, time, count, user groups (sorted, None without) and segment, every field checked."""
    if not isinstance(record, Mapping):
        raise CollectionError(f"{where}: expected a JSON object (one logged query), got {type(record).__name__}. "
                              "Fix: one object per line, e.g. "
                              "{\"query\": \"...\", \"time\": \"2026-11-02T09:00:03Z\"}")
    text = text_field(record, "query", where)
    moment = log_time(record.get("time"), where, now)
    count = record.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise refusal(where, "count", f"expected a whole number >= 1, got {count!r}", "count the arrivals")
    groups = record.get("user_groups")
    if groups is not None and (not isinstance(groups, list) or not all(isinstance(g, str) and g for g in groups)):
        raise refusal(where, "user_groups", f"expected a list of group names, got {groups!r}"[:200],
                      "list the asking user's groups, or leave the field out (public documents only)")
    segment = text_field(record, "segment", where, required=False) or "all"
    return text, moment, count, None if groups is None else tuple(sorted(set(groups))), segment


def queue_latency(arrivals_s: np.ndarray, service_s: np.ndarray, speed: float = 1.0) -> dict[str, float]:
    """Response times of one FIFO server at the given arrival times (seconds, in order; divided by ``speed`` to
    replay the log faster than it was recorded) with each request's service time: Lindley's recursion,
    start = max(arrival, previous finish). p50/p95/p99 in ms, the mean wait, and the server's utilisation."""
    if speed <= 0:
        raise ValueError(f"speed must be > 0, got {speed}")
    arrivals = np.asarray(arrivals_s, dtype=np.float64) / speed
    service = np.asarray(service_s, dtype=np.float64)
    finish, response, wait = 0.0, np.empty(len(arrivals)), np.empty(len(arrivals))
    for i, (arrive, serve) in enumerate(zip(arrivals, service)):
        start = max(arrive, finish)
        finish = start + serve
        wait[i], response[i] = start - arrive, finish - arrive
    span = max(finish - arrivals[0], 1e-12) if len(arrivals) else 1.0
    p50, p95, p99 = (np.percentile(response, [50, 95, 99]) * 1000 if len(response) else (np.nan,) * 3)
    return {"p50_ms": float(p50), "p95_ms": float(p95), "p99_ms": float(p99),
            "mean_wait_ms": float(wait.mean() * 1000) if len(wait) else float("nan"),
            "utilisation": float(service.sum() / span) if len(service) else 0.0}


def expand_arrivals(arrivals: pd.DataFrame) -> pd.DataFrame:
    """One row per arrival (a line's ``count`` repeated at its time)."""
    return arrivals.loc[arrivals.index.repeat(arrivals["count"])].reset_index(drop=True)


def segment_guardrails(arrivals: pd.DataFrame, latency: pd.DataFrame, answered: set[str],
                       fallback_mode: str) -> dict[str, dict[str, int]]:
    """Per segment, over its arrivals: how many found no candidate at all (an empty page), fell back to the fused
    order, or fell back because the deadline passed."""
    modes = latency.set_index("query_id")
    found = {}
    for segment, rows in arrivals.groupby("segment", sort=True):
        weights = rows.groupby("query_id")["count"].sum()
        fell = [q for q in weights.index if q in modes.index and modes.at[q, "mode"] == fallback_mode]
        timed_out = [q for q in fell if is_timeout(modes.at[q, "reason"])]
        found[str(segment)] = {"arrivals": int(weights.sum()),
                               "empty": int(weights[[q not in answered for q in weights.index]].sum()),
                               "fallbacks": int(weights[fell].sum()), "timeouts": int(weights[timed_out].sum())}
    return found


def judging_priority(traffic: pd.Series, disagreement: Mapping[str, pd.Series]) -> pd.DataFrame:
    """The log's queries ordered by how much judging them would matter: their traffic (``QueryLog.traffic``) times
    the mean over challengers of 1 - RBO with the baseline (where the systems disagree, a judgment decides between
    them; where they agree, it changes no comparison). Ties by query id."""
    traffic = traffic.rename_axis("query_id")
    frame = pd.DataFrame(disagreement).reindex(traffic.index)
    mean_gap = frame.mean(axis=1).fillna(0.0)
    table = pd.DataFrame({"traffic": traffic, "disagreement": mean_gap, "priority": traffic * mean_gap})
    return table.reset_index().sort_values(["priority", "query_id"], ascending=[False, True], kind="stable")
