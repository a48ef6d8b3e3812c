"""The ``rerankeval`` console command.

Each subcommand is one function registered with ``@_subcommand`` (``cli.registry``), here or in its own module of
``cli`` (``compare``): its arguments are declared in the decorator and the function receives the parsed namespace.
Heavy modules (pandas, pyarrow) are imported inside the subcommands, so ``rerankeval --help`` starts at once.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import RerankevalError
from ..eval.measures import describe_measures, parse_measure
from ..eval.measures.base import TREC_EVAL_VERSIONS
from . import agreement as _agreement  # noqa: F401  (registers the `agreement` subcommand)
from . import compare as _compare  # noqa: F401  (registers the `compare` subcommand)
from . import export_candidates as _export_candidates  # noqa: F401  (registers `export-candidates`)
from . import export_run as _export_run  # noqa: F401  (registers the `export-run` subcommand)
from . import judging_queue as _judging_queue  # noqa: F401  (registers `judging-queue`)
from .registry import SUBCOMMANDS as _SUBCOMMANDS
from .registry import argument as _argument
from .registry import subcommand as _subcommand


def _measure(text: str) -> tuple[str, object]:
    """A measure as asked (its label in the output) and as parsed."""
    try:
        return text.strip(), parse_measure(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


CUTOFF_LIST = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9_]*)\.(?P<cuts>\d+(?:,\d+)+)")
"""trec_eval's comma list of cutoffs, ``-m P.5,7,3`` (one measure per cutoff, printed ``P_5``, ``P_7``, ``P_3``)."""


def _measures(text: str) -> list[tuple[str, object]]:
    """``-m``'s value: one measure, or trec_eval's comma list of cutoffs expanded, each labelled as trec_eval prints
    it."""
    listed = CUTOFF_LIST.fullmatch(text.strip())
    if not listed:
        return [_measure(text)]
    return [_measure(f"{listed['head']}_{cut}") for cut in listed["cuts"].split(",")]


def _evaluate_measures(text: str) -> list[tuple[str, object]]:
    """``evaluate -m``'s value: a measure of rerankeval's (``_measures``), or one of trec_eval's own that is a number
    per query (a count, a geometric mean, a measure of ``eval.trec_lists``: ``num_ret``, ``gm_map``, ``infAP``,
    ``iprec_at_recall``, ``11pt_avg``, ``utility.1,-1,0,0``, ...), computed as ``rerankeval trec_eval`` computes it.
    ``runid``, ``relstring`` and the measure sets are refused with the command that prints them."""
    try:
        return _measures(text)
    except argparse.ArgumentTypeError as refused:
        head = text.strip()
        if head.split(".")[0] in ("runid", "num_q", "relstring") or head in MEASURE_SETS:
            raise refused
        try:
            return _trec_eval_measures(head)
        except (argparse.ArgumentTypeError, ValueError):
            raise refused from None


DEFAULT_MEASURES = ("map", "Rprec", "bpref", "recip_rank", "P_5", "P_10", "P_15", "P_20", "P_30", "P_100", "P_200",
                    "P_500", "P_1000")
"""Without --metric: trec_eval's default summary measures that are measure families here (`rerankeval trec_eval`
prints the rest of trec_eval's official set too: runid, the counts, gm_map, iprec_at_recall_*), in trec_eval's
order and named as trec_eval prints them."""


