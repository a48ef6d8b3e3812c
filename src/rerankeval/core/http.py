"""The one HTTP client of every outbound call (rerank APIs, LLM endpoints): one retry policy, one set of knobs,
one place where secrets are removed from whatever a server sends back.

- **Knobs** (``RetrySettings``, shared by every config that calls out): ``request_timeout_s`` per attempt,
  ``max_retries`` after the first attempt, ``backoff_s`` and ``max_backoff_s``; the caller's ``deadline_s`` caps all
  attempts of one request together.
- **Policy**: 429, 5xx, timeouts and dropped connections are retried; retry n waits a uniform random time in
  [0, min(max_backoff_s, backoff_s * 2**n)] (full jitter), or the server's Retry-After when that is longer, and never
  past the deadline. Any other 4xx and a reply that is not JSON fail at once: retrying cannot help.
- **Secrets**: every configured secret, and any ``Authorization`` or ``Bearer`` value, is redacted from the reply
  text before it is parsed and from every failure message, so what a caller records (runs, latency tables,
  answers, caches, logs) cannot hold a key a server echoed back.

A failure is a ``ScoringFailure`` whose ``reason`` is ``timeout``, ``connection``, ``http_429``, ``http_5xx``,
``http_4xx`` or ``bad_response``, its detail saying the status and the attempts.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import Field, model_validator

from .config import StrictConfig
from .errors import ScoringFailure

REDACTED = "[redacted]"
_CREDENTIALS = re.compile(r"(?i)(\bbearer\s+|\bauthorization\b[\"']?\s*[:=]\s*[\"']?(?!bearer\b)(?:[A-Za-z]+\s+)?)"
                          r"[A-Za-z0-9._~+/=-]+")
"""A bearer token (RFC 6750's token68 characters) or any other Authorization value (after its scheme); never a
JSON quote, so a redacted reply still parses."""

RENAMED_KNOBS = {
    "timeout_s": "request_timeout_s",
    "max_attempts": "max_retries (retries after the first attempt: max_attempts - 1)",
    "backoff_max_s": "max_backoff_s",
}


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without any of ``secrets`` and without any Authorization or Bearer value."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return _CREDENTIALS.sub(lambda match: match.group(1) + REDACTED, text)


class RetrySettings(StrictConfig):
    """The HTTP knobs of every config that calls a service; old names are refused with the new one."""

    request_timeout_s: float = Field(30.0, gt=0)
    """Per attempt; the caller's ``deadline_s`` caps all attempts together."""
    max_retries: int = Field(3, ge=0)
    """Retries after the first attempt, on 429, 5xx, timeouts and dropped connections."""
    backoff_s: float = Field(0.5, ge=0)
    """Retry n waits a uniform random time in [0, min(max_backoff_s, backoff_s * 2**n)] (full jitter)."""
    max_backoff_s: float = Field(8.0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _refuse_old_knob_names(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            old = [name for name in RENAMED_KNOBS if name in data]
            if old:
                raise ValueError("; ".join(f"{name} was renamed: use {RENAMED_KNOBS[name]}" for name in old)
                                 + " (one set of HTTP knobs for rerank APIs and LLM endpoints).")
        return data


@dataclass(frozen=True)
class HttpReply:
    body: Any
    """The parsed JSON, secrets redacted."""
    headers: Mapping[str, str]
    attempts: int
    request_s: float
    """Seconds of the attempt that succeeded."""
    backoff_s: float
    total_s: float
    """Seconds from the first attempt to the reply, backoff included."""


class HttpFailure(ScoringFailure):
    """A request that failed for good; ``attempts`` and ``seconds`` say what it cost."""

    def __init__(self, reason: str, detail: str, attempts: int, seconds: float):
        super().__init__(reason, detail)
        self.attempts, self.seconds = attempts, seconds


class HttpClient:
    """POSTs JSON with ``RetrySettings``'s policy; ``secrets`` are sent (in ``headers``) but never returned."""

    def __init__(self, settings: RetrySettings, headers: Mapping[str, str] | None = None,
                 secrets: Iterable[str | None] = (), max_connections: int | None = None, seed: int | None = None):
        import httpx

        self.settings, self._httpx = settings, httpx
        self._secrets = tuple(secret for secret in secrets if secret)
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        self._client = httpx.Client(headers=dict(headers or {}), limits=limits, timeout=settings.request_timeout_s)
        self._jitter = random.Random(seed)

    def __repr__(self) -> str:  # never the headers, which hold the key
        return "HttpClient()"

    def redact(self, text: str) -> str:
        return redact(text, self._secrets)

    def _backoff(self, retry: int, retry_after: str | None) -> float:
        settings = self.settings
        wait = self._jitter.uniform(0.0, min(settings.max_backoff_s, settings.backoff_s * 2 ** retry))
        try:
            return max(wait, float(retry_after)) if retry_after is not None else wait
        except ValueError:  # an HTTP date: keep our own backoff
            return wait

    def post_json(self, url: str, body: Any, deadline_s: float | None = None) -> HttpReply:
        """The reply to ``body``, retried as the policy says; an ``HttpFailure`` once it cannot succeed."""
        settings, httpx = self.settings, self._httpx
        started, backoff_s, attempt = time.perf_counter(), 0.0, 0
        while True:
            attempt += 1
            elapsed = time.perf_counter() - started
            timeout = settings.request_timeout_s if deadline_s is None else min(settings.request_timeout_s,
                                                                                deadline_s - elapsed)
            if timeout <= 0:
                raise self._failure("timeout", f"deadline {deadline_s:g}s reached", attempt - 1, started)
            retry_after = None
            try:
                sent = time.perf_counter()
                response = self._client.post(url, json=body, timeout=timeout)
                request_s = time.perf_counter() - sent
            except httpx.TimeoutException:
                reason, detail = "timeout", f"no reply within {timeout:.2f}s"
            except httpx.TransportError as err:
                reason, detail = "connection", type(err).__name__
            else:
                status = response.status_code
                if status == 429 or status >= 500:
                    reason, detail = ("http_429" if status == 429 else "http_5xx"), f"HTTP {status}"
                    retry_after = response.headers.get("retry-after")
                elif status >= 400:  # our request is wrong (bad key, bad model): retrying cannot help
                    body_start = self.redact(response.text)[:200]  # redacted before it is cut, so no key is half-kept
                    raise self._failure("http_4xx", f"HTTP {status}: {body_start!r}", attempt, started)
                else:
                    return self._reply(response, attempt, started, request_s, backoff_s)
            if attempt > settings.max_retries:
                raise self._failure(reason, f"{detail}; gave up after {attempt} attempts", attempt, started)
            wait = self._backoff(attempt - 1, retry_after)
            if deadline_s is not None and time.perf_counter() - started + wait >= deadline_s:
                raise self._failure(reason, f"{detail}; deadline {deadline_s:g}s leaves no time for attempt "
                                            f"{attempt + 1}", attempt, started)
            time.sleep(wait)
            backoff_s += wait

    def _reply(self, response, attempts: int, started: float, request_s: float, backoff_s: float) -> HttpReply:
        try:
            body = json.loads(self.redact(response.text))
        except ValueError as err:
            raise self._failure("bad_response", f"the reply is not JSON ({err})", attempts, started) from None
        return HttpReply(body, response.headers, attempts, request_s, backoff_s, time.perf_counter() - started)

    def _failure(self, reason: str, detail: str, attempts: int, started: float) -> HttpFailure:
        return HttpFailure(reason, self.redact(detail), attempts, time.perf_counter() - started)

    def close(self) -> None:
        self._client.close()
