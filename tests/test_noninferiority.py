"""Release claims (superior / noninferior with a margin and a saving) and several baselines in one family."""

import numpy as np
import pandas as pd
import pytest

from rerankeval.core.errors import ConfigError
from rerankeval.stats.comparison import RunFacts, compare
from rerankeval.stats.config import CompareConfig, ReleaseClaim, ReleaseRule
from rerankeval.stats.significance import adjust_pvalues
from rerankeval.stats.simulation import decisions
from rerankeval.stats.verdict import DeltaEvidence, Evidence, SavingEvidence, decide

N_QUERIES, SD = 100, 0.2
STANDARD_ERROR = SD / np.sqrt(N_QUERIES)
RELEASE = {"primary_metric": "nDCG@10", "min_delta": 0.03}
RULE = ReleaseRule.parse(RELEASE, "compare.release")
NONINFERIOR = ReleaseClaim(claim="noninferior", margin=0.02, min_saving=0.2)
STATS = dict(min_slice_size=20, n_samples=1000, seed=17, confidence=0.95, method="percentile")


def accept_rate(true_delta: float, margin: float, trials: int = 500) -> float:
    """The non-inferiority rule's ACCEPT share over fresh query sets whose per-query deltas have sd ``SD``."""
    deltas = np.random.default_rng(11).normal(true_delta, SD, size=(N_QUERIES, trials))
    found = decisions(deltas, {}, RULE, claim=ReleaseClaim(claim="noninferior", margin=margin), **STATS)
    return float(np.mean(found == "ACCEPT"))


def test_the_noninferiority_rule_keeps_its_error_rate_and_power_at_three_standard_errors():
    margin = 3 * STANDARD_ERROR
    assert accept_rate(-margin, margin) <= 0.05
    assert accept_rate(0.0, margin) >= 0.80


def evidence(mean, low, high, saving=None):
    return Evidence(primary=DeltaEvidence("nDCG@10", mean, low, high), slices=(), saving=saving)


def saving(challenger=40.0, reference=100.0, **untrusted):
    return SavingEvidence("latency_p95", "ce", challenger, reference, **untrusted)


def test_noninferiority_accepts_rejects_and_stays_inconclusive_by_the_bound_against_minus_margin():
    accepted = decide(RULE, evidence(-0.005, -0.015, 0.004, saving()), NONINFERIOR)
    assert accepted.decision == "ACCEPT" and "above -margin -0.0200" in accepted.decided_by
    # significantly worse than 0, yet within the margin: not a reason to REJECT a non-inferiority claim
    assert decide(RULE, evidence(-0.01, -0.018, -0.002, saving()), NONINFERIOR).decision == "ACCEPT"
    rejected = decide(RULE, evidence(-0.06, -0.08, -0.03, saving(challenger=120.0)), NONINFERIOR)
    assert rejected.decision == "REJECT" and "inferior" in rejected.decided_by
    assert any(reason.startswith("saving on p95 latency") for reason in rejected.reasons)  # every reason listed
    unsure = decide(RULE, evidence(-0.01, -0.03, 0.01, saving()), NONINFERIOR)
    assert unsure.decision == "INCONCLUSIVE" and "not above -margin" in unsure.decided_by


def test_the_saving_rejects_on_trusted_figures_and_blocks_only_accept_when_untrusted_or_missing():
    good = (-0.005, -0.015, 0.004)
    missed = decide(RULE, evidence(*good, saving(challenger=90.0)), NONINFERIOR)
    assert missed.decision == "REJECT" and "exceeds ce 100.0 ms x (1 - 0.2) = 80.0 ms" in missed.decided_by
    loaded = decide(RULE, evidence(*good, saving(challenger=90.0, challenger_untrusted="load 3.1")), NONINFERIOR)
    assert loaded.decision == "INCONCLUSIVE" and "not trusted: challenger load 3.1" in loaded.decided_by
    loaded_reference = decide(RULE, evidence(*good, saving(reference_untrusted="load 2.0")), NONINFERIOR)
    assert loaded_reference.decision == "INCONCLUSIVE" and "ce load 2.0" in loaded_reference.decided_by
    # load only adds time: a loaded challenger that still saves enough passes
    assert decide(RULE, evidence(*good, saving(challenger_untrusted="load 3.1")), NONINFERIOR).decision == "ACCEPT"
    unmeasured = decide(RULE, evidence(*good, saving(challenger=None)), NONINFERIOR)
    assert unmeasured.decision == "INCONCLUSIVE" and "cannot be checked" in unmeasured.decided_by


