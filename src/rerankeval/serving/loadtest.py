"""Load test: the frozen candidates replayed against a rerank endpoint at several concurrency levels.

Each request is one query's candidates at the system's depth (queries in id order, cycled). At each level, a fixed
number of workers (the concurrency) send requests back to back: ``warmup_requests`` untimed, then ``requests``
timed. Requests go through ``core.http.AsyncHttpClient``, the retry policy of every outbound call (429, 5xx,
timeouts and dropped connections retried with full jitter, honouring Retry-After), with the load test's
``request_timeout_s``, ``max_retries``, ``backoff_s`` and ``max_backoff_s``. A request's latency is from its first
send to its final reply, retries included; its status is how it ended: ok, timeout, http_429, http_5xx or error.
Per level: p50/p95/p99, requests/s and pairs/s over the timed phase, input tokens/s (the pairs' tokens from the
system's run, before truncation), timeout, retry and error rates, and the server's time split when it reports it.
The server's peak memory comes from its health endpoint (``rerankeval serve``). The same requests are also scored
in-process, one at a time, so the report states serving's overhead; and a served learned system's reply scores are
checked against that in-process model's (``score_parity``), so the endpoint timed is the model evaluated.

``replay_arrivals`` drives the endpoint open-loop instead: each request is sent at its own time (a query log's arrival
pattern, ``online.shadows``), whatever is still in flight, and its response time counts from that scheduled arrival,
so the server's queueing is in it as a user would meet it.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..core.http import AsyncHttpClient, HttpFailure, RetrySettings
from ..stats.agreement import RESAMPLING, agreement_summary, ranking_of
from ..systems.http_protocols import PROTOCOLS, BadResponse, server_seconds
from .config import LoadTestConfig
from .measure import percentiles_ms


@dataclass(frozen=True)
class Request:
    query: str
    documents: list[str]
    tokens: int | None
    """Input tokens of the request's pairs (query + passage, before truncation), when the system counts them."""


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    protocol: str = "cohere"
    model: str = ""
    api_key: str | None = None


@dataclass
class Outcome:
    seconds: float
    attempts: int
    status: str
    """ok | timeout | http_429 | http_5xx | error"""
    server_s: float | None


COUNTED_FAILURES = frozenset({"timeout", "http_429", "http_5xx"})
"""The policy's failure reasons that are a status of their own; any other (http_4xx, connection, bad_response) is an
error."""


async def _send(client: AsyncHttpClient, endpoint: Endpoint, request: Request) -> Outcome:
    protocol = PROTOCOLS[endpoint.protocol]
    body = protocol.request(endpoint.model, request.query, request.documents)
    try:
        reply = await client.post_json(endpoint.base_url + protocol.path, body)
    except HttpFailure as failure:
        return Outcome(failure.seconds, failure.attempts,
                       failure.reason if failure.reason in COUNTED_FAILURES else "error", None)
    try:
        protocol.scores(reply.body, len(request.documents))
    except BadResponse:
        return Outcome(reply.total_s, reply.attempts, "error", None)
    return Outcome(reply.total_s, reply.attempts, "ok", server_seconds(reply.headers))


async def _level(endpoint: Endpoint, requests: Sequence[Request], concurrency: int, warmup: int, measured: int,
                 retry: RetrySettings) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
    async with AsyncHttpClient(retry, headers, secrets=[endpoint.api_key], max_connections=concurrency,
                               seed=concurrency) as client:
        async def drain(count: int, offset: int) -> tuple[list[tuple[Request, Outcome]], float]:
            queue: asyncio.Queue = asyncio.Queue()
            for index in range(count):
                queue.put_nowait(requests[(offset + index) % len(requests)])
            done: list[tuple[Request, Outcome]] = []

            async def worker():
                while not queue.empty():
                    request = queue.get_nowait()
                    done.append((request, await _send(client, endpoint, request)))

            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(min(concurrency, count))))
            return done, time.perf_counter() - started

        await drain(warmup, 0)
        done, wall_s = await drain(measured, warmup)
    return summarise_level(concurrency, done, wall_s)


