"""``rerankeval agreement``: how far two runs of the same candidates agree (``stats.agreement``), and the score-parity
check that fails a served system scoring otherwise than the model loaded in-process.

Per query: rank-biased overlap (stated p), Kendall's tau and overlap at k, whether the top k changed, and the largest
score difference; their means over the queries both runs answer, with bootstrap CIs. With ``--score-tolerance`` the
command exits 1 when a document both runs scored differs by more than the tolerance (after ``--reference-transform``
on the reference's scores), naming the query and document: int8 against float32, a served endpoint against the
in-process model, a PR's head against its base, a run against its own repetition.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .registry import argument, subcommand


@subcommand(
    "agreement",
    "how far two runs of the same candidates agree (RBO, Kendall's tau@k, overlap@k, top-k changed, score parity)",
    [
        argument("reference", metavar="REFERENCE", help="the reference run (TREC or Parquet, e.g. data/runs/...)"),
        argument("other", metavar="OTHER", help="the run compared with it"),
        argument("--k", type=int, default=10, help="the depth of tau, overlap and top-k changed, and of RBO "
                                                   "(default 10)"),
        argument("--p", type=float, default=0.9, help="RBO's persistence (default 0.9: the first 10 ranks weigh "
                                                     "about 86%%)"),
        argument("--score-tolerance", type=float, metavar="T",
                 help="fail (exit 1) when a document both runs scored differs by more than T"),
        argument("--reference-transform", choices=("none", "sigmoid"), default="none",
                 help="apply to the reference's scores before the parity check (sigmoid: the reference stores "
                      "logits, the other probabilities)"),
        argument("--json", action="store_true", help="print JSON instead of lines"),
    ],
)
def run_agreement_command(args: argparse.Namespace) -> int:
    from ..data.trec import read_run
    from ..eval.ranks import assign_ranks
    from ..stats.agreement import RESAMPLING, agreement_summary, score_parity

    runs = []
    for path in (args.reference, args.other):
        if not Path(path).is_file():
            raise ValueError(f"{path}: no such file. Fix: pass the path of an existing run (relative to {Path.cwd()}).")
        run = read_run(path)
        run = assign_ranks(run) if "rank" not in run.columns else run
        runs.append(run.assign(query_id=run["query_id"].astype(str), doc_id=run["doc_id"].astype(str)))
    reference, other = runs
    shared = set(reference["query_id"]) & set(other["query_id"])
    if not shared:
        raise ValueError(f"{args.other} and {args.reference} share no query id: they are not runs of the same "
                         "queries. Fix: pass two runs of one query set.")
    if not 0 < args.p < 1 or args.k < 1:
        raise ValueError(f"--p must lie strictly between 0 and 1 and --k be at least 1, got --p {args.p} --k {args.k}")
    found = agreement_summary(reference, other, RESAMPLING, k=args.k, p=args.p)
    parity = (score_parity(reference, other, args.score_tolerance, args.reference_transform)
              if args.score_tolerance is not None else None)
    if args.json:
        print(json.dumps({"reference": args.reference, "other": args.other, **found, "parity": parity}, indent=2))
    else:
        print(_lines(found, parity))
    return 0 if parity is None or parity["passed"] else 1


def _lines(found: dict, parity: dict | None) -> str:
    def cell(interval):
        return "n/a" if not interval else f"{interval['mean']:.4f} [{interval['low']:.4f}, {interval['high']:.4f}]"

    k = found["k"]
    largest = "n/a" if found["max_score_diff"] is None else format(found["max_score_diff"], ".6g")
    rows = [("queries", str(found["queries"])), (f"rbo (p={found['p']:g})", cell(found["rbo"])),
            (f"tau@{k}", cell(found["tau"])), (f"overlap@{k}", cell(found["overlap"])),
            (f"top {k} changed", cell(found["changed"])), ("largest score diff", largest)]
    lines = [f"{name:<24}{value}" for name, value in rows]
    if parity is not None:
        if parity["pairs"] == 0:
            lines.append(f"{'score parity':<24}FAIL: no document scored in both runs")
        else:
            verdict = "PASS" if parity["passed"] else "FAIL"
            at = parity["at"]
            lines.append(f"{'score parity':<24}{verdict}: largest |difference| {parity['max_diff']:.6g} "
                         f"({'<=' if parity['passed'] else '>'} tolerance {parity['tolerance']:g}) at query "
                         f"{at['query_id']}, document {at['doc_id']}, over {parity['pairs']} scored pairs"
                         + ("" if parity["transform"] == "none" else
                            f" (reference scores through {parity['transform']})"))
    return "\n".join(lines)