@_subcommand(
    "evaluate",
    "score runs against qrels; prints 'measure <TAB> all <TAB> value' like trec_eval",
    [
        _argument("--qrels", required=True, metavar="FILE", help="TREC qrels, BEIR qrels TSV or Parquet"),
        _argument(
            "--run", required=True, action="append", metavar="FILE", dest="runs",
            help="TREC run or Parquet run (query_id, doc_id, rank or score[, fused_rank]); repeat for several runs",
        ),
        _argument(
            "-m", "--metric", action="extend", type=_evaluate_measures, metavar="MEASURE", dest="measures",
            help="e.g. nDCG@10, MRR@10, AP, nDCG@10[gain=exp], or trec_eval's name (ndcg_cut_10, ndcg_cut.10, map, "
                 "recip_rank, P_10, or a list of cutoffs: P.5,10,20; and trec_eval's own per-query numbers: num_ret, "
                 "num_rel, num_rel_ret, gm_map, infAP, iprec_at_recall, 11pt_avg, utility.1,-1,0,0, ..., summarised "
                 "as trec_eval does: counts summed, gm_* geometric); printed as given; repeat for several "
                 "(`rerankeval --help` lists all). Default: "
                 f"trec_eval's default summary measures that rerankeval computes ({' '.join(DEFAULT_MEASURES)})",
        ),
        _argument("-q", "--per-query", action="store_true", help="also print each query's values (trec_eval -q)"),
        _argument("--json", action="store_true",
                  help="print JSON instead of trec_eval-style lines, naming each measure also canonically and as "
                       "ir_measures spells it (null where ir_measures has no such measure)"),
        _argument(
            "-c", "--complete", action="store_true",
            help="average over every query of the qrels, a query missing from the run scoring 0 (trec_eval -c); "
                 "default: the queries in both the run and the qrels (trec_eval's default)",
        ),
        _argument(
            "--no-relevant", choices=("zero", "drop"), default="zero",
            help="queries whose judgments hold no relevant document: count them as 0 (default, as trec_eval) or "
                 "drop them",
        ),
    ],
)
def _evaluate(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..data.trec import read_qrels, read_run
    from ..eval.counts import GEOMETRIC
    from ..eval.engine import evaluate
    from ..eval.measures import Measure
    from ..eval.ranks import assign_ranks
    from ..eval.trec_table import trec_eval_table

    asked = dict(args.measures or [_measure(name) for name in DEFAULT_MEASURES])
    # trec_eval's own numbers (counts, geometric means, eval.trec_lists) are computed as `rerankeval trec_eval`
    # computes them, on the run in the order the engine reads it (its rank column, else its scores with trec_eval
    # 9.0.8's ties), so that every measure of one output reads one ordering
    own = {name: measure for name, measure in asked.items() if isinstance(measure, Measure) and name not in GEOMETRIC}
    theirs = {name: measure for name, measure in asked.items() if name not in own}
    qrels = read_qrels(args.qrels)
    relevant = set(map(str, qrels.loc[qrels["relevance"] >= 1, "query_id"]))
    results, summaries = {}, {}
    for label, path in zip(_run_labels(args.runs), args.runs):
        run = read_run(path)
        queries = _query_set(run, qrels, path, args.qrels, args.complete)
        kept = [query for query in queries if args.no_relevant == "zero" or query in relevant]
        if not kept:
            raise ValueError(
                f"no query to evaluate for {path}: none of its judged queries has a relevant document"
                " (--no-relevant zero counts queries without one)"
            )
        columns = []
        if own:
            values = evaluate(run, qrels, own.values(), queries=kept, no_relevant=args.no_relevant)
            columns.append(values.assign(**{name: values[str(m)] for name, m in own.items()})[list(own)])
        if theirs:
            table, summed, _ = trec_eval_table(assign_ranks(run), qrels, kept, theirs, level=None,
                                                judged_only=False, version="9.0.8", num_docs=0)
            columns.append(table)
            summaries.update({name: "sum" for name in summed} | {name: "geometric" for name in theirs
                                                                  if name in GEOMETRIC})
        values = pd.concat(columns, axis=1)[list(asked)].astype(float)
        _warn_of_zeros(values, run, qrels, path, args, summaries)
        results[label] = values
    if args.json:
        print(json.dumps({label: _as_json(values, args.per_query, asked, summaries)
                          for label, values in results.items()}, indent=2))
    else:
        for label, values in results.items():
            if len(results) > 1:
                print(f"# run: {label}")
            print(_as_trec_eval_lines(values, args.per_query, summaries))
    return 0


def _summary(values, summaries: dict[str, str]) -> dict[str, float]:
    """Each measure's value over the queries as trec_eval summarises it: the mean; a count's sum; a geometric mean's
    exp of the mean logarithm (its column holds the logarithms)."""
    from ..eval.counts import geometric_summary

    rules = {"sum": lambda column: float(column.sum()), "geometric": geometric_summary}
    return {name: rules.get(summaries.get(name), lambda column: float(column.mean()))(values[name])
            for name in values.columns}


FEW_SHARED = 0.5
"""A run sharing less than this share of the qrels' queries (or of its own) gets a warning."""


def _warn_of_zeros(values, run, qrels, run_path: str, args: argparse.Namespace, summaries: dict[str, str]) -> None:
    """Say which averaged queries count 0 without a ranking to earn it (judged without a relevant document, or missing
    from the run with -c), and the first measure's mean over the others: the queries `rerankeval compare` and the
    pipeline's report average over (those of the run with a relevant document)."""
    relevant = set(map(str, qrels.loc[qrels["relevance"] >= 1, "query_id"]))
    averaged, answered = set(values.index), set(map(str, run["query_id"]))
    no_relevant, missing = len(averaged - relevant), len(averaged - answered)
    if not no_relevant and not missing:
        return
    zeros = " and ".join(f"{count} {what}" for count, what in (
        (no_relevant, f"{'has' if no_relevant == 1 else 'have'} no relevant document in {args.qrels}"),
        (missing, f"{'is' if missing == 1 else 'are'} not in the run (-c)")) if count)
    scored = sorted(averaged & answered & relevant)
    first = values.columns[0]
    instead = (f"Over the {len(scored)} queries of the run with a relevant document (those `rerankeval compare` and "
               f"the pipeline's report average over; --no-relevant drop without -c), {first} is "
               f"{_summary(values.loc[scored, [first]], summaries)[first]:.4f} instead of "
               f"{_summary(values[[first]], summaries)[first]:.4f}." if scored
               else "No query of the run has a relevant document.")
    print(f"rerankeval evaluate: warning: {run_path}: of the {len(averaged)} averaged queries, {zeros}; they count 0, "
          f"as in trec_eval. {instead}", file=sys.stderr)


def _query_set(run, qrels, run_path: str, qrels_path: str, complete: bool) -> list[str]:
    """The queries trec_eval averages over: those in both the run and the qrels, or with ``complete`` (trec_eval -c)
    every query of the qrels. A run sharing no query with the qrels is refused; one sharing few gets a warning."""
    run_ids, judged = set(map(str, run["query_id"])), set(map(str, qrels["query_id"]))
    shared = run_ids & judged
    _compare.refuse_unmatched(run_ids, judged, run_path, qrels_path)
    if len(shared) < FEW_SHARED * len(judged) or len(shared) < FEW_SHARED * len(run_ids):
        averaged = (f"all {len(judged)} judged queries, the {len(judged) - len(shared)} missing scoring 0 (-c)"
                    if complete else f"those {len(shared)}, as trec_eval does (-c: all {len(judged)}, missing ones "
                                     "scoring 0)")
        print(f"rerankeval evaluate: warning: {run_path} has {len(run_ids)} queries and {qrels_path} judges "
              f"{len(judged)}; only {len(shared)} are in both. Averaging over {averaged}.", file=sys.stderr)
    return sorted(judged if complete else shared)


@_subcommand(
    "check-collection",
    "validate a BEIR folder as the snapshot stage reads it: errors name the file, the line and the fix",
    [
        _argument("path", metavar="PATH", help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv"),
        _argument("--splits", nargs="+", metavar="SPLIT", help="qrels files to read (default: all; dataset.splits)"),
        _argument("--eval-split", default="test", metavar="SPLIT",
                  help="the split the pipeline evaluates (dataset.eval_split, default test)"),
    ],
)
def _check_collection(args: argparse.Namespace) -> int:
    from ..data.beir import load_beir, require_split, summary

    collection = load_beir(args.path, args.splits)
    require_split(collection, args.eval_split, args.path)
    print(f"{args.path}: a valid BEIR collection")
    for line in summary(collection) + [f"note: {note}" for note in collection.notes]:
        print(f"  {line}")
    for warning in collection.warnings:
        print(f"warning: {warning}")
    return 0


def _run_labels(paths: Sequence[str]) -> list[str]:
    """Runs are labelled by file name; by the path as given when two file names clash."""
    names = [Path(path).name for path in paths]
    return names if len(set(names)) == len(names) else list(paths)


def _as_json(values, per_query: bool, asked: dict[str, object], summaries: dict[str, str]) -> dict:
    """Values keyed by the measures as asked; ``measures`` maps each to its canonical name (MRR@10 -> RR@10),
    ``ir_measures`` to its name in ir_measures (``P@5[rel=2]`` -> ``P(rel=2)@5``; null where ir_measures has none)."""
    from ..eval.measures import Measure, ir_measures_name

    # trec_eval's own numbers (a count, a geometric mean, eval.trec_lists) keep trec_eval's name
    ours = {name: measure for name, measure in asked.items() if isinstance(measure, Measure) and name not in summaries}
    result = {"num_q": len(values),
              "measures": {name: str(ours[name]) if name in ours else name for name in asked},
              "ir_measures": {name: ir_measures_name(ours[name]) if name in ours else None for name in asked},
              "all": _summary(values, summaries)}
    if per_query:
        result["per_query"] = {
            query: {name: float(value) for name, value in row.items() if summaries.get(name) != "geometric"}
            for query, row in values.iterrows()
        }
    return result


def _as_trec_eval_lines(values, per_query: bool, summaries: dict[str, str]) -> str:
    """trec_eval's lines: a count as an integer, no query's geometric mean (trec_eval prints none)."""
    def number(name: str, value: float) -> str:
        return str(int(value)) if summaries.get(name) == "sum" else f"{value:.4f}"

    lines = []
    if per_query:
        for query, row in values.iterrows():
            lines += [f"{name:<22}\t{query}\t{number(name, value)}" for name, value in row.items()
                      if summaries.get(name) != "geometric"]
    lines.append(f"{'num_q':<22}\tall\t{len(values)}")
    lines += [f"{name:<22}\tall\t{number(name, value)}" for name, value in _summary(values, summaries).items()]
    return "\n".join(lines)


MEASURE_SETS = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P"),
    "all_trec": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP",
                 "gm_bpref", "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut",
                 "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map",
                 "set_F", "num_nonrel_judged_ret"),
}
"""trec_eval 10's measure sets (measures.c's nicknames ``official`` and ``all_trec``), each measure at its default
parameters."""

