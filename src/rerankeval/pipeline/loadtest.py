"""The load test (in stage `latency`, and `rerankeval loadtest`): the evaluated split's frozen candidates replayed
against an endpoint.

A learned system is served for the test (``rerankeval serve``, on a free port of 127.0.0.1) after its requests have
been scored in-process; an ``http_rerank`` system is tested at its own endpoint. With ``serving.loadtest.enabled``
false the stage writes ``{"ran": false}`` at once and the verdict reads the in-process measurement.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from ..core.io import read_table, write_json
from ..rerank.assemble import RUN_SCHEMA
from ..serving.loadtest import Endpoint, Request, in_process, machine_load, overhead, run_levels, score_parity
from ..serving.server import free_port, served, serving_recipe, wait_healthy
from ..systems.base import RERANKED
from ..systems.pairs import NORMALIZE
from ..systems.http_rerank import api_key
from ..systems.splits import eval_queries, heads
from ..workspace.runs import system_file
from .params import Params
from .system_configs import first_seed_configs


def request_tokens(run_path: str | Path | None) -> dict[str, int]:
    """Input tokens per query (query + passage tokens of its scored pairs, before truncation), from its run."""
    if run_path is None or not Path(run_path).exists():
        return {}
    run = read_table(run_path, RUN_SCHEMA).to_pandas()
    scored = run[(run["mode"] == RERANKED) & run["passage_tokens"].notna()]
    return (scored["query_tokens"] + scored["passage_tokens"]).groupby(scored["query_id"]).sum().astype(int).to_dict()


def run(params: Params, snapshot_dir: str | Path, candidates_path: str | Path, out_path: str | Path,
        run_pattern: str | Path | None = None, overrides: Mapping[str, Any] | None = None, force: bool = False) -> None:
    """``run_pattern`` (``...run_{system}.parquet``): where the tested system's run gives each request's tokens."""
    settings = params.serving.loadtest.model_validate({**params.serving.loadtest.to_dict(), **(overrides or {})})
    if not settings.enabled and not force:
        write_json(out_path, {"ran": False, "reason": "serving.loadtest.enabled is false"})
        print("loadtest: off (serving.loadtest.enabled is false)")
        return
    name = settings.system
    if name not in params.systems:
        raise ConfigError(f"serving.loadtest.system: no system {name!r} under `systems`.")
    config = first_seed_configs(params)[name]
    _, candidates, queries = eval_queries(params, snapshot_dir, candidates_path)
    tokens = request_tokens(system_file(run_pattern, name) if run_pattern else None)
    requests = [Request(head.query_text, head.passages, tokens.get(head.query_id))
                for head in heads(candidates, queries, config.depth)]
    before = machine_load()
    if config.kind == "http_rerank":
        endpoint = Endpoint(config.base_url, config.protocol, config.model, api_key(config, f"systems.{name}"))
        local, peak_rss, where, parity = None, None, config.base_url, None
        levels = run_levels(endpoint, requests, settings)
    else:
        options = params.serving.serve.model_copy(update={"port": free_port(params.serving.serve.host)})
        scorer = serving_recipe(name, params.systems).build()
        local = in_process(scorer, requests, settings, threads=max(1, int(options.cpus_per_replica)))
        with served(name, params.systems, options) as url:
            levels = run_levels(Endpoint(url, model=name), requests, settings)
            peak_rss, where = wait_healthy(url).get("peak_rss_mib"), "rerankeval serve (Ray Serve, this machine)"
            parity = score_parity(Endpoint(url, model=name), requests[:settings.requests], scorer,
                                  NORMALIZE[options.score], settings, settings.parity_tolerance)
    result = {"ran": True, "system": name, "endpoint": where, "depth": config.depth, "queries": len(requests),
              "pareto_concurrency": settings.pareto_concurrency, "warmup_requests": settings.warmup_requests,
              "levels": levels, "in_process": local, "overhead": overhead(levels, local),
              "server_peak_rss_mib": peak_rss, "serve": params.serving.serve.to_dict() if local else None,
              "parity": parity,
              "machine": {"before": before, "after": machine_load()}}
    write_json(out_path, result)
    if parity is not None:
        said = (f"largest score difference {parity['max_abs_diff']:.3g} on {parity['requests']} requests "
                f"({parity['requests_reordered']} reordered)" if "error" not in parity else parity["error"])
        print(f"loadtest[{name}] served parity {'held' if parity['passed'] else 'FAILED'}: {said}, tolerance "
              f"{parity['tolerance']:g}" + ("" if parity["passed"] else ": the endpoint does not serve the model "
                                                                        "evaluated in-process"))
    for level in levels:
        print(f"loadtest[{name}] concurrency {level['concurrency']:>3}: p50 {level['p50_ms']:.0f} ms, p95 "
              f"{level['p95_ms']:.0f} ms, p99 {level['p99_ms']:.0f} ms, {level['requests_per_s']:.2f} req/s, "
              f"{level['pairs_per_s']:.1f} pairs/s")
