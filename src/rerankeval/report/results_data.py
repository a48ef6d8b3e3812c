"""Expected results as data: ``results/<dataset>.yaml`` generated from a run's outputs, and the Markdown rendered
from those files (``docs/results.md`` and the marked blocks of README.md).

A results file is the model of Anserini's regression YAMLs: what a dataset's run should give, with how it was made.
``results/demo.yaml`` is written from the demo's ``reports/metrics.json``, ``compare.json`` and ``verdicts.json``;
another collection's from its run's reports with ``--record`` (a file recorded by hand before that says so in its
``provenance``, with the command and the commit). Every measured number the documentation quotes is rendered from
these files, so a changed output that is not re-rendered
fails ``tests/test_results_data.py``. A demo on another CPU changes the int8 model's numbers a little
(``rerankeval.report.cross_machine``): the check holds results/demo.yaml to the outputs within that guarantee, and
the rendered files to the committed results files exactly.

    python -m rerankeval.report.results_data            # `make results`: rewrite results/demo.yaml and the docs
    python -m rerankeval.report.results_data --record /tmp/run/reports --dataset cranfield --command "..." --commit C
    python -m rerankeval.report.results_data --check    # exit 1 when a committed file fails the check
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ..core.errors import RerankevalError
from ..core.io import read_json, write_text
from ..stats.analysis import read_analysis
from ..stats.schema import Costs
from ..stats.verdict import ci_label
from .cross_machine import cpu_dependent_systems, departures
from .markdown import table

PRIMARY = "nDCG@10"
ANSWER_MEASURES = ("AnswerEM", "AnswerF1")
"""Recorded beside the ranking where the collection has gold answers: what each system's context let the generator
answer (docs/answers.md)."""
GENERATED_FROM = ("reports/metrics.json", "reports/compare.json", "reports/verdicts.json", "reports/costs.json")
DOCS_PAGE = "docs/results.md"
SHOWN_DEPARTURES = 5
"""Departures a failed check lists: a changed first stage moves dozens, which `make results` then `git diff` show."""
BLOCK = re.compile(r"(<!-- results:(?P<name>[a-z0-9_-]+) -->\n)(?P<body>.*?)(<!-- /results:(?P=name) -->)", re.S)


class ResultsDataError(RerankevalError):
    """A results file or a marked block that cannot be read or rendered."""


def demo_results(reports: Path) -> dict[str, Any]:
    """The demo's results file, from the outputs of one run (no other input, so the same outputs give the same file)."""
    return run_results(reports, "demo", {"how": "generated", "from": list(GENERATED_FROM),
                                         "command": "dvc repro, then make results"})


def run_results(reports: Path, dataset: str, provenance: Mapping[str, Any]) -> dict[str, Any]:
    """A dataset's results file from one run's ``reports/`` (metrics.json, compare.json, verdicts.json, costs.json):
    the first stage, the RRF weight fit where the collection has a train split, every system's mean, Δ and verdict,
    and each policy sweep's settings."""
    metrics = read_json(reports / "metrics.json")
    analysis = read_analysis(reports / "compare.json", reports / "verdicts.json", reports / "costs.json")
    compare, decided = analysis.compare, analysis.verdicts.verdicts
    baseline, stages = compare.baseline, metrics["first_stage"]
    deltas = {row.challenger: row for row in compare.comparisons if row.metric == PRIMARY}
    answer_deltas = {(row.challenger, row.metric): row for row in compare.comparisons if row.metric in ANSWER_MEASURES}
    systems = {}
    for name, means in sorted(compare.systems.items()):
        entry = {"mean": means[PRIMARY].mean, "ci": [means[PRIMARY].low, means[PRIMARY].high]}
        if name in deltas:
            entry["delta_vs_baseline"] = deltas[name].delta
            entry["delta_ci"] = [deltas[name].low, deltas[name].high]
        answered = {measure: {"mean": means[measure].mean, **({"delta_vs_baseline": found.delta,
                                                               "delta_ci": [found.low, found.high]}
                                                              if (found := answer_deltas.get((name, measure))) else {})}
                    for measure in ANSWER_MEASURES if measure in means and means[measure].mean is not None}
        if answered:  # none on a collection without gold answers
            entry["answers"] = answered
        if name in decided:
            entry["verdict"] = decided[name].decision
            entry["family"] = decided[name].family
        systems[name] = entry
    fit = (metrics.get("fusion") or {}).get("fit")
    fitted = fit is not None and "queries" in fit  # a collection without a train split keeps plain RRF unfitted
    return {
        "dataset": dataset,
        "split": compare.split,
        "queries": compare.first_stage.queries,
        "provenance": dict(provenance),
        "first_stage": {
            "measure": PRIMARY,
            **{name: stages[name][PRIMARY] for name in ("bm25", "dense", "hybrid")},
            "oracle": metrics["systems"][baseline][f"oracle:{PRIMARY}"],
            "random": compare.first_stage.random,
            "R@100": {name: stages[name]["R@100"] for name in ("bm25", "dense", "hybrid")},
        },
        **({"fusion_fit": {"split": fit["split"], "queries": fit["queries"], "best_share": fit["best"],
                           "delta": fit["delta"], "ci": list(fit["ci"]), "confidence": fit["confidence"],
                           "weights": dict(metrics["fusion"]["weights"])}} if fitted else {}),
        "baseline": baseline,
        "confidence": compare.method.confidence,  # the level of every interval below
        "systems": systems,
        **({"sweeps": _sweeps(analysis.costs)} if analysis.costs.sweeps else {}),
        # why the answer measures do not compare rankings here, when the generator cannot tell them apart
        **({"generator_flag": compare.generator_sanity.flag} if compare.generator_sanity.flag else {}),
    }


