"""The judging queue: which unjudged pairs would move the primary Δ most, computed with the metric engine; its TSV,
its report section and `rerankeval judging-queue`."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from rerankeval.cli.main import main
from rerankeval.eval.engine import evaluate
from rerankeval.eval.judging import (QUEUE_COLUMNS, judging_queue, queue_tsv, read_queue_tsv, with_assessor_text)
from rerankeval.report.judging import judging_section, power_section
from rerankeval.stats.schema import DecisionCore, Inference, Verdict
from tests.analysis_records import rule

DOCS = [f"d{i}" for i in range(12)]


def ranked(query_id: str, docs: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"query_id": query_id, "doc_id": docs, "rank": np.arange(1, len(docs) + 1)})


def qrels_of(rows: list[tuple[str, str, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"]).astype({"relevance": np.int64})


@pytest.fixture
def case():
    """q1: the challenger puts unjudged u1 at rank 1 and unjudged u9 at rank 9; q2 is judged alike for both."""
    challenger = ["u1", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "u9", "d7"]
    baseline = ["d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "u1", "u9"]
    q2 = ["x", "y"]
    runs = {"base": pd.concat([ranked("q1", baseline), ranked("q2", q2)], ignore_index=True),
            "new": pd.concat([ranked("q1", challenger), ranked("q2", q2)], ignore_index=True)}
    qrels = qrels_of([("q1", "d0", 2), ("q1", "d1", 1), ("q1", "d2", 0), ("q1", "d3", -1), ("q2", "x", 1),
                      ("q2", "y", 0)])
    return runs, qrels


def queue_of(runs, qrels, **options):
    settings = dict(baseline="base", challengers=["new"], metric="nDCG@10", k=10, queries=["q1", "q2"])
    return judging_queue(runs, qrels, **{**settings, **options})


def mean_delta(runs, qrels, queries, metric="nDCG@10"):
    values = {name: evaluate(run, qrels, [metric], queries=queries)[metric] for name, run in runs.items()}
    return float((values["new"] - values["base"]).mean())


def test_an_unjudged_document_at_rank_1_moves_delta_more_than_one_at_rank_9(case):
    runs, qrels = case
    queue = queue_of(runs, qrels)
    first, second = queue.iloc[0], queue[queue["doc_id"] == "u9"].iloc[0]
    assert (first["query_id"], first["doc_id"], first["challenger"]) == ("q1", "u1", "new")
    assert first["swing"] > abs(second["swing"]) > 0
    assert list(queue["priority"]) == list(range(1, len(queue) + 1))
    assert (queue["swing"].abs().diff().dropna() <= 1e-12).all()
    # The swing is the engine's own Δ with the document judged top (2) minus judged 0, over both queries.
    for doc_id in ("u1", "u9"):
        row = queue[queue["doc_id"] == doc_id].iloc[0]
        zero = mean_delta(runs, pd.concat([qrels, qrels_of([("q1", doc_id, 0)])]), ["q1", "q2"])
        top = mean_delta(runs, pd.concat([qrels, qrels_of([("q1", doc_id, 2)])]), ["q1", "q2"])
        assert row["delta_if_nonrelevant"] == pytest.approx(zero, abs=1e-12)
        assert row["delta_if_relevant"] == pytest.approx(top, abs=1e-12)
        assert row["swing"] == pytest.approx(top - zero, abs=1e-12)
        assert row["top_grade"] == 2


def test_an_already_judged_pair_never_appears(case):
    runs, qrels = case
    queue = queue_of(runs, qrels)
    judged = set(zip(qrels["query_id"], qrels["doc_id"]))
    listed = set(zip(queue["query_id"], queue["doc_id"]))
    assert not listed & judged  # d2 (grade 0), d3 (grade -1) and the relevant ones are judged
    # Exactly the unjudged pairs of either system's top 10: u1 and u9 (the challenger's), d4-d9 (d8 and d9 are the
    # baseline's alone), none of q2's.
    assert listed == {("q1", d) for d in ("u1", "u9", "d4", "d5", "d6", "d7", "d8", "d9")}
    assert queue.set_index("doc_id").loc["d7", "in_top"] == "base@8 new@10"
    assert queue.set_index("doc_id").loc["d8", "in_top"] == "base@9"


def test_a_pair_in_a_query_without_relevant_documents_brings_it_into_the_mean(case):
    runs, qrels = case
    runs = {name: pd.concat([run, ranked("q3", ["z1", "z2"])], ignore_index=True) for name, run in runs.items()}
    runs["new"] = pd.concat([runs["new"][runs["new"]["query_id"] != "q3"], ranked("q3", ["z2", "z1"])])
    qrels = pd.concat([qrels, qrels_of([("q3", "z1", 0)])], ignore_index=True)
    queue = queue_of(runs, qrels, queries=["q1", "q2", "q3"]).set_index(["query_id", "doc_id"])
    row = queue.loc[("q3", "z2")]
    # Judged 0, q3 has no relevant document and is dropped (no_relevant: drop); judged 2, it counts, at +1 vs 1/log2(3).
    with_z2 = pd.concat([qrels, qrels_of([("q3", "z2", 2)])])
    assert row["delta_if_nonrelevant"] == pytest.approx(mean_delta(runs, qrels, ["q1", "q2", "q3"]), abs=1e-12)
    assert row["delta_if_relevant"] == pytest.approx(mean_delta(runs, with_z2, ["q1", "q2", "q3"]), abs=1e-12)


def test_pairs_are_credited_to_the_challenger_they_move_most(case):
    runs, qrels = case
    runs["same"] = runs["base"]
    queue = queue_of(runs, qrels, challengers=["same", "new"])
    assert queue.iloc[0]["challenger"] == "new"
    assert set(queue["challenger"]) <= {"new", "same"}


def test_the_tsv_has_the_queue_columns_and_reads_back(case):
    runs, qrels = case
    corpus = pd.DataFrame({"doc_id": DOCS + ["u1", "u9"], "title": "", "text": "plain"})
    corpus.loc[corpus["doc_id"] == "u1", ["title", "text"]] = ["A\ttitle", "line one\nline\ttwo " + "x" * 500]
    queue = with_assessor_text(queue_of(runs, qrels), {"q1": "what\tis it"}, corpus)
    text = queue_tsv(queue)
    lines = text.splitlines()
    assert lines[0].split("\t") == list(QUEUE_COLUMNS)
    assert len(lines) == len(queue) + 1 and all(len(line.split("\t")) == len(QUEUE_COLUMNS) for line in lines)
    back = read_queue_tsv(text, "queue.tsv")
    first = back.iloc[0]
    assert (first["doc_id"], first["query"], first["title"]) == ("u1", "what is it", "A title")
    assert first["excerpt"].startswith("line one line two x") and first["excerpt"].endswith("…")
    assert first["swing"] == pytest.approx(queue.iloc[0]["swing"], abs=1e-6)
    with pytest.raises(ValueError, match="other.tsv: not a judging queue"):
        read_queue_tsv("a\tb\n", "other.tsv")


def test_the_report_lists_the_first_pairs_from_the_tsv(case):
    runs, qrels = case
    corpus = pd.DataFrame({"doc_id": DOCS + ["u1", "u9"], "title": "T", "text": "t"})
    queue = read_queue_tsv(queue_tsv(with_assessor_text(queue_of(runs, qrels), {"q1": "q one"}, corpus)), "q.tsv")
    section = judging_section(queue, "nDCG@10", "Judged@10", "base", "reports/judging_queue.tsv")
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == min(10, len(queue)) and "`u1`" in rows[0] and "reports/judging_queue.tsv" in section
    empty = read_queue_tsv(queue_tsv(queue.iloc[:0]), "q.tsv")
    assert "nothing to queue" in judging_section(empty, "nDCG@10", "Judged@10", "base", "q.tsv")


def decided_against_base(**verdicts: tuple[str, dict | None]) -> DecisionCore:
    """A decision against ``base`` with each system's (decision, power statement) and nothing else."""
    return DecisionCore(
        baseline="base", queries=50, verdict_queries=50, rule=rule(), baseline_flag=None, simulation={},
        inference=Inference(mode="family", release_family="release vs base", procedure="", families={}),
        latency_p95_ms={}, fallbacks={},
        verdicts={system: Verdict(decision=decision, decided_by="", metric="nDCG@10", delta=None, ci=(None, None),
                                  confidence=0.95, reasons=[], notes=[], family="release vs base", p_adjusted=None,
                                  operating_characteristics={}, power=power)
                  for system, (decision, power) in verdicts.items()})


