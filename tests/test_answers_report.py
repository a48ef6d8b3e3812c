"""The answers analysis (``stats.answers``) and the report's answers section that renders it, on a synthetic
comparison: tables, outcome counts and the plot."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rerankeval.report.answers import AnswerInputs, answers_section
from rerankeval.report.markdown import deltas_section, systems_section
from rerankeval.stats.answers import answer_analysis, deltas_frame
from rerankeval.stats.comparison import compare
from rerankeval.stats.config import CompareConfig
from rerankeval.stats.schema import Compare, EndToEnd
from tests.analysis_records import FIRST_STAGE, GENERATOR_CHECK, method

LATENCY = {"fusion": EndToEnd(p50_ms=12.0, p95_ms=12.5, generate_mean_ms=2.0, cached_answers=0)}
"""costs.json's end-to-end latency of the baseline."""


def stage_compare(core: dict, **added) -> Compare:
    """compare.json as the stage writes it: ``core`` (the comparison's fields, those missing empty) and ``added``,
    with the stage's records empty."""
    empty = {"queries": 0, "method": method(), "systems": {}, "comparisons": [], "slices": {}, "unjudged": {},
             "split": "test", "first_stage": FIRST_STAGE, "generator_sanity": GENERATOR_CHECK, "language_check": {},
             "worst_regressions": {}}
    return Compare.model_validate({**empty, **core, **added})


MEASURES = ["nDCG@10", "EvidenceCoverage", "AnswerEM", "AnswerF1", "AbstentionPrecision", "AbstentionRecall",
            "CitationPrecision", "CorrectRefusal", "BoundaryPartial", "IncorrectAnswer", "FalseRefusal"]


def per_query() -> pd.DataFrame:
    ids = [f"q{i:02d}" for i in range(24)]
    unanswerable = np.arange(24) >= 20
    frames = []
    for system, shift in (("fusion", 0.0), ("ce", 0.1)):
        ndcg = np.where(unanswerable, np.nan, np.linspace(0.2, 0.8, 24) + shift)
        em = np.where(unanswerable, 1.0, (np.arange(24) % 3 == 0).astype(float))
        frame = pd.DataFrame({"system": system, "query_id": ids, "nDCG@10": ndcg, "EvidenceCoverage": ndcg,
                              "AnswerEM": em, "AnswerF1": np.clip(em + shift, 0, 1), "Judged@10": 1.0,
                              "AbstentionPrecision": np.where(unanswerable, 1.0, np.nan),
                              "AbstentionRecall": np.where(unanswerable, 1.0, np.nan),
                              "CitationPrecision": np.where(unanswerable, np.nan, 0.5 + shift),
                              "CorrectRefusal": unanswerable.astype(float),
                              "BoundaryPartial": ((np.arange(24) % 3 == 1) & ~unanswerable).astype(float),
                              "IncorrectAnswer": ((np.arange(24) % 3 == 2) & ~unanswerable).astype(float),
                              "FalseRefusal": 0.0})
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def test_answers_section_renders_the_ablation(tmp_path):
    frame = per_query()
    slices = pd.DataFrame({"query_type": ["single_document"] * 20 + ["abstention"] * 4},
                          index=pd.Index(sorted(set(frame["query_id"])), name="query_id"))
    settings = CompareConfig.parse({"baseline": "fusion", "metrics": MEASURES[:7], "samples": 500,
                                    "permutations": 500, "min_slice_size": 3, "unjudged": {"measure": "Judged@10"},
                                    "release": {"primary_metric": "AnswerF1", "min_delta": 0.03}}, "compare")
    result, _ = compare(frame, slices, settings, settings.release)
    result = stage_compare(result, answers=answer_analysis(frame, "fusion"))
    text = answers_section(result, AnswerInputs({"kind": "extractive"}, {"max_passages": 4},
                                                {"split": "train", "result": {}}), LATENCY, tmp_path, "plots")
    assert "24 queries: 24 with gold answers, 20 with a relevant passage" in text
    # Sizes per measure: no abstention query has nDCG@10, all 4 have the answer measures.
    assert "| abstention | 0 ⚠ / 4 | `ce` |" in text and "### Outcomes" in text
    assert "| fusion | 7 | 7 | 6 | 0 | 4 | 0 |" in text  # the analysis's outcome counts, rendered
    assert "| `ce` | 20 | 13 | 0 | 0 | 0 | 0 |" in text  # every ranking up; the answer up where EM was 0
    assert (tmp_path / "ranking_vs_answer.png").stat().st_size > 1000
    assert "| `fusion` | 12.0 | 12.5 | 2.00 | 0 |" in text  # costs.json's end-to-end latency, rendered


