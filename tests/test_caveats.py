"""The generator sanity check and the caveats it and the language check put on a verdict (rerankeval.stats.caveats)."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from rerankeval.stats.caveats import answer_level, generator_caveat, generator_sanity, language_caveats
from rerankeval.stats.config import CompareConfig, ReleaseRule
from rerankeval.stats.verdict import Caveat, Decision, DeltaEvidence, Evidence, SliceEvidence, decide

BOOT = dict(n_samples=2000, seed=17, confidence=0.95)


def per_query_table(oracle_gain: float, baseline_gain: float, n: int = 120, seed: int = 3) -> pd.DataFrame:
    """AnswerF1 per query of random, oracle and fusion: the oracle and fusion gain ``*_gain`` over random on average;
    a tenth of the queries has no gold answer (NaN, outside the measure's domain)."""
    rng = np.random.default_rng(seed)
    random = rng.uniform(0, 0.4, n)
    values = {"random": random, "oracle": np.clip(random + oracle_gain + rng.normal(0, 0.15, n), 0, 1),
              "fusion": np.clip(random + baseline_gain + rng.normal(0, 0.15, n), 0, 1)}
    no_gold = np.arange(n) % 10 == 0
    rows = [pd.DataFrame({"system": system, "query_id": [f"q{i:03d}" for i in range(n)],
                          "AnswerF1": np.where(no_gold, np.nan, column)}) for system, column in values.items()]
    return pd.concat(rows, ignore_index=True)


def test_flag_raised_when_the_oracle_answers_no_better_than_random():
    found = generator_sanity(per_query_table(0.0, 0.0), "AnswerF1", "oracle", "random", "fusion", **BOOT)
    assert found["ceiling_vs_floor"]["low"] <= 0 <= found["ceiling_vs_floor"]["high"]
    assert found["flag"].startswith("the generator cannot tell rankings apart on this collection: on AnswerF1")
    assert "oracle - random" in found["flag"] and found["queries"] == 108


def test_no_flag_when_oracle_and_baseline_answer_far_better_than_random():
    found = generator_sanity(per_query_table(0.4, 0.25), "AnswerF1", "oracle", "random", "fusion", **BOOT)
    assert found["flag"] is None and found["skipped"] is None
    assert found["ceiling_vs_floor"]["low"] > 0.3 and found["baseline_vs_floor"]["low"] > 0.15
    assert found["means"]["oracle"] > found["means"]["fusion"] > found["means"]["random"]


def test_flag_names_only_the_difference_that_reaches_zero():
    found = generator_sanity(per_query_table(0.4, 0.0), "AnswerF1", "oracle", "random", "fusion", **BOOT)
    assert "fusion - random" in found["flag"] and "oracle - random" not in found["flag"]


def test_skipped_without_a_floor_or_the_measure():
    table = per_query_table(0.4, 0.25)
    assert generator_sanity(table, "AnswerF1", "oracle", None, "fusion", **BOOT)["skipped"] == \
        "no floor (random) system is configured"
    assert "AnswerEM was not evaluated" in generator_sanity(table, "AnswerEM", "oracle", "random", "fusion",
                                                            **BOOT)["skipped"]


def test_generator_setting_is_typed_with_answer_f1_by_default():
    base = {"baseline": "fusion", "metrics": ["nDCG@10"], "release": {"primary_metric": "nDCG@10", "min_delta": 0}}
    assert CompareConfig.parse(base, "compare").generator_check.metric == "AnswerF1"
    with pytest.raises(Exception, match="generator_check"):
        CompareConfig.parse({**base, "generator_check": {"measure": "AnswerF1"}}, "compare")


def test_answer_level_measures():
    assert answer_level("AnswerF1") and answer_level("CitationPrecision") and answer_level("AbstentionRecall")
    assert not answer_level("nDCG@10") and not answer_level("EvidenceCoverage")


def test_generator_caveat_only_when_the_primary_metric_reads_the_answer():
    flagged = {"flag": "the generator cannot tell rankings apart on this collection: ..."}
    assert generator_caveat(flagged, "nDCG@10") is None
    assert generator_caveat({"flag": None}, "AnswerF1") is None
    caveat = generator_caveat(flagged, "AnswerF1")
    assert caveat.column is None and caveat.message.endswith("no verdict rests on AnswerF1")


RULE = ReleaseRule.parse({"primary_metric": "AnswerF1", "min_delta": 0.03,
                          "critical_slices": [{"column": "language", "budget": 0.02}]}, "compare.release")
WORSE = Evidence(primary=DeltaEvidence("AnswerF1", mean=-0.08, ci_low=-0.12, ci_high=-0.04),
                 slices=(SliceEvidence("language", "en", 60, 0.0, -0.03, 0.03),
                         SliceEvidence("language", "ko", 60, -0.16, -0.22, -0.10)))


def test_a_caveat_on_every_query_turns_a_quality_reject_into_inconclusive():
    assert decide(RULE, WORSE).decision == Decision.REJECT
    verdict = decide(RULE, replace(WORSE, caveats=(Caveat("the generator cannot tell rankings apart"),)))
    assert verdict.decision == Decision.INCONCLUSIVE
    assert verdict.decided_by == "the generator cannot tell rankings apart"
    assert any("significantly worse" in reason for reason in verdict.reasons)  # still listed, not decisive
    assert not any(check.hard for check in verdict.checks if check.name == "primary_not_worse"
                   or check.name.startswith("slice "))


def test_a_slice_caveat_covers_that_slice_only():
    better = replace(WORSE, primary=DeltaEvidence("AnswerF1", mean=0.05, ci_low=0.02, ci_high=0.08))
    assert decide(RULE, better).decision == Decision.REJECT  # the ko slice regresses beyond its budget
    verdict = decide(RULE, replace(better, caveats=(Caveat("cannot read language=ko", "language", "ko"),)))
    assert verdict.decision == Decision.INCONCLUSIVE and verdict.decided_by == "cannot read language=ko"
    still_worse = replace(WORSE, caveats=(Caveat("cannot read language=ko", "language", "ko"),))
    assert decide(RULE, still_worse).decision == Decision.REJECT  # the overall CI is not covered


CHECK = {"measured": True, "threshold": 0.05, "column": "language", "unreadable": ["ko"],
         "decided_on": "query_share", "slices": {"en": {"query_share": 0.0}, "ko": {"query_share": 0.86}}}
SLICES = pd.DataFrame({"language": ["en", "ko", "en"]}, index=["q1", "q2", "q3"])


def test_language_caveats():
    (on_ko,) = language_caveats(CHECK, SLICES, ["q1", "q2", "q3"])
    assert (on_ko.column, on_ko.value) == ("language", "ko") and "86.0%" in on_ko.message
    (everywhere,) = language_caveats(CHECK, SLICES, ["q2"])  # every evaluated query is Korean
    assert everywhere.column is None
    whole = {**CHECK, "column": None, "unreadable": ["(all)"], "decided_on": "share",
             "slices": {"(all)": {"share": 0.86}}}
    assert language_caveats(whole, SLICES, ["q1"])[0].message.startswith("cannot read this collection")
    assert language_caveats({**CHECK, "unreadable": []}, SLICES, ["q1"]) == []
    assert language_caveats(None, SLICES, ["q1"]) == []


def test_a_language_caveat_reaches_the_verdict_through_the_comparison():
    from rerankeval.stats.comparison import RunFacts, compare

    queries = [f"q{i:02d}" for i in range(40)]
    base = np.linspace(0.2, 0.6, 40)
    deltas = np.concatenate([np.full(20, -0.08), np.full(20, 0.2)])  # the Korean half regresses
    table = pd.DataFrame([{"system": system, "query_id": q, "nDCG@10": v, "Judged@10": 1.0}
                          for system, values in (("fusion", base), ("model", base + deltas))
                          for q, v in zip(queries, values)])
    slices = pd.DataFrame({"language": ["ko"] * 20 + ["en"] * 20}, index=queries)
    release = {"primary_metric": "nDCG@10", "min_delta": 0.03,
               "critical_slices": [{"column": "language", "budget": 0.05}]}
    settings = CompareConfig.parse({"baseline": "fusion", "metrics": ["nDCG@10"], "samples": 1000,
                                    "permutations": 1000, "simulation": {"trials": 20, "samples": 200},
                                    "release": release}, "compare")
    rule = ReleaseRule.parse(release, "compare.release")
    assert compare(table, slices, settings, rule)[1]["verdicts"]["model"]["decision"] == "REJECT"
    facts = RunFacts(caveats={"model": language_caveats(CHECK, slices, queries)})
    verdict = compare(table, slices, settings, rule, facts)[1]["verdicts"]["model"]
    # The model's own caveat softens nothing: the Korean slice's regression still decides, the caveat beside it.
    assert verdict["decision"] == "REJECT" and verdict["decided_by"].startswith("critical slice language=ko")
    assert any(reason.startswith("cannot read language=ko") for reason in verdict["reasons"])
    assert not any("blocks ACCEPT only" in reason for reason in verdict["reasons"])


def test_a_model_that_cannot_read_the_collection_and_ranks_worse_is_rejected_with_the_cause_beside_it():
    unreadable = Caveat("cannot read this collection", per_system=True)
    verdict = decide(RULE, replace(WORSE, caveats=(unreadable,)))
    assert verdict.decision == Decision.REJECT and "significantly worse" in verdict.decided_by
    assert "cannot read this collection" in verdict.reasons
    assert all(check.hard for check in verdict.checks if check.name == "primary_not_worse")
    better = replace(WORSE, primary=DeltaEvidence("AnswerF1", mean=0.05, ci_low=0.02, ci_high=0.08), slices=())
    blocked = decide(RULE, replace(better, caveats=(unreadable,)))
    assert blocked.decision == Decision.INCONCLUSIVE and blocked.decided_by == "cannot read this collection"


def test_report_lines():
    from rerankeval.report.caveats import generator_lines, language_warnings
    from rerankeval.stats.schema import GeneratorCheck

    flagged = generator_sanity(per_query_table(0.0, 0.0), "AnswerF1", "oracle", "random", "fusion", **BOOT)
    lines = generator_lines(GeneratorCheck.model_validate(flagged))
    assert lines[0].startswith("Generator sanity check on AnswerF1 (95% CI): `oracle` - `random`")
    assert "⚠ **the generator cannot tell rankings apart" in lines[1]
    assert len(generator_lines(GeneratorCheck.model_validate(generator_sanity(
        per_query_table(0.4, 0.25), "AnswerF1", "oracle", "random", "fusion", **BOOT)))) == 2  # the numbers, no flag
    warnings = language_warnings({"ce": {"describe": {"language_check": CHECK}}, "bm25": {"describe": {}}})
    assert list(warnings) == ["ce"] and warnings["ce"].startswith("its model cannot read language=ko")


def test_the_compare_stage_reads_each_learned_runs_language_check(tmp_path):
    from types import SimpleNamespace

    import pyarrow as pa

    from rerankeval.core.io import write_table
    from rerankeval.pipeline.compare import check_caveats
    from rerankeval.systems.roles import KindTraits

    roles = {"fusion": KindTraits("first_stage", "hybrid"), "oracle": KindTraits("ceiling"),
             "random": KindTraits("floor"), "ce": KindTraits(learned=True)}
    for system in roles:
        described = {"language_check": CHECK} if system == "ce" else {}
        write_table(tmp_path / f"run_{system}.parquet", pa.table({"x": [1]}), {"describe": described})
    table = per_query_table(0.0, 0.0)
    table = pd.concat([table, table[table["system"] == "fusion"].assign(system="ce")], ignore_index=True)
    settings = CompareConfig.parse({"baseline": "fusion", "metrics": ["AnswerF1"], "samples": 1000,
                                    "release": {"primary_metric": "AnswerF1", "min_delta": 0}}, "compare")
    params = SimpleNamespace(compare=settings, system_names=list(roles))
    paths = SimpleNamespace(run=lambda system: tmp_path / f"run_{system}.parquet")
    slices = pd.DataFrame({"language": ["ko", "en"] * 60}, index=[f"q{i:03d}" for i in range(120)])
    generator, language, caveats = check_caveats(params, paths, table, roles, slices, list(slices.index), "AnswerF1")
    assert generator["flag"] is not None and list(language) == ["ce"]
    assert [c.column for c in caveats["ce"]] == [None, "language"]  # the generator's, then the Korean slice's
    assert [c.column for c in caveats["oracle"]] == [None]


def test_a_language_neither_side_can_read_is_a_note_and_the_claims_own_reason_decides():
    """int8 vs its float32 twin: one tokenizer, one caveat on both sides; the margin decides, the saving is stated."""
    from rerankeval.stats.comparison import RunFacts, compare

    rng = np.random.default_rng(4)
    queries = [f"q{i:02d}" for i in range(60)]
    slices = pd.DataFrame({"language": ["ko"] * 30 + ["en"] * 30}, index=queries)
    base = rng.random(60)
    rows = [{"system": system, "query_id": q, "nDCG@10": value, "Judged@10": 1.0}
            for system, values in (("fusion", base), ("fp32", base + 0.05), ("int8", base + 0.05
                                                                              + rng.normal(-0.03, 0.05, 60)))
            for q, value in zip(queries, values)]
    release = {"primary_metric": "nDCG@10", "min_delta": 0.03, "critical_slices": [],
               "claims": {"int8": {"claim": "noninferior", "margin": 0.02, "against": "fp32",
                                   "saving_on": "latency_p95", "min_saving": 0.2}}}
    settings = CompareConfig.parse({"baseline": "fusion", "metrics": ["nDCG@10"], "samples": 1000,
                                    "permutations": 1000, "simulation": {"trials": 20, "samples": 200},
                                    "release": release}, "compare")
    caveat = language_caveats(CHECK, slices, queries)
    facts = RunFacts(caveats={"fp32": caveat, "int8": caveat}, latency_p95_ms={"fp32": 300.0, "int8": 120.0})
    verdict = compare(pd.DataFrame(rows), slices, settings, settings.release, facts)[1]["verdicts_by_baseline"][
        "fp32"]["int8"]
    assert verdict["decided_by"].startswith("nDCG@10 (claim noninferior, margin 0.0200)")
    assert not any("cannot read" in reason for reason in verdict["reasons"])
    assert any(note.startswith("fp32 too: cannot read language=ko") for note in verdict["notes"])
    assert any(note.startswith("met: saving on p95 latency: challenger 120.0 ms within fp32 300.0 ms")
               for note in verdict["notes"])


def test_a_collection_without_gold_answers_says_so_instead_of_blaming_the_generator():
    per_query = pd.DataFrame({"system": ["oracle", "random", "fusion"] * 4, "query_id": [f"q{i}" for i in range(4)
                                                                                        for _ in range(3)],
                              "AnswerF1": [np.nan] * 12})
    sanity = generator_sanity(per_query, "AnswerF1", "oracle", "random", "fusion", n_samples=200, seed=1,
                              confidence=0.95)
    assert sanity["flag"] is None and sanity["skipped"].startswith("no query has a gold answer")