QUERIES = [f"q{i:03d}" for i in range(60)]


def per_query(**deltas):
    """``fusion`` and each system of ``deltas`` as fusion + its per-query delta."""
    base = np.linspace(0.2, 0.6, len(QUERIES))
    return pd.DataFrame([
        {"system": system, "query_id": query_id, "nDCG@10": value, "RR@10": value / 2, "Judged@10": 1.0}
        for system, values in [("fusion", base)] + [(name, base + delta) for name, delta in deltas.items()]
        for query_id, value in zip(QUERIES, values)])


def settings(claims=None, **compare_block):
    return CompareConfig.parse({"baselines": ["fusion"], "metrics": ["nDCG@10", "RR@10"], "samples": 1000,
                                "permutations": 1000, "simulation": {"trials": 40, "samples": 200},
                                "release": {**RELEASE, "claims": claims or {}}, **compare_block}, "compare")


SLICES = pd.DataFrame(index=QUERIES)
RNG = np.random.default_rng(4)
PROD, NEW = RNG.normal(0.05, 0.03, 60), RNG.normal(0.02, 0.05, 60)


def test_each_baseline_has_its_release_family_and_the_rest_is_descriptive():
    config = settings(baselines=["fusion", "prod"])
    result, verdicts = compare(per_query(prod=PROD, new=NEW, other=NEW / 2), SLICES, config, config.release)
    pairs = [(c["challenger"], c["baseline"]) for c in result["comparisons"] + result["comparisons_by_baseline"]["prod"]
             if c["metric"] == "nDCG@10"]
    assert pairs == [("new", "fusion"), ("other", "fusion"), ("prod", "fusion"), ("new", "prod"), ("other", "prod")]
    every = result["comparisons"] + result["comparisons_by_baseline"]["prod"]
    assert ([c["family"] for c in every if c["metric"] == "nDCG@10"]
            == ["release vs fusion"] * 3 + ["release vs prod"] * 2)
    secondary = [c for c in every if c["metric"] != "nDCG@10"]
    raw = np.array([c["p_randomisation"] for c in secondary])
    assert {c["family"] for c in secondary} == {"descriptive"}
    assert [c["p_adjusted"] for c in secondary] == pytest.approx(adjust_pvalues(raw, "holm"), abs=1e-6)
    families = result["method"]["release_family"]["families"]
    assert {name: found["members"] for name, found in families.items()} == {
        "release vs fusion": ["new", "other", "prod"], "release vs prod": ["new", "other"]}
    for c in every:  # significance in the verdict's interval and in the printed adjusted p are one statement
        if c["family"] != "descriptive":
            assert (c["low"] > 0 or c["high"] < 0) == (c["p_adjusted"] < 0.05)
    assert set(verdicts["verdicts"]) == {"new", "other", "prod"} and set(verdicts["verdicts_by_baseline"]) == {"prod"}
    assert verdicts["verdicts_by_baseline"]["prod"]["new"]["delta"] == pytest.approx(np.mean(NEW - PROD), abs=1e-6)


def test_each_verdicts_ci_is_the_comparisons_ci_of_its_pair():
    config = settings(claims={"new": {"claim": "noninferior", "margin": 0.02, "against": "prod"}})
    result, verdicts = compare(per_query(prod=PROD, new=NEW), SLICES, config, config.release)
    by_pair = {(c["challenger"], c["baseline"]): c for c in result["comparisons"]
               + result["comparisons_by_baseline"]["prod"] if c["metric"] == "nDCG@10"}
    decided = [(s, "fusion", v) for s, v in verdicts["verdicts"].items()] + [
        (s, "prod", v) for s, v in verdicts["verdicts_by_baseline"]["prod"].items()]
    assert {(s, b) for s, b, _ in decided} == {("new", "fusion"), ("prod", "fusion"), ("new", "prod")}
    for system, baseline, verdict in decided:
        found = by_pair[(system, baseline)]
        assert verdict["ci"] == [found["low"], found["high"]] and verdict["delta"] == found["delta"]
    claimed = verdicts["verdicts_by_baseline"]["prod"]["new"]
    assert claimed["claim"]["against"] == "prod" and "claim" not in verdicts["verdicts"]["new"]  # superior vs fusion
    # prod is no baseline: the claim's pair is compared on the metric it decides, in a release family of its own
    assert [c["metric"] for c in result["comparisons_by_baseline"]["prod"]] == ["nDCG@10"]
    families = result["method"]["release_family"]["families"]
    assert families["release vs prod"]["members"] == ["new"]
    assert families["release vs fusion"]["members"] == ["new", "prod"]
    assert claimed["family"] == "release vs prod" and claimed["p_adjusted"] == by_pair[("new", "prod")]["p_adjusted"]
    points = claimed["operating_characteristics"]
    assert (points["at_minus_margin"]["effect"], points["at_zero"]["effect"]) == (-0.02, 0.0)


