"""Numbers as data: the README's and docs/results.md's results tables are rendered from results/*.yaml, and
results/demo.yaml is what the generator writes from the committed reports/*.json, or, after a demo on another CPU,
within the cross-machine guarantee of docs/data.md."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from rerankeval.report import results_data
from rerankeval.report.cross_machine import INT8_TOLERANCE, cpu_dependent_systems
from rerankeval.report.results_data import PRIMARY, ResultsDataError, check_committed, expected_files, rewrite_blocks

ROOT = Path(__file__).resolve().parents[1]


def _differing(root: Path) -> list[str]:
    return [str(path.relative_to(root)) for path, text in expected_files(root).items()
            if not path.exists() or path.read_text(encoding="utf-8") != text]


def test_committed_results_readme_and_docs_hold_for_this_workspaces_outputs():
    # Exact where the committed outputs were made; within the cross-machine guarantee after a demo on another CPU.
    problems = check_committed(ROOT)
    assert problems == [], "\n".join(problems)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the files the generator reads and writes, rendered from this workspace's reports/*.json: after a
    demo on another CPU they hold other int8 numbers than the committed results/demo.yaml, and the tests start from
    files that agree exactly."""
    for name in ("README.md", "params.yaml", "results", "docs", "reports/metrics.json", "reports/compare.json",
                 "reports/verdicts.json", "reports/costs.json"):
        source, target = ROOT / name, tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
    assert results_data.main(["--root", str(tmp_path)]) == 0
    assert _differing(tmp_path) == [] and check_committed(tmp_path) == []
    return tmp_path


def _systems_of_dtype(dtype: str) -> list[str]:
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    return [name for name, config in params["systems"].items() if config.get("dtype") == dtype]


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _move_mean(project: Path, system: str, by: float) -> tuple[float, float]:
    """Move ``system``'s primary mean in the copy's compare.json by ``by``, as a demo on another CPU would; returns
    (before, after)."""
    means = json.loads((project / "reports" / "compare.json").read_text(encoding="utf-8"))["systems"][system]
    before = means[PRIMARY]["mean"]
    _edit_json(project / "reports" / "compare.json",
               lambda compare: compare["systems"][system][PRIMARY].update(mean=round(before + by, 6)))
    return before, round(before + by, 6)


def test_an_int8_number_moved_within_the_tolerance_passes_the_check(project: Path):
    _move_mean(project, _systems_of_dtype("int8")[0], INT8_TOLERANCE / 2)
    assert check_committed(project) == []
    assert results_data.main(["--root", str(project), "--check"]) == 0
    # `make results` still writes the outputs' numbers exactly.
    assert sorted(_differing(project)) == ["README.md", "docs/results.md", "results/demo.yaml"]


def test_an_fp32_number_moved_in_its_last_digits_fails_with_what_it_means(project: Path):
    system = _systems_of_dtype("float32")[0]
    before, after = _move_mean(project, system, 1e-4)
    [problem] = check_committed(project)
    assert f"systems.{system}.mean committed {before}, here {after} (fp32 and first-stage numbers" in problem
    assert "beyond the cross-machine guarantee in docs/data.md" in problem and "real change of results" in problem
    assert "run `make results` and commit" in problem


def test_an_int8_number_moved_beyond_the_tolerance_fails(project: Path):
    system = _systems_of_dtype("int8")[0]
    before, after = _move_mean(project, system, -2 * INT8_TOLERANCE)
    [problem] = check_committed(project)
    assert f"systems.{system}.mean committed {before}, here {after} ({system} runs int8 kernels: within ±" in problem


def test_a_changed_verdict_fails_even_for_an_int8_system(project: Path):
    system = _systems_of_dtype("int8")[0]
    verdicts = project / "reports" / "verdicts.json"
    before = json.loads(verdicts.read_text(encoding="utf-8"))["verdicts"][system]["decision"]
    after = "ACCEPT" if before != "ACCEPT" else "REJECT"
    _edit_json(verdicts, lambda data: data["verdicts"][system].update(decision=after))
    [problem] = check_committed(project)
    assert f"systems.{system}.verdict committed {before}, here {after} (a verdict must be the same" in problem


def test_a_system_composed_of_an_int8_model_follows_the_cpu_at_any_depth(project: Path):
    params_path = project / "params.yaml"
    params = yaml.safe_load(params_path.read_text(encoding="utf-8"))
    int8 = _systems_of_dtype("int8")[0]
    composites = {name: config for name, config in params["systems"].items() if "components" in config}
    blend = next(iter(composites))
    params["systems"][blend].update(components=[int8, "fusion"], depends_on=f"data/runs/run_{int8}.parquet")
    params_path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    dependent = cpu_dependent_systems(params_path)
    assert {int8, blend} <= dependent and not set(_systems_of_dtype("float32")) & dependent
    # Systems that route to or cascade into the blend follow it.
    assert any(config.get("default") == blend and name in dependent for name, config in params["systems"].items())


