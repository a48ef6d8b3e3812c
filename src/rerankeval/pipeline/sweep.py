"""Stage `sweep`: the declared policy sweeps (``policies`` in params.yaml) over stored scores, as frontier points.

Runs after every rerank stage (it depends on their runs), so the pairs it needs are in the pair-score cache; it
prints and records how many pairs it scored, read from the cache and reused.
"""

from __future__ import annotations

from collections.abc import Collection

import pandas as pd
import pyarrow as pa

from ..core.io import write_table
from ..data.access import AccessLabels
from ..data.snapshot import Snapshot
from ..policies.config import PoliciesConfig, frontier_measure
from ..policies.points import POINT_COLUMNS, per_query_quality, policy_points
from ..policies.sweep import run_policy
from ..systems.registry import BuildContext
from ..systems.splits import split_candidates
from ..workspace.paths import SYSTEM_PLACEHOLDER, PipelinePaths
from ..workspace.runs import load_runs
from .params import Params
from .system_configs import first_seed_configs


def inactive_sweeps(policies: PoliciesConfig, systems: Collection[str]) -> list[int]:
    """The positions of the sweeps over a system this run does not configure (one dropped with
    ``-S '~system@systems.NAME'``, or a misspelt name): they sweep nothing and the stage says so, as compare does for
    a release claim, so dropping a system does not need its sweep dropped too."""
    return [number for number, sweep in enumerate(policies.sweeps) if sweep.system not in systems]


def run(params: Params, paths: PipelinePaths) -> None:
    policies, split = params.policies, params.dataset.eval_split
    measure = frontier_measure(policies.measure, params.evaluation.depth_measures,
                               params.compare.release.primary_metric)
    baseline_name, settings, evaluation = params.compare.baseline, params.compare, params.evaluation
    snapshot = Snapshot(paths.snapshot)
    qrels = snapshot.table("qrels").to_pandas()
    candidates_of = split_candidates(params, snapshot, paths.candidates, paths.fallback)
    candidates, queries, _, _ = candidates_of(split)
    baseline_run = load_runs(paths.run(SYSTEM_PLACEHOLDER), [baseline_name], paths.candidates)[baseline_name]
    baseline = per_query_quality(baseline_run, qrels, sorted(queries), measure, evaluation.no_relevant)
    context = BuildContext(qrels=qrels, systems=first_seed_configs(params), candidates_of=candidates_of,
                           evaluated_split=split, stale=AccessLabels.of_candidates(snapshot, paths.candidates).stale)
    frames, pairs = [], {}
    inactive = inactive_sweeps(policies, context.systems)
    for number in inactive:
        sweep = policies.sweeps[number]
        print(f"sweep: note: policies.sweeps[{number}] ({sweep.label or sweep.system}) sweeps nothing: this run does "
              f"not configure {sweep.system!r}")
    for number, sweep in enumerate(policies.sweeps):
        if number in inactive:
            continue
        policy = run_policy(sweep, candidates, queries, context, f"policies.sweeps[{number}]")
        pairs[policy.label] = policy.pairs.to_dict()
        frames.append(policy_points(policy, baseline, qrels, measure, settings, no_relevant=evaluation.no_relevant,
                                    warmup_queries=evaluation.warmup_queries,
                                    hourly_price=evaluation.hourly_price_usd))
        print(f"sweep[{policy.label}]: {len(sweep.values)} settings, pairs scored {policy.pairs.scored}, "
              f"read from the cache {policy.pairs.from_cache}, reused {policy.pairs.reused}")
    points = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=POINT_COLUMNS)
    write_table(paths.sweep_points, pa.Table.from_pandas(points, preserve_index=False),
                {"measure": measure, "baseline": baseline_name, "split": split, "pairs": pairs})
