"""A served system must score as the in-process model behind it (compare.served_parity): the check that REJECTs it
otherwise, the compare stage's figures behind it, and the details page's table."""

import numpy as np
import pandas as pd
import pytest
import yaml

from rerankeval.pipeline.compare import served_parity
from rerankeval.pipeline.params import Params
from rerankeval.report.precision import served_parity_section
from rerankeval.stats.config import ReleaseRule
from rerankeval.stats.run_checks import ParityEvidence
from rerankeval.stats.verdict import DeltaEvidence, Evidence, decide

REPO = __import__("pathlib").Path(__file__).resolve().parents[1]
RULE = ReleaseRule(primary_metric="nDCG@10", min_delta=0.01)
GAIN = DeltaEvidence("nDCG@10", 0.08, 0.05, 0.11)


def test_a_served_system_scoring_otherwise_is_rejected_whatever_its_gain():
    held = decide(RULE, Evidence(GAIN, (), parity=ParityEvidence("ce", 300, 2e-5, 1e-4, "query q1, document d3")))
    assert held.decision == "ACCEPT"
    assert "served parity: within 0.0001 of in-process ce on 300 pairs (largest 2e-05)" in held.reasons
    failed = decide(RULE, Evidence(GAIN, (), parity=ParityEvidence("ce", 300, 0.012, 1e-4, "query q1, document d3")))
    assert failed.decision == "REJECT"
    assert failed.decided_by == ("served parity: scores depart from in-process ce by up to 0.012 (query q1, document "
                                 "d3) over 300 pairs, above the tolerance 0.0001")
    unchecked = decide(RULE, Evidence(GAIN, (), parity=ParityEvidence("ce", 0, None, 1e-4)))
    assert unchecked.decision == "REJECT" and "no document scored by both" in unchecked.decided_by
    assert decide(RULE, Evidence(GAIN, ())).decision == "ACCEPT"  # no parity declared: no check


def runs(served_offset: float) -> dict[str, pd.DataFrame]:
    """ce stores logits; served returns their sigmoid (+ an offset on q1's top document)."""
    rng = np.random.default_rng(0)
    logits = [np.sort(rng.normal(size=6))[::-1] for _ in range(5)]
    rows = [(f"q{q}", f"d{d}", d + 1, float(logit)) for q in range(5) for d, logit in enumerate(logits[q])]
    ce = pd.DataFrame(rows, columns=["query_id", "doc_id", "rank", "score"])
    served = ce.assign(score=1 / (1 + np.exp(-ce["score"])))
    served.loc[0, "score"] += served_offset
    return {"ce": ce, "served": served}


def params(**declared) -> Params:
    data = yaml.safe_load((REPO / "params.yaml").read_text())
    data["compare"]["served_parity"] = [{"system": "served", "reference": "ce", **declared}]
    return Params.parse(data)


def test_the_compare_stage_measures_parity_through_the_declared_transform(capsys):
    found = served_parity(params(tolerance=1e-4, reference_transform="sigmoid"), runs(0.0))
    assert found["served"]["parity"]["passed"] and found["served"]["parity"]["pairs"] == 30
    assert found["served"]["agreement"]["rbo"]["mean"] == pytest.approx(1.0)
    drifted = served_parity(params(tolerance=1e-4, reference_transform="sigmoid"), runs(0.01))["served"]["parity"]
    assert not drifted["passed"] and drifted["at"] == {"query_id": "q0", "doc_id": "d0"}
    # without the transform, logits against probabilities fail: the declaration must say what the endpoint returns
    assert not served_parity(params(tolerance=1e-4), runs(0.0))["served"]["parity"]["passed"]
    assert served_parity(params(), {"ce": runs(0.0)["ce"]}) == {}  # the served system is not configured here
    assert "decides nothing" in capsys.readouterr().out


def test_the_details_page_shows_the_check_and_the_agreement():
    found = served_parity(params(tolerance=1e-4, reference_transform="sigmoid"), runs(0.01))
    text = served_parity_section(found)
    assert "## Served against in-process" in text and "**failed** (REJECT)" in text and "q0 / d0" in text
    assert "0.0001 (reference through sigmoid)" in text and "Kendall's tau@10" in text
    assert served_parity_section({}) == ""
