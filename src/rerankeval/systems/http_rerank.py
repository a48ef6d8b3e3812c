"""The ``http_rerank`` system kind: a hosted rerank API (Cohere v2, Jina, Hugging Face TEI) or ``rerankeval serve``.

A query's candidates are one request. It is a ``PairScorer``, so the pair-score cache, latency replay and deadlines
work as for local models; the ``threads`` executor keeps up to ``max_concurrency`` requests in flight. Transient
failures (HTTP 429, 5xx, timeouts, dropped connections) are retried with exponential backoff and full jitter, honouring
``Retry-After``, for as long as the query's deadline allows; what still fails degrades the query to
``FUSION_FALLBACK`` with the reason (``timeout``, ``http_429``, ``http_5xx``, ``connection``, ``http_4xx``,
``bad_response``).

The API key is read from the environment variable named by ``api_key_env`` when the system is built and lives only
in the HTTP client's headers: it is in no config, fingerprint, ``describe()``, log or error message.
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Iterator
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator

from ..core.errors import ConfigError, ScoringFailure
from .base import BuildContext
from .http_protocols import PROTOCOLS, BadResponse, server_seconds
from .pair_scoring import PairBatch
from .pairs import PairScorerConfig, register_pair_scorer

SCORER_VERSION = "http_rerank/v1"
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class HttpRerankConfig(PairScorerConfig):
    base_url: str
    """The service root, e.g. https://api.cohere.com or http://127.0.0.1:8000 (the protocol adds its path)."""
    model: str = ""
    protocol: Literal["cohere", "jina", "tei"] = "cohere"
    api_key_env: str | None = None
    """The NAME of the environment variable holding the key (never the key itself); None: no Authorization header."""
    timeout_s: float = Field(30.0, gt=0)
    """Per attempt; the query's ``deadline_s`` caps all attempts together."""
    max_retries: int = Field(3, ge=0)
    backoff_s: float = Field(0.5, ge=0)
    """Retry n waits a uniform random time in [0, min(backoff_max_s, backoff_s * 2**n)] (full jitter)."""
    backoff_max_s: float = Field(8.0, ge=0)
    max_concurrency: int = Field(4, ge=1)
    """Requests in flight at once (with the ``threads`` executor: one query per request)."""
    price_per_search_usd: float | None = Field(None, ge=0)
    """Price of one request of up to ``documents_per_search`` documents (Cohere: about $0.002)."""
    documents_per_search: int = Field(100, ge=1)
    price_per_million_tokens_usd: float | None = Field(None, ge=0)
    """For APIs billed by token; counted from the tokens the API reports it billed."""
    normalization: Literal["none", "sigmoid", "clamp"] = "clamp"
    executor: str = "threads"

    @field_validator("normalization")
    @classmethod
    def _scores_are_probabilities(cls, value: str) -> str:
        if value == "sigmoid":
            raise ValueError("rerank APIs return scores in [0, 1] already; a sigmoid would squash them. Use clamp.")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _a_name_not_a_key(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(ENV_NAME, value):  # the message must not echo what was pasted
            raise ValueError("expected the NAME of an environment variable (letters, digits, _), not the key itself")
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"expected an http:// or https:// URL, got {value!r}")
        return value.rstrip("/")


