"""Stage `latency`: every system's per-query latency measured on its own (``rerankeval.serving.measure``), and the
load test of ``serving.loadtest.system`` when it is enabled (``rerankeval.pipeline.loadtest``).

One stage for all systems, after the rerank stages: it depends on their runs, which change whenever a system's model
or config does. Its output folder persists across runs: a system whose config, run, candidates and measurement
settings are those of its last measurement keeps it (no model is loaded for it), so a change to one system
re-measures that one only. Two systems whose settings differ only in a rule applied after the scores (``outdated:
demote``) time the same work: the second gets the first's measurement (``timed_as``). Delete data/latency to
re-measure everything (e.g. on a quieter machine).
"""

from __future__ import annotations

from ..core.hashing import canonical_json, sha256_file, sha256_text
from ..core.io import read_json, write_json
from ..serving.measure import measure_latency
from ..systems.registry import BuildContext, build_system
from ..systems.splits import eval_queries, heads, split_candidates
from ..workspace.paths import SYSTEM_PLACEHOLDER, PipelinePaths
from . import loadtest
from .params import Params
from .system_configs import first_seed_configs

MEASUREMENT_VERSION = "latency/v5"  # v3: the verdict round's per-query times (wall_ms_by_query); v4: a composite's
# components timed cold (``System.uncached``), not replayed from the pair-score cache; v5: other processes' CPUs
# read from /proc/stat over at least a quarter second, also for a round of fast queries (not the load average)


def run(params: Params, paths: PipelinePaths) -> None:
    settings, configs = params.serving.latency, first_seed_configs(params)  # a seed set: its first seed's model
    snapshot, candidates, queries = eval_queries(params, paths.snapshot, paths.candidates,
                                                 settings.queries + settings.warmup_queries)
    # Composites get the same context as in their rerank stage (a blend fits its weight on the train split).
    context = BuildContext(qrels=snapshot.table("qrels").to_pandas(), systems=configs,
                           candidates_of=split_candidates(params, snapshot, paths.candidates, paths.fallback),
                           evaluated_split=params.dataset.eval_split)
    unfiltered = None  # the candidates before the access filter, for a system configured without it
    measured = {paths.measurement(name) for name in params.system_names}
    for stale in paths.latency.glob("*.json") if paths.latency.is_dir() else []:
        if stale not in measured:
            stale.unlink()
    timed: dict[str, str] = {}  # what a measurement times -> the system whose measurement of it this run holds
    for name in params.system_names:
        path, inputs, work = paths.measurement(name), measurement_inputs(name, params, paths), timed_work(name, params)
        if path.exists() and read_json(path).get("inputs_sha256") == inputs:
            print(f"latency[{name}]: unchanged since its last measurement, kept ({path})")
            timed.setdefault(work, name)
            continue
        if work in timed:  # a rule after the scores (outdated: demote) is all that differs: the same timed work
            twin = timed[work]
            write_json(path, {**read_json(paths.measurement(twin)), "system": name, "inputs_sha256": inputs,
                              "timed_as": twin})
            print(f"latency[{name}]: times the same work as {twin} (its settings differ only in a rule applied after "
                  f"the scores), so {twin}'s measurement is its own ({path})")
            continue
        timed[work] = name
        config = configs[name]
        pool = candidates
        if not config.access_filter:
            if unfiltered is None:
                _, unfiltered, _ = eval_queries(params, paths.snapshot, paths.candidates,
                                                settings.queries + settings.warmup_queries, unfiltered=True)
            pool = unfiltered
        result = {"system": name, "depth": config.depth, "inputs_sha256": inputs,
                  **measure_latency(build_system(name, config, context), heads(pool, queries, config.depth),
                                    settings)}
        write_json(path, result)
        print(f"latency[{name}]: p95 {result['p95_ms']:.1f} ms (CPU time p95 {result['cpu_p95_ms']:.1f} ms), "
              f"{result['queries']} queries x {result['repeats']} rounds (p95 by round "
              f"{', '.join(f'{v:.1f}' for v in result['p95_ms_by_round'])}; other processes' CPUs by round "
              f"{result['other_cpus_by_round']}; load average {result['load_average_1m']['before']} -> "
              f"{result['load_average_1m']['after']})" + (f"; not trusted: {result['untrusted']}"
                                                           if result["untrusted"] else ""))
    loadtest.run(params, paths.snapshot, paths.candidates, paths.loadtest, paths.run(SYSTEM_PLACEHOLDER))


UNTIMED_SETTINGS = ("outdated", "depends_on")
"""A system's settings that change nothing the measurement times: a rule applied to its order after the scores
(``rerank.driver``: not part of ``measure_latency``'s work), and what DVC watches (the model path is in ``model``)."""


def timed_work(name: str, params: Params) -> str:
    """What a system's measurement times, the same for two systems that differ only in ``UNTIMED_SETTINGS``: its
    other settings (``access_filter`` among them: which candidates it is timed on). Within one run of this stage, the
    same settings name the same model files."""
    return sha256_text(canonical_json({key: value for key, value in params.systems[name].items()
                                       if key not in UNTIMED_SETTINGS}))


def measurement_inputs(name: str, params: Params, paths: PipelinePaths) -> str:
    """What a system's measurement depends on: its config, its run (which changes with its model), the candidates
    and the measurement settings."""
    run_path = paths.run(name)
    inputs = {"version": MEASUREMENT_VERSION, "config": params.systems[name],
              "settings": params.serving.latency.to_dict(),
              "run": sha256_file(run_path) if run_path.exists() else None, "candidates": sha256_file(paths.candidates)}
    if params.systems[name].get("access_filter") is False:  # it is timed on the candidates before the filter
        inputs["candidates"] = [inputs["candidates"], "unfiltered"]
    return sha256_text(canonical_json(inputs))