def _sweeps(costs: Costs) -> dict[str, Any]:
    """Each sweep's settings in order: quality, Δ against the baseline with the sweep family's interval, and the pairs
    its model scored. No p95 or cost: a results file holds no timing (``report.cross_machine``)."""
    policies: dict[str, Any] = {}
    for point in costs.sweeps:
        policy = policies.setdefault(point.policy, {"system": point.system, "parameter": point.parameter,
                                                    "points": {}})
        policy["points"][point.value] = {"quality": _rounded(point.quality), "delta": _rounded(point.delta),
                                         "delta_ci": [_rounded(point.low), _rounded(point.high)],
                                         "model_pairs": point.model_pairs}
    return {"measure": costs.measure, "policies": policies}


def _rounded(value: float | None) -> float | None:
    """To compare.json's 6 decimals (costs.json keeps its floats whole)."""
    return None if value is None else round(value, 6)


def record_run(root: Path, reports: Path, dataset: str, command: str, commit: str) -> Path:
    """``results/<dataset>.yaml`` from another run's ``reports`` (a collection run as a user runs it: ``dvc exp run -S
    dataset=beir ...``, in a checkout of its own), with the command and the commit that made them; ``from`` names
    the files as that checkout has them."""
    if dataset == "demo":
        raise ResultsDataError("the demo's results file is written from this checkout's reports/: run `make results`")
    path = root / "results" / f"{dataset}.yaml"
    write_text(path, dump(run_results(reports, dataset, {
        "how": "generated", "from": list(GENERATED_FROM), "command": command, "commit": commit})))
    return path


def dump(results: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(results), sort_keys=False, allow_unicode=True, width=120)


def add_provenance_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of a benchmark script's ``record`` step: where its figures came from, and where they go."""
    parser.add_argument("--commit", required=True)
    parser.add_argument("--command", required=True, help="the commands that made the outputs")
    parser.add_argument("--conditions", required=True, help="the machine and its load")
    parser.add_argument("--note", action="append", default=[], help="a note to keep (the settings chosen)")
    parser.add_argument("--out", type=Path, required=True, help="results/benchmarks/<name>.yaml")


def write_benchmark(args: argparse.Namespace, benchmark: str, notes: list[str], tables: list[Any]) -> str:
    """A ``results/benchmarks/*.yaml`` from a ``record`` step's arguments; returns the text written."""
    text = dump({"benchmark": benchmark,
                 "provenance": {"how": "measured", "commit": args.commit, "command": args.command,
                                "conditions": args.conditions},
                 "notes": [*args.note, *notes], "tables": tables})
    write_text(args.out, text)
    return text


def print_benchmark(args: argparse.Namespace, benchmark: str, notes: list[str], tables: list[Any]) -> None:
    """A benchmark script's last step: with ``record``, write its results YAML (``write_benchmark``); else print what it
    measured, notes and tables, as YAML."""
    if getattr(args, "step", None) == "record":
        print(write_benchmark(args, benchmark, notes, tables))
    else:
        print(dump({"notes": notes, "tables": tables}))