TREC_EVAL_ORDER = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                   "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult",
                   "utility", "11pt_avg", "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut",
                   "map_cut", "relative_P", "success", "set_P", "set_relative_P", "set_recall", "set_map", "set_F",
                   "num_nonrel_judged_ret", "rbp", "rbp_resid", "unj")
"""The order trec_eval prints its measures in, whatever the order of ``-m`` (measures.c's table)."""

DEFAULT_CUTOFFS = {"P": "5,10,15,20,30,100,200,500,1000", "recall": "5,10,15,20,30,100,200,500,1000",
                   "ndcg_cut": "5,10,15,20,30,100,200,500,1000", "map_cut": "5,10,15,20,30,100,200,500,1000",
                   "success": "1,5,10", "unj": "5,10,20"}
"""trec_eval's default cut-offs of the measures rerankeval computes as measure families, named bare (``-m P``)."""

def _trec_eval_measures(text: str) -> list[tuple[str, object]]:
    """``-m``'s value for ``rerankeval trec_eval`` as (printed name, what computes it): a measure set, a count, a
    geometric mean, a measure of ``eval.trec_lists`` (its ``ListMeasure``), ``runid``, ``num_q``, or a measure family
    (bare, with its default cut-offs, or with a comma list of them)."""
    from ..eval.counts import GEOMETRIC
    from ..eval.trec_lists import parse_list_measure
    from ..eval.trec_table import COUNTS

    if text in MEASURE_SETS:
        return [found for name in MEASURE_SETS[text] for found in _trec_eval_measures(name)]
    if text in (*COUNTS, "runid", "num_q"):
        return [(text, None)]
    if text in GEOMETRIC:
        return [(text, parse_measure(GEOMETRIC[text]))]
    listed = parse_list_measure(text)
    if listed is not None:
        return [(column, listed) for column in listed.columns()]
    if text in DEFAULT_CUTOFFS:
        return _measures(f"{text}.{DEFAULT_CUTOFFS[text]}")
    return _measures(text)