class HttpRerankScorer:
    """One POST per query; see the module docstring for retries and failures."""

    def __init__(self, config: HttpRerankConfig, api_key: str | None, seed: int | None = None):
        import httpx

        self.config, self.protocol = config, PROTOCOLS[config.protocol]
        self.url = config.base_url + self.protocol.path
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        limits = httpx.Limits(max_connections=config.max_concurrency, max_keepalive_connections=config.max_concurrency)
        self._client = httpx.Client(headers=headers, limits=limits, timeout=config.timeout_s)
        self._jitter = random.Random(seed)
        self._httpx = httpx

    def __repr__(self) -> str:  # never the client, which holds the key
        return f"HttpRerankScorer({self.url!r})"

    def fingerprint(self) -> dict[str, Any]:
        """What decides a score: which service, model and protocol (a different model behind the same name and URL
        cannot be seen from here; use another cache_dir then)."""
        return {"scorer": SCORER_VERSION, "base_url": self.config.base_url, "protocol": self.protocol.name,
                "model": self.config.model}

    def describe(self) -> dict[str, Any]:
        config = self.config
        return {"kind": config.kind, "base_url": config.base_url, "protocol": config.protocol, "model": config.model,
                "api_key_env": config.api_key_env, "timeout_s": config.timeout_s, "max_retries": config.max_retries,
                "max_concurrency": config.max_concurrency, "raw_scores": "service scores in [0, 1]",
                "scorer_version": SCORER_VERSION}

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        cap = min(self.config.backoff_max_s, self.config.backoff_s * 2 ** attempt)
        wait = self._jitter.uniform(0.0, cap)
        if retry_after is not None:
            try:
                wait = max(wait, float(retry_after))
            except ValueError:  # an HTTP date: keep our own backoff
                pass
        return wait

    def score_batches(self, query: str, passages: list[str]) -> Iterator[PairBatch]:
        config, httpx = self.config, self._httpx
        body = self.protocol.request(config.model, query, passages)
        started, backoff_s = time.perf_counter(), 0.0
        for attempt in range(config.max_retries + 1):
            left = None if config.deadline_s is None else config.deadline_s - (time.perf_counter() - started)
            timeout = config.timeout_s if left is None else min(config.timeout_s, left)
            if timeout <= 0:
                raise ScoringFailure("timeout", f"deadline {config.deadline_s:g}s reached after {attempt} attempts")
            retry_after = None
            try:
                sent = time.perf_counter()
                response = self._client.post(self.url, json=body, timeout=timeout)
                request_s = time.perf_counter() - sent
            except httpx.TimeoutException:
                failure = ScoringFailure("timeout", f"no reply within {timeout:.2f}s (attempt {attempt + 1})")
            except httpx.TransportError as err:
                failure = ScoringFailure("connection", f"{type(err).__name__} (attempt {attempt + 1})")
            else:
                status = response.status_code
                if status == 429 or status >= 500:
                    failure = ScoringFailure("http_429" if status == 429 else "http_5xx",
                                             f"HTTP {status} (attempt {attempt + 1})")
                    retry_after = response.headers.get("retry-after")
                elif status >= 400:  # our request is wrong (bad key, bad model): retrying cannot help
                    raise ScoringFailure("http_4xx", f"HTTP {status}: {response.text[:200]!r}")
                else:
                    yield self._batch(response, len(passages), started, request_s, backoff_s)
                    return
            if attempt == config.max_retries:
                break
            wait = self._backoff(attempt, retry_after)
            if left is not None and time.perf_counter() - started + wait >= config.deadline_s:
                break  # no time left for another attempt
            time.sleep(wait)
            backoff_s += wait
        failure.detail += f"; gave up after {attempt + 1} attempts"
        raise ScoringFailure(failure.reason, failure.detail)

    def _batch(self, response, n: int, started: float, request_s: float, backoff_s: float) -> PairBatch:
        try:
            reply = response.json()
            scores = self.protocol.scores(reply, n)
        except (ValueError, BadResponse) as err:
            raise ScoringFailure("bad_response", f"{type(err).__name__}: {err}"[:300]) from None
        total_s = time.perf_counter() - started
        timings = {"backoff_s": backoff_s}
        server_s = server_seconds(response.headers)
        if server_s is not None and server_s <= request_s:
            timings.update(server_compute_s=server_s, network_queue_s=total_s - backoff_s - server_s)
        else:  # the server does not say: all of it is network, queue and compute together
            timings["request_s"] = total_s - backoff_s
        tokens = self.protocol.billed_tokens(reply)
        if tokens is not None:
            timings["billed_tokens"] = tokens
        # An API query's cost is the time until its reply, retries included: replayed as such on cache hits.
        return PairBatch(np.arange(n), scores, np.full(n, total_s / max(n, 1)), timings=timings)

    def close(self) -> None:
        self._client.close()


def api_key(config: HttpRerankConfig, where: str = "") -> str | None:
    if config.api_key_env is None:
        return None
    key = os.environ.get(config.api_key_env)
    if not key:
        raise ConfigError(f"{where or 'http_rerank'}: api_key_env names {config.api_key_env}, which is not set. Fix: "
                          f"export {config.api_key_env}=<your key> (it is read from there and written nowhere).")
    return key


@register_pair_scorer("http_rerank", HttpRerankConfig)
def _http_rerank(config: HttpRerankConfig, context: BuildContext) -> HttpRerankScorer:
    return HttpRerankScorer(config, api_key(config))