def _read_yaml(path: Path, required: tuple[str, ...]) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ResultsDataError(f"{path}: not readable YAML ({err}). Fix: regenerate it with `make results` or "
                               "correct the hand-recorded file.") from None
    missing = [key for key in required if not isinstance(data, dict) or key not in data]
    if missing:
        raise ResultsDataError(f"{path}: missing key(s) {', '.join(missing)}. Fix: see results/demo.yaml and "
                               "results/benchmarks/ for the layout.")
    return data


def load_results(folder: Path) -> dict[str, dict[str, Any]]:
    """Every ``results/*.yaml`` by dataset name, the demo first."""
    files = sorted(folder.glob("*.yaml"), key=lambda path: (path.stem != "demo", path.stem))
    return {path.stem: _read_yaml(path, ("dataset", "provenance")) for path in files}


def load_benchmarks(folder: Path) -> dict[str, dict[str, Any]]:
    """Every ``results/benchmarks/*.yaml`` (a benchmark script's figures, with its command and the load)."""
    return {path.stem: _read_yaml(path, ("benchmark", "provenance"))
            for path in sorted((folder / "benchmarks").glob("*.yaml"))}


def _number(value: Any, digits: int = 3) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:.{digits}f}" if isinstance(value, float) else str(value)
    return str(value)


def _signed(value: float) -> str:
    return f"{value:+.3f}"


def _interval(bounds: list[float]) -> str:
    return f"[{_signed(bounds[0])}, {_signed(bounds[1])}]"


def _table(header: list[str], rows: list[list[str]]) -> str:
    return table(header, rows) + "\n"


def render_first_stage(results: Mapping[str, Mapping[str, Any]]) -> str:
    rows = []
    for name, data in results.items():
        stage = data.get("first_stage")
        if not stage:
            continue
        recall = stage.get("R@100", {})
        rows.append([f"{name} ({data['queries']} queries)", *(_number(stage.get(key)) for key in
                                                              ("bm25", "dense", "hybrid", "oracle", "random")),
                     " / ".join(_number(recall.get(key)) for key in ("bm25", "dense", "hybrid")) if recall else ""])
    return _table(["dataset (test split), nDCG@10", "BM25", "dense (`auto`)", "hybrid (RRF)",
                   "oracle on the candidates", "random", "R@100: BM25 / dense / hybrid"], rows)


def render_fusion_fit(results: Mapping[str, Mapping[str, Any]]) -> str:
    rows = []
    for name, data in results.items():
        fit = data.get("fusion_fit")
        if not fit:
            continue
        weights = fit.get("weights", {})
        decision = "plain RRF kept" if weights.get("bm25") == weights.get("dense") else \
            f"weights {weights['bm25']:g} / {weights['dense']:g}"
        rows.append([name, str(fit["queries"]), _number(fit["best_share"]), _signed(fit["delta"]),
                     f"{ci_label(fit['confidence'])} {_interval(fit['ci'])}", decision])
    # Each fit records its own level (rerankeval.retrieval.fusion_fit).
    return _table(["dataset", "train queries", "best BM25 share", "gain over plain RRF", "CI", "decision"], rows)


def render_systems(data: Mapping[str, Any]) -> str:
    rows = []
    for name, entry in data["systems"].items():
        delta = entry.get("delta_vs_baseline")
        rows.append([f"`{name}`", _number(entry["mean"]), _interval(entry["ci"]).replace("+", ""),
                     "" if delta is None else f"{_signed(delta)} {_interval(entry['delta_ci'])}",
                     entry.get("verdict", "")])
    level = ci_label(data["confidence"])
    return _table(["system", PRIMARY, level, f"Δ vs `{data['baseline']}` [{level}]", "verdict"], rows)


def render_answers(data: Mapping[str, Any]) -> str:
    """Each system's answer measures and their Δ against the baseline; "" on a collection without gold answers."""
    rows = []
    for name, entry in data["systems"].items():
        found = entry.get("answers", {})
        if found:
            rows.append([f"`{name}`", *(cell for measure in ANSWER_MEASURES for cell in (
                _number(found.get(measure, {}).get("mean")),
                "" if "delta_vs_baseline" not in found.get(measure, {}) else
                f"{_signed(found[measure]['delta_vs_baseline'])} {_interval(found[measure]['delta_ci'])}"))])
    if not rows:
        return ""
    level = ci_label(data["confidence"])
    header = ["system", *(cell for measure in ANSWER_MEASURES
                          for cell in (measure, f"Δ {measure} vs `{data['baseline']}` [{level}]"))]
    return _table(header, rows)


