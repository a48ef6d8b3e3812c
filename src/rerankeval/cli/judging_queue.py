"""``rerankeval judging-queue``: the compare stage's judging queue (``eval.judging``) for TREC (or Parquet) runs.

Queries: those of the qrels that at least one run answers (a query judged only non-relevant is among them: judging
a document relevant there brings it into the mean). The baseline is ``--baseline``'s run, by default the first. The
queue is written for people, so personal data in its texts is redacted as in the pipeline's (``core.privacy``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..stats.defaults import DEFAULT_PRIMARY_METRIC
from .registry import argument, measure_name, subcommand

DEFAULT_TOP = 10


@subcommand(
    "judging-queue",
    "the unjudged (query, document) pairs in the runs' top k, ordered by how far judging them moves Δ; a TSV",
    [
        argument("--qrels", required=True, metavar="FILE", help="TREC qrels, BEIR qrels TSV or Parquet"),
        argument("--run", required=True, action="append", metavar="[NAME=]FILE", dest="runs",
                 help="a run (TREC or Parquet), named by its file stem unless NAME= is given; at least two"),
        argument("--baseline", metavar="NAME", help="the baseline run's name (default: the first --run)"),
        argument("--corpus", required=True, metavar="FILE", help="BEIR corpus.jsonl: each document's title and text"),
        argument("--queries", metavar="FILE", help="BEIR queries.jsonl: each query's text (else left empty)"),
        argument("--metric", type=measure_name, default=DEFAULT_PRIMARY_METRIC,
                 help=f"the metric whose Δ judging moves (default {DEFAULT_PRIMARY_METRIC})"),
        argument("--top", type=int, default=DEFAULT_TOP, metavar="K",
                 help=f"pairs in the top K of any run (default {DEFAULT_TOP}, as Judged@{DEFAULT_TOP})"),
        argument("--no-relevant", choices=("zero", "drop"), default="drop",
                 help="queries without a relevant judgment: left out of the mean (default, as `rerankeval "
                      "compare`) or scoring 0"),
        argument("--redact-pattern", action="append", default=[], metavar="REGEX", dest="redact_patterns",
                 help="a regular expression whose matches the queue shows as [redacted:custom], besides e-mail "
                      "addresses, phone, card and Korean resident registration numbers, always redacted as the "
                      "pipeline's queue is (privacy); repeat for several"),
        argument("--out", required=True, metavar="FILE", help="the queue to write (TSV)"),
    ],
)
def run_judging_queue(args: argparse.Namespace) -> int:
    from ..core.io import write_text
    from ..core.privacy import PrivacyConfig, redactor
    from ..data.beir import read_corpus
    from ..data.trec import read_qrels, read_run
    from ..eval.judging import judging_queue, queue_tsv, with_assessor_text
    from .compare import _named, refuse_unmatched

    redact = redactor(PrivacyConfig.parse({"patterns": args.redact_patterns}, "--redact-pattern"))
    named = [_named(text) for text in args.runs]
    for path in [args.qrels, *(path for _, path in named), args.corpus, *([args.queries] if args.queries else [])]:
        if not Path(path).is_file():
            raise ValueError(f"{path}: no such file. Fix: pass the path of an existing file (relative to "
                             f"{Path.cwd()}).")
    names = [name for name, _ in named]
    if len(named) < 2:
        raise ValueError("a judging queue compares runs: pass at least two --run (a baseline and a challenger)")
    if len(set(names)) != len(names):
        raise ValueError(f"two runs are named alike ({', '.join(names)}); name them with NAME=FILE")
    baseline = args.baseline or names[0]
    if baseline not in names:
        raise ValueError(f"--baseline {baseline!r} is none of the runs ({', '.join(names)}). Fix: pass one of those "
                         "names (a run is named by its file stem, or NAME=FILE)")
    qrels = read_qrels(args.qrels)
    runs = {name: read_run(path) for name, path in named}
    judged = set(map(str, qrels["query_id"]))
    for name, run in runs.items():
        refuse_unmatched(set(map(str, run["query_id"])), judged, f"run {name!r}", args.qrels)
    queries = sorted(judged & set().union(*(set(map(str, run["query_id"])) for run in runs.values())))
    queue = judging_queue(runs, qrels, baseline=baseline, challengers=[n for n in names if n != baseline],
                          metric=args.metric, k=args.top, queries=queries, no_relevant=args.no_relevant)
    corpus = read_corpus(Path(args.corpus)).select(["doc_id", "title", "text"]).to_pandas()
    queue = with_assessor_text(queue, _query_texts(args.queries), corpus)
    write_text(args.out, redact(queue_tsv(queue)))  # for people: personal data in a query or a passage redacted
    print(f"judging-queue: {args.out}: {len(queue)} unjudged pairs in the top {args.top} of {', '.join(names)} "
          f"over {len(queries)} queries, ordered by how far judging each moves Δ {args.metric} vs {baseline}")
    return 0


def _query_texts(path: str | None) -> dict[str, str]:
    if not path:
        return {}
    from ..data.beir import _read_jsonl

    return {str(record["_id"]): str(record.get("text") or "") for _, record in _read_jsonl(Path(path))}
