"""The report's verdict, first-stage and unjudged sections: read in a minute, at the configured confidence level."""

import numpy as np
import pandas as pd
import pytest

from rerankeval.report import markdown as md
from rerankeval.stats.analysis import analyze
from rerankeval.stats.comparison import RunFacts
from rerankeval.stats.config import CompareConfig
from rerankeval.stats.schema import Compare, FirstStageCheck, GeneratorCheck, SystemCost, Verdicts
from tests.analysis_records import FIRST_STAGE, GENERATOR_CHECK

QUERIES = [f"q{i:02d}" for i in range(40)]
FLAG = "the comparison baseline is broken on this collection: fusion (fused) is 0.550 below bm25 on nDCG@10"


@pytest.fixture(scope="module")
def outputs():
    base = np.linspace(0.2, 0.6, 40)
    rows = [{"system": system, "query_id": query, "nDCG@10": value, "Judged@10": 1.0}
            for system, values in (("fusion", base), ("model", base + 0.1), ("copy", base))
            for query, value in zip(QUERIES, values)]
    settings = CompareConfig.parse({"baseline": "fusion", "metrics": ["nDCG@10"], "samples": 1000,
                                    "permutations": 1000, "confidence": 0.9,
                                    "simulation": {"trials": 100, "samples": 500},
                                    "release": {"primary_metric": "nDCG@10", "min_delta": 0.03,
                                                "unjudged_margin": 0.1,
                                                "critical_slices": [{"column": "language", "budget": 0.05}]}},
                                   "compare")
    slices = pd.DataFrame({"language": ["ko"] * 20 + ["en"] * 20}, index=QUERIES)
    analysis = analyze(pd.DataFrame(rows), slices, settings, settings.release,
                       RunFacts(identical_to_baseline={"copy": 40}, baseline_flag=FLAG,
                                positive_only="the qrels judge no document non-relevant (no grade <= 0)"))
    return analysis.compare, analysis.verdicts


def test_the_verdict_table_gives_the_decision_and_the_one_reason(outputs):
    _, verdicts = outputs
    text = md.verdict_section(verdicts)
    assert f"> ⚠ **{FLAG}.** No verdict against it is a bare ACCEPT." in text
    assert "| challenger | decision | Δ nDCG@10 [90% CI] | decided by |" in text
    assert "| `model` | **INCONCLUSIVE** | +0.1000 [+0.1000, +0.1000] | " + FLAG in text
    assert "| `copy` | **INCONCLUSIVE** | +0.0000 [+0.0000, +0.0000] | run identical to the baseline's" in text
    # 2 slices for each of the 2 members of the release family: 4 slice tests at 1 - 0.10 / 4
    assert "a critical slice REJECTs only when its 97.5% CI (adjusted for 4 slice tests: 2 slices x the release " \
           "family)" in text
    assert "a slice under 20 queries can only block ACCEPT" in text
    table_rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert all(line.count("|") == 5 for line in table_rows[:2])  # one reason per row, no <br> walls
    assert "<br>" not in text
    assert "| challenger | REJECT at effect 0 | ACCEPT at effect 0 | ACCEPT at +0.0300 | REJECT at +0.0300 |" in text
    assert "100 trials per effect" in text and "±5.0 points" in text
    details = text[text.index("<details>"):]
    assert "**`model`: INCONCLUSIVE**" in details and "- note: unjudged check not applicable" in details
    assert details.rstrip().endswith("</details>")


def test_positive_only_qrels_show_the_unjudged_watch_as_not_applicable(outputs):
    result, _ = outputs
    text = md.unjudged_section(result)
    assert text.startswith("## Unjudged watch: not applicable\n\nThe qrels judge no document non-relevant")
    assert "unjudged rate" not in text.split("\n\n", 1)[1].lower().replace("check the unjudged rate", "")
    metrics = {"systems": {"fusion": {"nDCG@10": 0.5, "Judged@10": 0.3}, "model": {"nDCG@10": 0.6, "Judged@10": 0.2}}}
    every = md.all_metrics_section(metrics, ["Judged@10"])
    assert "| `fusion` | 0.5000 | n/a |" in every and "n/a: measures that need judged non-relevant" in every


