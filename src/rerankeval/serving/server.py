"""``rerankeval serve SYSTEM``: a learned system's model behind Cohere's v2 rerank API, with Ray Serve.

One deployment (``replicas`` copies, each loading the model once) answers ``POST /v2/rerank`` and ``GET /health``.
A request is checked before it is queued for the model (``rerank_api``: Cohere's fields, at most ``max_documents``
documents of at most ``max_document_chars`` characters, a body of at most ``max_request_bytes``); a refused one gets
4xx and ``{"message": "<field>: <problem>. Fix: <how>"}``.
Requests are batched dynamically with ``@serve.batch``: a batch is scored when it holds ``max_batch_size`` requests
or its oldest request has waited ``batch_wait_s``; the pairs of all its requests are forwarded together, grouped by
length. Every reply carries the server's own time in milliseconds, as text-embeddings-inference does:
``x-queue-time`` (waiting for the batch), ``x-inference-time`` (scoring the batch) and ``x-compute-time`` (both),
so a client (``http_rerank``, the load test) can split network from server time. Bound to 127.0.0.1 by default.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import time
from collections.abc import Iterator, Mapping
from typing import Any

from ..core.errors import ConfigError
from ..systems.pair_scoring import ScorerRecipe
from ..systems.pairs import NORMALIZE, PAIR_SCORERS
from ..systems.registry import BuildContext, parse_system_config
from .config import ServeConfig
from .rerank_api import BadRerankRequest, check_body_size, parse_rerank_body, rerank_response

APP_NAME = "rerankeval"


def serving_recipe(system_name: str, systems: Mapping[str, Mapping[str, Any]]) -> ScorerRecipe:
    """How a replica builds the system's scorer; refuses systems that have no model of their own to serve."""
    if system_name not in systems:
        raise ConfigError(f"serve: no system {system_name!r} under `systems` (configured: {', '.join(systems)}).")
    settings = parse_system_config(system_name, systems[system_name])
    if settings.kind not in PAIR_SCORERS or settings.kind == "http_rerank":
        raise ConfigError(f"serve: systems.{system_name} is of kind {settings.kind!r}; only systems that score pairs "
                          "with a model of their own can be served "
                          f"({', '.join(sorted(set(PAIR_SCORERS) - {'http_rerank'}))}).")
    if settings.outdated == "demote":
        raise ConfigError(f"serve: systems.{system_name} has outdated: demote, a rule on its ranking that needs the "
                          "collection's validity labels, which a served request does not carry: the endpoint would "
                          "answer with the model's order. Fix: serve the system without it (the same model).")
    import pandas as pd

    empty = BuildContext(qrels=pd.DataFrame({"query_id": [], "doc_id": [], "relevance": []}))
    return ScorerRecipe(PAIR_SCORERS.get(settings.kind), settings, empty)


def score_requests(scorer, requests: list[tuple[str, list[str]]]) -> list:
    """Raw scores of a batch of requests, one array each, request by request through any pair scorer's
    ``score_batches`` (which batches each request's pairs by length). A request the model fails on gets its
    ``ScoringError`` in place of its scores, so its batch-mates are still answered."""
    import numpy as np

    results = []
    for query, documents in requests:
        try:
            scores = np.empty(len(documents))
            for batch in scorer.score_batches(query, documents):
                scores[batch.indices] = batch.scores
        except Exception as err:  # noqa: BLE001 -- the model's error on this request, not the batch's
            results.append(ScoringError(f"{type(err).__name__}: {str(err)[:300]}"))
            continue
        results.append(scores)
    return results


class ScoringError(str):
    """Why the model could not score one request of a batch (its message); the request alone fails, with 500."""