def summarise_level(concurrency: int, done: Sequence[tuple[Request, Outcome]], wall_s: float) -> dict[str, Any]:
    ok = [(request, outcome) for request, outcome in done if outcome.status == "ok"]
    tokens = [request.tokens for request, _ in ok]
    server = [outcome.server_s for _, outcome in ok if outcome.server_s is not None]
    statuses = [outcome.status for _, outcome in done]
    return {
        "concurrency": concurrency, "requests": len(done), "ok": len(ok), "wall_s": wall_s,
        **percentiles_ms([outcome.seconds for _, outcome in done]),
        "requests_per_s": len(ok) / wall_s if wall_s > 0 else None,
        "pairs_per_s": sum(len(request.documents) for request, _ in ok) / wall_s if wall_s > 0 else None,
        "input_tokens_per_s": (sum(tokens) / wall_s if ok and None not in tokens and wall_s > 0 else None),
        "timeout_rate": statuses.count("timeout") / len(done),
        "error_rate": sum(status not in ("ok", "timeout") for status in statuses) / len(done),
        "retry_rate": sum(outcome.attempts - 1 for _, outcome in done) / len(done),
        "server_compute_p50_ms": float(np.median(server) * 1000) if server else None,
    }


async def _open_loop(endpoint: Endpoint, schedule: Sequence[tuple[float, Request]],
                     retry: RetrySettings) -> tuple[list[tuple[float, float, Outcome]], float]:
    """(scheduled arrival s, response s from it, outcome) per request, and the wall time of the whole replay."""
    headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
    async with AsyncHttpClient(retry, headers, secrets=[endpoint.api_key], max_connections=len(schedule) or 1,
                               seed=0) as client:
        started = time.perf_counter()

        async def arrive(at: float, request: Request) -> tuple[float, float, Outcome]:
            await asyncio.sleep(max(0.0, at - (time.perf_counter() - started)))
            sent = time.perf_counter() - started
            outcome = await _send(client, endpoint, request)
            return at, sent - at + outcome.seconds, outcome

        done = await asyncio.gather(*(arrive(at, request) for at, request in schedule))
        return list(done), time.perf_counter() - started


def replay_arrivals(endpoint: Endpoint, schedule: Sequence[tuple[float, Request]],
                    retry: RetrySettings) -> dict[str, Any]:
    """The requests sent open-loop at their times (seconds from the first, in order): response-time percentiles from
    each scheduled arrival (a failed request's time is how long its user waited), how late the client sent (its own
    lag, which should stay near 0), and how they ended."""
    done, wall_s = asyncio.run(_open_loop(endpoint, schedule, retry))
    statuses = [outcome.status for _, _, outcome in done]
    ok = sum(status == "ok" for status in statuses)
    span = schedule[-1][0] - schedule[0][0] if schedule else 0.0
    return {"requests": len(done), "ok": ok, "span_s": float(span), "wall_s": float(wall_s),
            **percentiles_ms([seconds for _, seconds, _ in done]),
            "max_send_lag_ms": float(max((seconds - outcome.seconds for _, seconds, outcome in done), default=0.0)
                                     * 1000),
            "timeout_rate": statuses.count("timeout") / len(done) if done else 0.0,
            "error_rate": sum(status not in ("ok", "timeout") for status in statuses) / len(done) if done else 0.0,
            "retry_rate": sum(outcome.attempts - 1 for _, _, outcome in done) / len(done) if done else 0.0}


def run_levels(endpoint: Endpoint, requests: Sequence[Request], settings: LoadTestConfig) -> list[dict[str, Any]]:
    return [asyncio.run(_level(endpoint, requests, level, settings.warmup_requests, settings.requests, settings))
            for level in settings.concurrency]


def in_process(scorer, requests: Sequence[Request], settings: LoadTestConfig, threads: int) -> dict[str, Any]:
    """The measured requests scored in this process, one after another: what serving adds is measured against it.
    torch gets the replica's ``threads`` (Ray gives an actor one thread per CPU it reserves), so the ratio is
    serving's overhead, not a difference in threads (on an oversubscribed machine 2 threads in-process were far
    slower than the 1-thread replica; benchmarks/bench_serving.py measures the ratio)."""
    import sys

    torch = sys.modules.get("torch")
    previous = torch.get_num_threads() if torch else None
    if torch:
        torch.set_num_threads(threads)
    try:
        return _in_process(scorer, requests, settings)
    finally:
        if torch:
            torch.set_num_threads(previous)


