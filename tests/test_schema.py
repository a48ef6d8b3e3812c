"""compare.json, verdicts.json and costs.json are one analysis's dumps (stats.analysis) with a declared shape
(stats.schema): the committed demo's files read back as the models and dump to the same JSON, the schema in docs/ is
the models' rendering, an undeclared or mistyped field is refused by name before anything is written, and a page
refuses a file this version's compare stage would not write."""

import json
import shutil
from pathlib import Path

import pytest

from rerankeval.core.errors import ContractError
from rerankeval.stats.analysis import _typed, read_analysis
from rerankeval.stats.schema import MODELS, SCHEMAS, schema_file, schema_text

FILES = {name: Path(f"reports/{name}.json") for name in MODELS}


def _demo() -> dict:
    return {name: json.loads(path.read_text()) for name, path in FILES.items()}


def _read(folder: Path):
    return read_analysis(folder / "compare.json", folder / "verdicts.json", folder / "costs.json")


def _written(folder: Path, files: dict) -> Path:
    folder.mkdir(exist_ok=True)
    for name, data in files.items():
        (folder / f"{name}.json").write_text(json.dumps(data))
    return folder


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_committed_schemas_are_the_models_rendering(name):
    assert schema_file(name).read_text() == schema_text(name), "Fix: python -m rerankeval.stats.schema --write"


def test_the_demos_files_are_the_dumps_of_the_analysis_they_read_back_as(tmp_path):
    for name, path in FILES.items():
        shutil.copy(path, tmp_path / path.name)
    analysis = _read(tmp_path)
    assert type(analysis.compare).__name__ == "Compare" and type(analysis.verdicts).__name__ == "Verdicts"
    for name, data in analysis.files().items():
        assert json.dumps(data, sort_keys=True) == json.dumps(_demo()[name], sort_keys=True), name


def test_the_analysis_refuses_a_mistyped_or_undeclared_field_before_it_is_written():
    files = _demo()
    assert _typed(files["compare"], files["verdicts"], files["costs"], stage=True).costs is not None
    files["compare"]["comparisons"][0]["family"] = 3
    with pytest.raises(ContractError, match=r"compare\.json: comparisons\.0\.family: Input should be a valid string"):
        _typed(files["compare"], files["verdicts"], files["costs"], stage=True)
    files = _demo()
    first = next(iter(files["verdicts"]["verdicts"]))
    files["verdicts"]["verdicts"][first]["p_value"] = 0.01
    with pytest.raises(ContractError, match=rf"verdicts\.json: verdicts\.{first}\.p_value: Extra inputs are not "
                                            r"permitted \(stats\.schema\.Verdicts declares"):
        _typed(files["compare"], files["verdicts"], files["costs"], stage=True)


def test_the_clis_analysis_holds_the_cores_without_the_stages_records():
    files = _demo()
    with pytest.raises(ContractError, match=r"compare\.json: \w+: Extra inputs are not permitted"):
        _typed(files["compare"], files["verdicts"], None, stage=False)


@pytest.mark.parametrize("name, edit, message", [
    ("verdicts", lambda data: data["verdicts"][next(iter(data["verdicts"]))].update(decision="MAYBE"),
     r"verdicts\.json: verdicts\.\w+\.decision"),
    ("costs", lambda data: data["frontier"][0].pop("p95_ms"),  # an older compare stage's frontier point
     r"costs\.json: frontier\.0\.p95_ms: Field required \(not what this version's compare stage writes\. Fix: re-run "
     r"it: `dvc repro compare`"),
])
def test_a_page_refuses_a_file_another_version_wrote_naming_the_field_and_the_fix(tmp_path, name, edit, message):
    files = _demo()
    edit(files[name])
    with pytest.raises(ContractError, match=message):
        _read(_written(tmp_path, files))
