"""Generate the demo's synthetic online logs (datasets/demo-online) from the demo's runs and qrels, seeded.

    python datasets/demo-src/make_interactions.py   # after `make demo`: it reads data/runs and the snapshot

Synthetic, and stated as such (``rerankeval.online.synthetic``): simulated users with the default click model on the
pages of ``ce_minilm_ft`` and ``fusion`` (a team-draft log and an A/B log) over the test queries. They give the
readout stages (``online.readouts`` in conf/online/default.yaml) something to read; their clicks follow the click
model, not people. And a production query log for the shadow stage (``online.shadows``): arrivals over about ten
minutes of the test queries' texts with their users' groups, popularity Zipf-like, not people's either.

``provenance.json`` beside the logs records the md5 of the two runs they were drawn from, as dvc.lock records them:
a test fails when the committed runs change and the logs were not drawn again (run this, then `dvc repro`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from rerankeval.core.io import write_text
from rerankeval.data.snapshot import Snapshot
from rerankeval.online.sensitivity import graded, ranked_lists
from rerankeval.online.synthetic import synthetic_log, synthetic_query_log
from rerankeval.workspace.paths import SYSTEM_PLACEHOLDER, PipelinePaths
from rerankeval.workspace.runs import load_runs

OUT = Path("datasets/demo-online")
CHALLENGER, BASELINE = "ce_minilm_ft", "fusion"
MEDIAN_MS = {CHALLENGER: 95.0, BASELINE: 38.0}
LOGS = {"interleaving.jsonl": ("team_draft", 2000, 1), "ab.jsonl": ("ab", 3000, 2)}
SHADOW_LOG, SHADOW_LINES, SHADOW_RATE_PER_S, SHADOW_SEED = "queries.jsonl", 400, 0.7, 3
PROVENANCE = "provenance.json"


def main() -> None:
    paths = PipelinePaths.load()
    snapshot = Snapshot(paths.snapshot)
    query_ids = sorted(snapshot.queries_of("test")["query_id"])
    grades = graded(snapshot.table("qrels").to_pandas())
    runs = load_runs(paths.run(SYSTEM_PLACEHOLDER), [CHALLENGER, BASELINE])
    rankings = {system: ranked_lists(run) for system, run in runs.items()}
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (design, impressions, seed) in LOGS.items():
        lines = synthetic_log(rankings, grades, query_ids, CHALLENGER, BASELINE, design=design,
                              impressions=impressions, median_ms=MEDIAN_MS, seed=seed)
        write_text(OUT / name, "\n".join(lines) + "\n")
        print(f"{OUT / name}: {len(lines)} lines")
    test = snapshot.queries_of("test")
    groups = test["user_groups"] if "user_groups" in test.columns else [None] * len(test)
    asked = [(text, None if found is None else list(found)) for text, found in zip(test["text"], groups)]
    lines = synthetic_query_log(asked, lines=SHADOW_LINES, rate_per_s=SHADOW_RATE_PER_S, seed=SHADOW_SEED)
    write_text(OUT / SHADOW_LOG, "\n".join(lines) + "\n")
    print(f"{OUT / SHADOW_LOG}: {len(lines)} lines")
    drawn_from = {str(paths.run(system)): hashlib.md5(paths.run(system).read_bytes()).hexdigest()
                  for system in (CHALLENGER, BASELINE)}
    write_text(OUT / PROVENANCE, json.dumps({"script": "datasets/demo-src/make_interactions.py", "synthetic": True,
                                             "runs_md5": drawn_from}, indent=1) + "\n")


if __name__ == "__main__":
    main()
