"""`rerankeval diff BASE_REV [HEAD_REV]`: is the change between two git revisions real?

The evaluate outputs of both revisions are paired by (system, query_id) and every system × metric delta gets a
paired bootstrap CI, a family-adjusted randomisation p-value and win/tie/loss counts; then the slices whose delta on
the primary metric moved. ``load_revision`` is the only I/O (git and DVC, nothing is re-run); ``diff_revisions`` and
``markdown_comment`` are pure. numpy, pandas, pyarrow and DVC are imported where used, so that the console command
can import ``add_diff_arguments`` without slowing ``rerankeval --help``.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..eval.measures import parse_measure
from ..pipeline.paths import DVC_YAML, PER_QUERY_FILE, pipeline_paths

if TYPE_CHECKING:
    import pandas as pd

    from ..stats.comparison import CompareConfig

PARAMS = Path("params.yaml")
WORKING_TREE = "working tree"
# Lets a CI job find and update its own earlier comment instead of adding one per push.
COMMENT_MARKER = "<!-- rerankeval-diff -->"


@dataclass(frozen=True)
class Revision:
    """What the pipeline left at one revision: per-query metrics, query slices, data provenance and params."""

    label: str
    per_query: pd.DataFrame  # one row per (system, query_id), one column per metric
    slices: pd.DataFrame  # index query_id, one column per slice label
    snapshot: Mapping[str, str]  # content sha256 of corpus, queries and qrels the metrics were computed from
    params: Mapping[str, Any]


# --------------------------------------------------------------------------- loading (the only I/O)


def load_revision(repo: str | Path, rev: str | None) -> Revision:
    """A git revision's evaluate outputs from the DVC cache (or a remote); the working tree's files when rev is None."""
    import pyarrow.parquet as pq
    import yaml
    from dvc.api import DVCFileSystem
    from dvc.exceptions import DvcException
    from dvc_data.index import DataIndexError

    from ..core.io import table_metadata
    from ..data.snapshot import MANIFEST


    repo = Path(repo)
    if rev is None:
        label, fs = WORKING_TREE, None
    else:
        label = f"{rev} ({_short_commit(repo, rev)})"
        fs = DVCFileSystem(str(repo), rev=rev)

    def read(path: Path) -> bytes:
        if fs is None:
            return (repo / path).read_bytes()
        with fs.open(path.as_posix(), "rb") as handle:
            return handle.read()

    dvc_yaml = (repo / DVC_YAML).read_text() if rev is None else _git(repo, "show", f"{rev}:{DVC_YAML}")
    paths = pipeline_paths(dvc_yaml, f"{label}:{DVC_YAML}")
    per_query_path = Path(paths["eval"]) / PER_QUERY_FILE
    snapshot_dir = Path(paths["snapshot"])
    try:
        per_query = pq.read_table(io.BytesIO(read(per_query_path)))
        queries = pq.read_table(io.BytesIO(read(snapshot_dir / "queries.parquet"))).to_pandas().set_index("query_id")
        manifest = json.loads(read(snapshot_dir / MANIFEST))
    # DVC reports a missing cache as any of these, depending on what is missing (directory listing or a file).
    except (DvcException, DataIndexError, OSError) as error:
        if rev is None:
            raise ValueError(f"the working tree has no {per_query_path} or {snapshot_dir} ({error}); run `dvc repro` "
                             "(or `dvc pull`) first.") from None
        raise ValueError(f"revision {label}: cannot read {per_query_path} and {snapshot_dir} ({error}). They must be "
                         "named by the revision's committed dvc.lock and be in the DVC cache: get them with "
                         f"`git checkout {rev} && dvc repro`, or `dvc pull` from a remote that has them.") from None
    finally:
        if fs is not None:
            fs.close()
    params = yaml.safe_load((repo / PARAMS).read_text() if rev is None else _git(repo, "show", f"{rev}:{PARAMS}"))
    return Revision(label, per_query.to_pandas(), queries[manifest["slice_columns"]],
                    table_metadata(per_query).get("snapshot", {}), params)


def _short_commit(repo: Path, rev: str) -> str:
    try:
        return _git(repo, "rev-parse", "--short", "--verify", "--end-of-options", f"{rev}^{{commit}}").strip()
    except ValueError:
        raise ValueError(f"unknown git revision {rev!r} in {repo}; a shallow clone needs its history first "
                         "(`git fetch --unshallow`, or `fetch-depth: 0` in actions/checkout)") from None


def _git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    if result.returncode != 0:
        raise ValueError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


# --------------------------------------------------------------------------- the diff (pure)


def diff_revisions(base: Revision, head: Revision, settings: CompareConfig, primary_metric: str) -> dict[str, Any]:
    """Every system in both revisions, paired query by query: a JSON-ready dict (``markdown_comment`` renders it).

    Systems whose per-query values are identical are listed as unchanged and left out of the family: there is no
    hypothesis to test, and counting them would only weaken the multiplicity correction of the others.
    """
    import numpy as np

    from ..stats import domains
    from ..stats.comparison import finite
    from ..stats.deltas import Comparison

    metrics = list(dict.fromkeys([*settings.metrics, primary_metric]))
    for revision in (base, head):
        missing = [metric for metric in metrics if metric not in revision.per_query.columns]
        if missing:
            raise ValueError(f"revision {revision.label}: per-query metrics have no column {missing}; "
                             "pass --metric with evaluated measures")
    head_systems = list(dict.fromkeys(head.per_query["system"]))
    base_systems = set(base.per_query["system"])
    systems = [system for system in head_systems if system in base_systems]
    if not systems:
        raise ValueError(f"no system is evaluated in both {base.label} and {head.label}")

    base_queries, head_queries = _query_ids(base, systems), _query_ids(head, systems)
    query_ids = sorted(base_queries & head_queries)
    if len(query_ids) < 2:
        raise ValueError(f"{base.label} and {head.label} share {len(query_ids)} evaluated queries; need at least 2")
    warnings = []
    if base_queries != head_queries:
        warnings.append(f"The query sets differ ({len(base_queries - head_queries)} only in base, "
                        f"{len(head_queries - base_queries)} only in head); the diff pairs the {len(query_ids)} "
                        "queries in both.")
    changed_tables = sorted(name for name in set(base.snapshot) | set(head.snapshot)
                            if base.snapshot.get(name) != head.snapshot.get(name))
    if changed_tables:
        warnings.append(f"The snapshot changed ({', '.join(changed_tables)}): judgments or queries differ, so the "
                        "deltas mix the system change with the data change.")

    base_scores = _scores(base, systems, query_ids, metrics)
    head_scores = _scores(head, systems, query_ids, metrics)
    changed = [s for s in systems if not np.array_equal(base_scores[s], head_scores[s], equal_nan=True)]
    result = {
        "base": base.label, "head": head.label,
        "queries": {"base": len(base_queries), "head": len(head_queries), "paired": len(query_ids)},
        "primary_metric": primary_metric,
        "method": {"ci": settings.ci_method, "confidence": settings.confidence, "samples": settings.samples,
                   "seed": settings.seed, "permutations": settings.permutations, "correction": settings.correction,
                   "tie_tolerance": settings.tie_tolerance, "min_slice_size": settings.min_slice_size},
        "params_changed": params_changes(base.params, head.params),
        "warnings": warnings,
        "systems": {"changed": changed, "unchanged": [s for s in systems if s not in changed],
                    "only_in_base": sorted(base_systems - set(systems)),
                    "only_in_head": [s for s in head_systems if s not in base_systems]},
        "slice_columns": list(head.slices.columns), "comparisons": [], "slices": [], "regressions": [],
    }
    if not changed:
        return result

    family = [(system, metric) for system in changed for metric in metrics]
    # Base and head of each system x metric; measures undefined on some queries go by their domain (stats.domains).
    paired = domains.PairedFamily(
        tuple(Comparison(s, m) for s, m in family),
        np.column_stack([base_scores[s][:, metrics.index(m)] for s, m in family]),
        np.column_stack([head_scores[s][:, metrics.index(m)] for s, m in family]))
    boot = dict(n_samples=settings.samples, seed=settings.seed, confidence=settings.confidence,
                method=settings.ci_method)
    intervals = domains.family_intervals(paired, **boot)
    tests = domains.family_significance(paired, n_permutations=settings.permutations, seed=settings.seed,
                                        correction=settings.correction)
    summaries = domains.family_summaries(paired, tie_tol=settings.tie_tolerance, worst_n=0)
    for j, (system, metric) in enumerate(family):
        result["comparisons"].append({
            "system": system, "metric": metric,
            "base": finite(np.nanmean(base_scores[system][:, metrics.index(metric)])),
            "head": finite(np.nanmean(head_scores[system][:, metrics.index(metric)])),
            "delta": finite(intervals.mean[j]), "low": finite(intervals.low[j]), "high": finite(intervals.high[j]),
            "p_randomisation": finite(tests.p_randomisation[j]),
            "p_randomisation_adjusted": finite(tests.p_randomisation_adjusted[j]),
            "improved": summaries[j].improved, "tied": summaries[j].tied, "regressed": summaries[j].regressed,
        })
        if metric == primary_metric and intervals.high[j] < 0:
            result["regressions"].append(system)

    primary = [j for j, (_, metric) in enumerate(family) if metric == primary_metric]
    labels = head.slices.reindex(query_ids)
    for column in labels.columns:
        primary_family = domains.PairedFamily(tuple(paired.comparisons[j] for j in primary),
                                              paired.base[:, primary], paired.challenger[:, primary])
        found = domains.family_slices(primary_family, labels[column].fillna("(none)").astype(str).to_numpy(),
                                      min_slice_size=settings.min_slice_size, **boot)
        for k, value in enumerate(found.values):
            for i, system in enumerate(changed):
                if found.low[k, i] > 0 or found.high[k, i] < 0:
                    result["slices"].append({
                        "system": system, "column": column, "value": str(value), "queries": int(found.sizes[k]),
                        "too_small": bool(found.too_small[k]), "delta": finite(found.mean[k, i]),
                        "low": finite(found.low[k, i]), "high": finite(found.high[k, i])})
    return result


def params_changes(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Params that differ, as dotted keys; a side lacks "base"/"head" when the key is absent there."""
    old, new = _flatten(base), _flatten(head)
    changes = []
    for key in sorted(set(old) | set(new)):
        if old.get(key, ...) != new.get(key, ...):
            changes.append({"key": key} | ({"base": old[key]} if key in old else {})
                           | ({"head": new[key]} if key in new else {}))
    return changes


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(value, Mapping) or not value:
        return {prefix: value}
    flat = {}
    for key, item in value.items():
        flat.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def _query_ids(revision: Revision, systems: Sequence[str]) -> set:
    """Queries evaluated for every one of ``systems`` in this revision."""
    rows = revision.per_query[revision.per_query["system"].isin(systems)]
    return set.intersection(*(set(ids) for _, ids in rows.groupby("system")["query_id"]))


