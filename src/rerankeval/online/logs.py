"""Reading an online experiment's interaction log: one impression per JSON line (or per Parquet row), checked field by
field, streamed, and sampled with a stated seed above a bound (``read_log``).

One impression::

    {"impression": "i000017", "time": "2026-11-02T09:00:03Z", "query_id": "q0002", "segment": "mobile",
     "arm": "interleaved", "shown": ["d0161-p2", "d0135-p1"], "origin": ["ce_minilm_ft", "fusion"],
     "clicks": [{"position": 1, "dwell_s": 31.5}], "reformulated": false, "latency_ms": 84.0}

``arm``: ``interleaved`` in an interleaving experiment (``origin`` then names, per shown result, the system whose
pick it was), else the system whose page was shown (an A/B test). ``segment``, ``reformulated``, ``latency_ms`` and
a click's ``dwell_s`` are optional. What cannot be read is refused with the file, the line and the field
(``CollectionError``); what can be read but is doubtful is counted and reported (``LogCounts``): a query outside the
snapshot, a shown result outside the query's frozen candidates, a repeated impression id (the first is kept), a time
earlier than a line above it.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core.errors import CollectionError
from ..data.beir import refuse_irregular, utf8_lines

INTERLEAVED = "interleaved"
MAX_SHOWN = 1000


@dataclass(frozen=True)
class Impression:
    impression: str
    time: datetime
    query_id: str
    segment: str
    arm: str
    shown: tuple[str, ...]
    origin: tuple[str, ...]
    clicks: tuple[int, ...]
    """1-based positions clicked, in the order they were clicked."""
    dwell_s: tuple[float | None, ...]
    reformulated: bool
    latency_ms: float | None


@dataclass
class LogCounts:
    """What was read, and what was doubtful but kept (or dropped, for repeats), by kind."""

    lines: int = 0
    impressions: int = 0
    """Lines read less the repeats found (with sampling, a repeat of an impression not kept cannot be found)."""
    unknown_queries: int = 0
    outside_candidates: int = 0
    """Impressions showing at least one result that is not among the query's frozen candidates."""
    duplicates: int = 0
    out_of_order: int = 0
    sampled: bool = False
    seed: int | None = None
    examples: dict[str, list[str]] = field(default_factory=dict)
    """Up to three lines of each doubtful kind, as ``file:line``, to look at."""

    def note(self, kind: str, where: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        found = self.examples.setdefault(kind, [])
        if len(found) < 3:
            found.append(where)

    def to_dict(self) -> dict[str, Any]:
        return {"lines": self.lines, "impressions": self.impressions, "unknown_queries": self.unknown_queries,
                "outside_candidates": self.outside_candidates, "duplicates": self.duplicates,
                "out_of_order": self.out_of_order, "sampled": self.sampled, "seed": self.seed,
                "examples": self.examples}


def refusal(where: str, key: str, problem: str, fix: str) -> CollectionError:
    return CollectionError(f"{where}: field {key!r}: {problem}. Fix: {fix}")


def text_field(record: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    value = record.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise refusal(where, key, f"expected a non-empty string, got {value!r}",
                      f"give every impression its {key}")
    return value


def _number(value: Any, where: str, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise refusal(where, key, f"expected a finite number >= 0, got {value!r}", f"write {key} as a number")
    return float(value)


def log_time(value: Any, where: str, now: datetime) -> datetime:
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise refusal(where, "time", f"{value!r} is not an ISO 8601 time", "write e.g. 2026-11-02T09:00:03Z") from None
    if moment.tzinfo is None:
        raise refusal(where, "time", f"{value!r} has no time zone", "append Z (UTC) or an offset")
    moment = moment.astimezone(timezone.utc)
    if moment > now:
        raise refusal(where, "time", f"{value} lies in the future (it is {now.isoformat(timespec='seconds')} now)",
                      "check the logging clock; a log holds what happened")
    return moment


def parse_impression(record: Any, where: str, systems: tuple[str, str], now: datetime) -> Impression:
    """One impression, every field checked; ``systems``: (challenger, baseline), the only sides and arms allowed."""
    if not isinstance(record, Mapping):
        raise CollectionError(f"{where}: expected a JSON object (one impression), got {type(record).__name__}")
    arm = text_field(record, "arm", where)
    if arm not in (INTERLEAVED, *systems):
        raise refusal(where, "arm", f"{arm!r} is not {INTERLEAVED!r} nor a system of this experiment "
                      f"({', '.join(systems)})", "name the arm as online.readouts names its systems")
    shown = record.get("shown")
    if not isinstance(shown, list) or not all(isinstance(doc, str) and doc for doc in shown) or len(shown) > MAX_SHOWN:
        raise refusal(where, "shown", f"expected a list of at most {MAX_SHOWN} doc ids, got {shown!r}"[:300],
                      "list the results shown, top first (an empty list for an empty page)")
    if len(set(shown)) != len(shown):
        raise refusal(where, "shown", "a result is shown twice", "log each shown result once")
    origin = record.get("origin", [])
    if arm == INTERLEAVED:
        if not isinstance(origin, list) or len(origin) != len(shown) or not all(side in systems for side in origin):
            raise refusal(where, "origin", f"expected one of {', '.join(systems)} for each of the {len(shown)} shown "
                          f"results, got {origin!r}"[:300], "log which system picked each result")
    elif origin not in ([], None):
        raise refusal(where, "origin", "given for an A/B arm", "leave origin out unless arm is interleaved")
    clicks = record.get("clicks", [])
    if not isinstance(clicks, list):
        raise refusal(where, "clicks", f"expected a list, got {clicks!r}", "log clicks as [{\"position\": 1}, ...]")
    positions, dwell = [], []
    for number, click in enumerate(clicks):
        key = f"clicks[{number}].position"
        position = click.get("position") if isinstance(click, Mapping) else None
        if isinstance(position, bool) or not isinstance(position, int):
            raise refusal(where, key, f"expected an integer, got {position!r}", "log the 1-based shown position")
        if not 1 <= position <= len(shown):
            raise refusal(where, key, f"position {position} was never shown (the page had {len(shown)} results)",
                          "log the 1-based position of a shown result")
        positions.append(position)
        dwell.append(_number(click.get("dwell_s"), where, f"clicks[{number}].dwell_s"))
    reformulated = record.get("reformulated", False)
    if not isinstance(reformulated, bool):
        raise refusal(where, "reformulated", f"expected true or false, got {reformulated!r}", "write a JSON boolean")
    return Impression(
        impression=text_field(record, "impression", where), time=log_time(record.get("time"), where, now),
        query_id=text_field(record, "query_id", where),
        segment=text_field(record, "segment", where, required=False) or "all",
        arm=arm, shown=tuple(shown), origin=tuple(origin or ()), clicks=tuple(positions), dwell_s=tuple(dwell),
        reformulated=reformulated, latency_ms=_number(record.get("latency_ms"), where, "latency_ms"))


def log_records(path: Path) -> Iterator[tuple[int, Any]]:
    """(line or row number, the record), streamed: a JSON lines file (``*.gz``: compressed) line by line, with the
    collection reader's bounds (``data.beir.utf8_lines``: no FIFO or device, no line over its limit, a bad byte named
    by its line), a Parquet file batch by batch."""
    refuse_irregular(path)
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        number = 0
        try:
            for batch in pq.ParquetFile(path).iter_batches(batch_size=8192):
                for record in batch.to_pylist():
                    number += 1
                    yield number, record
        except pa.ArrowException as err:
            raise CollectionError(f"{path}: not a readable Parquet file after row {number} ({err}). Fix: write the "
                                  "log again, or as JSON lines") from None
        return
    for number, line in utf8_lines(path):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as err:
            raise CollectionError(f"{path}:{number}: not JSON ({err.msg} at column {err.colno}). Fix: one JSON "
                                  "object per line") from None
        except RecursionError:
            raise CollectionError(f"{path}:{number}: not JSON (nested too deeply for a record). Fix: one flat JSON "
                                  "object per line (docs/online.md)") from None


def _priority(seed: int, impression: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}:{impression}".encode(), digest_size=8).digest(), "big")


def read_log(path: str | Path, systems: tuple[str, str], queries: Mapping[str, Any],
             candidates: Mapping[str, set[str]], *, max_impressions: int, seed: int,
             now: datetime | None = None) -> tuple[list[Impression], LogCounts]:
    """The impressions of ``path`` in time order, and the counts of what was doubtful. ``queries``: the snapshot's
    query ids; ``candidates``: each query's frozen candidate doc ids.

    Above ``max_impressions`` distinct impressions, the sample is the ``max_impressions`` whose seeded hash of the
    impression id is smallest (a bottom-k sample: uniform, one pass, bounded memory, and a repeated impression has
    its first's hash, so repeats are found among the kept ones however far apart they are). Without sampling the
    repeats are exact; with it, they are counted among the sample."""
    path = Path(path)
    if not path.exists():
        raise CollectionError(f"{path}: no such interaction log. Fix: point online.readouts.<name>.log at the file")
    now = now or datetime.now(timezone.utc)
    counts, kept, heap, last_time = LogCounts(), {}, [], None
    for number, record in log_records(path):
        where = f"{path}:{number}"
        counts.lines += 1
        found = parse_impression(record, where, systems, now)
        if found.impression in kept:
            counts.note("duplicates", where)
            continue
        if last_time is not None and found.time < last_time:
            counts.note("out_of_order", where)
        last_time = found.time if last_time is None else max(last_time, found.time)
        if found.query_id not in queries:
            counts.note("unknown_queries", where)
        elif not set(found.shown) <= candidates.get(found.query_id, set()):
            counts.note("outside_candidates", where)
        counts.impressions += 1
        priority = _priority(seed, found.impression)
        if len(heap) < max_impressions:
            heapq.heappush(heap, (-priority, found.impression))
            kept[found.impression] = found
        elif priority < -heap[0][0]:
            _, dropped = heapq.heapreplace(heap, (-priority, found.impression))
            del kept[dropped]
            kept[found.impression] = found
    if counts.impressions > max_impressions:
        counts.sampled, counts.seed = True, seed
    if not kept:
        raise CollectionError(f"{path}: no impression in the log. Fix: one JSON object per line (docs/online.md)")
    return sorted(kept.values(), key=lambda found: (found.time, found.impression)), counts