def test_the_saving_is_measured_against_the_claimed_system():
    config = settings(claims={"new": {"claim": "noninferior", "margin": 0.05, "min_saving": 0.2, "saving_on": "cost",
                                      "against": "prod"}})
    seconds = np.linspace(0.4, 0.6, len(QUERIES))  # the same per-query spread for every system
    facts = RunFacts(cost_seconds={name: pd.Series(seconds * scale, index=QUERIES)
                                   for name, scale in (("fusion", 0.002), ("prod", 1.0), ("new", 0.6))})
    _, verdicts = compare(per_query(prod=PROD, new=PROD - 0.005), SLICES, config, config.release, facts)
    claimed = verdicts["verdicts_by_baseline"]["prod"]["new"]
    assert claimed["saving"] == {"measure": "cost", "challenger": 0.3, "against": 0.5, "estimate": 0.4,
                                 "ci": [0.4, 0.4], "confidence": 0.95, "queries": 60}
    assert claimed["decision"] == "ACCEPT", claimed["reasons"]


def test_a_p95_saving_claim_gets_its_ci_from_the_measured_times_by_query(tmp_path):
    from rerankeval.core.io import write_json
    from rerankeval.serving.measure import verdict_latencies, verdict_times_by_query

    ids = QUERIES[:30]
    noise = np.random.default_rng(5).uniform(0.8, 1.2, 30)  # not a constant ratio: the CI is an interval, not a point
    for name, ms in (("prod", np.linspace(300, 500, 30)), ("new", np.linspace(120, 200, 30) * noise)):
        write_json(tmp_path / f"{name}.json", {"p95_ms": float(np.percentile(ms, 95)), "verdict_round": 0,
                                                "queries": 30, "repeats": 1, "p95_ms_by_round": [1.0],
                                                "other_cpus_by_round": [0.0], "cpus": 2, "cpu_p95_ms": 1.0,
                                                "load_average_1m": {"before": 0, "after": 0}, "untrusted": None,
                                                "wall_ms_by_query": dict(zip(ids, ms.tolist()))})
    pattern = str(tmp_path / "{system}.json")
    p95, _, untrusted = verdict_latencies(pattern, None, ["prod", "new"])
    facts = RunFacts(latency_p95_ms=p95, latency_untrusted=untrusted,
                     latency_by_query=verdict_times_by_query(pattern, None, ["prod", "new"]))
    config = settings(claims={"new": {"claim": "noninferior", "margin": 0.05, "min_saving": 0.2,
                                      "saving_on": "latency_p95", "against": "prod"}})
    _, verdicts = compare(per_query(prod=PROD, new=PROD - 0.005), SLICES, config, config.release, facts)
    claimed = verdicts["verdicts_by_baseline"]["prod"]["new"]["saving"]
    assert claimed["measure"] == "latency_p95" and claimed["queries"] == 30
    assert claimed["estimate"] == pytest.approx(1 - p95["new"] / p95["prod"], abs=1e-6)
    assert 0.2 < claimed["ci"][0] < claimed["estimate"] < claimed["ci"][1]
    # one side measured without per-query times (an older measurement): decided by the two figures, no CI
    del facts.latency_by_query["new"]
    _, verdicts = compare(per_query(prod=PROD, new=PROD - 0.005), SLICES, config, config.release, facts)
    figures = verdicts["verdicts_by_baseline"]["prod"]["new"]
    assert "ci" not in figures["saving"] and figures["saving"]["challenger"] == pytest.approx(p95["new"], abs=1e-6)
    assert figures["decision"] == "ACCEPT"  # within prod x (1 - 0.2) by the two figures


