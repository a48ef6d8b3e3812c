"""`rerankeval diff BASE_REV [HEAD_REV]`: is the change between two git revisions real?

``load_revision`` is the only I/O (git and DVC, nothing is re-run); ``stats.revisions.diff_revisions`` computes the
diff and ``markdown_comment`` renders it, computing nothing. numpy, pandas, pyarrow and DVC are imported where used,
so that the console command can import ``add_diff_arguments`` without slowing ``rerankeval --help``.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..eval.measures import parse_measure
from ..workspace.paths import COMPARE_FILE, DVC_YAML, PER_QUERY_FILE, pipeline_paths

if TYPE_CHECKING:
    from ..stats.revisions import Revision
    from ..stats.schema import DiffMethod, RevisionDiff

PARAMS = Path("params.yaml")
WORKING_TREE = "working tree"
# Lets a CI job find and update its own earlier comment instead of adding one per push.
COMMENT_MARKER = "<!-- rerankeval-diff -->"



# --------------------------------------------------------------------------- loading (the only I/O)


def load_revision(repo: str | Path, rev: str | None) -> Revision:
    """A git revision's evaluate outputs from the DVC cache, else streamed from the checkout's default DVC remote;
    the working tree's files when rev is None."""
    import pyarrow.parquet as pq
    import yaml
    from dvc.api import DVCFileSystem
    from dvc.exceptions import DvcException
    from dvc_data.index import DataIndexError

    from ..core.io import table_metadata
    from ..data.snapshot import MANIFEST
    from ..stats.revisions import Revision

    repo = Path(repo)
    if rev is None:
        label, fs, remote = WORKING_TREE, None, None
    else:
        label = f"{rev} ({_short_commit(repo, rev)})"
        remote = checkout_remote(repo)
        # The checkout's remote, not the revision's .dvc/config: a base revision may predate the remote's setting.
        fs = DVCFileSystem(str(repo), rev=rev, **({"remote": remote.name, "remote_config": remote.settings}
                                                   if remote else {}))

    def read(path: Path) -> bytes:
        if fs is None:
            return (repo / path).read_bytes()
        # cache=True: a file streamed from a cloud remote is kept in the local cache, as `dvc fetch` would (a
        # local-directory remote is read in place).
        with fs.open(path.as_posix(), "rb", cache=True) as handle:
            return handle.read()

    def read_output(path: Path) -> bytes:
        try:
            return read(path)
        # DVC reports a missing cache as any of these, depending on what is missing (directory listing or a file).
        except (DvcException, DataIndexError, OSError) as error:
            raise ValueError(_missing_output_message(repo, label, rev, path, remote, error)) from None

    dvc_yaml = (repo / DVC_YAML).read_text() if rev is None else _git(repo, "show", f"{rev}:{DVC_YAML}")
    paths = pipeline_paths(dvc_yaml, f"{label}:{DVC_YAML}")
    snapshot_dir = Path(paths["snapshot"])
    try:
        per_query = pq.read_table(io.BytesIO(read_output(Path(paths["eval"]) / PER_QUERY_FILE)))
        queries = pq.read_table(io.BytesIO(read_output(snapshot_dir / "queries.parquet")))
        manifest = json.loads(read_output(snapshot_dir / MANIFEST))
        params = yaml.safe_load((repo / PARAMS).read_text() if rev is None else _git(repo, "show", f"{rev}:{PARAMS}"))
        # Each system's run, for how far its ranking moved (stats.revisions.ranking_agreement); a run the cache and
        # the remote lack only leaves that out. An LLM reranker's pins (model, template, decoding) are in its run's
        # metadata: a change there is a new system, so its run must be there.
        pins, runs = {}, {}
        for system, config in (params.get("systems") or {}).items() if "runs" in paths else ():
            path = Path(paths["runs"]) / f"run_{system}.parquet"
            llm = str((config or {}).get("kind", "")).startswith("llm_")
            try:
                table = pq.read_table(io.BytesIO(read_output(path) if llm else read(path)))
            except (DvcException, DataIndexError, OSError):
                continue
            runs[system] = table.select(["query_id", "doc_id", "rank", "score"]).to_pandas()
            if llm:
                pins[system] = table_metadata(table).get("describe", {})
        # A system new in head is shown with head's own comparison; a revision without compare.json still diffs.
        try:
            compare = json.loads(read(Path(paths["reports"]) / COMPARE_FILE)) if "reports" in paths else None
        except (DvcException, DataIndexError, OSError):
            compare = None
    finally:
        if fs is not None:
            fs.close()
    slices = queries.to_pandas().set_index("query_id")[manifest["slice_columns"]]
    return Revision(label, per_query.to_pandas(), slices, table_metadata(per_query).get("snapshot", {}), params,
                    compare, pins, runs)