def _scores(revision: Revision, systems: Sequence[str], query_ids: Sequence, metrics: Sequence[str]) -> dict:
    """``scores[system]``: (queries × metrics) float64 matrix, rows in ``query_ids`` order."""
    import numpy as np

    frame = revision.per_query.set_index(["system", "query_id"])
    return {system: frame.loc[system].loc[list(query_ids), list(metrics)].to_numpy(dtype=np.float64)
            for system in systems}


# --------------------------------------------------------------------------- Markdown


def markdown_comment(result: Mapping[str, Any]) -> str:
    """The diff as a GitHub pull-request comment."""
    from .markdown import fmt, p_value, table

    method, primary = result["method"], result["primary_metric"]
    systems = result["systems"]
    level = f"{method['confidence']:.0%}"
    parts = [COMMENT_MARKER, f"## rerankeval diff: `{result['base']}` → `{result['head']}`"]
    if result["regressions"]:
        names = ", ".join(f"`{system}`" for system in result["regressions"])
        parts.append(f"❌ **{primary} regressed** ({level} CI entirely below 0): {names}")
    elif systems["changed"]:
        parts.append(f"✅ No system regressed on {primary}.")
    if result["params_changed"]:
        parts.append("**Params changed**\n\n" + "\n".join(
            f"- `{change['key']}`: {_param_value(change, 'base')} → {_param_value(change, 'head')}"
            for change in result["params_changed"]))
    if result["warnings"]:
        parts.append("> [!WARNING]\n" + "\n>\n".join(f"> {warning}" for warning in result["warnings"]))

    if result["comparisons"]:
        rows = [[f"`{c['system']}`", c["metric"], fmt(c["base"]), fmt(c["head"]), _delta(c),
                 f"{fmt(c['low'], signed=True)} .. {fmt(c['high'], signed=True)}",
                 p_value(c["p_randomisation_adjusted"]), f"{c['improved']} / {c['tied']} / {c['regressed']}"]
                for c in result["comparisons"]]
        parts.append(table(["system", "metric", "base", "head", "Δ", f"{level} CI", f"p ({method['correction']})",
                            "win / tie / loss"], rows))
    else:
        parts.append("No system's per-query metrics changed.")
    notes = []
    if systems["changed"] and systems["unchanged"]:
        notes.append("Unchanged (identical per-query values): " + ", ".join(f"`{s}`" for s in systems["unchanged"]))
    for key, where in (("only_in_base", "base"), ("only_in_head", "head")):
        if systems[key]:
            notes.append(f"Only in {where} (not compared): " + ", ".join(f"`{s}`" for s in systems[key]))
    if notes:
        parts.append("\n".join(f"- {note}" for note in notes))

    if systems["changed"]:
        title = f"### Slices that moved on {primary} ({level} CI excludes 0)"
        if not result["slice_columns"]:
            parts.append(title + "\n\nThe queries carry no slice labels.")
        elif result["slices"]:
            rows = [[f"`{s['system']}`", f"{s['column']} = {s['value']}",
                     f"{s['queries']}{' ⚠' if s['too_small'] else ''}", _delta(s),
                     f"{fmt(s['low'], signed=True)} .. {fmt(s['high'], signed=True)}"] for s in result["slices"]]
            parts.append(title + "\n\n" + table(["system", "slice", "queries", "Δ", f"{level} CI"], rows))
        else:
            parts.append(title + "\n\nNone.")

    queries = result["queries"]
    footnote = f"{queries['paired']} queries paired by id (base {queries['base']}, head {queries['head']})."
    if result["comparisons"]:
        footnote += (
            f" Paired bootstrap {method['ci']} CIs from {method['samples']} resamples (seed {method['seed']}); "
            f"randomisation test with {method['permutations']} sign flips, {method['correction']}-adjusted over "
            f"{len(result['comparisons'])} comparisons; win/tie/loss counts queries (tie: |Δ| ≤ "
            f"{method['tie_tolerance']:g}). ▲ / ▼: the CI excludes 0. Slice CIs are not adjusted for multiplicity; "
            f"⚠ = fewer than {method['min_slice_size']} queries.")
    parts.append(f"<sub>{footnote}</sub>")
    return "\n\n".join(parts) + "\n"