def test_a_claim_for_a_system_this_run_lacks_decides_nothing_and_is_listed():
    config = settings(claims={"nosuch": {"claim": "noninferior", "margin": 0.02},
                              "new": {"claim": "noninferior", "margin": 0.02, "against": "gone"}})
    systems = ["fusion", "new"]
    assert config.inactive_claims(systems) == ["new", "nosuch"]
    active = config.for_systems(systems)
    assert active.release.claims == {}
    _, verdicts = compare(per_query(new=NEW), SLICES, active, active.release)
    _, unclaimed = compare(per_query(new=NEW), SLICES, settings(claims={}), settings(claims={}).release)
    assert verdicts["verdicts"]["new"] == unclaimed["verdicts"]["new"]  # the superiority rule, as without claims


def test_a_claim_for_the_baseline_is_refused_by_name():
    config = settings(claims={"fusion": {"claim": "noninferior", "margin": 0.02}})
    with pytest.raises(ValueError, match="'fusion' is the baseline"):
        compare(per_query(new=NEW), SLICES, config, config.release)


@pytest.mark.parametrize("block, named", [
    ({"release": {**RELEASE, "claims": {"new": {"claim": "noninferior"}}}}, "needs a margin"),
    ({"release": {**RELEASE, "claims": {"new": {"margin": 0.02}}}}, "belong to claim noninferior"),
    ({"release": {**RELEASE, "claims": {"new": {"claim": "noninferior", "margin": 0.02, "saving": 0.2}}}}, "saving"),
    ({"baseline": "fusion", "release": RELEASE}, "not both"),
])
def test_a_malformed_claim_or_baseline_list_is_refused(block, named):
    with pytest.raises(ConfigError, match=named):
        CompareConfig.parse({"baselines": ["fusion"], "metrics": ["nDCG@10"], **block}, "compare")


def test_one_baseline_by_its_old_key_is_the_one_element_list():
    config = CompareConfig.parse({"baseline": "fusion", "metrics": ["nDCG@10"], "release": RELEASE}, "compare")
    assert config.baselines == ["fusion"] and config.baseline == "fusion"


def test_the_cli_takes_a_noninferiority_claim_and_several_baselines(tmp_path, capsys):
    import json

    from rerankeval.cli.main import main
    from tests.test_cli_compare import write_run

    n = 40
    (tmp_path / "qrels.txt").write_text("".join(f"Q{q:02d} 0 rel 1\nQ{q:02d} 0 d0 0\n" for q in range(n)))
    positions = np.random.default_rng(5).integers(1, 4, n)
    write_run(tmp_path / "fusion.trec", positions + 2, "fusion")
    write_run(tmp_path / "prod.trec", positions, "prod")
    write_run(tmp_path / "cheap.trec", positions, "cheap")
    args = ["compare", "--qrels", tmp_path / "qrels.txt", "--baseline", tmp_path / "fusion.trec", "--baseline",
            tmp_path / "prod.trec", "--run", tmp_path / "cheap.trec", "--claim", "noninferior", "--margin", "0.02",
            "--json", "--samples", "300", "--trials", "20"]
    assert main([str(arg) for arg in args]) == 0
    result = json.loads(capsys.readouterr().out)
    cheap = result["challengers"]["cheap"]
    assert cheap["claim"]["margin"] == 0.02 and cheap["claim"]["against"] == "fusion"
    assert set(cheap["operating_characteristics"]) == {"at_minus_margin", "at_zero"}
    assert result["by_baseline"]["prod"]["cheap"]["decision"] == "INCONCLUSIVE"  # identical: superior needs a gain
    assert "claim" not in result["by_baseline"]["prod"]["cheap"]
    assert main([str(arg) for arg in args if arg not in ("--margin", "0.02")]) != 0
    assert "--claim noninferior needs --margin" in capsys.readouterr().err