def test_answer_analysis_counts_outcomes_and_per_query_deltas():
    frame = per_query()
    found = answer_analysis(frame, "fusion")
    assert found["counts"] == {"queries": 24, "with_gold": 24, "with_relevant": 20}
    assert found["outcomes"]["fusion"] == {"correct": 7, "boundary_partial": 7, "incorrect_answer": 6,
                                           "false_refusal": 0, "correct_refusal": 4, "failed": 0}
    deltas = deltas_frame(found["deltas"])
    assert list(deltas["challenger"].unique()) == ["ce"] and len(deltas) == 20
    assert np.allclose(deltas["ranking_delta"], 0.1)
    # AnswerF1 = clip(EM + 0.1): it moves by 0.1 where EM is 0 (queries 1, 2, 4, 5, ...), by 0 where EM is already 1.
    assert found["reach"]["ce"] == {"ranking_up": 20, "ranking_up_answer_up": 13, "ranking_up_answer_down": 0,
                                    "ranking_down": 0, "ranking_down_answer_down": 0,
                                    "ranking_same_answer_moved": 0}
    assert found["means"]["ce"]["CitationPrecision"] == 0.6  # defined on 20 queries, averaged over them


def test_without_the_ranking_measure_the_answers_still_render_and_small_costs_keep_their_digits(tmp_path):
    frame = per_query().drop(columns=["nDCG@10"]).assign(AnswerCost=1.0537e-7, AnswerTokens=412.0)
    found = answer_analysis(frame, "fusion")
    assert found["ranking_measure"] is None and found["deltas"] == {} and found["reach"] == {}
    assert found["means"]["fusion"]["AnswerCost"] == 1.0537e-7  # 6 significant digits, not 6 decimals
    result = stage_compare({"baseline": "fusion", "systems": {"fusion": {}, "ce": {}}}, answers=found)
    text = answers_section(result, AnswerInputs(), LATENCY, tmp_path, "plots")
    assert "| system | EvidenceCoverage [CI] |" in text and "nDCG@10" not in text.split("### Outcomes")[0]
    assert "| `fusion` | 12.0 | 12.5 | 2.00 | 0 | 412.0 | 0.0001 |" in text  # cost per 1k queries, 4 decimals


def test_no_answers_analysis_without_answer_measures():
    assert answer_analysis(per_query().drop(columns=["AnswerF1"]), "fusion") is None
    assert answers_section(stage_compare({"baseline": "fusion"}), AnswerInputs(), {}, None, "plots") == ""


def test_a_collection_without_gold_answers_shows_only_the_measures_it_defines(tmp_path):
    """SciFact has judgments and no gold answers: the section names the answer measures once as undefined, and
    draws no column of n/a, no outcome counts of 0 and no ranking-vs-answer table of 0 for them."""
    frame = per_query()
    for measure in ("AnswerEM", "AnswerF1", "AbstentionPrecision", "AbstentionRecall", "CorrectRefusal",
                    "BoundaryPartial", "IncorrectAnswer", "FalseRefusal"):
        frame[measure] = np.nan
    slices = pd.DataFrame(index=pd.Index(sorted(set(frame["query_id"])), name="query_id"))
    settings = CompareConfig.parse({"baseline": "fusion", "metrics": MEASURES[:7], "samples": 500,
                                    "permutations": 500, "unjudged": {"measure": "Judged@10"},
                                    "release": {"primary_metric": "nDCG@10", "min_delta": 0.03}}, "compare")
    result, _ = compare(frame, slices, settings, settings.release)
    found = answer_analysis(frame, "fusion")
    assert found["counts"]["with_gold"] == 0
    text = answers_section(stage_compare(result, answers=found), AnswerInputs(), LATENCY, tmp_path, "plots")
    assert ("Not shown, defined on no query here: AnswerEM, AnswerF1, AbstentionPrecision, AbstentionRecall."
            in text)
    assert "| system | nDCG@10 [CI] | EvidenceCoverage [CI] | CitationPrecision [CI] |" in text
    assert "n/a [" not in text and "### Outcomes" not in text
    assert "Did the ranking gain reach the answer? (per" not in text
    assert "| `ce` | CitationPrecision |" in text  # the measures defined here keep their paired deltas
    assert (tmp_path / "ranking_vs_answer.png").exists()  # the placeholder a page may still link
    # the details page's systems and paired-comparison tables likewise
    typed = stage_compare(result, answers=found)
    systems = systems_section(typed, {"systems": {"fusion": {}, "ce": {}}}, MEASURES[:7], [], 100)
    deltas = deltas_section(typed)
    for page in (systems, deltas):
        named = page.split("Not shown, defined on no query here: ", 1)[1].split(".", 1)[0].split(", ")
        assert sorted(named) == ["AbstentionPrecision", "AbstentionRecall", "AnswerEM", "AnswerF1"]
        assert "AnswerEM [" not in page and "| AnswerF1 |" not in page
    assert "| `ce` | CitationPrecision |" in deltas and "CitationPrecision [95% CI]" in systems
