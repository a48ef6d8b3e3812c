"""A synthetic interaction log: simulated users (``clicks``) on the pages two systems' rankings give, in the log
format ``online.logs`` reads. Synthetic, and says so: it shows the readout's tables on a collection without traffic,
and its clicks follow the click model, not people.

Each impression asks a query drawn uniformly, at exponential inter-arrival times from a fixed start, in a segment
drawn from ``SEGMENTS``; a team-draft log shows an interleaved page (``origin`` per result), an A/B log one arm's
page. Latency is log-normal around each system's stated median. A few deliberate flaws exercise the log checks: the
last ``REPEATS`` impressions are logged twice, and ``LATE`` lines are written with a time before the line above.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone

import numpy as np

from .clicks import NO_RESULT, simulate_clicks
from .config import ClickModelConfig
from .interleaving import INTERLEAVE

START = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)
SEGMENTS = (("web", 0.6), ("mobile", 0.4))
REPEATS = 3
LATE = 2


def synthetic_log(rankings: Mapping[str, Mapping[str, Sequence[str]]], grades: Mapping[str, Mapping[str, int]],
                  query_ids: Sequence[str], challenger: str, baseline: str, *, design: str, impressions: int,
                  median_ms: Mapping[str, float], seed: int, depth: int = 10,
                  model: ClickModelConfig = ClickModelConfig()) -> list[str]:
    """The log's lines (JSON, no newline), seeded."""
    rng = np.random.default_rng([seed, 0x5E])
    top_grade = max([max(found.values(), default=0) for found in grades.values()] + [1])
    asked = rng.integers(len(query_ids), size=impressions)
    gaps = rng.exponential(2.0, size=impressions)
    segments = rng.choice([name for name, _ in SEGMENTS], p=[share for _, share in SEGMENTS], size=impressions)
    records = []
    for number, (query_index, gap, segment) in enumerate(zip(asked, np.cumsum(gaps), segments)):
        query = query_ids[query_index]
        if design != "ab":  # team_draft or probabilistic: an interleaved page, each result with its origin
            pages = INTERLEAVE[design](rankings[challenger].get(query, ()), rankings[baseline].get(query, ()), depth)
            page = pages[rng.choice(len(pages), p=[found.probability for found in pages])]
            shown, arm = list(page.shown), "interleaved"
            origin = [challenger if side == 1 else baseline for side in page.team]
            latency = max(median_ms[challenger], median_ms[baseline])
        else:
            arm = challenger if rng.random() < 0.5 else baseline
            shown, origin, latency = list(rankings[arm].get(query, ())[:depth]), None, median_ms[arm]
        row = np.full((1, depth), NO_RESULT)
        row[0, :len(shown)] = [max(grades.get(query, {}).get(doc, 0), 0) for doc in shown]
        clicked = np.flatnonzero(simulate_clicks(model, row, top_grade, rng)[0]) + 1
        record = {"impression": f"i{number:06d}", "time": START + timedelta(milliseconds=round(float(gap) * 1000)),
                  "query_id": query, "segment": str(segment), "arm": arm, "shown": shown}
        if origin is not None:
            record["origin"] = origin
        record["clicks"] = [{"position": int(position), "dwell_s": round(float(rng.lognormal(3.0, 1.0)), 1)}
                            for position in clicked]
        record["reformulated"] = bool(not len(clicked) and rng.random() < 0.3)
        record["latency_ms"] = round(float(latency * rng.lognormal(0.0, 0.25)), 1)
        records.append(record)
    for number in range(1, LATE + 1):  # written late: a time before the line above
        position = len(records) * number // (LATE + 1)
        records[position]["time"] = records[position - 1]["time"] - timedelta(seconds=1)
    lines = [json.dumps({**record, "time": record["time"].isoformat(timespec="milliseconds").replace("+00:00", "Z")},
                        ensure_ascii=False) for record in records]
    return lines + lines[-REPEATS:]


def synthetic_query_log(queries: Sequence[tuple[str, Sequence[str] | None]], *, lines: int, rate_per_s: float,
                        seed: int) -> list[str]:
    """A synthetic production query log for shadow replay (``online.shadow``): ``lines`` arrivals at exponential
    inter-arrival times (``rate_per_s``), each asking one of ``queries`` (text, the asking user's groups) drawn with
    Zipf-like popularity (rank r weighs 1 / r, the order shuffled by the seed), a segment from ``SEGMENTS`` and a
    count of 1 to 3 arrivals at that instant; ``LATE`` lines are written with a time before the line above."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(queries))
    weights = 1.0 / np.arange(1, len(queries) + 1)
    names, shares = zip(*SEGMENTS)
    moment, found = START, []
    for number in range(lines):
        moment += timedelta(seconds=float(rng.exponential(1.0 / rate_per_s)))
        text, groups = queries[order[rng.choice(len(queries), p=weights / weights.sum())]]
        logged = moment - timedelta(seconds=5) if number >= lines - LATE else moment
        record = {"query": text, "time": logged.isoformat().replace("+00:00", "Z"),
                  "segment": str(rng.choice(names, p=shares)), "count": int(rng.integers(1, 4))}
        if groups is not None:
            record["user_groups"] = list(groups)
        found.append(json.dumps(record, ensure_ascii=False))
    return found