def test_headers_show_the_configured_confidence(outputs):
    result, _ = outputs
    assert "| challenger | metric | baseline | challenger | Δ mean | 90% CI |" in md.deltas_section(result)
    slices = md.slices_section(result, "nDCG@10", plots=None)
    assert "with 90% CI" in slices and "![slice deltas]" not in slices
    assert "95%" not in md.deltas_section(result) + slices


def test_the_first_stage_section_names_the_best_and_the_flag():
    sanity = {"metric": "nDCG@10", "confidence": 0.95, "queries": 40, "random": 0.05, "best": "bm25",
              "best_component": "bm25", "baseline": "fusion", "flag": FLAG,
              "fusion_vs_best_component": {"delta": -0.55, "low": -0.6, "high": -0.5},
              "retrievers": {"bm25": {"mean": 0.8, "at_random_floor": False,
                                      "vs_random": {"delta": 0.75, "low": 0.7, "high": 0.8}},
                             "dense": {"mean": 0.06, "at_random_floor": True,
                                       "vs_random": {"delta": 0.01, "low": -0.02, "high": 0.04}},
                             "hybrid": {"mean": 0.25, "at_random_floor": False,
                                        "vs_random": {"delta": 0.2, "low": 0.15, "high": 0.25}}}}
    first_stage = {name: {"Success@100": 1.0, "R@100": 0.9, "nDCG@10": mean, "RR@10": mean}
                   for name, mean in (("bm25", 0.8), ("dense", 0.06), ("hybrid", 0.25))}
    text = md.first_stage_section(first_stage, 100, FirstStageCheck.model_validate(sanity))
    assert "Δ nDCG@10 vs random [95% CI]" in text
    assert "| dense | 1.0000 | 0.9000 | 0.0600 | 0.0600 | +0.0100 [-0.0200 .. +0.0400] ⚠ at the random floor |" in text
    assert "Best first stage on nDCG@10: **bm25** (0.8000)." in text
    assert "Fusion (hybrid) vs its best component (bm25): -0.5500 [-0.6000 .. -0.5000]." in text
    assert f"⚠ **{FLAG}.**" in text
    assert "vs random" not in md.first_stage_section(first_stage, 100)  # without the check: the plain table


def test_the_first_stage_section_states_the_rrf_weights_and_why():
    first_stage = {"bm25": {"Success@100": 1.0, "R@100": 0.9, "nDCG@10": 0.9, "RR@10": 0.9}}
    fitted = {"weights": {"bm25": 1.5, "dense": 0.5}, "how": "fit",
              "fit": {"split": "train", "reason": "best BM25 share 0.75, nDCG@10 +0.0110 [+0.0010, +0.0210] vs "
                                                  "equal weights on 747 queries"}}
    assert md.first_stage_section(first_stage, 100, fusion=fitted).endswith(
        "Hybrid RRF weights: bm25 1.50, dense 0.50 (fit on the train split: best BM25 share 0.75, nDCG@10 "
        "+0.0110 [+0.0010, +0.0210] vs equal weights on 747 queries).")
    plain = {"weights": {"bm25": 1.0, "dense": 1.0}, "how": "equal"}
    assert md.first_stage_section(first_stage, 100, fusion=plain).endswith(
        "Hybrid RRF weights: bm25 1.00, dense 1.00 (plain RRF).")


STAGE_RECORDS = {
    Compare: {"split": "test", "first_stage": FIRST_STAGE, "generator_sanity": GENERATOR_CHECK, "language_check": {},
              "worst_regressions": {}},
    Verdicts: {"latency_source": {}, "latency_untrusted": {}, "generator_flag": None, "inactive_claims": [],
               "variants": {}}}
"""What the compare stage adds to the cores from the pipeline's other outputs, empty (a ``test`` split)."""


def staged(core, model, **fields):
    """``core`` (``analyze`` without the pipeline's records) as the compare stage writes it: ``fields`` set, its
    other records empty."""
    return model.model_validate({**core.model_dump(), **STAGE_RECORDS[model], **fields})


def system_cost(cost_per_1k_queries: float) -> SystemCost:
    """A system's row of costs.json with only what the decision page reads, its cost, measured."""
    return SystemCost(queries=40, fallbacks=0, timeouts=0, skipped=0, cache_hits=0, p50_ms=None, p95_ms=None,
                      p99_ms=None, pairs_per_s=None, measured_p95_ms=None, pairs=0, pair_tokens_p50=None,
                      pair_tokens_p95=None, truncation_rate=None, tokens_per_s=None, latency_scale=1.0,
                      cost_per_1k_queries=cost_per_1k_queries)


