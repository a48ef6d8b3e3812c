"""Stage `readout`: one online experiment under ``online.readouts``, read from its interaction log, measured and
decided (``rerankeval.online.readout``), written as JSON and as its page (``report.online.readout_page``)."""

from __future__ import annotations

from ..core.errors import ConfigError
from ..core.hashing import sha256_file
from ..core.io import write_json, write_text
from ..data.snapshot import Snapshot
from ..online.logs import read_log
from ..online.readout import readout
from ..report.online import readout_page
from ..retrieval.candidates import load_candidates
from ..workspace.paths import PipelinePaths
from .params import Params


def run(params: Params, paths: PipelinePaths, name: str) -> None:
    experiments = params.online.readouts
    if name not in experiments:
        raise ConfigError(f"{params.source}: no online experiment {name!r} under online.readouts (configured: "
                          f"{', '.join(experiments) or 'none'})")
    config = experiments[name]
    baseline = config.baseline or params.compare.baselines[0]  # the first is the baseline (CompareConfig.baseline)
    if config.challenger == baseline:
        raise ConfigError(f"online.readouts.{name}: challenger and baseline are both {baseline!r}. Fix: name the "
                          "system the experiment tried as challenger")
    queries = Snapshot(paths.snapshot).table("queries").column("query_id").to_pylist()
    candidates = load_candidates(paths.candidates, columns=["query_id", "doc_id"], with_text=False)
    by_query = {query: set(found) for query, found in candidates.groupby("query_id")["doc_id"]}
    impressions, counts = read_log(config.log, (config.challenger, baseline), set(queries), by_query,
                                   max_impressions=config.max_impressions, seed=params.compare.seed)
    if counts.unknown_queries == counts.impressions:  # a readout of it would decide on another collection's traffic
        raise ConfigError(f"{config.log}: none of the log's {counts.impressions} impressions asks a query of this "
                          "snapshot, so it is no log of this collection's traffic. Fix: point "
                          f"online.readouts.{name}.log at this collection's log, or remove the readout "
                          "(conf/online_logs/: the demo's logs are demo.yaml's; dataset=beir selects none.yaml)")
    boot = {"n_samples": params.compare.samples, "seed": params.compare.seed,
            "confidence": params.compare.confidence, "method": params.compare.ci_method}
    found = {"experiment": name, "log_sha256": sha256_file(config.log), "synthetic": config.synthetic,
             **readout(impressions, counts, config, baseline, boot)}
    write_json(paths.readout(name), found)
    write_text(paths.readout(name).with_suffix(".md"), readout_page(found))
    print(f"readout@{name}: {counts.impressions} impressions of {counts.lines} lines; {found['verdict']['decision']} "
          f"({found['verdict']['decided_by']})")