def _in_process(scorer, requests: Sequence[Request], settings: LoadTestConfig) -> dict[str, Any]:
    def score(request: Request) -> float:
        started = time.perf_counter()
        for _ in scorer.score_batches(request.query, request.documents):
            pass
        return time.perf_counter() - started

    for index in range(settings.warmup_requests):
        score(requests[index % len(requests)])
    measured = [requests[(settings.warmup_requests + index) % len(requests)] for index in range(settings.requests)]
    seconds = [score(request) for request in measured]
    return {**percentiles_ms(seconds), "requests": len(seconds),
            "pairs_per_s": sum(len(r.documents) for r in measured) / sum(seconds),
            "torch_threads": _torch_threads()}


def score_parity(endpoint: Endpoint, requests: Sequence[Request], scorer, normalize, settings: LoadTestConfig,
                 tolerance: float) -> dict[str, Any]:
    """Served parity: each request's reply scores against the same model's scores in this process (``normalize``: the
    server's ``serve.score``, applied to the raw scores): the largest absolute difference, the requests whose order
    differs, and whether every score stays within ``tolerance``. A served model that differs (another checkpoint,
    another max length, a quantized replica) fails it, whatever its latency."""
    from .server import score_requests

    local = score_requests(scorer, [(request.query, request.documents) for request in requests])
    served = asyncio.run(_served_scores(endpoint, requests, settings))
    gaps, reordered = [], 0
    for index, (mine, theirs) in enumerate(zip(local, served)):
        if isinstance(theirs, str) or not isinstance(mine, np.ndarray):
            return {"requests": len(requests), "passed": False, "tolerance": tolerance,
                    "error": f"request {index}: {theirs if isinstance(theirs, str) else mine}"}
        expected = normalize(mine)
        gaps.append(float(np.max(np.abs(expected - theirs))) if len(expected) else 0.0)
        reordered += not np.array_equal(np.argsort(-expected, kind="stable"), np.argsort(-theirs, kind="stable"))
    largest = max(gaps, default=0.0)
    rankings = [(ranking_of(normalize(mine), str(i)), ranking_of(theirs, str(i)))
                for i, (mine, theirs) in enumerate(zip(local, served))]
    agreement = agreement_summary(pd.concat([mine for mine, _ in rankings]),
                                  pd.concat([theirs for _, theirs in rankings]), RESAMPLING)
    return {"requests": len(requests), "pairs": sum(len(request.documents) for request in requests),
            "max_abs_diff": largest, "worst_request": int(np.argmax(gaps)) if gaps else None,
            "requests_reordered": reordered, "agreement": agreement,
            "tolerance": tolerance, "passed": largest <= tolerance}


async def _served_scores(endpoint: Endpoint, requests: Sequence[Request], retry: RetrySettings) -> list:
    """Each request's reply scores (an array), or why there are none (a string), one request at a time."""
    protocol = PROTOCOLS[endpoint.protocol]
    headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
    found: list = []
    async with AsyncHttpClient(retry, headers, secrets=[endpoint.api_key], max_connections=1, seed=0) as client:
        for request in requests:
            try:
                reply = await client.post_json(endpoint.base_url + protocol.path,
                                               protocol.request(endpoint.model, request.query, request.documents))
                found.append(protocol.scores(reply.body, len(request.documents)))
            except (HttpFailure, BadResponse) as failure:
                found.append(f"{type(failure).__name__}: {failure}")
    return found


def _torch_threads() -> int | None:
    import sys

    return sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None


def overhead(levels: Sequence[dict[str, Any]], local: dict[str, Any] | None) -> dict[str, float | None]:
    """Serving's cost against in-process scoring: latency at concurrency 1 (p50, p95) over in-process, and the best
    served throughput over in-process throughput."""
    if not local or not levels:
        return {}
    first = levels[0]
    best = max((level["pairs_per_s"] or 0.0) for level in levels)
    return {"p50_ratio": first["p50_ms"] / local["p50_ms"], "p95_ratio": first["p95_ms"] / local["p95_ms"],
            "concurrency": first["concurrency"], "best_throughput_ratio": best / local["pairs_per_s"]}


def machine_load() -> dict[str, Any]:
    return {"load_average_1m": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}