def render_sweeps(data: Mapping[str, Any]) -> str:
    """Each sweep's settings, one row each; "" where the run swept nothing."""
    sweeps = data.get("sweeps")
    if not sweeps:
        return ""
    rows = [[f"{label} (`{policy['system']}` {policy['parameter']})", str(value), _number(point["quality"]),
             "" if point["delta"] is None else f"{_signed(point['delta'])} {_interval(point['delta_ci'])}",
             str(point["model_pairs"])]
            for label, policy in sweeps["policies"].items() for value, point in policy["points"].items()]
    return _table(["sweep", "setting", sweeps["measure"],
                   f"Δ vs `{data['baseline']}` [the sweep's {ci_label(data['confidence'])}]",
                   "pairs scored by a model"], rows)


def render_tables(data: Mapping[str, Any]) -> str:
    """A hand-recorded file's own tables (``tables``: title, columns, rows), each cell as written there."""
    parts = []
    for recorded in data.get("tables", []):
        parts.append(f"{recorded['title']}\n\n" + _table(list(recorded["columns"]),
                                                        [[str(cell) for cell in row] for row in recorded["rows"]]))
    return "\n".join(parts)


def _provenance(data: Mapping[str, Any]) -> str:
    source = data["provenance"]
    if source["how"] == "generated":
        at = f" at commit {source['commit']}" if source.get("commit") else ""
        return (f"generated{at} from {', '.join(f'`{path}`' for path in source['from'])} "
                f"(`{source['command']}`)")
    if source["how"] == "measured":
        return f"measured at commit {source['commit']} with `{source['command']}`, {source['conditions']}"
    note = f" ({source['note']})" if source.get("note") else ""
    return f"recorded by hand at commit {source['commit']} from `{source['command']}`{note}"