def test_power_is_rendered_for_inconclusive_verdicts_only():
    statement = {"method": "Sakai", "power": 0.8, "alpha": 0.05, "min_delta": 0.03, "sd": 0.1, "queries": 50,
                 "queries_needed": 90, "more_queries": 40, "power_now": 0.52, "why": None}
    section = power_section(decided_against_base(a=("INCONCLUSIVE", statement), b=("REJECT", None)))
    assert "`a` vs `base`" in section and "90 (+40)" in section and "`b`" not in section
    enough = {**statement, "queries_needed": 20, "more_queries": 0}
    assert "20 (enough now" in power_section(decided_against_base(a=("INCONCLUSIVE", enough)))
    assert power_section(decided_against_base(b=("ACCEPT", None))) == ""


def test_judging_queue_cli_writes_the_queue_and_refuses_a_missing_file(tmp_path, capsys):
    (tmp_path / "a.trec").write_text("q1 Q0 d1 1 3 a\nq1 Q0 d2 2 2 a\nq1 Q0 d3 3 1 a\nq2 Q0 d4 1 1 a\n")
    (tmp_path / "b.trec").write_text("q1 Q0 d3 1 3 b\nq1 Q0 d1 2 2 b\nq1 Q0 d2 3 1 b\nq2 Q0 d4 1 1 b\n")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d4 2\n")
    (tmp_path / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": f"d{i}", "title": f"Doc {i}", "text": f"text {i}, ask jane.doe@example.com or TICKET-77"})
        + "\n" for i in range(1, 5)))
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "first, from 010-1234-5678"}) + "\n")
    out = tmp_path / "queue.tsv"
    common = ["judging-queue", "--qrels", str(tmp_path / "qrels.txt"), "--corpus", str(tmp_path / "corpus.jsonl"),
              "--out", str(out)]
    code = main([*common, "--run", str(tmp_path / "a.trec"), "--run", f"new={tmp_path / 'b.trec'}",
                 "--queries", str(tmp_path / "queries.jsonl"), "--redact-pattern", r"TICKET-\d+"])
    assert code == 0, capsys.readouterr().err
    queue = read_queue_tsv(out.read_text(), str(out))
    assert list(queue[["query_id", "doc_id"]].itertuples(index=False, name=None)) == [("q1", "d3"), ("q1", "d2")]
    assert queue.iloc[0]["challenger"] == "new" and queue.iloc[0]["query"] == "first, from [redacted:phone]"
    assert queue.iloc[0]["excerpt"] == "text 3, ask [redacted:email] or [redacted:custom]"  # written for people
    assert queue.iloc[0]["title"] == "Doc 3" and queue.iloc[0]["swing"] > 0
    missing = tmp_path / "nope.trec"
    assert main([*common, "--run", str(tmp_path / "a.trec"), "--run", str(missing)]) == 2
    assert f"{missing}: no such file" in capsys.readouterr().err
    assert main([*common, "--run", str(tmp_path / "a.trec"), "--run", str(tmp_path / "b.trec"),
                 "--baseline", "c"]) == 2
    assert "--baseline 'c' is none of the runs" in capsys.readouterr().err


