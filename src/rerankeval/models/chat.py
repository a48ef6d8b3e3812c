"""An OpenAI-compatible chat endpoint (vLLM, llama.cpp server, Ollama, a hosted API):
``POST {base_url}/chat/completions`` through ``core.http.HttpClient``, the one client of every outbound call.

- **Secrets**: the API key is read from the environment variable the config names and held in memory only; the
  HTTP client redacts it (and any Authorization or Bearer value) from every reply and failure message, so it never
  reaches a params file, a log, a DVC file, a report, an answers table or the cache, even when a server echoes it.
- **Retries**: ``core.http``'s policy and knobs (``request_timeout_s``, ``max_retries``, ``backoff_s``,
  ``max_backoff_s``) within the per-query ``deadline_s``. A failed query's reason is ``<code>: <detail>`` with the
  client's codes (``timeout``, ``connection``, ``http_429``, ``http_5xx``, ``http_4xx``, ``bad_response``).
- **Replies are checked on receipt**: no choices, no text, or token counts that are not integers in
  [0, ``MAX_REPLY_TOKENS``] are a ``bad_response``, never cached, so a rerun asks again instead of failing the same way.
- **Cache**: good replies are stored in SQLite (``core.sqlite_cache``) keyed by the sha256 of the request's content
  (model, messages, temperature, seed, max_tokens), not the endpoint address, so a rerun is free and byte-identical;
  a hit replays the seconds the request originally took.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from ..core.caches import cache_dir
from ..core.errors import ConfigError, ScoringFailure
from ..core.hashing import canonical_json, sha256_text
from ..core.http import HttpClient, HttpFailure, RetrySettings, refuse_url_credentials
from ..core.sqlite_cache import SqliteCache

CACHE_FILE = "responses.sqlite"
BACKEND_PROBE_S = 2.0
"""The longest each question of ``ChatClient.backend`` may take: asked once, before the first request past the cache
(in a fresh run, a warm-up query's time), so a server that does not answer costs at most a few seconds once."""
SERVER_ROOTS = ("", "/v1")
"""The ``base_url`` paths at which the server's own root questions (vLLM's /version, llama.cpp's /props) are asked:
behind a gateway's path (``https://gw/llm/v1``) the host's root may be another service, which is never asked."""
MAX_REPLY_TOKENS = 10_000_000
"""Above any model's context window: a larger count is a broken endpoint, and would overflow the answers table."""


class ChatConfig(RetrySettings):
    base_url: str
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    """Name of the environment variable holding the key (None: the endpoint needs none)."""
    temperature: float = Field(0.0, ge=0)
    seed: int | None = 17
    max_tokens: int = Field(256, ge=1)
    deadline_s: float = Field(120.0, gt=0)
    """Per query, retries and backoff included."""
    backoff_s: float = Field(1.0, ge=0)
    max_backoff_s: float = Field(20.0, ge=0)
    price_per_1k_input_tokens: float = Field(0.0, ge=0)
    price_per_1k_output_tokens: float = Field(0.0, ge=0)
    cache_dir: str = "data/generation_cache"

    @field_validator("base_url")
    @classmethod
    def _no_credentials(cls, value: str) -> str:
        return refuse_url_credentials(value)


@dataclass(frozen=True)
class Reply:
    text: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cache_hit: bool = False
    attempts: int = 0
    reason: str | None = None
    """Why no text came back: ``<code>: <detail>`` (see the module docstring)."""
    model: str | None = None
    """The model the endpoint says answered (its reply's ``model``), when it says."""
    top_logprobs: tuple[tuple[str, float], ...] | None = None
    """The first generated token's most likely alternatives (token, log probability), when asked and given."""
    fingerprint: str | None = None
    """The reply's ``system_fingerprint`` (OpenAI, vLLM, llama.cpp's server: the backend's build and configuration),
    when it says."""
    backend: str | None = None
    """What the server that answered says it runs (``ChatClient.backend``), when it says anything."""
    finish_reason: str | None = None
    """Why the reply ended (``choices[0].finish_reason``): ``stop`` where the model ended it, ``length`` where
    ``max_tokens`` (or the context's end) cut it; None when the endpoint does not say."""


class ChatClient:
    def __init__(self, config: ChatConfig, where: str = "rag.generator", ask_backend: bool = False):
        """``where``: the settings block the config is, named in a refusal; ``ask_backend``: ask the server what it
        runs (``backend``), for a caller that records it."""
        self.config, self.ask_backend = config, ask_backend
        secret = None
        if config.api_key_env:
            secret = os.environ.get(config.api_key_env)
            if not secret:
                raise ConfigError(f"{where}.api_key_env: the environment variable {config.api_key_env!r} is "
                                  "not set. Fix: export it (the key is never written anywhere), or set api_key_env: "
                                  "null for an endpoint without a key.")
        self.url = config.base_url.rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        self._client = HttpClient(config, headers, secrets=[secret])
        self._cache = ResponseCache(cache_dir(config.cache_dir))
        self._backend: str | None = None
        self._backend_asked = False

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return round(prompt_tokens / 1000 * self.config.price_per_1k_input_tokens
                     + completion_tokens / 1000 * self.config.price_per_1k_output_tokens, 9)

    def request(self, messages: Sequence[dict], top_logprobs: int | None = None) -> dict[str, Any]:
        c = self.config
        body = {"model": c.model, "messages": list(messages), "temperature": c.temperature, "seed": c.seed,
                "max_tokens": c.max_tokens}
        if top_logprobs:
            body.update(logprobs=True, top_logprobs=top_logprobs)
        return {name: value for name, value in body.items() if value is not None}

    def request_key(self, messages: Sequence[dict], top_logprobs: int | None = None) -> str:
        c = self.config
        asked = {"model": c.model, "messages": list(messages), "temperature": c.temperature, "seed": c.seed,
                 "max_tokens": c.max_tokens}
        if top_logprobs:  # only when asked, so that the generator's keys are what they were
            asked["top_logprobs"] = top_logprobs
        return sha256_text(canonical_json(asked))

    def redact(self, text: str) -> str:
        return self._client.redact(text)

    def close(self) -> None:
        """Close the HTTP connections (the cache commits every write, so nothing is left to save)."""
        self._client.close()

    def complete(self, messages: Sequence[dict], top_logprobs: int | None = None) -> Reply:
        """The reply to ``messages`` (from the cache when asked before); ``top_logprobs``: also ask for the first
        token's most likely alternatives (an endpoint that gives none answers without them)."""
        key = self.request_key(messages, top_logprobs)
        cached = self._cache.get(key)
        if cached is not None:
            body, seconds = cached
            alternatives = body.get("top_logprobs")
            return Reply(body["text"], body["prompt_tokens"], body["completion_tokens"], seconds, True, 0,
                         model=body.get("model"),
                         top_logprobs=None if alternatives is None else tuple(map(tuple, alternatives)),
                         fingerprint=body.get("fingerprint"), backend=body.get("backend"),
                         finish_reason=body.get("finish_reason"))
        reply, request_s = self.ask(messages, top_logprobs)
        if reply.text is not None:
            stored = {"text": reply.text, "prompt_tokens": reply.prompt_tokens,
                      "completion_tokens": reply.completion_tokens}
            # Who answered is kept with the answer, so a run replayed from the cache records the same pins.
            for name in ("model", "fingerprint", "backend", "finish_reason"):
                if getattr(reply, name) is not None:
                    stored[name] = getattr(reply, name)
            if reply.top_logprobs is not None:
                stored["top_logprobs"] = [list(pair) for pair in reply.top_logprobs]
            self._cache.put(key, stored, request_s)
        return reply

    def ask(self, messages: Sequence[dict], top_logprobs: int | None = None) -> tuple[Reply, float]:
        """One request past the cache: the reply and the seconds of the attempt that gave it (what a hit replays)."""
        backend = self.backend() if self.ask_backend else None
        try:
            reply = self._client.post_json(self.url, self.request(messages, top_logprobs), self.config.deadline_s)
            # A reply asked for its first token's alternatives is read by them: its text may be a lone space.
            text, prompt_tokens, completion_tokens = read_completion(reply.body, need_text=not top_logprobs)
        except HttpFailure as failure:
            return Reply(None, seconds=failure.seconds, attempts=failure.attempts, reason=str(failure)), 0.0
        except ScoringFailure as failure:
            return Reply(None, seconds=reply.total_s, attempts=reply.attempts, reason=str(failure)), 0.0
        served, fingerprint = reply.body.get("model"), reply.body.get("system_fingerprint")
        return Reply(text, prompt_tokens, completion_tokens, reply.total_s, False, reply.attempts,
                     model=served if isinstance(served, str) else None,
                     top_logprobs=first_token_alternatives(reply.body) if top_logprobs else None,
                     fingerprint=fingerprint[:200] if isinstance(fingerprint, str) and fingerprint else None,
                     backend=backend, finish_reason=finish_reason(reply.body)), reply.request_s

    def backend(self) -> str | None:
        """What the server says it runs, asked once per client (a run's), before its first request past the cache,
        and kept with each reply it then gets: ``owned_by`` of the asked model in ``GET {base_url}/models`` (``vllm``,
        ``llamacpp``, ``openai``, ...), and where ``base_url`` is the server's root or ``/v1`` (``SERVER_ROOTS``),
        the version from vLLM's ``GET /version`` or Ollama's ``GET /api/version`` (and the model's quantisation
        from Ollama's ``GET /api/tags``), and llama.cpp's build and model file from ``GET /props``; e.g.
        ``owned_by=llamacpp; build=b5123-8c4f2a1; model_file=qwen2.5-q4_k_m.gguf``.
        A question the server does not answer is left out (None when it answers none): these are a run's pins, never
        a reason to fail it. A server swapped during a run shows in the replies' fingerprints and models."""
        if not self._backend_asked:
            self._backend_asked = True
            at_root = urlsplit(self.config.base_url).path.rstrip("/") in SERVER_ROOTS
            self._backend = describe_backend(
                self._ask_json(self.config.base_url.rstrip("/") + "/models"),
                *(self._ask_json(root_url(self.config.base_url, path)) if at_root else None
                  for path in ("version", "api/version", "props", "api/tags")), model=self.config.model)
        return self._backend

    def _ask_json(self, url: str) -> Any:
        try:
            return self._client.get_json(url, min(self.config.request_timeout_s, BACKEND_PROBE_S)).body
        except HttpFailure:
            return None


def root_url(base_url: str, path: str) -> str:
    """``path`` at the root of ``base_url``'s server (``http://h:8000/v1`` -> ``http://h:8000/version``)."""
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}/{path}"