def _printing_order(name: str) -> tuple:
    """Where trec_eval prints ``name`` (``P_10``, ``iprec_at_recall_0.20``): its measure's place in
    ``TREC_EVAL_ORDER``, then its cut-off, ascending (trec_eval sorts them)."""
    base = max((b for b in TREC_EVAL_ORDER if name == b or name.startswith(b + "_")), key=len, default=None)
    place = TREC_EVAL_ORDER.index(base) if base else len(TREC_EVAL_ORDER)
    suffix = name[len(base) + 1:] if base and name != base else ""
    try:
        return place, float(suffix)
    except ValueError:
        return place, 0.0


def _trec_number(value: float) -> str:
    """A value as trec_eval's ``%6.4f`` prints it; NaN (C's 0/0, e.g. relative_P without a relevant document) as
    glibc prints x86's default NaN."""
    return f"{'-nan':>6}" if value != value else f"{value:.4f}"


@_subcommand(
    "trec_eval",
    "trec_eval 10's command line (trec_eval [-q] [-n] [-c] [-M N] [-l N] [-J] [-N N] [-m MEASURE]... QRELS RUN) and "
    "output",
    [
        _argument("qrels", metavar="QRELS", help="TREC qrels (or BEIR qrels TSV, Parquet)"),
        _argument("run_file", metavar="RUN", help="TREC run (or Parquet)"),
        _argument("-q", action="store_true", dest="per_query", help="also print each query's values"),
        _argument("-n", action="store_true", dest="no_summary",
                  help="print no summary over the queries (with -q: each query's values only)"),
        _argument("--trec-eval-version", choices=TREC_EVAL_VERSIONS, default="10.0", dest="version",
                  help="whose behaviour to follow: 10.0 compares scores as doubles and rounds iprec_at_recall's and "
                       "11pt_avg's recall cut-offs, 9.0.8 (pytrec_eval) compares 32-bit floats and truncates "
                       "p*R+0.9; equal scores by doc id, descending, in both (default 10.0)"),
        _argument("-c", action="store_true", dest="complete",
                  help="average over every query of the qrels, a query missing from the run scoring 0"),
        _argument("-M", type=int, dest="max_docs", metavar="N", help="evaluate each query's first N documents only"),
        _argument("-l", type=int, dest="level", metavar="N",
                  help="the least grade that counts as relevant for binary measures (default 1)"),
        _argument("-J", action="store_true", dest="judged_only",
                  help="leave unjudged documents out of the ranking before measuring"),
        _argument("-N", type=int, dest="num_docs", metavar="N", default=0,
                  help="the documents in the collection (utility's non-relevant-not-retrieved term; default 0)"),
        _argument("-m", action="append", dest="measures", metavar="MEASURE",
                  help="a trec_eval name (P_10, P.5,10,20, ndcg_cut.10, map, iprec_at_recall, utility.1,-1,0,0, "
                       "rbp.p=0.95, ...) or a set: official, all_trec; repeat for several. Default: official"),
    ],
)
def _trec_eval(args: argparse.Namespace) -> int:
    from ..data.trec import read_qrels, read_run, run_tag
    from ..eval.counts import GEOMETRIC, geometric_summary
    from ..eval.ranks import trec_eval_ranks
    from ..eval.trec_lists import ListMeasure
    from ..eval.trec_table import trec_eval_table

    if args.max_docs is not None and args.max_docs < 1:
        raise ValueError(f"-M {args.max_docs}: the documents per query must be at least 1")
    try:
        named = [_trec_eval_measures(text) for text in (args.measures or ["official"])]
    except (argparse.ArgumentTypeError, ValueError) as err:
        raise ValueError(f"-m: {err}") from None
    # A measure of eval.trec_lists named twice takes its last parameters, as trec_eval marks one table entry.
    last = {m.name: m for found in named for _, m in found if isinstance(m, ListMeasure)}
    asked = dict(item for found in named for item in found
                 if not isinstance(item[1], ListMeasure) or last[item[1].name] == item[1])
    asked = {name if isinstance(measure, ListMeasure) else re.sub(r"\.(\d+)$", r"_\1", name): measure
             for name, measure in asked.items()}  # P.5 prints P_5
    order = sorted(asked, key=_printing_order)
    qrels, run = read_qrels(args.qrels), trec_eval_ranks(read_run(args.run_file), args.version)
    if args.max_docs is not None:
        run = run[run["rank"] <= args.max_docs]
    queries = _query_set(run, qrels, args.run_file, args.qrels, args.complete)
    table, summed, per_query_only = trec_eval_table(run, qrels, queries, asked, level=args.level,
                                                     judged_only=args.judged_only, version=args.version,
                                                     num_docs=args.num_docs)

    def cell(name: str, value) -> str:
        if name in per_query_only:
            return f"'{value}'"
        return str(int(value)) if name in summed else _trec_number(float(value))

    lines = []
    if args.per_query:
        lines += [f"{name:<22}\t{query}\t{cell(name, table.at[query, name])}"  # trec_eval prints no query's gm_*
                  for query in queries for name in order if name not in ("runid", "num_q", *GEOMETRIC)]
    if not args.no_summary:
        for name in order:
            if name == "runid":
                lines.append(f"{name:<22}\tall\t{run_tag(args.run_file)}")
            elif name == "num_q":
                lines.append(f"{name:<22}\tall\t{len(queries)}")
            elif name in summed:
                lines.append(f"{name:<22}\tall\t{int(table[name].sum())}")
            elif name in GEOMETRIC:
                lines.append(f"{name:<22}\tall\t{geometric_summary(table[name]):.4f}")
            elif name not in per_query_only:
                lines.append(f"{name:<22}\tall\t{_trec_number(float(table[name].astype(float).mean(skipna=False)))}")
    print("\n".join(lines))
    return 0


