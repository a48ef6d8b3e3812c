"""A non-inferiority claim's cost saving: a paired estimate with a bootstrap CI, decided by where the CI lies."""

import numpy as np
import pandas as pd
import pytest

from rerankeval.stats.comparison import RunFacts, compare
from rerankeval.stats.config import CompareConfig, ReleaseClaim, ReleaseRule
from rerankeval.stats.saving import cost_saving
from rerankeval.stats.verdict import DeltaEvidence, Evidence, SavingEvidence, decide

N_QUERIES = 124
QUERIES = [f"q{i:03d}" for i in range(N_QUERIES)]
BOOT = dict(n_samples=2000, seed=17, confidence=0.95)
RULE = ReleaseRule.parse({"primary_metric": "nDCG@10", "min_delta": 0.03}, "compare.release")
CLAIM = ReleaseClaim(claim="noninferior", margin=0.02, min_saving=0.2, saving_on="cost")
# How long a query takes depends on the query (its candidates): a wide spread both systems share.
REFERENCE = pd.Series(np.random.default_rng(3).lognormal(np.log(0.5), 0.3, N_QUERIES), index=QUERIES)


def routed(skipped: int) -> pd.Series:
    """A challenger that costs what the reference does on every query but ``skipped`` evenly spread ones, which
    cost almost nothing (the shape of a routed policy)."""
    seconds = REFERENCE.copy()
    seconds.iloc[np.linspace(0, N_QUERIES - 1, skipped).astype(int)] = 0.001
    return seconds


def decided(challenger: pd.Series):
    interval = cost_saving(challenger, REFERENCE, **BOOT)
    saving = SavingEvidence("cost", "ce", interval.challenger_mean, interval.reference_mean, interval=interval)
    evidence = Evidence(primary=DeltaEvidence("nDCG@10", -0.005, -0.015, 0.004), slices=(), saving=saving)
    return interval, decide(RULE, evidence, CLAIM)


def test_a_saving_whose_ci_includes_min_saving_blocks_accept_but_does_not_reject():
    interval, verdict = decided(routed(23))  # 23 of 124 skipped: a saving near 18.5%
    assert interval.low < 0.2 <= interval.high
    assert verdict.decision == "INCONCLUSIVE"
    assert verdict.decided_by.startswith(f"saving on cost (cold s per query) vs ce: {interval.estimate:.1%}, 95% CI "
                                         f"[{interval.low:.1%}, {interval.high:.1%}] over 124 paired queries")
    assert verdict.decided_by.endswith("not established at 20% (CI includes it); blocks ACCEPT")


def test_a_saving_established_above_min_saving_passes_and_one_established_below_rejects():
    interval, verdict = decided(routed(62))
    assert interval.low >= 0.2 and verdict.decision == "ACCEPT", verdict.reasons
    assert any(r.endswith("established at 20% (lower bound reaches it)") for r in verdict.reasons)
    # the ACCEPT states the saving it rests on, with its CI, not only the quality bound
    assert (f"; saving on cost (cold s per query) vs ce: {interval.estimate:.1%}, 95% CI [{interval.low:.1%}, "
            f"{interval.high:.1%}]") in verdict.decided_by and verdict.decided_by.endswith("every other check passed")
    interval, verdict = decided(routed(6))
    assert interval.high < 0.2 and verdict.decision == "REJECT"
    assert verdict.decided_by.endswith("short of 20% (upper bound below it)")


def test_the_saving_is_the_ratio_of_the_summed_seconds():
    challenger = routed(23)
    interval = cost_saving(challenger, REFERENCE, **BOOT)
    assert interval.estimate == pytest.approx(1 - challenger.sum() / REFERENCE.sum())
    assert interval.low < interval.estimate < interval.high and interval.queries == N_QUERIES


def test_the_saving_is_paired_by_query_so_the_spread_both_systems_share_does_not_widen_it():
    noise = np.random.default_rng(8).normal(1.0, 0.02, N_QUERIES)
    challenger = REFERENCE * 0.75 * noise
    paired = cost_saving(challenger, REFERENCE, **BOOT)
    # The same seconds with the pairing broken: the same estimate (the same sums), the query spread left in.
    shuffled = pd.Series(np.random.default_rng(9).permutation(challenger.to_numpy()), index=QUERIES)
    unpaired = cost_saving(shuffled, REFERENCE, **BOOT)
    assert paired.estimate == pytest.approx(unpaired.estimate) == pytest.approx(0.25, abs=0.01)
    assert paired.high - paired.low < 0.2 * (unpaired.high - unpaired.low)
    # Paired by query id, not by position: the order the series come in changes nothing.
    assert cost_saving(challenger.iloc[::-1], REFERENCE, **BOOT) == paired


def test_only_queries_both_systems_timed_are_paired_and_too_few_give_no_interval():
    interval = cost_saving(routed(23).iloc[4:], REFERENCE.iloc[:-4], **BOOT)
    assert interval.queries == N_QUERIES - 8
    assert cost_saving(REFERENCE.iloc[:1], REFERENCE, **BOOT) is None
    with pytest.raises(ValueError, match="finite and >= 0"):
        cost_saving(-REFERENCE, REFERENCE, **BOOT)


def test_the_compare_stage_records_the_saving_and_its_ci_deterministically():
    base = np.linspace(0.2, 0.6, N_QUERIES)
    per_query = pd.DataFrame([{"system": system, "query_id": query, "nDCG@10": value, "Judged@10": 1.0}
                              for system, values in (("fusion", base), ("routed", base - 0.002))
                              for query, value in zip(QUERIES, values)])
    config = CompareConfig.parse({
        "baselines": ["fusion"], "metrics": ["nDCG@10"], "samples": 1000, "permutations": 200,
        "simulation": {"trials": 20, "samples": 100},
        "release": {"primary_metric": "nDCG@10", "min_delta": 0.03, "claims": {"routed": {
            "claim": "noninferior", "margin": 0.02, "min_saving": 0.2, "saving_on": "cost"}}}}, "compare")
    facts = RunFacts(cost_seconds={"fusion": REFERENCE, "routed": routed(23)})
    first = compare(per_query, pd.DataFrame(index=QUERIES), config, config.release, facts)[1]["verdicts"]["routed"]
    again = compare(per_query, pd.DataFrame(index=QUERIES), config, config.release, facts)[1]["verdicts"]["routed"]
    assert first == again
    saving = first["saving"]
    low, high = saving["ci"]
    assert saving["measure"] == "cost" and saving["queries"] == N_QUERIES and saving["confidence"] == 0.95
    assert low < 0.2 <= high and first["decision"] == "INCONCLUSIVE"
    assert f"{saving['estimate']:.1%}, 95% CI [{low:.1%}, {high:.1%}]" in first["decided_by"]