def render_blocks(results: Mapping[str, Mapping[str, Any]],
                  benchmarks: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """The Markdown of every named block, for README.md's markers and docs/results.md."""
    blocks = {"first-stage": render_first_stage(results), "fusion-fit": render_fusion_fit(results)}
    for name, data in benchmarks.items():
        blocks[f"bench-{name}"] = render_tables(data)
    for name, data in results.items():
        if "systems" in data:
            blocks[f"systems-{name}"] = render_systems(data)
            for kind, rendered in (("answers", render_answers(data)), ("sweeps", render_sweeps(data))):
                if rendered:  # "" where the collection has none
                    blocks[f"{kind}-{name}"] = rendered
        if data.get("tables"):
            blocks[f"tables-{name}"] = render_tables(data)
    return blocks


def render_page(results: Mapping[str, Mapping[str, Any]], benchmarks: Mapping[str, Mapping[str, Any]]) -> str:
    blocks = render_blocks(results, benchmarks)
    lines = ["# Results", "",
             "Generated by `make results` (`python -m rerankeval.report.results_data`) from `results/*.yaml`; do not "
             "edit by hand. Each dataset's file says how its numbers were made.", "",
             "## First stage", "", blocks["first-stage"], "## RRF weight fit (train split)", "", blocks["fusion-fit"]]
    for name, data in results.items():
        lines += [f"## {name}", "", f"Source: {_provenance(data)}.", ""]
        for note in data.get("notes", []):
            lines += [note, ""]
        if f"systems-{name}" in blocks:
            lines += [blocks[f"systems-{name}"]]
        if f"answers-{name}" in blocks:
            flag = (f" ⚠ Not a comparison of rankings here: {data['generator_flag']}." if data.get("generator_flag")
                    else "")
            lines += [f"Answers (the fixed generator's, from each system's context).{flag}", "",
                      blocks[f"answers-{name}"]]
        if f"sweeps-{name}" in blocks:
            lines += ["Sweeps (each setting against the baseline; one family per sweep, its intervals simultaneous):",
                      "", blocks[f"sweeps-{name}"]]
        if f"tables-{name}" in blocks:
            lines += [blocks[f"tables-{name}"]]
    for name, data in benchmarks.items():
        lines += [f'<a id="bench-{name}"></a>', "", f"## Benchmark: {data['benchmark']}", "",
                  f"Source: {_provenance(data)}.", ""]
        lines += [*(line for note in data.get("notes", []) for line in (note, "")), blocks[f"bench-{name}"]]
    return "\n".join(lines).rstrip("\n") + "\n"


def rewrite_blocks(text: str, blocks: Mapping[str, str], where: str) -> str:
    """``text`` with the body of every ``<!-- results:NAME -->`` ... ``<!-- /results:NAME -->`` block rendered."""
    def body(match: re.Match) -> str:
        name = match["name"]
        if name not in blocks:
            raise ResultsDataError(f"{where}: marked block results:{name} names no rendered block (known: "
                                   f"{', '.join(sorted(blocks))}). Fix: rename the marker or add a results file.")
        return f"{match[1]}{blocks[name]}{match[4]}"
    return BLOCK.sub(body, text)


def expected_files(root: Path) -> dict[Path, str]:
    """Every file the generator owns, with the text it should hold now: results/demo.yaml from reports/, the rendered
    files from that and the other results files."""
    demo = root / "results" / "demo.yaml"
    wanted = {demo: dump(demo_results(root / "reports"))}
    results = load_results(root / "results")
    results.pop("demo", None)
    return {**wanted, **rendered_files(root, {"demo": yaml.safe_load(wanted[demo]), **results})}


def rendered_files(root: Path, results: Mapping[str, Mapping[str, Any]]) -> dict[Path, str]:
    """README.md and docs/results.md as ``results`` (the demo first) and results/benchmarks/ render them."""
    benchmarks = load_benchmarks(root / "results")
    readme = root / "README.md"
    return {readme: rewrite_blocks(readme.read_text(encoding="utf-8"), render_blocks(results, benchmarks),
                                   str(readme)),
            root / DOCS_PAGE: render_page(results, benchmarks)}


def check_committed(root: Path) -> list[str]:
    """What fails the committed files, each with what it means and the fix; [] when they hold. results/demo.yaml
    may depart from this workspace's reports/*.json within the cross-machine guarantee (a demo on another CPU), and
    README.md and docs/results.md must be what the committed results files render."""
    demo, problems = root / "results" / "demo.yaml", []
    committed = _read_yaml(demo, ("dataset", "provenance")) if demo.exists() else {}
    moved = departures(committed, demo_results(root / "reports"), cpu_dependent_systems(root / "params.yaml"))
    if moved:
        listed = "; ".join(moved[:SHOWN_DEPARTURES]) + (f"; and {len(moved) - SHOWN_DEPARTURES} more"
                                                        if len(moved) > SHOWN_DEPARTURES else "")
        problems.append(
            f"{demo}: reports/*.json (metrics, compare, verdicts) differ from it beyond the cross-machine guarantee in "
            f"docs/data.md (#guarantee): {listed}. This is a real change of results, not another CPU's "
            f"rounding. Fix: if the outputs changed on purpose, run `make results` and commit what it rewrites; if "
            f"not, find what changed them (`git diff dvc.lock reports/`).")
    for path, text in rendered_files(root, load_results(root / "results")).items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            problems.append(f"{path}: differs from the results data. Fix: run `make results`.")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write results/demo.yaml from reports/, then render docs/results.md "
                                                 "and README.md's marked blocks from results/*.yaml.")
    parser.add_argument("--root", type=Path, default=Path("."), help="the project root")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 naming each committed file that departs from the outputs beyond "
                             "the cross-machine guarantee, or from what the results files render")
    parser.add_argument("--record", metavar="REPORTS", type=Path,
                        help="first write results/<--dataset>.yaml from another run's reports/ folder (a collection "
                             "run with `dvc exp run -S dataset=beir ...`), then render")
    parser.add_argument("--dataset", help="with --record: the collection's name (results/<name>.yaml)")
    parser.add_argument("--command", help="with --record: the command that made the reports")
    parser.add_argument("--commit", help="with --record: the commit the run was made at")
    args = parser.parse_args(argv)
    if args.record and not (args.dataset and args.command and args.commit):
        parser.error("--record needs --dataset, --command and --commit")
    try:
        if args.check:
            problems = check_committed(args.root)
            for problem in problems:
                print(problem, file=sys.stderr)
            return 1 if problems else 0
        if args.record:
            print(f"wrote {record_run(args.root, args.record, args.dataset, args.command, args.commit)}")
        wanted = expected_files(args.root)
    except RerankevalError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    stale = [path for path, text in wanted.items() if not path.exists() or path.read_text(encoding="utf-8") != text]
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, wanted[path])
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
