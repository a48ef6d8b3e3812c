"""The ``http_rerank`` system kind: a hosted rerank API (Cohere v2, Jina, Hugging Face TEI) or ``rerankeval serve``.

A query's candidates are one request. It is a ``PairScorer``, so the pair-score cache, latency replay and deadlines
work as for local models; the ``threads`` executor keeps up to ``max_concurrency`` requests in flight. Retries,
deadline and redaction are ``core.http``'s (the one policy of every outbound call); what still fails degrades the
query to ``FUSION_FALLBACK`` with the reason (``timeout``, ``http_429``, ``http_5xx``, ``connection``, ``http_4xx``,
``bad_response``). With ``normalization: clamp`` a score outside [0, 1] is a ``bad_response``: a service returning
logits would otherwise be clamped into ties and return the fused order as its own.

The API key is read from the environment variable named by ``api_key_env`` when the system is built and lives only
in the HTTP client's headers: it is in no config, fingerprint, ``describe()``, log or error message, and the client
redacts it (and any Authorization or Bearer value) from whatever the server sends back.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator

from ..core.errors import ConfigError, ScoringFailure
from ..core.http import HttpClient, HttpReply, RetrySettings, refuse_url_credentials
from .registry import BuildContext
from .http_protocols import PROTOCOLS, BadResponse, server_seconds
from .pair_scoring import PairBatch
from .pairs import PairScorerConfig, register_pair_scorer

SCORER_VERSION = "http_rerank/v1"
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
CLAMP_TOLERANCE = 1e-6
"""What ``clamp`` forgives beyond [0, 1] (float rounding in a service's sigmoid); anything further is not a
probability."""


class HttpRerankConfig(PairScorerConfig, RetrySettings):
    """The HTTP knobs (request_timeout_s, max_retries, backoff_s, max_backoff_s) are ``core.http.RetrySettings``."""

    base_url: str
    """The service root, e.g. https://api.cohere.com or http://127.0.0.1:8000 (the protocol adds its path)."""
    model: str = ""
    protocol: Literal["cohere", "jina", "tei"] = "cohere"
    api_key_env: str | None = None
    """The NAME of the environment variable holding the key (never the key itself); None: no Authorization header."""
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
            raise ValueError("expected an http:// or https:// URL")  # the message must not echo a pasted key
        return refuse_url_credentials(value).rstrip("/")


class HttpRerankScorer:
    """One POST per query, through ``core.http.HttpClient`` (retries, deadline, redaction)."""

    def __init__(self, config: HttpRerankConfig, api_key: str | None, seed: int | None = None):
        self.config, self.protocol = config, PROTOCOLS[config.protocol]
        self.url = config.base_url + self.protocol.path
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = HttpClient(config, headers, secrets=[api_key], max_connections=config.max_concurrency,
                                  seed=seed)

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
                "api_key_env": config.api_key_env, "request_timeout_s": config.request_timeout_s,
                "max_retries": config.max_retries, "max_concurrency": config.max_concurrency,
                "raw_scores": "service scores in [0, 1]", "scorer_version": SCORER_VERSION}

    def score_batches(self, query: str, passages: list[str]) -> Iterator[PairBatch]:
        body = self.protocol.request(self.config.model, query, passages)
        yield self._batch(self._client.post_json(self.url, body, self.config.deadline_s), len(passages))

    def _batch(self, reply: HttpReply, n: int) -> PairBatch:
        try:
            scores = self.protocol.scores(reply.body, n)
        except BadResponse as err:
            raise ScoringFailure("bad_response", f"{type(err).__name__}: {err}"[:300]) from None
        if self.config.normalization == "clamp":
            outside = (scores < -CLAMP_TOLERANCE) | (scores > 1.0 + CLAMP_TOLERANCE)
            if outside.any():  # logits clamped to 0 or 1 would tie silently and hand back the fused order
                raise ScoringFailure("bad_response", f"{int(outside.sum())} of {n} scores outside [0, 1] (from "
                                     f"{scores.min():g} to {scores.max():g}): the service returns logits, not "
                                     "probabilities; set normalization: none for it")
        timings = {"backoff_s": reply.backoff_s}
        server_s = server_seconds(reply.headers)
        if server_s is not None and server_s <= reply.request_s:
            timings.update(server_compute_s=server_s, network_queue_s=reply.total_s - reply.backoff_s - server_s)
        else:  # the server does not say: all of it is network, queue and compute together
            timings["request_s"] = reply.total_s - reply.backoff_s
        tokens = self.protocol.billed_tokens(reply.body)
        if tokens is not None:
            timings["billed_tokens"] = tokens
        # An API query's cost is the time until its reply, retries included: replayed as such on cache hits.
        return PairBatch(np.arange(n), scores, np.full(n, reply.total_s / max(n, 1)), timings=timings)

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