def decision_inputs(verdicts, compare_result, **changes):
    from rerankeval.report.decision import DecisionInputs
    from rerankeval.systems.roles import KindTraits

    traits = {"fusion": KindTraits("first_stage", "hybrid"), "model": KindTraits(), "copy": KindTraits()}
    costs = {"fusion": system_cost(0.0003), "model": system_cost(0.0123)}
    return DecisionInputs(**{"verdicts": verdicts, "compare": compare_result, "traits": traits, "costs": costs,
                             "hourly_price": 0.1, "generator": "extractive", "swept": True, **changes})


def test_the_decision_page_fits_a_screen_with_every_challenger_and_its_one_reason(outputs):
    from rerankeval.report.decision import decision_page

    result, verdicts = outputs
    verdicts = staged(verdicts, Verdicts, latency_p95_ms={"model": 812.34, "fusion": 0.031},
                      latency_untrusted={"model": "busy"})
    text = decision_page(["# rerankeval report: tiny"], decision_inputs(verdicts, staged(result, Compare)), "plots",
                         "details.md")
    lines = text.splitlines()
    assert len(lines) <= 80
    rows = {line.split(" | ")[0]: line for line in lines if line.startswith("| `")}
    assert rows.keys() == {"| `model`", "| `copy`"}  # fusion is the baseline, and a first stage: no decision
    assert rows["| `model`"].startswith("| `model` | **INCONCLUSIVE** | " + FLAG)
    assert "| +0.1000 [+0.1000, +0.1000] | 812.3 ⚠ | $0.0123 | " in rows["| `model`"]
    assert rows["| `copy`"].startswith("| `copy` | **INCONCLUSIVE** | run identical to the baseline's")
    assert "| n/a | n/a |" in rows["| `copy`"]
    assert "⚠ p95 not trusted to REJECT: `model`: busy." in text
    # No answer measures here: the page says so, and the extractive generator's caveat sits beside it.
    assert "Answer-level Δ: no answer measures were evaluated." not in text
    assert "`extractive` generator, which copies sentences" in text
    assert "![quality against p95 latency, the frontier](plots/pareto.png)" in text
    assert "read off these `test` queries (tuned on them)" in text and "[details](details.md)" in text
    assert "Every reason and note" not in text and "<details>" not in text  # those are on the details page


def test_reference_systems_stand_apart_and_the_answer_delta_shows_only_when_the_generator_is_sane(outputs):
    from rerankeval.report.decision import decision_page
    from rerankeval.systems.roles import KindTraits

    result, verdicts = outputs
    verdicts = staged(verdicts, Verdicts)
    traits = {"fusion": KindTraits("first_stage", "hybrid"), "model": KindTraits(), "copy": KindTraits("ceiling")}
    sane = {**GENERATOR_CHECK, "metric": "AnswerF1", "flag": None, "skipped": None}
    ranking = next(c for c in result.comparisons if c.challenger == "model")
    answer = ranking.model_copy(update={"metric": "AnswerF1", "delta": 0.05, "low": 0.01, "high": 0.09})
    compared = staged(result, Compare, generator_sanity=sane, comparisons=[*result.comparisons, answer])
    text = decision_page(["# t"], decision_inputs(verdicts, compared, traits=traits, generator="local_llm"),
                         "plots", "details.md")
    decisions, references = text.split("### Reference systems")
    assert "| `copy` |" not in decisions and "| `copy` | ceiling (bound) | +0.0000 [+0.0000, +0.0000] |" in references
    assert "| Δ AnswerF1 [90% CI] |" in decisions and "| +0.0500 [+0.0100, +0.0900] |" in decisions
    assert "copies sentences" not in text
    flagged = decision_page(["# t"], decision_inputs(verdicts, compared.model_copy(update={
        "generator_sanity": GeneratorCheck.model_validate({**sane, "flag": "the generator cannot tell rankings apart"})
    })), "plots", "details.md")
    assert "Δ AnswerF1" not in flagged
    assert "Answer-level Δ not shown: the generator cannot tell rankings apart." in flagged