def test_the_int8_tolerance_covers_the_measured_moves_and_docs_state_it():
    evidence = yaml.safe_load((ROOT / "results" / "benchmarks" / "cross_machine.yaml").read_text(encoding="utf-8"))
    int8 = _systems_of_dtype("int8")[0]
    moves = [abs(float(row[1]) - float(row[2])) for table in evidence["tables"] for row in table["rows"]
             if str(row[0]).startswith(f"{int8} {PRIMARY}")]
    assert moves and max(moves) < INT8_TOLERANCE
    assert f"±{INT8_TOLERANCE:g}" in (ROOT / "docs" / "data.md").read_text(encoding="utf-8")


def test_a_readme_number_that_disagrees_with_the_results_files_fails(project: Path):
    readme = project / "README.md"
    text = readme.read_text(encoding="utf-8")
    assert "| scifact (300 queries) | 0.666 |" in text
    readme.write_text(text.replace("| scifact (300 queries) | 0.666 |", "| scifact (300 queries) | 0.667 |"),
                      encoding="utf-8")
    assert _differing(project) == ["README.md"]


def test_a_hand_recorded_result_changed_without_rerendering_fails(project: Path):
    path = project / "results" / "korquad-a.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["first_stage"]["bm25"] = 0.9
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    assert sorted(_differing(project)) == ["README.md", "docs/results.md"]


def test_a_changed_demo_output_that_is_not_rerendered_fails(project: Path):
    path = project / "reports" / "metrics.json"
    metrics = json.loads(path.read_text(encoding="utf-8"))
    metrics["first_stage"]["bm25"]["nDCG@10"] += 0.01
    path.write_text(json.dumps(metrics), encoding="utf-8")
    assert sorted(_differing(project)) == ["README.md", "docs/results.md", "results/demo.yaml"]
    assert results_data.main(["--root", str(project)]) == 0
    assert _differing(project) == []


def test_the_demo_file_carries_the_outputs_numbers():
    demo = yaml.safe_load((ROOT / "results" / "demo.yaml").read_text(encoding="utf-8"))
    metrics = json.loads((ROOT / "reports" / "metrics.json").read_text(encoding="utf-8"))
    verdicts = json.loads((ROOT / "reports" / "verdicts.json").read_text(encoding="utf-8"))
    assert demo["first_stage"]["hybrid"] == metrics["first_stage"]["hybrid"]["nDCG@10"]
    assert {name: entry.get("verdict") for name, entry in demo["systems"].items() if "verdict" in entry} == \
        {name: verdict["decision"] for name, verdict in verdicts["verdicts"].items()}


def test_the_demo_file_carries_every_sweep_setting_and_the_page_renders_them():
    demo = yaml.safe_load((ROOT / "results" / "demo.yaml").read_text(encoding="utf-8"))
    costs = json.loads((ROOT / "reports" / "costs.json").read_text(encoding="utf-8"))
    assert costs["sweeps"] and demo["sweeps"]["measure"] == costs["measure"]
    for point in costs["sweeps"]:
        policy = demo["sweeps"]["policies"][point["policy"]]
        assert (policy["system"], policy["parameter"]) == (point["system"], point["parameter"])
        assert policy["points"][point["value"]] == {
            "quality": round(point["quality"], 6), "delta": round(point["delta"], 6),
            "delta_ci": [round(point["low"], 6), round(point["high"], 6)], "model_pairs": point["model_pairs"]}
    page = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    demo_section = page[page.index("## demo"):].split("\n## ", 1)[0]
    first = costs["sweeps"][0]
    assert f"| {first['policy']} (`{first['system']}` {first['parameter']}) | {first['value']} |" in demo_section


def _sweep_quality(project: Path, position: int, by: float, system: str | None = None) -> str:
    """Move the copy's ``position``-th sweep setting's quality by ``by``; with ``system``, first make that the system
    its sweep sweeps and render the results from that (a sweep the committed file always had). Returns its label."""
    costs_path = project / "reports" / "costs.json"
    label = json.loads(costs_path.read_text(encoding="utf-8"))["sweeps"][position]["policy"]
    if system:
        _edit_json(costs_path, lambda costs: [point.update(system=system) for point in costs["sweeps"]
                                              if point["policy"] == label])
        assert results_data.main(["--root", str(project)]) == 0

    def move(costs):
        point = costs["sweeps"][position]
        point["quality"] = round(point["quality"] + by, 6)
    _edit_json(costs_path, move)
    return label


def test_an_fp32_sweep_setting_moved_fails_naming_the_setting(project: Path):
    costs = json.loads((project / "reports" / "costs.json").read_text(encoding="utf-8"))
    fp32 = next(k for k, point in enumerate(costs["sweeps"])
                if point["system"] not in cpu_dependent_systems(project / "params.yaml"))
    label = _sweep_quality(project, fp32, 0.001)
    [problem] = check_committed(project)
    assert f"sweeps.policies.{label}.points.{costs['sweeps'][fp32]['value']}.quality committed" in problem
    assert "exact on every CPU" in problem


