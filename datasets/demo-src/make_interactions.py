"""Generate the demo's synthetic online logs (datasets/demo-online) from the demo's runs and qrels, seeded.

    python datasets/demo-src/make_interactions.py   # after `make demo`: it reads data/runs and the snapshot

Synthetic, and stated as such (``rerankeval.online.synthetic``): simulated users with the default click model on the
pages of ``ce_minilm_ft`` and ``fusion`` (a team-draft log and an A/B log) over the test queries. They give the
readout stages (``online.readouts`` in conf/online/default.yaml) something to read; their clicks follow the click
model, not people.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rerankeval.core.io import write_text
from rerankeval.online.synthetic import synthetic_log

OUT = Path("datasets/demo-online")
CHALLENGER, BASELINE = "ce_minilm_ft", "fusion"
MEDIAN_MS = {CHALLENGER: 95.0, BASELINE: 38.0}
LOGS = {"interleaving.jsonl": ("team_draft", 2000, 1), "ab.jsonl": ("ab", 3000, 2)}


def main() -> None:
    queries = pd.read_parquet("data/snapshot/queries.parquet")
    query_ids = sorted(queries.loc[queries["split"] == "test", "query_id"])
    qrels = pd.read_parquet("data/snapshot/qrels.parquet")
    grades = {query: dict(zip(found["doc_id"], found["relevance"].astype(int))) for query, found in
              qrels.groupby("query_id")}
    rankings = {}
    for system in (CHALLENGER, BASELINE):
        run = pd.read_parquet(f"data/runs/run_{system}.parquet")
        rankings[system] = {query: found.sort_values("rank", kind="stable")["doc_id"].tolist()
                            for query, found in run.groupby("query_id")}
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (design, impressions, seed) in LOGS.items():
        lines = synthetic_log(rankings, grades, query_ids, CHALLENGER, BASELINE, design=design,
                              impressions=impressions, median_ms=MEDIAN_MS, seed=seed)
        write_text(OUT / name, "\n".join(lines) + "\n")
        print(f"{OUT / name}: {len(lines)} lines")


if __name__ == "__main__":
    main()