def describe_backend(models: Any, version: Any, api_version: Any, props: Any, tags: Any, model: str) -> str | None:
    """One line of what a server's answers to the ``ChatClient.backend`` questions say (see there)."""
    found: dict[str, str] = {}
    entries = models.get("data") if isinstance(models, Mapping) else None
    entries = [entry for entry in entries if isinstance(entry, Mapping)] if isinstance(entries, list) else []
    entry = next((e for e in entries if e.get("id") == model), entries[0] if len(entries) == 1 else None)
    if entry is not None and isinstance(entry.get("owned_by"), str):
        found["owned_by"] = entry["owned_by"]
    for answer in (version, api_version):
        if isinstance(answer, Mapping) and isinstance(answer.get("version"), str):
            found.setdefault("version", answer["version"])
    if isinstance(props, Mapping):
        if isinstance(props.get("build_info"), str):
            found["build"] = props["build_info"]
        if isinstance(props.get("model_path"), str):
            found["model_file"] = PurePath(props["model_path"]).name
    listed = tags.get("models") if isinstance(tags, Mapping) else None
    entry = next((e for e in listed if isinstance(e, Mapping) and model in (e.get("name"), e.get("model"))), None) \
        if isinstance(listed, list) else None
    details = entry.get("details") if entry is not None else None
    if isinstance(details, Mapping) and isinstance(details.get("quantization_level"), str):
        found["quantisation"] = details["quantization_level"]
    return "; ".join(f"{name}={value[:120]}" for name, value in found.items()) or None


