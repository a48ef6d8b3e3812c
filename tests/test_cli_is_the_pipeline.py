"""`rerankeval compare` is the pipeline's comparison: on the demo's exported runs, its qrels and its eval split's
query ids, with the reference systems marked, it gives compare.json's primary intervals and adjusted p exactly, and
writes (``--out``) a compare.json whose primary comparisons are the stage's, byte for byte; given the pipeline's rule
(``--rule``: claims against other systems, critical slices) and its simulation settings, every verdict's interval,
family, adjusted p and simulated error rates are verdicts.json's."""

import json
from pathlib import Path

import pandas as pd
import pytest

from rerankeval.cli.export_run import export_run
from rerankeval.cli.main import main
from rerankeval.data.snapshot import Snapshot
from rerankeval.workspace.paths import SYSTEM_PLACEHOLDER, PipelinePaths
from rerankeval.workspace.runs import load_traits

PATHS = PipelinePaths.load()
pytestmark = pytest.mark.skipif(not (PATHS.runs.exists() and (PATHS.snapshot / "manifest.json").exists()),
                                reason="needs the demo's runs and snapshot (`make demo`)")


def exported_demo(folder: Path, compared: dict, *options: str) -> list[str]:
    """`rerankeval compare`'s arguments on the demo as the pipeline compared it: each system's run exported to
    ``folder``, the eval split's query ids and qrels, the baseline and the reference systems marked, then
    ``options``."""
    snapshot = Snapshot(PATHS.snapshot)
    query_ids = sorted(snapshot.queries_of(compared["split"])["query_id"])
    (folder / "ids.txt").write_text("\n".join(query_ids) + "\n")
    qrels = snapshot.table("qrels").to_pandas()
    qrels = qrels[qrels["query_id"].isin(query_ids)]
    (folder / "qrels.txt").write_text("".join(f"{row.query_id} 0 {row.doc_id} {int(row.relevance)}\n"
                                              for row in qrels.itertuples()))
    systems = sorted(compared["systems"])
    for system in systems:
        export_run(PATHS, system, folder / f"{system}.trec")
    traits = load_traits(PATHS.run(SYSTEM_PLACEHOLDER), systems)
    baseline = compared["baseline"]
    arguments = ["compare", "--qrels", str(folder / "qrels.txt"), "--baseline",
                 f"{baseline}={folder / f'{baseline}.trec'}", "--query-ids", str(folder / "ids.txt"), *options]
    for system in systems:
        if system != baseline:
            arguments += ["--run", f"{system}={folder / f'{system}.trec'}"]
            arguments += ["--reference", system] if traits[system].reference else []
    return arguments


def test_the_cli_on_the_demos_exported_runs_gives_compare_jsons_primary_intervals(tmp_path, capsys):
    compared = json.loads(Path("reports/compare.json").read_text())
    primary = json.loads(Path("reports/verdicts.json").read_text())["rule"]["primary_metric"]
    arguments = exported_demo(tmp_path, compared, "--json", "--trials", "20", "--metric", primary, "--out",
                              str(tmp_path / "analysis"))
    baseline = compared["baseline"]
    assert main(arguments) == 0
    found = json.loads(capsys.readouterr().out)
    expected = {c["challenger"]: c for c in compared["comparisons"] if c["metric"] == primary}
    assert found["queries"] == compared["queries"] and set(found["challengers"]) == set(expected)
    for system, verdict in found["challengers"].items():
        shown = verdict["metrics"][primary]
        assert [shown[key] for key in ("delta", "low", "high", "p_adjusted", "family")] == \
            [expected[system][key] for key in ("delta", "low", "high", "p_adjusted", "family")], system
    # the stage's own file, byte for byte: every field of each primary comparison (counts, percentiles, tests,
    # worst regressions), as compare.json serialises it
    written = json.loads((tmp_path / "analysis" / "compare.json").read_text())
    by_pair = {(c["challenger"], c["baseline"]): c for c in written["comparisons"] if c["metric"] == primary}
    assert set(by_pair) == {(system, baseline) for system in expected}
    for system, row in expected.items():
        assert json.dumps(by_pair[(system, baseline)], sort_keys=True) == json.dumps(row, sort_keys=True), system
    assert written["systems"][baseline][primary] == compared["systems"][baseline][primary]