@dataclass(frozen=True)
class Remote:
    """A DVC remote of the checkout's config (.dvc/config, .dvc/config.local, the user's and the system's)."""

    name: str
    settings: dict[str, Any]

    @property
    def url(self) -> str:
        return str(self.settings["url"])


def checkout_remote(repo: Path) -> Remote | None:
    """The checkout's default DVC remote (``core.remote``), None when it names none."""
    from dvc.config import Config, ConfigError

    try:
        config = Config(dvc_dir=str(repo / ".dvc"))
    except ConfigError as error:
        raise ValueError(f"{repo / '.dvc' / 'config'}: {error}") from None
    name = config["core"].get("remote")
    if not name:
        return None
    if name not in config["remote"]:
        raise ValueError(f"{repo / '.dvc' / 'config'}: core.remote names '{name}', which no [remote \"{name}\"] "
                         f"section defines; add it (`dvc remote add {name} URL`) or fix core.remote.")
    return Remote(name, dict(config["remote"][name]))


def _missing_output_message(repo: Path, label: str, rev: str | None, path: Path, remote: Remote | None,
                            error: Exception) -> str:
    if rev is None:
        return f"the working tree has no {path} ({error}); run `dvc repro` (or `dvc pull`) first."
    # `git checkout REV && dvc repro` is no fix: on another CPU it cannot restore REV's hashes (timings, the
    # trained model's bytes, the int8 run), so the outputs must come from the machine that made them.
    checkout = f"on a checkout of {rev} whose DVC outputs are in its cache (where `dvc repro` made them)"
    if remote is None:
        return (f"revision {label}: {path} is not in the local DVC cache, and no DVC remote is configured to pull "
                f"it from (core.remote in .dvc/config or .dvc/config.local). Add one (`dvc remote add -d NAME URL`, "
                f"see README.md, \"Sharing outputs\"); then, {checkout}, run `dvc push` to it.")
    fix = f"{checkout}, run `dvc push -r {remote.name}`"
    if not _defines_remote(repo, rev, remote.name):
        fix += (f" (that revision's .dvc/config predates the remote: first `dvc remote add --local {remote.name} "
                f"{remote.url}` there)")
    return (f"revision {label}: the DVC remote '{remote.name}' ({remote.url}) lacks {path} of that revision, and "
            f"the local DVC cache has no copy ({error}). To fix: {fix}.")


def _defines_remote(repo: Path, rev: str, name: str) -> bool:
    """Whether the revision's committed .dvc/config defines the remote ``name``."""
    from configobj import ConfigObj

    try:
        committed = _git(repo, "show", f"{rev}:.dvc/config")
    except ValueError:  # a revision without .dvc/config
        return False
    return f'remote "{name}"' in ConfigObj(committed.splitlines())


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


# --------------------------------------------------------------------------- Markdown