def read_completion(body: Any, need_text: bool = True) -> tuple[str, int, int]:
    """(text, prompt tokens, completion tokens) of a chat completion; a ``bad_response`` failure if it is not one
    (``need_text``: also when its text is blank)."""
    choices = body.get("choices") if isinstance(body, Mapping) else None
    message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(
        choices[0], Mapping) else None
    text = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(text, str) or (need_text and not text.strip()):
        raise ScoringFailure("bad_response", "no choices[0].message.content text in the reply")
    usage = body.get("usage")
    if usage is not None and not isinstance(usage, Mapping):
        raise ScoringFailure("bad_response", f"usage is {type(usage).__name__}, not an object")
    return text, token_count(usage, "prompt_tokens"), token_count(usage, "completion_tokens")


def finish_reason(body: Mapping) -> str | None:
    """``choices[0].finish_reason`` of a chat completion, when it is a word (``stop``, ``length``, ...)."""
    choices = body.get("choices")
    found = choices[0].get("finish_reason") if isinstance(choices, list) and choices and isinstance(
        choices[0], Mapping) else None
    return found[:40] if isinstance(found, str) and found else None


def first_token_alternatives(body: Mapping) -> tuple[tuple[str, float], ...] | None:
    """The first generated token's alternatives from an OpenAI-style ``choices[0].logprobs.content[0].top_logprobs``
    (vLLM, llama.cpp's server), or None when the reply carries none or not in that shape."""
    try:
        first = body["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        found = tuple((str(item["token"]), float(item["logprob"])) for item in first)
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return found if found and all(math.isfinite(logprob) for _, logprob in found) else None


def token_count(usage: Mapping | None, field: str) -> int:
    """A reported token count (0 when the endpoint reports none)."""
    value = None if usage is None else usage.get(field)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REPLY_TOKENS:
        raise ScoringFailure("bad_response", f"usage.{field} = {value!r:.40} is not a token count in "
                                             f"[0, {MAX_REPLY_TOKENS}]")
    return value


class ResponseCache(SqliteCache):
    """Replies by request content hash; each write commits, so a killed run resumes where it stopped."""

    def __init__(self, directory):
        super().__init__(directory, CACHE_FILE,
                         "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, body TEXT, seconds REAL);",
                         "response cache")

    def get(self, key: str) -> tuple[dict, float] | None:
        """A cached good reply; one stored before replies were checked on receipt is asked again if it is bad."""
        rows = self.execute("SELECT body, seconds FROM replies WHERE key = ?", (key,))
        if not rows:
            return None
        body = json.loads(rows[0][0])
        try:
            token_count(body, "prompt_tokens"), token_count(body, "completion_tokens")
        except ScoringFailure:
            return None
        return body, float(rows[0][1])

    def put(self, key: str, body: dict, seconds: float) -> None:
        self.write("INSERT OR REPLACE INTO replies VALUES (?, ?, ?)", [(key, canonical_json(body), seconds)])