def test_a_sweep_of_an_int8_system_moves_within_the_tolerance(project: Path):
    int8 = _systems_of_dtype("int8")[0]
    _sweep_quality(project, 0, INT8_TOLERANCE / 2, system=int8)
    assert check_committed(project) == []
    _sweep_quality(project, 0, INT8_TOLERANCE * 2)
    [problem] = check_committed(project)
    assert f"{int8} runs int8 kernels: within ±{INT8_TOLERANCE:g}" in problem


def test_an_unknown_marker_names_the_file_and_the_fix():
    with pytest.raises(ResultsDataError, match=r"README.md: marked block results:nope .*Fix"):
        rewrite_blocks("<!-- results:nope -->\nold\n<!-- /results:nope -->\n", {"first-stage": ""}, "README.md")


def test_check_mode_reports_a_stale_file_without_writing(project: Path, capsys):
    readme = project / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace("| 0.921 |", "| 0.920 |"), encoding="utf-8")
    assert results_data.main(["--root", str(project), "--check"]) == 1
    assert "README.md: differs from the results data. Fix: run `make results`." in capsys.readouterr().err
    assert "| 0.920 |" in readme.read_text(encoding="utf-8")


def test_a_results_file_without_provenance_is_refused(project: Path):
    (project / "results" / "broken.yaml").write_text("dataset: broken\n", encoding="utf-8")
    with pytest.raises(ResultsDataError, match=r"broken.yaml: missing key\(s\) provenance"):
        expected_files(project)


def test_another_collections_run_is_recorded_from_its_reports_and_rendered(project: Path, capsys):
    """A collection's results file is written from its run's reports (here the demo's, copied as another run's), not
    typed in: its numbers are the outputs', its provenance the command and commit, and the docs render it."""
    run = project / "other_run" / "reports"
    shutil.copytree(project / "reports", run)
    command = "dvc exp run -S dataset=beir -S dataset.path=<abs>/cranfield -S dataset.name=cranfield"
    assert results_data.main(["--root", str(project), "--record", str(run), "--dataset", "cranfield",
                              "--command", command, "--commit", "abc1234"]) == 0
    recorded = yaml.safe_load((project / "results" / "cranfield.yaml").read_text(encoding="utf-8"))
    demo = yaml.safe_load((project / "results" / "demo.yaml").read_text(encoding="utf-8"))
    assert recorded["systems"] == demo["systems"] and recorded["first_stage"] == demo["first_stage"]
    assert recorded["sweeps"] == demo["sweeps"]
    assert recorded["provenance"] == {"how": "generated", "from": [f"reports/{name}" for name in (
        "metrics.json", "compare.json", "verdicts.json", "costs.json")], "command": command, "commit": "abc1234"}
    page = (project / "docs" / "results.md").read_text(encoding="utf-8")
    section = page[page.index("## cranfield"):]
    assert "Source: generated at commit abc1234 from `reports/metrics.json`" in section
    assert "`ce_minilm_ft`" in section.split("## ", 2)[1]
    # the answer measures beside the ranking, with the generator's flag where it cannot tell rankings apart
    answered = {name: entry["answers"] for name, entry in recorded["systems"].items() if "answers" in entry}
    assert set(answered["ce_minilm_ft"]) == {"AnswerEM", "AnswerF1"}
    assert "delta_ci" in answered["ce_minilm_ft"]["AnswerF1"]
    flagged = "⚠ Not a comparison of rankings here: " in section.split("## ", 2)[1]
    assert flagged == bool(recorded.get("generator_flag"))
    assert results_data.main(["--root", str(project), "--check"]) == 0
    with pytest.raises(ResultsDataError, match="the demo's results file is written from this checkout's reports"):
        results_data.record_run(project, run, "demo", command, "abc1234")


def test_a_sweep_setting_s_delta_and_interval_follow_an_int8_baseline_and_its_quality_does_not():
    """A sweep of an fp32 system against an int8 baseline: its Δ and each bound of the Δ's interval move with the
    baseline (within the tolerance), its own quality stays exact."""
    from rerankeval.report.cross_machine import departures

    def results(quality: float, delta: float, low: float) -> dict:
        point = {"quality": quality, "delta": delta, "delta_ci": [low, 0.05], "model_pairs": 10}
        return {"baseline": "int8", "sweeps": {"measure": PRIMARY, "policies": {
            "depth": {"system": "fp32", "parameter": "depth", "points": {"5": point}}}}}

    committed, moved = results(0.5, 0.01, -0.02), INT8_TOLERANCE / 2
    assert departures(committed, results(0.5, 0.01 + moved, -0.02 + moved), {"int8"}) == []
    [found] = departures(committed, results(0.5 + moved, 0.01, -0.02), {"int8"})
    assert found.startswith("sweeps.policies.depth.points.5.quality committed 0.5") and "exact" in found