def markdown_comment(result: RevisionDiff) -> str:
    """The diff as a GitHub pull-request comment."""
    from .markdown import fmt, p_value, table

    method, primary = result.method, result.primary_metric
    systems = result.systems
    level = f"{method.confidence:.0%}"
    parts = [COMMENT_MARKER, f"## rerankeval diff: `{result.base}` → `{result.head}`"]
    if result.regressions:
        names = ", ".join(f"`{system}`" for system in result.regressions)
        parts.append(f"❌ **{primary} regressed** ({level} CI entirely below 0): {names}")
    elif systems["changed"]:
        parts.append(f"✅ No system regressed on {primary}.")
    if result.params_changed:
        parts.append("**Params changed**\n\n" + "\n".join(
            f"- `{change['key']}`: {_param_value(change, 'base')} → {_param_value(change, 'head')}"
            for change in result.params_changed))
    if result.warnings:
        parts.append("> [!WARNING]\n" + "\n>\n".join(f"> {warning}" for warning in result.warnings))

    if result.comparisons:
        rows = [[f"`{c.system}`", c.metric, fmt(c.base), fmt(c.head), _delta(c.delta, c.low, c.high),
                 f"{fmt(c.low, signed=True)} .. {fmt(c.high, signed=True)}",
                 p_value(c.p_adjusted), f"{c.improved} / {c.tied} / {c.regressed}"]
                for c in result.comparisons]
        parts.append(table(["system", "metric", "base", "head", "Δ", f"{level} CI", "p (adjusted in its family)",
                            "win / tie / loss"], rows))
    else:
        parts.append("No system's per-query metrics changed.")
    notes = []
    if systems["changed"] and systems["unchanged"]:
        notes.append("Unchanged (identical per-query values): " + ", ".join(f"`{s}`" for s in systems["unchanged"]))
    if systems["only_in_base"]:
        notes.append("Only in base (not compared): " + ", ".join(f"`{s}`" for s in systems["only_in_base"]))
    if notes:
        parts.append("\n".join(f"- {note}" for note in notes))
    if systems["only_in_head"]:
        parts.append(_new_systems_section(result.new_systems, systems["only_in_head"], level, method))

    if systems["changed"]:
        title = f"### Slices that moved on {primary} ({level} CI excludes 0)"
        if not result.slice_columns:
            parts.append(title + "\n\nThe queries carry no slice labels.")
        elif result.slices:
            rows = [[f"`{s.system}`", f"{s.column} = {s.value}", f"{s.queries}{' ⚠' if s.too_small else ''}",
                     _delta(s.delta, s.low, s.high), f"{fmt(s.low, signed=True)} .. {fmt(s.high, signed=True)}"]
                    for s in result.slices]
            parts.append(title + "\n\n" + table(["system", "slice", "queries", "Δ", f"{level} CI"], rows))
        else:
            parts.append(title + "\n\nNone.")

    parts += _agreement_section(result.agreement)
    queries = result.queries
    footnote = f"{queries['paired']} queries paired by id (base {queries['base']}, head {queries['head']})."
    if result.comparisons:
        footnote += (
            f" {primary}: the changed systems are one family, their CIs and p by {method.procedure} "
            f"({method.samples} resamples, seed {method.seed}), which alone decides a regression; other metrics: "
            f"paired bootstrap {method.ci} CIs, randomisation test with {method.permutations} sign flips, "
            f"{method.correction}-adjusted among themselves; win/tie/loss counts queries (tie: |Δ| ≤ "
            f"{method.tie_tolerance:g}). ▲ / ▼: the CI excludes 0. Slice CIs are not adjusted for multiplicity; "
            f"⚠ = fewer than {method.min_slice_size} queries.")
    parts.append(f"<sub>{footnote}</sub>")
    return "\n\n".join(parts) + "\n"


def _agreement_section(agreement: Mapping[str, Any] | None) -> list[str]:
    """How far each system's ranking moved from base to head; nothing when no run was read."""
    from .precision import agreement_markdown

    if not agreement or not (agreement["compared"] or agreement["identical"]):
        return []
    text = "### How far the rankings moved, head against base"
    if agreement["compared"]:
        text = agreement_markdown(
            [(f"`{system}`", found) for system, found in agreement["compared"].items()], "system",
            "How far the rankings moved, head against base",
            "RBO weighs the top most (1: the same order); a system can reorder its top without moving a metric, "
            "or move a metric by a few swaps: these say which.")
    notes = [f"Same ranking in both (identical runs): {', '.join(f'`{s}`' for s in agreement['identical'])}"
             if agreement["identical"] else "",
             f"No run to compare (not in the outputs read): {', '.join(f'`{s}`' for s in agreement['missing'])}"
             if agreement["missing"] else ""]
    return [text + "".join(f"\n\n- {note}" for note in notes if note)]


def _new_systems_section(new: Mapping[str, Any], systems: Sequence[str], level: str, method: DiffMethod) -> str:
    from .markdown import fmt, p_value, table

    names = ", ".join(f"`{s}`" for s in systems)
    title = f"### New in head: {names}"
    if not new["comparisons"]:
        return f"{title}\n\n{new['missing']}."
    rows = [[f"`{c['challenger']}`", c["metric"], fmt(c["baseline_mean"]), fmt(c["challenger_mean"]),
             _delta(c["delta"], c["low"], c["high"]),
             f"{fmt(c['low'], signed=True)} .. {fmt(c['high'], signed=True)}", p_value(c["p_adjusted"]),
             f"{c['improved']} / {c['tied']} / {c['regressed']}"] for c in new["comparisons"]]
    text = (f"{title}, against head's baseline `{new['baseline']}` (head's compare.json: paired over head's queries, "
            "p adjusted in its family there: simultaneous on the primary metric, "
            f"{method.correction} over the descriptive rest)\n\n"
            + table(["system", "metric", f"`{new['baseline']}`", "system", "Δ", f"{level} CI", "p",
                     "win / tie / loss"], rows))
    return text + (f"\n\n{new['missing']}." if new["missing"] else "")


def _delta(delta: float | None, low: float | None, high: float | None) -> str:
    from .markdown import fmt

    arrow = "▲ " if (low or 0) > 0 else "▼ " if (high or 0) < 0 else ""
    return arrow + fmt(delta, signed=True)


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
