"""An OpenAI-compatible chat endpoint (vLLM, llama.cpp server, Ollama, a hosted API) through the official client.

- **Secrets**: the API key is read from the environment variable the config names, held in memory only, and removed
  from every message this module returns (an error body that echoes it is redacted), so it never reaches a params
  file, a log, a DVC file, a report, an answers table or the cache.
- **Retries**: 429, 5xx, timeouts and dropped connections are retried with exponential backoff (``backoff_s`` doubling,
  at most ``max_backoff_s``, a server's Retry-After honoured when shorter than what is left) within the per-query
  ``deadline_s``; each request's timeout is the smaller of ``request_timeout_s`` and the time left. Other HTTP errors
  and malformed replies (no choices, no text) fail the query at once: ``http_<status>`` or ``bad_response``.
- **Cache**: successful replies are stored in SQLite keyed by the sha256 of the request's content (model, messages,
  temperature, seed, max_tokens), not the endpoint address, so a rerun is free and byte-identical; a hit replays
  the seconds the request originally took.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from ..core.config import StrictConfig
from ..core.errors import ConfigError, InfrastructureError
from ..core.hashing import canonical_json, sha256_text

CACHE_FILE = "responses.sqlite"
CACHE_DIR_ENV = "RERANKEVAL_CACHE_DIR"


class ChatConfig(StrictConfig):
    base_url: str
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    """Name of the environment variable holding the key (None: the endpoint needs none)."""
    temperature: float = Field(0.0, ge=0)
    seed: int | None = 17
    max_tokens: int = Field(256, ge=1)
    request_timeout_s: float = Field(30.0, gt=0)
    deadline_s: float = Field(120.0, gt=0)
    """Per query, retries and backoff included."""
    max_attempts: int = Field(4, ge=1)
    backoff_s: float = Field(1.0, ge=0)
    max_backoff_s: float = Field(20.0, ge=0)
    price_per_1k_input_tokens: float = Field(0.0, ge=0)
    price_per_1k_output_tokens: float = Field(0.0, ge=0)
    cache_dir: str = "data/generation_cache"


@dataclass(frozen=True)
class Reply:
    text: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cache_hit: bool = False
    attempts: int = 0
    reason: str | None = None
    """Why no text came back: timeout, http_429, http_5xx, http_<status>, connection, bad_response, deadline."""


class ChatClient:
    def __init__(self, config: ChatConfig):
        self.config = config
        self._secret = None
        if config.api_key_env:
            self._secret = os.environ.get(config.api_key_env)
            if not self._secret:
                raise ConfigError(f"rag.generator.api_key_env: the environment variable {config.api_key_env!r} is "
                                  "not set. Fix: export it (the key is never written anywhere), or set api_key_env: "
                                  "null for an endpoint without a key.")
        import openai

        self._openai = openai
        # Retries are ours (deadline-aware and counted), so the client's own are off.
        self._client = openai.OpenAI(base_url=config.base_url, api_key=self._secret or "none", max_retries=0,
                                     timeout=config.request_timeout_s)
        self._cache = ResponseCache(Path(os.environ.get(CACHE_DIR_ENV) or config.cache_dir))

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return round(prompt_tokens / 1000 * self.config.price_per_1k_input_tokens
                     + completion_tokens / 1000 * self.config.price_per_1k_output_tokens, 9)

    def request_key(self, messages: Sequence[dict]) -> str:
        c = self.config
        return sha256_text(canonical_json({"model": c.model, "messages": list(messages), "temperature": c.temperature,
                                           "seed": c.seed, "max_tokens": c.max_tokens}))

    def redact(self, text: str) -> str:
        return text.replace(self._secret, "[redacted]") if self._secret else text

    def complete(self, messages: Sequence[dict]) -> Reply:
        key = self.request_key(messages)
        cached = self._cache.get(key)
        if cached is not None:
            body, seconds = cached
            return Reply(body["text"], body["prompt_tokens"], body["completion_tokens"], seconds, True, 0)
        started = time.perf_counter()
        deadline = started + self.config.deadline_s
        reason, attempts = "deadline", 0
        while attempts < self.config.max_attempts:
            left = deadline - time.perf_counter()
            if left <= 0:
                reason = "deadline"
                break
            attempts += 1
            request_started = time.perf_counter()
            outcome = self._attempt(messages, min(self.config.request_timeout_s, left))
            if isinstance(outcome, Reply):
                seconds = time.perf_counter() - request_started
                self._cache.put(key, {"text": outcome.text, "prompt_tokens": outcome.prompt_tokens,
                                      "completion_tokens": outcome.completion_tokens}, seconds)
                return Reply(outcome.text, outcome.prompt_tokens, outcome.completion_tokens,
                             time.perf_counter() - started, False, attempts)
            reason, retry, retry_after = outcome
            if not retry:
                break
            wait = min(self.config.max_backoff_s, self.config.backoff_s * 2 ** (attempts - 1))
            if retry_after is not None:
                wait = max(wait, retry_after)
            if time.perf_counter() + wait >= deadline:
                reason = f"deadline ({reason})"
                break
            time.sleep(wait)
        return Reply(None, seconds=time.perf_counter() - started, attempts=attempts, reason=self.redact(reason))

    def _attempt(self, messages: Sequence[dict], timeout: float):
        """A Reply, or (reason, retry?, Retry-After seconds) for a failed request."""
        openai, c = self._openai, self.config
        try:
            response = self._client.chat.completions.create(
                model=c.model, messages=list(messages), temperature=c.temperature, seed=c.seed,
                max_tokens=c.max_tokens, timeout=timeout)
        except openai.APITimeoutError:
            return "timeout", True, None
        except openai.APIConnectionError:
            return "connection", True, None
        except openai.APIStatusError as err:
            status = err.status_code
            retry_after = _retry_after(err.response.headers.get("retry-after"))
            if status == 429:
                return "http_429", True, retry_after
            if status >= 500:
                return "http_5xx", True, retry_after
            return f"http_{status}", False, None
        except (openai.APIResponseValidationError, json.JSONDecodeError, ValueError):
            return "bad_response", False, None
        try:
            text = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError):
            return "bad_response", False, None
        if not isinstance(text, str) or not text.strip():
            return "bad_response", False, None
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        return Reply(text, prompt_tokens, completion_tokens)


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


class ResponseCache:
    """Replies by request content hash; each write commits, so a killed run resumes where it stopped."""

    def __init__(self, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / CACHE_FILE
        try:
            self._db = sqlite3.connect(self.path)
            self._db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, body TEXT, seconds REAL)")
            self._db.commit()
        except sqlite3.DatabaseError as err:
            raise InfrastructureError(f"{self.path}: not a usable response cache ({err}). Fix: delete the file "
                                      "(it only saves requests).") from None

    def get(self, key: str) -> tuple[dict, float] | None:
        row = self._db.execute("SELECT body, seconds FROM replies WHERE key = ?", (key,)).fetchone()
        return (json.loads(row[0]), float(row[1])) if row else None

    def put(self, key: str, body: dict, seconds: float) -> None:
        self._db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?, ?)", (key, canonical_json(body), seconds))
        self._db.commit()