def test_the_report_shows_one_decision_per_baseline_and_the_claims_error_rates():
    from rerankeval.report.markdown import verdict_section
    from rerankeval.stats.analysis import analyze

    config = settings(baselines=["fusion", "prod"], claims={"new": {"claim": "noninferior", "margin": 0.02,
                                                                   "against": "prod"}})
    verdicts = analyze(per_query(prod=PROD, new=NEW), SLICES, config, config.release).verdicts
    text = verdict_section(verdicts)
    assert "## Release verdict vs `fusion`, `prod`" in text
    row = next(line for line in text.splitlines() if line.startswith("| `new` | `prod` |"))
    assert "noninferior (margin 0.02)" in row and verdicts.verdicts_by_baseline["prod"]["new"].decision in row
    assert any(line.startswith("| `new` | `fusion` | superior |") for line in text.splitlines())
    at_margin = verdicts.verdicts_by_baseline["prod"]["new"].operating_characteristics["at_minus_margin"]
    assert f"| `new` | `prod` | -0.0200 | {at_margin.accept:.1%} |" in text
    assert "one-sided test at 2.5%" in text


def test_the_cli_prints_only_the_rule_its_challengers_claim(tmp_path, capsys):
    """Every challenger claims non-inferiority: no superiority rule, no empty superiority simulation table."""
    from rerankeval.cli.main import main
    from tests.test_cli_compare import write_run

    n = 40
    (tmp_path / "qrels.txt").write_text("".join(f"Q{q:02d} 0 rel 1\nQ{q:02d} 0 d0 0\n" for q in range(n)))
    positions = np.random.default_rng(5).integers(1, 4, n)
    write_run(tmp_path / "prod.trec", positions, "prod")
    write_run(tmp_path / "cheap.trec", positions + np.random.default_rng(6).integers(0, 2, n), "cheap")
    args = ["compare", "--qrels", tmp_path / "qrels.txt", "--baseline", tmp_path / "prod.trec", "--run",
            tmp_path / "cheap.trec", "--claim", "noninferior", "--margin", "0.02", "--samples", "300", "--trials",
            "20"]
    assert main([str(arg) for arg in args]) == 0
    text = capsys.readouterr().out
    assert "A `noninferior` claim ACCEPTs when" in text and "Non-inferiority claims at a true Δ of -margin" in text
    assert "ACCEPT needs nDCG@10 to gain" not in text and "REJECT at effect 0" not in text


def test_a_p95_saving_is_decided_by_its_paired_ci_over_the_timed_queries():
    from rerankeval.stats.saving import p95_saving

    rng = np.random.default_rng(3)
    ids = [f"q{i:02d}" for i in range(30)]
    reference = pd.Series(rng.lognormal(np.log(400), 0.3, 30), index=ids)
    half = reference * 0.5 * rng.uniform(0.9, 1.1, 30)
    found = p95_saving(half, reference, n_samples=2000, seed=17, confidence=0.95)
    assert found.queries == 30 and found.low < found.estimate < found.high
    assert found.estimate == pytest.approx(1 - np.percentile(half, 95) / np.percentile(reference, 95))
    assert found.reference_mean == pytest.approx(np.percentile(reference, 95))  # the measurement's own p95
    # pairing: each query's time is mostly its own (shared by both systems), so the interval is far narrower than
    # when the two sides' queries are shuffled apart
    unpaired = p95_saving(pd.Series(half.to_numpy()[rng.permutation(30)], index=ids), reference, n_samples=2000,
                          seed=17, confidence=0.95)
    assert found.high - found.low < unpaired.high - unpaired.low
    assert p95_saving(half.iloc[:1], reference, n_samples=100, seed=1, confidence=0.95) is None

    good = (-0.005, -0.015, 0.004)

    def decided(interval, **untrusted):
        return decide(RULE, evidence(*good, SavingEvidence("latency_p95", "ce", interval.challenger_mean,
                                                           interval.reference_mean, interval=interval, **untrusted)),
                      NONINFERIOR)

    established = decided(found)
    assert established.decision == "ACCEPT"
    assert any("saving on p95 latency vs ce: " in check.message and "established at 20%" in check.message
               for check in established.checks)
    short = p95_saving(reference * 0.95, reference, n_samples=2000, seed=17, confidence=0.95)
    assert short.high < 0.2 and decided(short).decision == "REJECT"
    assert decided(short, challenger_untrusted="load 3.1").decision == "INCONCLUSIVE"  # loaded: only blocks ACCEPT
    noisy = p95_saving(reference * rng.uniform(0.5, 1.1, 30), reference, n_samples=2000, seed=17, confidence=0.95)
    assert noisy.low < 0.2 <= noisy.high
    assert decided(noisy).decision == "INCONCLUSIVE" and "not established" in decided(noisy).decided_by
