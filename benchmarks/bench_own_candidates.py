"""The team's own candidates, measured (run by hand; nothing here is asserted).

Two steps around the pipeline runs that README's "Your own first stage" describes:

- ``bm25-run FOLDER --out RUN``: another first stage to import, a BM25-only TREC run over a BEIR folder's whole corpus
  (bm25s with conf/retrieval/hybrid.yaml's k1, b and variant, each query's top 100, the real scores);
- ``record ...``: from the outputs those runs left (copied aside after each), the YAML of
  results/benchmarks/own_candidates.yaml: whether a replayed set equals the hybrid one it was exported from (candidate,
  passage and first-stage tables value for value, and every metric), and the ceiling, the source's own order and the
  verdicts of a run-source collection.

    .venv/bin/python benchmarks/bench_own_candidates.py bm25-run ../shared/datasets/cranfield --out cranfield_bm25.trec
    .venv/bin/python benchmarks/bench_own_candidates.py record --round-trip HYBRID_DIR REPLAY_DIR \
        --run-source RUN_DIR --commit C --command ... --conditions ... --out results/benchmarks/own_candidates.yaml

Each folder holds what its run left: candidates.parquet, passages.parquet, first_stage.parquet, metrics.json, the
freeze stage's log (freeze.log); the replay one export.json ({"lines", "mib"} of the replay file); the run one
verdicts.json and cache_after_freeze.txt (the embedding cache folder listed right after the freeze).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLES = ("candidates.parquet", "passages.parquet", "first_stage.parquet")


def bm25_run(folder: Path, out: Path, top_n: int) -> int:
    """Write BM25's top ``top_n`` of every query of ``folder`` as a TREC run; return its rows."""
    sys.path.insert(0, str(ROOT / "src"))
    import numpy as np
    import pandas as pd
    import yaml

    from rerankeval.core.precision import stored_scores
    from rerankeval.data.trec import write_trec_run
    from rerankeval.eval.engine import assign_ranks
    from rerankeval.retrieval.lexical import Bm25Retriever
    from rerankeval.retrieval.text import passage_text

    bm25 = yaml.safe_load((ROOT / "conf" / "retrieval" / "hybrid.yaml").read_text(encoding="utf-8"))["bm25"]
    docs = [json.loads(line) for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line]
    queries = [json.loads(line) for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()
               if line]
    retriever = Bm25Retriever([passage_text(doc.get("title") or "", doc["text"]) for doc in docs], **bm25)
    scores = stored_scores(retriever.scores([query["text"] for query in queries]))
    doc_ids = np.array([str(doc["_id"]) for doc in docs], dtype=object)
    frames = []
    for row, query in enumerate(queries):
        matched = np.flatnonzero(scores[row] > 0)  # a document sharing no term with the query is not retrieved
        frames.append(pd.DataFrame({"query_id": str(query["_id"]), "doc_id": doc_ids[matched],
                                    "score": scores[row, matched]}))
    ranked = assign_ranks(pd.concat(frames, ignore_index=True))  # trec_eval's order, so the cut is the one it reads
    run = ranked[ranked["rank"] <= top_n].drop(columns="rank")
    write_trec_run(run, out, "bm25")
    return len(run)


def content_sha256(path: Path) -> str:
    """sha256 of a Parquet file's column digests (``core.io``): its content, without the provenance metadata."""
    import hashlib

    import pyarrow.parquet as pq

    digests = json.loads(pq.read_schema(path).metadata[b"rerankeval.sha256"])["columns"]
    return hashlib.sha256(json.dumps(digests, sort_keys=True).encode("utf-8")).hexdigest()


def freeze_lines(folder: Path) -> list[str]:
    """The freeze stage's own log lines and whether it encoded anything (the stage log saved as freeze.log)."""
    lines = (folder / "freeze.log").read_text(encoding="utf-8").splitlines()
    return [re.sub(r"/\S*/", "", line)  # file names without the machine's folders
            for line in lines if line.startswith("freeze:") or "encod" in line]


def round_trip(hybrid: Path, replay: Path) -> tuple[list[str], dict]:
    """Notes and the nDCG@10 table of a hybrid freeze against the replay of its own export."""
    import pyarrow.parquet as pq

    metrics = [json.loads((folder / "metrics.json").read_text(encoding="utf-8")) for folder in (hybrid, replay)]
    tables = []
    for name in TABLES:
        same_values = pq.read_table(hybrid / name).equals(pq.read_table(replay / name))
        digests = {content_sha256(folder / name)[:12] for folder in (hybrid, replay)}
        tables.append(f"{name} {'equal' if same_values else 'DIFFERENT'} value for value, content sha256 "
                      f"{' vs '.join(sorted(digests))}")
    export = json.loads((replay / "export.json").read_text(encoding="utf-8"))
    same = {key: metrics[0][key] == metrics[1][key] for key in ("systems", "first_stage", "queries", "fusion")}
    notes = [f"SciFact round trip: the replay file held {export['lines']} lines ({export['mib']} MiB); "
             + "; ".join(tables) + " (pyarrow Table.equals; the files' provenance metadata names the source). "
             f"metrics.json: {', '.join(key + (' equal' if equal else ' DIFFERENT') for key, equal in same.items())}"
             f"; candidate_source {metrics[0].get('candidate_source')!r} in both"
             f"{'' if metrics[0].get('candidate_source') == metrics[1].get('candidate_source') else ' (NOT)'}. "
             f"The hybrid freeze: {' / '.join(freeze_lines(hybrid))}. The replay freeze: "
             f"{' / '.join(freeze_lines(replay))}."]
    rows = [[name, f"{values['nDCG@10']:.4f}", f"{metrics[1]['systems'][name]['nDCG@10']:.4f}",
             f"{values['CandidateRecall@100']:.4f}",
             "yes" if values == metrics[1]["systems"][name] else "NO"]
            for name, values in metrics[0]["systems"].items()]
    table = {"title": f"SciFact test ({metrics[0]['queries']} queries): hybrid freeze and the replay of its export",
             "columns": ["system", "nDCG@10 (hybrid)", "nDCG@10 (replay)", "CandidateRecall@100",
                         "every metric equal"], "rows": rows}
    return notes, table