async def read_body(request, options: ServeConfig) -> bytes:
    """The body of a starlette ``request``; one over ``max_request_bytes`` is refused from its Content-Length before
    it is read, or, sent without one (chunked), as soon as what arrived passes the limit."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit():
        check_body_size(int(declared), options)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        check_body_size(size, options)
        chunks.append(chunk)
    return b"".join(chunks)


def _deployment(options: ServeConfig):
    """The Ray Serve deployment class (defined here so Ray is imported only when serving)."""
    import asyncio
    import resource

    from ray import serve
    from starlette.responses import JSONResponse

    normalize = NORMALIZE[options.score]

    @serve.deployment(name="rerank", num_replicas=options.replicas,
                      ray_actor_options={"num_cpus": options.cpus_per_replica},
                      max_ongoing_requests=max(64, 2 * options.max_batch_size))
    class RerankDeployment:
        def __init__(self, recipe: ScorerRecipe, system_name: str):
            self.scorer, self.system_name = recipe.build(), system_name
            self.model = getattr(recipe.settings, "model", system_name)
            self.requests = 0

        @serve.batch(max_batch_size=options.max_batch_size, batch_wait_timeout_s=options.batch_wait_s)
        async def score(self, requests: list[tuple[str, list[str], float]]) -> list[tuple[Any, float, float]]:
            started = time.perf_counter()
            # Off the event loop, so requests keep arriving (and queueing for the next batch) while the model runs.
            scores = await asyncio.get_running_loop().run_in_executor(
                None, score_requests, self.scorer, [(query, documents) for query, documents, _ in requests])
            inference_s = time.perf_counter() - started
            return [(values if isinstance(values, ScoringError) else normalize(values), started - arrived, inference_s)
                    for values, (_, _, arrived) in zip(scores, requests)]

        async def __call__(self, request) -> JSONResponse:
            path = request.url.path.rstrip("/")
            if request.method == "GET" and path in ("/health", "/healthz"):
                return JSONResponse({"status": "ok", "system": self.system_name, "model": self.model,
                                     "requests": self.requests,
                                     "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
            if request.method != "POST" or path != "/v2/rerank":
                return JSONResponse({"message": f"no route {request.method} {path}; POST /v2/rerank, GET /health"},
                                    status_code=404)
            arrived = time.perf_counter()
            try:
                rerank_request = parse_rerank_body(await read_body(request, options), options)
            except BadRerankRequest as refused:
                return JSONResponse({"message": str(refused)}, status_code=refused.status)
            self.requests += 1
            values, queue_s, inference_s = await self.score((rerank_request.query, rerank_request.documents, arrived))
            if isinstance(values, ScoringError):
                return JSONResponse({"message": f"the model failed on this request: {values}"}, status_code=500)
            return JSONResponse(
                rerank_response(rerank_request, values, f"{self.requests}"),
                headers={"x-queue-time": f"{queue_s * 1000:.3f}", "x-inference-time": f"{inference_s * 1000:.3f}",
                         "x-compute-time": f"{(queue_s + inference_s) * 1000:.3f}"})

    return RerankDeployment


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def wait_healthy(url: str, timeout_s: float = 120.0) -> dict[str, Any]:
    import httpx

    deadline, last = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        try:
            reply = httpx.get(f"{url}/health", timeout=5.0)
            if reply.status_code == 200:
                return reply.json()
            last = f"HTTP {reply.status_code}"
        except httpx.TransportError as err:
            last = type(err).__name__
        time.sleep(0.25)
    raise RuntimeError(f"{url}/health did not answer within {timeout_s:.0f}s (last: {last})")


@contextlib.contextmanager
def served(system_name: str, systems: Mapping[str, Mapping[str, Any]], options: ServeConfig) -> Iterator[str]:
    """Serve the system for the duration of the block; yields its base URL. Stops Serve (and Ray, if started here)."""
    from ..systems.ray_executor import ensure_ray

    recipe = serving_recipe(system_name, systems)
    import ray

    started_ray = not ray.is_initialized()
    ensure_ray()
    from ray import serve

    try:
        serve.start(http_options={"host": options.host, "port": options.port})
        serve.run(_deployment(options).bind(recipe, system_name), name=APP_NAME, route_prefix="/")
        url = f"http://{options.host}:{options.port}"
        wait_healthy(url)
        yield url
    finally:
        serve.shutdown()
        if started_ray:
            ray.shutdown()


def serve_until_stopped(system_name: str, systems: Mapping[str, Mapping[str, Any]], options: ServeConfig) -> None:
    """The ``rerankeval serve`` command: serve until SIGINT or SIGTERM, then shut down cleanly."""
    stop = {"now": False}

    def request_stop(signum, frame):
        stop["now"] = True

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with served(system_name, systems, options) as url:
            print(f"serving {system_name} at {url}/v2/rerank (health: {url}/health); Ctrl-C stops", flush=True)
            while not stop["now"]:
                time.sleep(0.2)
            print("shutting down", flush=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