def test_a_query_marked_unanswerable_waits_behind_one_a_judgment_can_answer():
    """Its swing is the largest (a relevant judgment makes it enter the mean), its chance the smallest."""
    from rerankeval.eval.judging import relevant_chance

    qrels = pd.DataFrame({"query_id": ["a", "a", "b", "c"], "doc_id": ["a1", "a3", "b1", "c1"],
                          "relevance": [1, 2, 1, 1]})
    classes = pd.Series([True, True, True, False, False], index=["a", "b", "c", "x", "y"])
    chance = relevant_chance(classes, qrels)
    assert chance["a"] == pytest.approx(4 / 5) and chance["x"] == pytest.approx(1 / 4)
    runs = {name: pd.DataFrame({"query_id": ["a", "a", "a", "x", "x"], "doc_id": ["a2", "a1", "a3", "x1", "x2"],
                                "score": score}) for name, score in (("base", [3.0, 2.0, 1.0, 2.0, 1.0]),
                                                                     ("new", [2.0, 3.0, 1.0, 1.0, 2.0]))}
    queue = judging_queue(runs, qrels, baseline="base", challengers=["new"], metric="nDCG@10", k=2,
                          queries=["a", "x"], chance_relevant=chance)
    by_swing = queue.assign(size=queue["swing"].abs()).sort_values("size", ascending=False)
    assert by_swing["query_id"].iloc[0] == "x" and queue["query_id"].iloc[0] == "a"  # the chance reorders them
    assert (queue["expected_move"] == (queue["chance_relevant"] * queue["swing"].abs()).round(6)).all()