def _add_diff_arguments(parser: argparse.ArgumentParser) -> None:
    from ..report.prdiff import add_diff_arguments

    add_diff_arguments(parser)


@_subcommand(
    "diff",
    "compare the per-query metrics of two git revisions with paired CIs; prints a Markdown PR comment",
    _add_diff_arguments,
)
def _diff(args: argparse.Namespace) -> int:
    from ..core.io import write_text
    from ..report.prdiff import PARAMS, load_revision, markdown_comment
    from ..stats.config import CompareConfig
    from ..stats.revisions import diff_revisions

    base = load_revision(args.repo, args.base)
    head = load_revision(args.repo, args.head)
    settings = CompareConfig.parse(head.params["compare"], f"{head.label}:{PARAMS}: compare")
    if args.metrics:
        settings = settings.model_copy(update={"metrics": list(args.metrics)})
    result = diff_revisions(base, head, settings, settings.release.primary_metric)
    text = json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n" if args.json \
        else markdown_comment(result)
    if args.output:
        write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return 1 if args.fail_on_regression and result.regressions else 0


@_subcommand(
    "export-ir-datasets",
    "write ir_datasets datasets (one per split) as a BEIR folder the pipeline reads (dataset.path)",
    [
        _argument("datasets", nargs="+", metavar="[SPLIT=]ID",
                  help="e.g. test=beir/scifact/test train=beir/scifact/train (a bare id's split is its last part)"),
        _argument("--out", required=True, metavar="DIR", help="output BEIR folder"),
    ],
)
def _export_ir_datasets(args: argparse.Namespace) -> int:
    from ..data.ir_datasets_export import export

    counts = export(args.datasets, args.out)
    print(f"{args.out}: " + ", ".join(f"{name} {count}" for name, count in counts.items()))
    return 0


