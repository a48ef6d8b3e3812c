"""One analysis (stats.analysis): a pair the comparison decides has one interval everywhere, and a sweep's setting
that is a configuration elsewhere has that configuration's one latency."""

import json
from itertools import chain
from pathlib import Path

import pytest

from rerankeval.stats.analysis import _on_the_comparisons_intervals

REPORTS = Path("reports")


def test_a_precision_variant_compared_with_its_twin_shows_the_comparisons_interval():
    row = {"challenger": "int8", "baseline": "ce", "metric": "nDCG@10", "delta": 0.0065, "low": -0.0186,
           "high": 0.0317}
    own = {"variant": "int8", "twin": "ce", "delta": {"mean": 0.0065187, "low": -0.0177, "high": 0.0317}}
    alone = {"variant": "bf16", "twin": "ce", "delta": {"mean": 0.001, "low": -0.002, "high": 0.004}}
    variants = {"metric": "nDCG@10", "precision": [own, alone], "composites": {}}
    found = _on_the_comparisons_intervals(variants, {"comparisons": [], "comparisons_by_baseline": {"ce": [row]}})
    assert found["precision"][0]["delta"] == {"mean": 0.0065, "low": -0.0186, "high": 0.0317}
    assert found["precision"][1] == alone  # no comparison of that pair: its own interval stays
    assert found["composites"] == {} and variants["precision"][0] is own  # the records are not edited
    on_another_metric = _on_the_comparisons_intervals({**variants, "metric": "MRR@10"},
                                                      {"comparisons": [row], "comparisons_by_baseline": None})
    assert on_another_metric["precision"][0] == own


@pytest.mark.skipif(not (REPORTS / "verdicts.json").exists(), reason="needs the demo's reports (`make demo`)")
def test_the_demos_precision_delta_is_its_comparison_with_the_twin():
    compare = json.loads((REPORTS / "compare.json").read_text())
    variants = json.loads((REPORTS / "verdicts.json").read_text())["variants"]
    rows = {(row["challenger"], row["baseline"], row["metric"]): row for row in chain(
        compare["comparisons"], *(compare.get("comparisons_by_baseline") or {}).values())}
    checked = 0
    for entry in variants["precision"]:
        row = rows.get((entry["variant"], entry["twin"], variants["metric"]))
        if row is not None:
            assert entry["delta"] == {"mean": row["delta"], "low": row["low"], "high": row["high"]}
            checked += 1
    assert checked, "the demo compares its int8 variant with its float32 twin (a claim against it)"


@pytest.mark.skipif(not (REPORTS / "costs.json").exists(), reason="needs the demo's reports (`make demo`)")
def test_each_demo_setting_held_elsewhere_carries_that_points_latency_and_is_drawn_once():
    costs = json.loads((REPORTS / "costs.json").read_text())
    measured = json.loads((REPORTS / "verdicts.json").read_text())["latency_p95_ms"]  # each system's one p95
    depths = {(row["system"], str(row["depth"])): row for row in costs["depths"]}
    held = [row for row in costs["sweeps"] if row["held"]]
    assert {row["policy"] for row in held} >= {"cascade size", "routing margin", "cross-encoder depth"}
    for row in held:
        other = depths.get((row["system"], row["value"])) if row["parameter"] == "depth" else None
        p95 = other["p95_ms"] if other else measured[row["system"]]
        assert row["p95_ms"] == pytest.approx(p95, rel=1e-9), row
    labels = [point["label"] for point in costs["frontier"]]
    assert not {f"{row['system']} {row['parameter']}={row['value']}" for row in held} & set(labels)
