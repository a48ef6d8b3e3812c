"""compare.json and verdicts.json have a declared shape (stats.schema): the committed demo's files and every compare()
result hold to it, the schema in docs/ is the models' rendering, an undeclared field is refused by name, and a page
refuses a file this version's compare stage would not write."""

import json
from pathlib import Path

import pytest

from rerankeval.core.errors import ContractError
from rerankeval.stats.schema import MODELS, checked_compare, checked_verdicts, schema_file, schema_text


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_committed_schemas_are_the_models_rendering(name):
    assert schema_file(name).read_text() == schema_text(name), "Fix: python -m rerankeval.stats.schema --write"


def test_the_demos_comparison_holds_to_its_schema():
    compare = json.loads(Path("reports/compare.json").read_text())
    assert checked_compare(compare, "reports/compare.json") is compare
    compare["comparisons"][0]["family"] = 3
    with pytest.raises(ContractError, match=r"comparisons\.0\.family: Input should be a valid string"):
        checked_compare(compare, "reports/compare.json")


def test_the_demos_verdicts_hold_to_the_schema_and_a_new_field_must_be_declared():
    verdicts = json.loads(Path("reports/verdicts.json").read_text())
    assert checked_verdicts(verdicts, "reports/verdicts.json") is verdicts
    first = next(iter(verdicts["verdicts"]))
    verdicts["verdicts"][first]["p_value"] = 0.01
    with pytest.raises(ContractError, match=rf"verdicts\.{first}\.p_value: Extra inputs are not permitted"):
        checked_verdicts(verdicts, "reports/verdicts.json")
    del verdicts["verdicts"][first]["p_value"]
    verdicts["verdicts"][first]["decision"] = "MAYBE"
    with pytest.raises(ContractError, match=rf"verdicts\.{first}\.decision"):
        checked_verdicts(verdicts, "reports/verdicts.json")


def test_a_page_refuses_costs_another_version_wrote_naming_the_field_and_the_fix(tmp_path):
    from rerankeval.stats.schema import read_checked

    costs = json.loads(Path("reports/costs.json").read_text())
    assert read_checked("costs", "reports/costs.json") == costs
    del costs["frontier"][0]["p95_ms"]  # an older compare stage's frontier point
    path = tmp_path / "costs.json"
    path.write_text(json.dumps(costs))
    with pytest.raises(ContractError, match=r"costs\.json: frontier\.0\.p95_ms: Field required \(not what this "
                                            r"version's compare stage writes\. Fix: re-run it: `dvc repro compare`"):
        read_checked("costs", path)