def run_source(folder: Path, top_n: int) -> tuple[list[str], list[dict]]:
    """Notes and tables of a collection frozen from a TREC run: ceiling, the run's order, the verdicts."""
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    verdicts = json.loads((folder / "verdicts.json").read_text(encoding="utf-8"))
    cache = (folder / "cache_after_freeze.txt").read_text(encoding="utf-8").strip()
    notes = [f"Cranfield from the BM25 run: the freeze log: {' / '.join(freeze_lines(folder))}. No encoder ran "
             f"in the freeze (no encoding line), and the embedding cache after it: `{cache}`. The first-stage table "
             f"of metrics.json holds {', '.join(f'`{name}`' for name in metrics['first_stage'])} alone "
             f"(candidate_source {metrics.get('candidate_source')!r}): the run's own top {top_n} has coverage "
             f"R@{top_n} " + ", ".join(f"{values[f'R@{top_n}']:.4f}" for values in metrics["first_stage"].values())
             + f" and candidate recall (Success@{top_n}) "
             + ", ".join(f"{values[f'Success@{top_n}']:.4f}" for values in metrics["first_stage"].values()) + "."]
    sys.path.insert(0, str(ROOT / "src"))
    from rerankeval.eval.funnel import oracle_column

    ceiling = oracle_column("nDCG@10")
    own = {verdicts["baseline"]: " (the run's own order)"}
    rows = [[f"`{name}`{own.get(name, '')}", f"{values['nDCG@10']:.4f}", f"{values[f'CandidateRecall@{top_n}']:.4f}",
             f"{values[ceiling]:.4f}"] for name, values in metrics["systems"].items()]
    quality = {"title": f"Cranfield test ({metrics['queries']} queries), candidates = the BM25 run's top {top_n}",
               "columns": ["system", "nDCG@10", f"CandidateRecall@{top_n}", "oracle nDCG@10 (ceiling)"],
               "rows": rows}
    level = verdicts["rule"]["confidence"]
    decided = {"title": f"Release verdicts vs `{verdicts['baseline']}` (the run's own order)",
               "columns": ["challenger", "decision", f"Δ {verdicts['rule']['primary_metric']} [{level:.0%} CI]",
                           "decided by"],
               "rows": [[f"`{name}`", verdict["decision"],
                         f"{verdict['delta']:+.4f} [{verdict['ci'][0]:+.4f}, {verdict['ci'][1]:+.4f}]",
                         verdict["decided_by"]] for name, verdict in verdicts["verdicts"].items()]}
    return notes, [quality, decided]


def main() -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from rerankeval.report.results_data import add_provenance_arguments, write_benchmark

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a BM25 run of the bundled demo: checks that it runs")
    steps = parser.add_subparsers(dest="step")
    run = steps.add_parser("bm25-run", help="a BM25-only TREC run over a BEIR folder")
    run.add_argument("folder", type=Path)
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--top-n", type=int, default=100)
    record = steps.add_parser("record", help="the results YAML from the saved outputs")
    record.add_argument("--round-trip", nargs=2, type=Path, metavar=("HYBRID_DIR", "REPLAY_DIR"), required=True)
    record.add_argument("--run-source", type=Path, metavar="RUN_DIR", required=True)
    record.add_argument("--top-n", type=int, default=100)
    add_provenance_arguments(record)
    args = parser.parse_args()
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            rows = bm25_run(ROOT / "datasets" / "demo", Path(tmp) / "demo_bm25.trec", 100)
            print(json.dumps({"bm25_run_rows": rows}))
        return
    if args.step == "bm25-run":
        print(json.dumps({"bm25_run_rows": bm25_run(args.folder, args.out, args.top_n), "out": str(args.out)}))
        return
    if args.step == "record":
        trip_notes, trip = round_trip(*args.round_trip)
        run_notes, run_tables = run_source(args.run_source, args.top_n)
        print(write_benchmark(args, "the team's own candidates: a replayed export, a BM25-only run as candidates",
                              [*trip_notes, *run_notes], [trip, *run_tables]))
        return
    parser.error("choose a step: bm25-run or record")


if __name__ == "__main__":
    main()