def test_an_exported_run_can_carry_its_ir_metadata_which_trec_eval_skips(tmp_path):
    from rerankeval.data.trec import read_ir_metadata, read_trec_run

    system = next(name for name in sorted(json.loads(Path("reports/compare.json").read_text())["systems"]))
    export_run(PATHS, system, tmp_path / "plain.trec")
    export_run(PATHS, system, tmp_path / "described.trec", ir_metadata=True)
    lines = (tmp_path / "described.trec").read_text().splitlines()
    end = lines.index("# ir_metadata.end")
    assert lines[0] == "# ir_metadata.start" and all(line.startswith("#") for line in lines[:end + 1])
    record = read_ir_metadata(tmp_path / "described.trec")  # the record the lines above hold, as a reader reads it
    assert record["tag"] == system and record["data"]["test collection"]["snapshot"]["qrels"]
    assert record["implementation"]["source"]["commit"]
    latency = pd.read_parquet(PATHS.run_latency(system))
    timings = record["resources"]["runtime"]
    assert timings["queries"] == len(latency) and timings["wallclock s"] == round(latency["wall_s"].sum(), 3)
    assert 0 < timings["per query wall ms"]["p50"] <= timings["per query wall ms"]["p95"]
    assert read_trec_run(tmp_path / "described.trec").equals(read_trec_run(tmp_path / "plain.trec"))
    # a model's machine is read from its timing table, where the rerank stage records it (not in the run's bytes)
    from rerankeval.core.io import table_metadata

    export_run(PATHS, "ce_minilm_ft", tmp_path / "model.trec", ir_metadata=True)
    record = read_ir_metadata(tmp_path / "model.trec")
    machine = table_metadata(PATHS.run_latency("ce_minilm_ft"))["environment"]
    assert record["platform"]["hardware"]["cpu"]["model"] == machine["cpu_model"]
    assert "environment" not in table_metadata(PATHS.run("ce_minilm_ft"))["describe"]


def test_the_cli_with_the_pipelines_rule_gives_every_verdicts_interval_and_simulated_error_rates(tmp_path):
    import yaml

    compared = json.loads(Path("reports/compare.json").read_text())
    stage = json.loads(Path("reports/verdicts.json").read_text())
    params = yaml.safe_load(Path("params.yaml").read_text())
    settings = params["compare"]
    rule = {**settings["release"], "critical_slices": params["dataset"]["critical_slices"]}
    (tmp_path / "rule.yaml").write_text(yaml.safe_dump(rule))
    snapshot = Snapshot(PATHS.snapshot)
    queries = snapshot.queries_of(compared["split"])
    columns = sorted({spec["column"] for spec in rule["critical_slices"]})
    (tmp_path / "queries.jsonl").write_text("".join(
        json.dumps({"_id": row["query_id"], "text": "", "metadata": {c: row[c] for c in columns if row[c] is not None}})
        + "\n" for row in queries.to_dict("records")))
    arguments = exported_demo(tmp_path, compared, "--rule", str(tmp_path / "rule.yaml"), "--queries",
                              str(tmp_path / "queries.jsonl"), "--samples", str(settings["samples"]), "--seed",
                              str(settings["seed"]), "--confidence", str(settings["confidence"]), "--trials",
                              str(settings["simulation"]["trials"]), "--out", str(tmp_path / "analysis"))
    assert main(arguments) in (0, 1)
    written = json.loads((tmp_path / "analysis" / "verdicts.json").read_text())

    def by_pair(decided: dict) -> dict:
        return {(reference, system): verdict for reference, found in
                {decided["baseline"]: decided["verdicts"], **decided.get("verdicts_by_baseline", {})}.items()
                for system, verdict in found.items()}

    expected, found = by_pair(stage), by_pair(written)
    assert set(found) == set(expected) and ("ce_minilm_ft", "ce_minilm_ft_int8") in found  # a claim's own pair
    for pair, verdict in expected.items():
        for key in ("delta", "ci", "family", "p_adjusted", "operating_characteristics"):
            assert found[pair][key] == verdict[key], (pair, key)
    assert written["inference"] == stage["inference"]  # each family's members and simulated family-wise rates
    assert written["rule"]["slice_tests"] == stage["rule"]["slice_tests"]
