"""`rerankeval evaluate` averages over trec_eval's query set: the queries in both the run and the qrels (a judged query
without a relevant document counting 0), or with -c every qrels query, missing ones 0; no shared query is refused."""

import json
import tempfile
from pathlib import Path

import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings

from rerankeval.cli.main import main
from tests.test_metrics_trec_eval import as_qrels_dict, as_run_dict, collections, trec_eval_named

MEASURES = trec_eval_named([5, 10], rel=1, judged_only=False)


def write_trec(folder: Path, run, qrels) -> tuple[Path, Path]:
    run_path, qrels_path = folder / "run.trec", folder / "qrels.txt"
    run_path.write_text("".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, d, s in zip(run["query_id"], run["doc_id"],
                                                                            run["score"])))
    qrels_path.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in zip(qrels["query_id"], qrels["doc_id"],
                                                                         qrels["relevance"])))
    return run_path, qrels_path


def cli_means(capsys, run_path, qrels_path, *flags) -> tuple[int, dict | None, str]:
    args = ["evaluate", "--qrels", str(qrels_path), "--run", str(run_path), "--json", *flags]
    for measure in MEASURES:
        args += ["--metric", str(measure)]
    code = main(args)
    out, err = capsys.readouterr()
    return code, (json.loads(out)["run.trec"] if code == 0 else None), err


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(collections())
def test_query_set_and_means_equal_trec_eval_with_and_without_c(capsys, data):
    run, qrels = data
    with tempfile.TemporaryDirectory() as folder:
        run_path, qrels_path = write_trec(Path(folder), run, qrels)
        shared = set(run["query_id"]) & set(qrels["query_id"])
        code, default, err = cli_means(capsys, run_path, qrels_path)
        if not shared:
            assert code == 2 and "share no query id" in err
            return
        code_c, complete, _ = cli_means(capsys, run_path, qrels_path, "-c")
    assert code == code_c == 0
    evaluator = pytrec_eval.RelevanceEvaluator(as_qrels_dict(qrels), {m.trec_eval for m in MEASURES})
    reference = evaluator.evaluate(as_run_dict(run))  # trec_eval evaluates the queries in both, and no other
    assert default["num_q"] == len(reference) == len(shared)
    assert complete["num_q"] == qrels["query_id"].nunique()
    for measure in MEASURES:
        total = sum(values[measure.trec_eval.replace(".", "_")] for values in reference.values())
        assert default["all"][str(measure)] == pytest.approx(total / len(reference), abs=1e-9), measure
        assert complete["all"][str(measure)] == pytest.approx(total / complete["num_q"], abs=1e-9), measure


@pytest.fixture
def pair(tmp_path):
    def write(run_ids, qrels_ids):
        (tmp_path / "run.trec").write_text("".join(f"{q} Q0 d1 1 1.0 t\n" for q in run_ids))
        (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 d1 1\n" for q in qrels_ids))
        return ["--qrels", str(tmp_path / "qrels.txt"), "--run", str(tmp_path / "run.trec"), "--metric", "P@1"]
    return write


def test_a_run_sharing_no_query_with_the_qrels_is_refused_with_the_case_hint(pair, capsys):
    assert main(["evaluate", *pair(["Q0001", "Q0002"], ["q0001", "q0002"])]) == 2
    err = capsys.readouterr().err
    assert "share no query id; the ids differ in letter case only (run 'Q0001', qrels 'q0001')" in err
    assert main(["evaluate", *pair(["a1", "a2"], ["b1", "b2", "b3", "b4"])]) == 2
    assert "share no query id (run: 'a1', 'a2'; qrels: 'b1', 'b2', 'b3', ...)" in capsys.readouterr().err


def test_a_run_sharing_few_queries_gets_a_warning_naming_both_query_sets(pair, capsys):
    args = pair(["q1", "q2"], ["q1", "q2", "q3", "q4", "q5"])
    assert main(["evaluate", *args]) == 0
    out, err = capsys.readouterr()
    assert "num_q                 \tall\t2" in out
    assert "has 2 queries and" in err and "judges 5; only 2 are in both. Averaging over those 2" in err
    assert main(["evaluate", *args, "-c"]) == 0
    out, err = capsys.readouterr()
    assert "num_q                 \tall\t5" in out and "P@1                   \tall\t0.4000" in out
    assert "Averaging over all 5 judged queries, the 3 missing scoring 0 (-c)" in err
    assert main(["evaluate", *pair(["q1", "q2", "q3"], ["q1", "q2", "q3", "q4"])]) == 0
    assert capsys.readouterr().err == ""  # most queries shared: trec_eval's set, silently
