"""Numbers as data: the README's and docs/results.md's results tables are rendered from results/*.yaml, and
results/demo.yaml is what the generator writes from the committed reports/*.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from rerankeval.report import results_data
from rerankeval.report.results_data import ResultsDataError, expected_files, rewrite_blocks

ROOT = Path(__file__).resolve().parents[1]


def _differing(root: Path) -> list[str]:
    return [str(path.relative_to(root)) for path, text in expected_files(root).items()
            if not path.exists() or path.read_text(encoding="utf-8") != text]


def test_committed_results_readme_and_docs_are_what_the_generator_writes():
    assert _differing(ROOT) == [], "run `make results` and commit what it rewrites"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the files the generator reads and writes."""
    for name in ("README.md", "results", "docs", "reports/metrics.json", "reports/compare.json",
                 "reports/verdicts.json"):
        source, target = ROOT / name, tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
    assert _differing(tmp_path) == []
    return tmp_path


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
