"""``rerankeval compare``: the pipeline's paired comparison and release verdict for any runs, without the pipeline.

The same ``stats.analysis.analyze`` as the compare stage, on per-query metrics of TREC (or Parquet) runs. Queries:
those with a relevant document in the qrels that at least one run answers; a run missing one of them scores 0 on
it (trec_eval -c), and the command says so.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..stats.defaults import (DEFAULT_CONFIDENCE, DEFAULT_MIN_DELTA, DEFAULT_MIN_RUN_COVERAGE, DEFAULT_N_SAMPLES,
                              DEFAULT_PRIMARY_METRIC, DEFAULT_SEED, DEFAULT_SLICE_BUDGET, DEFAULT_TRIALS,
                              DEFAULT_UNJUDGED_MARGIN, DEFAULT_UNJUDGED_MEASURE)
from .registry import argument, measure_name, subcommand

if TYPE_CHECKING:  # imported where the command runs, as the CLI modules import their other dependencies
    from ..stats.schema import ComparisonCore, DecisionCore

NO_LABEL = "(none)"


@subcommand(
    "compare",
    "paired comparison and release verdict (ACCEPT / REJECT / INCONCLUSIVE) of runs against a baseline run",
    [
        argument("--qrels", required=True, metavar="FILE", help="TREC qrels, BEIR qrels TSV or Parquet"),
        argument("--baseline", required=True, action="append", metavar="[NAME=]FILE", dest="baselines",
                 help="a baseline run (TREC or Parquet); repeat for several, one family (the first is the report's)"),
        argument("--run", required=True, action="append", metavar="[NAME=]FILE", dest="runs",
                 help="a challenger run, named by its file stem unless NAME= is given; repeat for several"),
        argument("--queries", metavar="FILE", help="BEIR queries.jsonl: its records' metadata labels the slices"),
        argument("--query-ids", metavar="FILE",
                 help="the compared queries, one id per line (default: those with a relevant document that some run "
                      "answers); a query without a relevant document counts where a measure is defined on it, as "
                      "the pipeline's evaluation.no_relevant: drop, so the pipeline's eval split gives its resamples"),
        argument("--reference", action="append", default=[], metavar="NAME", dest="references",
                 help="a run that is a reference point (a first stage, a bound), not a release challenger: decided "
                      "alone, outside the release family, as the pipeline decides its reference systems; repeat"),
        argument("--critical-slice", action="append", default=[], metavar="COLUMN", dest="critical_slices",
                 help="a metadata column of --queries; no value of it may regress beyond --slice-budget; repeat"),
        argument("--metric", action="append", type=measure_name, metavar="MEASURE", dest="metrics",
                 help="a compared metric, repeat for several; the first decides the verdict (default "
                      f"{DEFAULT_PRIMARY_METRIC})"),
        argument("--json", action="store_true", help="print JSON (each challenger's decision, CI and reasons)"),
        argument("--out", metavar="DIR",
                 help="also write DIR/compare.json and DIR/verdicts.json as the compare stage computes them, without "
                      "what the stage adds from the pipeline's other outputs (checked against that part of its "
                      "schema: stats.schema's ComparisonCore and DecisionCore)"),
        argument("--rule", metavar="FILE",
                 help="the release rule as a YAML (or JSON) file: params.yaml's compare.release mapping (primary "
                      "metric, min_delta, claims, budgets) with the dataset's critical_slices, so the verdicts are "
                      "the pipeline's; instead of --min-delta, --claim, --margin, --slice-budget and "
                      "--critical-slice (--queries labels the slices). A claim for a system no run is named "
                      "after decides nothing, with a note, as in the compare stage"),
        argument("--min-delta", type=float,
                 help=f"ACCEPT needs at least this mean improvement, CI above 0 (default {DEFAULT_MIN_DELTA})"),
        argument("--claim", choices=["superior", "noninferior"],
                 help="what every challenger claims against the first baseline: superior (gains min-delta) or "
                      "noninferior (not worse by more than --margin); default superior"),
        argument("--margin", type=float, help="the non-inferiority margin δ (absolute, primary metric)"),
        argument("--slice-budget", type=float,
                 help=f"largest tolerated regression of a critical slice (default {DEFAULT_SLICE_BUDGET})"),
        argument("--confidence", type=float, default=DEFAULT_CONFIDENCE,
                 help=f"CI level (default {DEFAULT_CONFIDENCE})"),
        argument("--samples", type=int, default=DEFAULT_N_SAMPLES,
                 help=f"bootstrap resamples and sign flips (default {DEFAULT_N_SAMPLES})"),
        argument("--trials", type=int, default=DEFAULT_TRIALS,
                 help=f"simulated query sets per effect for the verdict's error rates (default {DEFAULT_TRIALS})"),
        argument("--seed", type=int, default=DEFAULT_SEED,
                 help="seed of the bootstrap, the sign flips and the simulation: the same seed, the same numbers "
                      f"(default {DEFAULT_SEED})"),
        argument("--min-coverage", type=float, default=DEFAULT_MIN_RUN_COVERAGE, metavar="SHARE",
                 help="refuse a run (a baseline too) that ranks fewer than this share of the compared queries: a "
                      "verdict on queries it never ranked compares nothing (default "
                      f"{DEFAULT_MIN_RUN_COVERAGE}; 0 accepts any run that ranks one)"),
        argument("--fail-on-reject", action="store_true",
                 help="exit 1 when any challenger's verdict against the first baseline is REJECT, for a CI job to gate "
                      "on (exit codes: 0 done, 1 a REJECT with this flag, 2 bad input)"),
    ],
)
def run_compare(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..data.trec import read_qrels, read_run
    from ..eval.engine import assign_ranks, evaluate
    from ..stats.analysis import analyze
    from ..stats.comparison import RunFacts
    from ..stats.config import CompareConfig
    from ..stats.sanity import identical_to_baseline, positive_only_reason

    baselines, named = [_named(text) for text in args.baselines], [_named(text) for text in args.runs]
    baseline = baselines[0]
    names = [name for name, _ in [*baselines, *named]]
    if len(set(names)) != len(names):
        raise ValueError(f"two runs are named alike ({', '.join(names)}); name them with NAME=FILE")
    release = _release(args, [name for name, _ in named])
    unknown = sorted(set(args.references) - {name for name, _ in named})
    if unknown:
        raise ValueError(f"--reference {', '.join(unknown)}: not a --run's name ({', '.join(n for n, _ in named)})")
    qrels = read_qrels(args.qrels)
    runs = {name: read_run(path) for name, path in [*baselines, *named]}
    query_ids = _listed_queries(args.query_ids, runs) if args.query_ids else _query_set(qrels, runs, args.qrels)
    refuse_sparse(runs, query_ids, args.min_coverage, args.qrels, set(map(str, qrels["query_id"])))
    metrics = list(dict.fromkeys([release["primary_metric"], *(args.metrics or [])]))
    per_query = pd.concat([
        # Every compared query stays (a listed one without a relevant document: NaN where a measure is undefined on
        # it), so the resamples are the pipeline's over the same query set.
        evaluate(run, qrels, list(dict.fromkeys([*metrics, DEFAULT_UNJUDGED_MEASURE])), queries=query_ids)
        .reindex(query_ids).rename_axis("query_id").reset_index().assign(system=name) for name, run in runs.items()])
    settings = CompareConfig.parse({
        "baselines": [name for name, _ in baselines], "metrics": metrics, "samples": args.samples,
        "permutations": args.samples, "seed": args.seed, "confidence": args.confidence,
        "simulation": {"trials": args.trials}, "release": release}, "rerankeval compare")
    for system in settings.inactive_claims(names):  # as the compare stage: a rule shared across run sets
        print(f"rerankeval compare: note: the claim for {system} decides nothing: no run is named {system} or the "
              "system it is compared with (--rule)", file=sys.stderr)
    settings = settings.for_systems(names)
    ranked = {name: assign_ranks(run) for name, run in runs.items()}
    identical = identical_to_baseline(ranked, baseline[0], query_ids)
    facts = RunFacts(identical_to_baseline=identical,
                     identical_because=_reduced_to(dict([*baselines, *named]), identical, baseline[0]),
                     positive_only=positive_only_reason(qrels, query_ids),
                     reference_systems=frozenset(args.references))
    columns = list(dict.fromkeys(spec.column for spec in settings.release.critical_slices))
    analysis = analyze(per_query, _slices(args.queries, columns, query_ids), settings, settings.release, facts)
    files = analysis.files()
    result, verdicts = files["compare"], files["verdicts"]
    if args.out:
        from ..core.io import write_json

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "compare.json", result)
        write_json(out / "verdicts.json", verdicts)
    print(json.dumps(_as_json(result, verdicts), indent=2) if args.json
          else _as_markdown(analysis.compare, analysis.verdicts))
    rejected = any(verdict["decision"] == "REJECT" for verdict in verdicts["verdicts"].values())
    return 1 if args.fail_on_reject and rejected else 0


def _reduced_to(paths: dict[str, str], identical: Mapping[str, int], baseline: str) -> dict[str, str]:
    """Why each run identical to the baseline's ranks as it does, where its ir_metadata record says its settings
    reduce it to the baseline (``export-run --ir-metadata``: a blend at weight 0 or 1), as the compare stage reads
    it from the run's own metadata; a run without one gets the verdict's generic reason."""
    from ..data.trec import read_ir_metadata
    from ..stats.sanity import reduced_to_baseline

    def reduces_to(path: str):
        record = read_ir_metadata(path) or {}
        reranker = ((record.get("method") or {}).get("retrieval") or {}).get("reranker")
        return reranker.get("reduces to") if isinstance(reranker, dict) else None

    return reduced_to_baseline({name: reduces_to(paths[name]) for name in identical}, baseline)


RULE_FLAGS = {"min_delta": "--min-delta", "claim": "--claim", "margin": "--margin", "slice_budget": "--slice-budget",
              "critical_slices": "--critical-slice"}


def _release(args: argparse.Namespace, challengers: list[str]) -> dict[str, Any]:
    """compare.release as the flags state it, or as ``--rule`` FILE does (then no flag of ``RULE_FLAGS`` may)."""
    if args.rule:
        given = [flag for name, flag in RULE_FLAGS.items() if getattr(args, name) not in (None, [])]
        if given:
            raise ValueError(f"--rule {args.rule} states the release rule: drop {', '.join(given)}, or state it in "
                             "the file")
        return _rule_file(Path(args.rule))
    claim = args.claim or "superior"
    if (claim == "noninferior") != (args.margin is not None):
        raise ValueError("--claim noninferior needs --margin (and --margin needs --claim noninferior)")
    budget = DEFAULT_SLICE_BUDGET if args.slice_budget is None else args.slice_budget
    return {"primary_metric": (args.metrics or [DEFAULT_PRIMARY_METRIC])[0],
            "min_delta": DEFAULT_MIN_DELTA if args.min_delta is None else args.min_delta,
            "unjudged_margin": DEFAULT_UNJUDGED_MARGIN,
            "critical_slices": [{"column": column, "budget": budget} for column in args.critical_slices],
            "claims": {name: {"claim": "noninferior", "margin": args.margin} for name in challengers
                       if claim == "noninferior"}}


def _rule_file(path: Path) -> dict[str, Any]:
    """The release rule a ``--rule`` file states: a mapping (YAML or JSON), checked when the settings are parsed."""
    import yaml

    try:
        found = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise ValueError(f"--rule {path}: cannot read it ({type(error).__name__}: {str(error)[:200]}). Fix: a YAML "
                         "mapping like params.yaml's compare.release, e.g. {primary_metric: nDCG@10, min_delta: "
                         "0.03}") from None
    if not isinstance(found, dict) or "primary_metric" not in found:
        raise ValueError(f"--rule {path}: not a release rule (a mapping with primary_metric). Fix: a YAML mapping "
                         "like params.yaml's compare.release, e.g. {primary_metric: nDCG@10, min_delta: 0.03}")
    from ..core.errors import ConfigError
    from ..stats.config import ReleaseRule

    try:  # checked here too, so that a wrong setting is named with the file that states it
        ReleaseRule.parse(found, "")
    except ConfigError as error:
        raise ConfigError(f"--rule {path}: {error}") from None
    return found


def _named(text: str) -> tuple[str, str]:
    """``NAME=PATH`` or a bare path, named by its file stem."""
    name, separator, path = text.partition("=")
    if separator and name and "/" not in name:
        return name, path
    return Path(text).stem, text


def _query_set(qrels, runs: dict, qrels_path: str) -> list[str]:
    """The queries with a relevant document that at least one run answers; warns of runs that miss some."""
    judged = set(map(str, qrels["query_id"]))
    for name, run in runs.items():
        refuse_unmatched(set(map(str, run["query_id"])), judged, f"run {name!r}", qrels_path)
    relevant = set(qrels.loc[qrels["relevance"] >= 1, "query_id"])
    answered = set().union(*(set(run["query_id"]) for run in runs.values()))
    query_ids = sorted(relevant & answered)
    if not query_ids:
        raise ValueError(f"no query of {qrels_path} with a relevant document is in any run (query ids compare "
                         f"exactly, case included: e.g. qrels {sorted(relevant)[:3]}, runs {sorted(answered)[:3]})")
    for name, run in runs.items():
        missing = len(set(query_ids) - set(run["query_id"]))
        if missing:
            print(f"rerankeval compare: warning: run {name!r} has no ranking for {missing} of the {len(query_ids)} "
                  "compared queries; they score 0 there (trec_eval -c)", file=sys.stderr)
    return query_ids


def refuse_sparse(runs: dict, query_ids: list[str], min_coverage: float, qrels_path: str,
                  judged: set[str] = frozenset()) -> None:
    """Refuse any run that ranks fewer than ``min_coverage`` of ``query_ids``, with its counts and, when its ids
    differ from the compared ones in letter case only, that hint; and any run, whatever its coverage, that ranks a
    missing compared query under an id differing from it in letter case only (``Q11`` for ``q11``) and that is no
    query of the qrels (``judged``) itself: the same query misspelt, which would score 0 and move the verdict however
    few such queries there are."""
    if not 0.0 <= min_coverage <= 1.0:
        raise ValueError(f"--min-coverage {min_coverage}: a share between 0 and 1")
    wanted = set(query_ids)
    for name, run in runs.items():
        ranked = set(map(str, run["query_id"]))
        covered = len(ranked & wanted)
        missing: dict[str, str] = {}
        for query_id in sorted(wanted - ranked):  # sorted: the example named is the same on every run
            missing.setdefault(query_id.casefold(), query_id)
        case_only = sorted(query_id for query_id in ranked - wanted - judged if query_id.casefold() in missing)
        if case_only and covered >= min_coverage * len(wanted):
            raise ValueError(f"run {name!r} ranks {len(case_only)} of the {len(wanted)} compared queries (of "
                             f"{qrels_path}) under ids that differ from theirs in letter case only (run "
                             f"{case_only[0]!r}, qrels {missing[case_only[0].casefold()]!r}): those queries would "
                             "score 0 and move the verdict. Fix: use the qrels' query ids in the run")
        if covered >= min_coverage * len(wanted) and covered > 0:
            continue
        hint = (f"; {len(case_only)} more of its ids match a compared query in another letter case"
                if case_only else "")
        raise ValueError(f"run {name!r} ranks {covered} of the {len(wanted)} compared queries (of {qrels_path}), below "
                         f"--min-coverage {min_coverage:g}{hint}: its missing queries would score 0 and decide the "
                         "verdict. Fix: use the qrels' query ids in the run, or lower --min-coverage if it really "
                         "answers so few")


def _listed_queries(path: str, runs: dict) -> list[str]:
    """The query ids of ``path`` (one per line, blank lines skipped), sorted; each must be in some run."""
    with open(path, encoding="utf-8") as handle:
        listed = sorted({line.strip() for line in handle if line.strip()})
    if not listed:
        raise ValueError(f"{path}: no query id. Fix: one query id per line")
    answered = set().union(*(set(map(str, run["query_id"])) for run in runs.values()))
    missing = [query_id for query_id in listed if query_id not in answered]
    if missing:
        raise ValueError(f"{path}: {len(missing)} of its {len(listed)} query ids are in no run (e.g. {missing[:3]}). "
                         "Fix: list the queries the runs rank")
    for name, run in runs.items():
        lacking = len(set(listed) - set(map(str, run["query_id"])))
        if lacking:
            print(f"rerankeval compare: warning: run {name!r} has no ranking for {lacking} of the {len(listed)} "
                  "listed queries; they score 0 there (trec_eval -c)", file=sys.stderr)
    return listed


def refuse_unmatched(run_ids: set[str], judged: set[str], run_label: str, qrels_path: str) -> None:
    """Refuse a run sharing no query id with the qrels: any verdict on it would compare nothing."""
    if run_ids & judged:
        return
    folded = {query_id.casefold(): query_id for query_id in judged}
    clash = next((query_id for query_id in sorted(run_ids) if query_id.casefold() in folded), None)
    hint = (f"; the ids differ in letter case only (run {clash!r}, qrels {folded[clash.casefold()]!r})"
            if clash else f" (run: {_some(run_ids)}; qrels: {_some(judged)})")
    raise ValueError(f"{run_label} and {qrels_path} share no query id{hint}. Fix: use the qrels' query ids in "
                     "the run.")


def _some(ids: set[str]) -> str:
    ordered = sorted(ids)
    return ", ".join(repr(query_id) for query_id in ordered[:3]) + (", ..." if len(ordered) > 3 else "")


def _slices(queries_path: str | None, columns: list[str], query_ids: list[str]):
    """Slice labels (index query_id, a column per critical slice) from the metadata of a BEIR queries.jsonl."""
    import pandas as pd

    from ..data.beir import utf8_lines

    if columns and not queries_path:
        raise ValueError("--critical-slice needs --queries (the queries.jsonl whose metadata labels the slices)")
    labels: dict[str, dict[str, str]] = {}
    for line_no, line in utf8_lines(Path(queries_path)) if queries_path else ():  # a regular file, lines bounded
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            query_id, metadata = str(record["_id"]), record.get("metadata") or {}
        except RecursionError:
            raise ValueError(f"{queries_path}:{line_no}: JSON nested too deeply to read. Fix: one flat BEIR query "
                             "record per line, e.g. {\"_id\": \"q1\", \"text\": \"...\", \"metadata\": "
                             "{\"language\": \"en\"}}.") from None
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError) as error:
            raise ValueError(f"{queries_path}:{line_no}: not a BEIR query record with an _id "
                             f"({type(error).__name__}: {str(error)[:200]}). Fix: one JSON object per line, e.g. "
                             "{\"_id\": \"q1\", \"text\": \"...\", \"metadata\": {\"language\": \"en\"}}.") from None
        labels[query_id] = {column: str(metadata[column]) for column in columns
                            if isinstance(metadata, dict) and metadata.get(column) is not None}
    if columns and not labels:
        raise ValueError(f"{queries_path}: no query record (the file is empty). Fix: name the queries.jsonl whose "
                         "metadata labels the slices.")
    for column in columns:
        if not any(column in found for found in labels.values()):
            raise ValueError(f"--critical-slice {column!r}: no query in {queries_path} has it in its metadata. Fix: "
                             f"label the queries (metadata.{column}), or name a column they carry.")
    frame = pd.DataFrame.from_dict(labels, orient="index", columns=columns).reindex(query_ids)
    return frame.fillna(NO_LABEL)


def _as_json(result: dict[str, Any], verdicts: dict[str, Any]) -> dict[str, Any]:
    """Each challenger's verdict with its metrics against the first baseline; ``by_baseline`` the same against each
    other baseline (only with several)."""
    def challengers(decided: dict[str, Any], comparisons: list[dict[str, Any]]) -> dict[str, Any]:
        return {name: {**verdict, "metrics": {
            item["metric"]: {key: item[key] for key in ("baseline_mean", "challenger_mean", "delta", "low", "high",
                                                        "p_adjusted", "family")}
            for item in comparisons if item["challenger"] == name}} for name, verdict in decided.items()}

    found = {"baseline": verdicts["baseline"], "queries": verdicts["queries"], "rule": verdicts["rule"],
             "simulation": verdicts["simulation"], "unjudged": result["unjudged"],
             "challengers": challengers(verdicts["verdicts"], result["comparisons"])}
    if "verdicts_by_baseline" in verdicts:
        found["by_baseline"] = {reference: challengers(decided, result["comparisons_by_baseline"][reference])
                                for reference, decided in verdicts["verdicts_by_baseline"].items()}
    return found


def _as_markdown(result: ComparisonCore, verdicts: DecisionCore) -> str:
    from ..report import markdown as md

    sections = [f"# rerankeval compare: {result.queries} queries, baseline `{result.baseline}`",
                md.verdict_section(verdicts), md.deltas_section(result)]
    if result.slices:
        sections.append(md.slices_section(result, verdicts.rule.primary_metric, plots=None))
    sections.append(md.unjudged_section(result))
    return md.render(sections)
