"""The one HTTP client of every outbound call (rerank APIs, LLM endpoints): one retry policy, one set of knobs,
one place where secrets are removed from whatever a server sends back.

- **Knobs** (``RetrySettings``, shared by every config that calls out): ``request_timeout_s`` per attempt,
  ``max_retries`` after the first attempt, ``backoff_s`` and ``max_backoff_s``; the caller's ``deadline_s`` caps all
  attempts of one request together.
- **Policy**: 429, 5xx, timeouts and dropped connections are retried; retry n waits a uniform random time in
  [0, min(max_backoff_s, backoff_s * 2**n)] (full jitter), or the server's Retry-After when that is longer, and never
  past the deadline. Any other 4xx and a reply that is not JSON fail at once: retrying cannot help.
- **Secrets**: every configured secret, in any form a server may echo it (raw, JSON ``\\uXXXX``-escaped or
  URL-encoded, character by character in any mix, or base64), and any ``Authorization`` or ``Bearer`` value, is
  redacted from the reply text before it is parsed and from every decoded string after (keys and values: a key
  escaped in the text is plain once decoded), and from every failure message, so what a caller records (runs,
  latency tables, answers, caches, logs) cannot hold a key a server echoed back.

A failure is a ``ScoringFailure`` whose ``reason`` is ``timeout``, ``connection``, ``http_429``, ``http_5xx``,
``http_4xx`` or ``bad_response``, its detail saying the status and the attempts.

``RetryPolicy`` is that policy on its own; ``HttpClient`` (blocking) and ``AsyncHttpClient`` (asyncio, for the load
test's concurrent workers) only send the attempts it asks for.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import random
import re
import time
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit
from dataclasses import dataclass
from typing import Any

from pydantic import Field, model_validator

from .config import StrictConfig
from .errors import ScoringFailure

REDACTED = "[redacted]"
_CREDENTIALS = re.compile(r"(?i)(\bbearer(?:\s|\\u0020|%20|\+)+|\bauthorization\b[\"']?\s*[:=]\s*[\"']?(?!bearer\b)"
                          r"(?:[A-Za-z]+\s+)?)[A-Za-z0-9._~+/=-]+")
"""A bearer token (RFC 6750's token68 characters) or any other Authorization value (after its scheme); never a
JSON quote, so a redacted reply still parses."""

RENAMED_KNOBS = {
    "timeout_s": "request_timeout_s",
    "max_attempts": "max_retries (retries after the first attempt: max_attempts - 1)",
    "backoff_max_s": "max_backoff_s",
}


MIN_BASE64_CORE = 8
"""Characters of a secret's base64 that every alignment shares, below which base64 is not searched (too short to
be the key's and not something else)."""


@functools.lru_cache(maxsize=64)
def _secret_pattern(secret: str) -> re.Pattern[str]:
    """Every form of ``secret`` a server may echo: each character raw, ``\\uXXXX``-escaped or ``%XX``-encoded in any
    mix (JSON and URL encodings), or the secret base64-encoded at any alignment inside a longer text (standard or
    URL-safe alphabet)."""
    def character(char: str) -> str:
        escaped = json.dumps(char, ensure_ascii=True)[1:-1]  # \\uXXXX (a surrogate pair above U+FFFF)
        utf16 = char.encode("utf-16-be")
        units = "".join(f"\\u{utf16[i]:02x}{utf16[i + 1]:02x}" for i in range(0, len(utf16), 2))
        forms = {re.escape(char), re.escape(escaped), re.escape(units),
                 re.escape("".join(f"%{byte:02x}" for byte in char.encode()))}
        return "(?:" + "|".join(sorted(forms)) + ")"

    alternatives = ["".join(character(char) for char in secret)]
    raw = secret.encode()
    for start in range(3):  # base64 groups 3 bytes: at each alignment, the groups made of the secret's bytes alone
        rest = raw[start:]
        core = base64.b64encode(rest[:len(rest) // 3 * 3]).decode()
        for alphabet in (core, core.replace("+", "-").replace("/", "_")):
            if len(alphabet) >= MIN_BASE64_CORE:
                alternatives.append(re.escape(alphabet))
    return re.compile("|".join(alternatives), re.IGNORECASE)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without any of ``secrets`` in any form (``_secret_pattern``) and without any Authorization or Bearer
    value."""
    for secret in secrets:
        if secret:
            text = _secret_pattern(secret).sub(REDACTED, text)
    return _CREDENTIALS.sub(lambda match: match.group(1) + REDACTED, text)


def redact_value(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A decoded JSON value with ``redact`` applied to every string in it, keys included."""
    secrets = tuple(secrets)
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, list):
        return [redact_value(item, secrets) for item in value]
    if isinstance(value, dict):
        return {redact(str(key), secrets): redact_value(item, secrets) for key, item in value.items()}
    return value


def refuse_url_credentials(url: str) -> str:
    """``url``, refused when it carries a user or password: it would be recorded with the run (its metadata, the
    pair cache's key). The key belongs in the environment variable ``api_key_env`` names."""
    try:
        parts = urlsplit(url)
    except ValueError as err:
        raise ValueError(f"not a URL ({err})") from None
    if parts.username is not None or parts.password is not None:
        raise ValueError("credentials in the URL (user:password@) are refused: the URL is recorded with the run. "
                         "Fix: drop them from the URL and name the environment variable holding the key in "
                         "api_key_env")
    return url


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


class RetryPolicy:
    """What each attempt may take, which outcomes are retried and how long to wait before the next attempt."""

    def __init__(self, settings: RetrySettings, secrets: Iterable[str | None] = (), seed: int | None = None):
        self.settings = settings
        self._secrets = tuple(secret for secret in secrets if secret)
        self._jitter = random.Random(seed)

    def redact(self, text: str) -> str:
        return redact(text, self._secrets)

    def redact_value(self, value: Any) -> Any:
        return redact_value(value, self._secrets)

    def backoff(self, retry: int, retry_after: str | None) -> float:
        settings = self.settings
        wait = self._jitter.uniform(0.0, min(settings.max_backoff_s, settings.backoff_s * 2 ** retry))
        try:
            return max(wait, float(retry_after)) if retry_after is not None else wait
        except ValueError:  # an HTTP date: keep our own backoff
            return wait

    def attempts(self, deadline_s: float | None = None) -> "Attempts":
        return Attempts(self, deadline_s)


class Attempts:
    """The attempts of one request under the policy: a client asks ``timeout()`` before each send, then reports
    what came back; each report returns the wait before the next attempt, or raises the ``HttpFailure``."""

    def __init__(self, policy: RetryPolicy, deadline_s: float | None):
        self.policy, self.deadline_s = policy, deadline_s
        self.started, self.count, self.backoff_s = time.perf_counter(), 0, 0.0

    def timeout(self) -> float:
        """The next attempt's timeout: the per-attempt one, cut to what the deadline leaves."""
        self.count += 1
        settings, deadline_s = self.policy.settings, self.deadline_s
        timeout = settings.request_timeout_s if deadline_s is None else min(
            settings.request_timeout_s, deadline_s - (time.perf_counter() - self.started))
        if timeout <= 0:
            raise self.failure("timeout", f"deadline {deadline_s:g}s reached", self.count - 1)
        return timeout

    def send_failed(self, error: Exception, timeout: float) -> float:
        """An httpx ``TransportError``: a timeout or a dropped connection, both retried."""
        import httpx

        if isinstance(error, httpx.TimeoutException):
            return self.retry("timeout", f"no reply within {timeout:.2f}s")
        try:
            url = error.request.url
            where = f" to {url.scheme}://{url.netloc.decode()}"  # the endpoint, never its path or query
        except RuntimeError:  # httpx raises where the error carries no request
            where = ""
        return self.retry("connection", self.policy.redact(f"{type(error).__name__}{where}: {error}"))

    def replied(self, response) -> float | None:
        """None when ``response`` is a success; the wait before a retry on 429 and 5xx."""
        status = response.status_code
        if status == 429 or status >= 500:
            return self.retry("http_429" if status == 429 else "http_5xx", f"HTTP {status}",
                              response.headers.get("retry-after"))
        if status >= 400:  # our request is wrong (bad key, bad model): retrying cannot help
            body_start = self.policy.redact(response.text)[:200]  # redacted before it is cut, so no key is half-kept
            raise self.failure("http_4xx", f"HTTP {status}: {body_start!r}")
        return None

    def retry(self, reason: str, detail: str, retry_after: str | None = None) -> float:
        if self.count > self.policy.settings.max_retries:
            raise self.failure(reason, f"{detail}; gave up after {self.count} attempts")
        wait = self.policy.backoff(self.count - 1, retry_after)
        if self.deadline_s is not None and time.perf_counter() - self.started + wait >= self.deadline_s:
            raise self.failure(reason, f"{detail}; deadline {self.deadline_s:g}s leaves no time for attempt "
                                       f"{self.count + 1}")
        self.backoff_s += wait
        return wait

    def reply(self, response, request_s: float) -> HttpReply:
        """The successful ``response`` parsed, secrets redacted; a ``bad_response`` failure when it is not JSON."""
        try:
            # Redacted as text (no key reaches the parser's errors) and decoded (a key sent escaped is plain now).
            body = self.policy.redact_value(json.loads(self.policy.redact(response.text)))
        except RecursionError:
            raise self.failure("bad_response", "the reply is JSON nested too deep to read") from None
        except ValueError as err:
            raise self.failure("bad_response", f"the reply is not JSON ({err})") from None
        return HttpReply(body, response.headers, self.count, request_s, self.backoff_s,
                         time.perf_counter() - self.started)

    def failure(self, reason: str, detail: str, attempts: int | None = None) -> HttpFailure:
        return HttpFailure(reason, self.policy.redact(detail), self.count if attempts is None else attempts,
                           time.perf_counter() - self.started)


class _PolicyClient:
    """What both clients share: the policy, and headers (holding ``secrets``) that are sent but never returned."""

    _transport = ""
    """The httpx client class: Client or AsyncClient."""

    def __init__(self, settings: RetrySettings, headers: Mapping[str, str] | None = None,
                 secrets: Iterable[str | None] = (), max_connections: int | None = None, seed: int | None = None):
        import httpx

        self.settings, self.policy = settings, RetryPolicy(settings, secrets, seed)
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        self._client = getattr(httpx, self._transport)(headers=dict(headers or {}), limits=limits,
                                                       timeout=settings.request_timeout_s)

    def __repr__(self) -> str:  # never the headers, which hold the key
        return f"{type(self).__name__}()"

    def redact(self, text: str) -> str:
        return self.policy.redact(text)


class HttpClient(_PolicyClient):
    """POSTs JSON with ``RetrySettings``'s policy, blocking."""

    _transport = "Client"

    def post_json(self, url: str, body: Any, deadline_s: float | None = None) -> HttpReply:
        """The reply to ``body``, retried as the policy says; an ``HttpFailure`` once it cannot succeed."""
        import httpx

        attempts = self.policy.attempts(deadline_s)
        while True:
            timeout = attempts.timeout()
            try:
                sent = time.perf_counter()
                response = self._client.post(url, json=body, timeout=timeout)
                request_s = time.perf_counter() - sent
            except httpx.TransportError as error:  # timeouts included
                wait = attempts.send_failed(error, timeout)
            else:
                wait = attempts.replied(response)
                if wait is None:
                    return attempts.reply(response, request_s)
            time.sleep(wait)

    def get_json(self, url: str, timeout_s: float) -> HttpReply:
        """The JSON at ``url`` in one attempt, never retried (for questions whose answer is optional): an
        ``HttpFailure`` for any error status, a dropped connection or a timeout."""
        import httpx

        attempts = self.policy.attempts(timeout_s)
        timeout = attempts.timeout()
        try:
            sent = time.perf_counter()
            response = self._client.get(url, timeout=timeout)
        except httpx.TransportError as error:
            reason = "timeout" if isinstance(error, httpx.TimeoutException) else "connection"
            raise attempts.failure(reason, type(error).__name__) from None
        status = response.status_code
        if status >= 400:
            reason = "http_429" if status == 429 else "http_5xx" if status >= 500 else "http_4xx"
            raise attempts.failure(reason, f"HTTP {status}")
        return attempts.reply(response, time.perf_counter() - sent)

    def close(self) -> None:
        self._client.close()


class AsyncHttpClient(_PolicyClient):
    """POSTs JSON with ``RetrySettings``'s policy from asyncio tasks (the load test's concurrent workers)."""

    _transport = "AsyncClient"

    async def post_json(self, url: str, body: Any, deadline_s: float | None = None) -> HttpReply:
        """As ``HttpClient.post_json``, waiting without blocking the event loop."""
        import httpx

        attempts = self.policy.attempts(deadline_s)
        while True:
            timeout = attempts.timeout()
            try:
                sent = time.perf_counter()
                response = await self._client.post(url, json=body, timeout=timeout)
                request_s = time.perf_counter() - sent
            except httpx.TransportError as error:  # timeouts included
                wait = attempts.send_failed(error, timeout)
            else:
                wait = attempts.replied(response)
                if wait is None:
                    return attempts.reply(response, request_s)
            await asyncio.sleep(wait)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> "AsyncHttpClient":
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.aclose()
