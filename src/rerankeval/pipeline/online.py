"""Stage `online`: each challenger's online experiment sized before launch (``rerankeval.online.sensitivity``).

The challengers are the systems other than the baseline and the reference systems (the oracle and the random floor
bound the measures; no one launches them); their rankings and the baseline's come from the rerank stages, the grades
from the qrels, the offline deltas from the evaluate stage's per-query primary metric.
"""

from __future__ import annotations

from typing import NamedTuple

from ..core.io import read_table, write_json
from ..data.snapshot import Snapshot
from ..online.interleaving import METHODS
from ..online.sensitivity import graded, online_sizing, ranked_lists
from ..workspace.paths import PER_QUERY_FILE, SYSTEM_PLACEHOLDER, PipelinePaths
from ..workspace.runs import load_runs, load_traits
from .params import Params


class SizingInputs(NamedTuple):
    """``online_sizing``'s arguments but the settings, in its order."""

    rankings: dict
    grades: dict
    deltas: dict
    baseline: str
    query_ids: list[str]


def sizing_inputs(params: Params, paths: PipelinePaths) -> SizingInputs:
    """What ``online_sizing`` reads from the pipeline's outputs."""
    # the first of compare.baselines is the baseline (CompareConfig.baseline)
    baseline, metric = params.compare.baselines[0], params.compare.release.primary_metric
    traits = load_traits(paths.run(SYSTEM_PLACEHOLDER), params.system_names)
    challengers = [system for system in params.system_names if system != baseline and not traits[system].reference]
    runs = load_runs(paths.run(SYSTEM_PLACEHOLDER), [baseline, *challengers])
    per_query = read_table(paths.eval / PER_QUERY_FILE).to_pandas()
    quality = per_query.pivot(index="query_id", columns="system", values=metric)
    query_ids = sorted(per_query.loc[per_query["system"] == baseline, "query_id"])
    quality = quality.loc[query_ids]
    qrels = Snapshot(paths.snapshot).table("qrels").to_pandas()
    grades = graded(qrels[qrels["query_id"].isin(set(query_ids))])
    rankings = {system: ranked_lists(run) for system, run in runs.items()}
    deltas = {system: (quality[system] - quality[baseline]).to_numpy() for system in challengers}
    return SizingInputs(rankings, grades, deltas, baseline, query_ids)


def run(params: Params, paths: PipelinePaths) -> None:
    config, metric = params.online, params.compare.release.primary_metric
    if not config.enabled:
        write_json(paths.online, {"enabled": False})
        print("online: off (online.enabled: false)")
        return
    inputs = sizing_inputs(params, paths)
    sizing = online_sizing(*inputs, config)
    baseline = inputs.baseline
    write_json(paths.online, {"enabled": True, "metric": metric, "split": params.dataset.eval_split, **sizing})
    for system, found in sizing["challengers"].items():
        needed = {method: found["interleaving"][method]["impressions_needed"] for method in found["interleaving"]}
        print(f"online: {system:>24} vs {baseline}: impressions needed at power {config.power}: "
              + ", ".join(f"{method} {count}" for method, count in needed.items())
              + f", A/B {found['ab']['impressions_needed']}; "
              f"judged queries offline {found['offline']['judged_queries_needed']}")
    if sizing["null_check"]:
        checked = sizing["null_check"]
        print("online: null pairs detected: " + ", ".join(
            f"{method} {checked[method][null]['rate']:.1%} ({null})" for method in METHODS
            for null in ("labels", "grade_blind")))
    for method, by_system in (sizing["bias_check"] or {}).items():
        material = [system for system, checked in by_system.items() if checked["material"]]
        if material:
            print(f"online: warning: {method} is biased on {', '.join(material)}: users who click whatever the grade "
                  f"prefer one side, enough to raise its false detection rate above alpha {config.alpha}")