def _delta(entry: Mapping[str, Any]) -> str:
    from .markdown import fmt

    arrow = "▲ " if (entry["low"] or 0) > 0 else "▼ " if (entry["high"] or 0) < 0 else ""
    return arrow + fmt(entry["delta"], signed=True)


def _param_value(change: Mapping[str, Any], side: str) -> str:
    return f"`{json.dumps(change[side])}`" if side in change else "(absent)"


# --------------------------------------------------------------------------- command line


def add_diff_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("base", metavar="BASE_REV", help="git revision to compare against, e.g. origin/main")
    parser.add_argument("head", nargs="?", metavar="HEAD_REV",
                        help="git revision with the change (default: the working tree, like `dvc metrics diff`)")
    parser.add_argument("--metric", action="append", dest="metrics", metavar="MEASURE",
                        type=_measure_name,
                        help="metric to compare; repeat for several (default: compare.metrics of HEAD_REV's params; "
                             "compare.release.primary_metric is always included)")
    parser.add_argument("--repo", default=".", metavar="DIR", help="the git + DVC repository (default: .)")
    parser.add_argument("--output", metavar="FILE", help="write the comment to FILE instead of stdout")
    parser.add_argument("--json", action="store_true", help="write JSON instead of Markdown")
    parser.add_argument("--fail-on-regression", action="store_true",
                        help="exit 1 when a system's primary-metric CI lies entirely below 0")


def _measure_name(text: str) -> str:
    """The canonical name, which is the column in per_query.parquet (MRR@10 -> RR@10)."""
    try:
        return str(parse_measure(text))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def run_diff(args: argparse.Namespace) -> int:
    from ..core.io import write_text
    from ..stats.comparison import CompareConfig

    base = load_revision(args.repo, args.base)
    head = load_revision(args.repo, args.head)
    settings = CompareConfig.parse(head.params["compare"], f"{head.label}:{PARAMS}: compare")
    if args.metrics:
        settings = settings.model_copy(update={"metrics": list(args.metrics)})
    result = diff_revisions(base, head, settings, settings.release.primary_metric)
    text = json.dumps(result, indent=2, ensure_ascii=False) + "\n" if args.json else markdown_comment(result)
    if args.output:
        write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return 1 if args.fail_on_regression and result["regressions"] else 0