@_subcommand(
    "serve",
    "serve a learned system's model over Cohere's v2 rerank API (Ray Serve, dynamic batching) until Ctrl-C",
    [
        _argument("system", metavar="SYSTEM", help="a system under `systems` in the params file"),
        _argument("--params", default="params.yaml", metavar="FILE",
                  help="the params file whose systems and serving.serve settings to use (default params.yaml)"),
        _argument("--host", default=None, help="bind address (default: serving.serve.host, 127.0.0.1)"),
        _argument("--port", type=int, default=None, help="port (default: serving.serve.port, 8000)"),
    ],
)
def _serve(args: argparse.Namespace) -> int:
    from ..core.caches import use_tenant
    from ..pipeline.params import load_params
    from ..serving.server import serve_until_stopped

    params = load_params(args.params)
    use_tenant(params.privacy.tenant)
    options = params.serving.serve.model_copy(update={key: value for key, value in
                                                      (("host", args.host), ("port", args.port)) if value is not None})
    serve_until_stopped(args.system, params.systems, options)
    return 0


@_subcommand(
    "loadtest",
    "replay the frozen candidates against an endpoint at several concurrency levels; writes a JSON result",
    [
        _argument("--params", default="params.yaml", metavar="FILE",
                  help="the params file whose systems and serving.loadtest settings to use (default params.yaml)"),
        _argument("--snapshot", default="data/snapshot", metavar="DIR",
                  help="the snapshot stage's output: the evaluated split's queries (default data/snapshot)"),
        _argument("--candidates", default="data/candidates.parquet", metavar="FILE",
                  help="the frozen candidates, whose passages the requests carry (default data/candidates.parquet)"),
        _argument("--runs", default="data/runs/run_{system}.parquet", metavar="PATTERN",
                  help="the systems' runs (for each request's token count)"),
        _argument("--system", default=None, help="system to test (default: serving.loadtest.system)"),
        _argument("--concurrency", type=int, action="append", default=None, metavar="N",
                  help="a concurrency level; repeat for several (default: serving.loadtest.concurrency)"),
        _argument("--requests", type=int, default=None, help="measured requests per level"),
        _argument("--out", required=True, metavar="FILE", help="output: the load test result (JSON)"),
    ],
)
def _loadtest(args: argparse.Namespace) -> int:
    from ..core.caches import use_tenant
    from ..pipeline.loadtest import run as run_loadtest
    from ..pipeline.params import load_params

    overrides = {key: value for key, value in (("system", args.system), ("concurrency", args.concurrency),
                                               ("requests", args.requests)) if value is not None}
    params = load_params(args.params)
    use_tenant(params.privacy.tenant)
    run_loadtest(params, args.snapshot, args.candidates, args.out, args.runs, overrides=overrides,
                 force=True)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rerankeval",
        description="Evaluate search rerankers on frozen candidates.",
        epilog="measures:\n" + describe_measures() + "\n\nexit codes: 0 done; 1 `compare --fail-on-reject` saw a "
               "REJECT or `diff --fail-on-regression` a regression; 2 bad input (the message names the file or option)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"rerankeval {_version()}",
                        help="print the installed rerankeval's version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for subcommand in sorted(_SUBCOMMANDS, key=lambda found: found.name):
        command = commands.add_parser(subcommand.name, help=subcommand.summary, description=subcommand.summary)
        if callable(subcommand.arguments):
            subcommand.arguments(command)
        else:
            for flags, options in subcommand.arguments:
                command.add_argument(*flags, **options)
        command.set_defaults(run=subcommand.run)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rerankeval")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (RerankevalError, ValueError, OSError) as exc:
        print(f"rerankeval {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
