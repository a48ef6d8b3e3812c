"""The report's answers section on a synthetic comparison: tables, outcome counts and the plot."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rerankeval.report.answers import AnswerInputs, answers_section, outcome_counts, ranking_vs_answer
from rerankeval.stats.comparison import compare
from rerankeval.stats.config import CompareConfig

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
    latency = {"fusion": {"p50_ms": 12.0, "p95_ms": 12.5, "generate_mean_ms": 2.0, "cached_answers": 0}}
    text = answers_section(result, frame, AnswerInputs({"kind": "extractive"}, {"max_passages": 4},
                                                       {"split": "train", "result": {}}), latency, tmp_path, "plots")
    assert "24 queries: 24 with gold answers, 20 with a relevant passage" in text
    # Sizes per measure: no abstention query has nDCG@10, all 4 have the answer measures.
    assert "| abstention | 0 ⚠ / 4 | `ce` |" in text and "### Outcomes" in text
    assert (tmp_path / "ranking_vs_answer.png").stat().st_size > 1000
    assert "| `fusion` | 12.0 | 12.5 | 2.00 | 0 |" in text  # compare.json's end-to-end latency, rendered
    counts = outcome_counts(frame).set_index("system")
    assert counts.loc["fusion"].tolist() == [7, 7, 6, 0, 4, 0]
    deltas = ranking_vs_answer(frame, "fusion", "nDCG@10", "AnswerF1")
    assert len(deltas) == 20 and np.allclose(deltas["ranking_delta"], 0.1)
