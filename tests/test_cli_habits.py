"""The conventions users bring to the command: `--version`, trec_eval's measure names and default measures in
`evaluate` (equal to trec_eval's values), measures printed as asked, a warning saying which queries count 0,
`compare --fail-on-reject` for CI, and help text on every option."""

import argparse
import json
import re
from importlib.metadata import version

import pandas as pd
import pytest
import pytrec_eval

from rerankeval.cli.main import DEFAULT_MEASURES, build_parser, main
from rerankeval.eval.measures import Measure, parse_measure
from tests.test_cli_compare import FAST
from tests.test_cli_compare import files as compare_files  # noqa: F401  (the fixture)
from tests.test_cli_query_set import write_trec
from tests.test_metrics_trec_eval import as_qrels_dict, as_run_dict, trec_eval_named

# Graded qrels with a judged-only-non-relevant query (q3) and one the run lacks (q4); a run with tied scores (trec_eval
# breaks them by docno, descending) and unjudged documents.
QRELS = pd.DataFrame([("q1", "a", 2), ("q1", "b", 0), ("q1", "c", 1), ("q1", "e", 1), ("q2", "z", 1),
                      ("q2", "y", 0), ("q3", "k", 0), ("q4", "a", 1)], columns=["query_id", "doc_id", "relevance"])
RUN = pd.DataFrame([("q1", "b", 2.0), ("q1", "a", 2.0), ("q1", "x", 1.0), ("q1", "c", 1.0), ("q1", "e", 0.5),
                    ("q2", "y", 3.0), ("q2", "u", 3.0), ("q2", "z", 3.0), ("q3", "k", 1.0)],
                   columns=["query_id", "doc_id", "score"])
TREC_EVAL_NAMES = ["ndcg_cut_10", "ndcg_cut.3", "map", "map_cut_2", "recip_rank", "P_2", "P.1", "recall_3",
                   "bpref", "Rprec", "ndcg", "success_1", "set_P", "set_recall"]


def evaluate_json(capsys, folder, *args):
    run_path, qrels_path = write_trec(folder, RUN, QRELS)
    code = main(["evaluate", "--qrels", str(qrels_path), "--run", str(run_path), "--json", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)["run.trec"], err


def reference(names):
    """pytrec_eval's means over the queries of both run and qrels, by the names it prints (``P_2``)."""
    asked = {re.sub(r"_(\d+)$", r".\1", name) for name in names}
    result = pytrec_eval.RelevanceEvaluator(as_qrels_dict(QRELS), asked).evaluate(as_run_dict(RUN))
    return {name: sum(values[name] for values in result.values()) / len(result) for name in result["q1"]}, len(result)


def test_version_is_the_installed_packages(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"rerankeval {version('rerankeval')}"


def test_every_trec_eval_name_reads_back_as_the_measure_that_equals_it():
    named = trec_eval_named([1, 10, 1000], rel=1, judged_only=False)
    assert {m.family.name for m in named} >= {"nDCG", "AP", "RR", "P", "R", "Success", "Rprec", "Bpref"}
    for measure in named:
        dotted = re.sub(r"_(\d+)$", r".\1", measure.trec_eval)
        assert parse_measure(measure.trec_eval) == parse_measure(dotted) == measure, measure.trec_eval
        assert parse_measure(measure.trec_eval.upper()) == measure
    assert parse_measure("recip_rank") == Measure("RR") and parse_measure("map") == Measure("AP")  # no cutoff


def test_the_measure_sets_the_parser_names_are_the_ones_rerankeval_trec_eval_prints():
    from rerankeval.cli.main import MEASURE_SETS
    from rerankeval.eval.measures.base import TREC_EVAL_SETS

    assert set(TREC_EVAL_SETS) == set(MEASURE_SETS)


@pytest.mark.parametrize("name, says", [
    ("num_ret", "`rerankeval trec_eval -m num_ret` prints it"),
    ("gm_map", "`rerankeval trec_eval -m gm_map` prints it"),
    ("ndcg_cut_0", "cannot read measure 'ndcg_cut_0'"), ("ndcgcut10", "unknown measure 'ndcgcut10'"),
    ("official", "`rerankeval trec_eval -m official` prints the set"),
    ("all_trec", "`rerankeval trec_eval -m all_trec` prints the set"),
])
def test_an_unknown_name_is_refused_listing_the_accepted_ones(name, says):
    with pytest.raises(ValueError) as refused:
        parse_measure(name)
    assert says in str(refused.value)
    assert "nDCG" in str(refused.value) and "ndcg_cut_k, ndcg" in str(refused.value) and "recip_rank" in str(
        refused.value)


def test_trec_eval_names_give_trec_eval_values_on_ties_printed_as_asked(capsys, tmp_path):
    result, _ = evaluate_json(capsys, tmp_path, *(arg for name in TREC_EVAL_NAMES for arg in ("--metric", name)))
    means, n_queries = reference(TREC_EVAL_NAMES)
    assert result["num_q"] == n_queries == 3  # q4 is not in the run: trec_eval without -c leaves it out
    assert list(result["all"]) == TREC_EVAL_NAMES
    for name in TREC_EVAL_NAMES:
        assert result["all"][name] == pytest.approx(means[name.replace(".", "_")], abs=1e-9), name
    assert result["measures"]["ndcg_cut.3"] == "nDCG@3" and result["measures"]["recip_rank"] == "RR"


def test_without_metric_trec_evals_default_measures_with_its_values(capsys, tmp_path):
    result, _ = evaluate_json(capsys, tmp_path)
    means, _ = reference(DEFAULT_MEASURES)
    assert list(result["all"]) == list(DEFAULT_MEASURES)
    assert result["all"] == pytest.approx({name: means[name] for name in DEFAULT_MEASURES}, abs=1e-9)


def test_lines_echo_each_measure_as_asked(capsys, tmp_path):
    run_path, qrels_path = write_trec(tmp_path, RUN, QRELS)
    assert main(["evaluate", "--qrels", str(qrels_path), "--run", str(run_path), "-m", "MRR@10", "-m", "RR@10",
                 "-m", "ndcg_cut_10", "-m", "nDCG@10", "-q"]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [name.strip() for name, query, _ in lines if query == "all"] == [
        "num_q", "MRR@10", "RR@10", "ndcg_cut_10", "nDCG@10"]
    values = {(name.strip(), query): value for name, query, value in lines}
    assert values["MRR@10", "q1"] == values["RR@10", "q1"] and values["ndcg_cut_10", "q2"] == values["nDCG@10", "q2"]


def test_the_warning_says_which_queries_count_0_and_the_mean_without_them(capsys, tmp_path):
    _, err = evaluate_json(capsys, tmp_path, "--metric", "recip_rank")
    means, _ = reference(["recip_rank"])  # over q1, q2 and q3 (no relevant document: 0)
    without = means["recip_rank"] * 3 / 2
    assert (f"of the 3 averaged queries, 1 has no relevant document in {tmp_path / 'qrels.txt'}; they count 0, as in "
            "trec_eval. Over the 2 queries of the run with a relevant document") in err
    assert f"recip_rank is {without:.4f} instead of {means['recip_rank']:.4f}." in err
    dropped, _ = evaluate_json(capsys, tmp_path, "--metric", "recip_rank", "--no-relevant", "drop")
    assert f"{dropped['all']['recip_rank']:.4f}" == f"{without:.4f}"
    _, err = evaluate_json(capsys, tmp_path, "--metric", "recip_rank", "-c")
    assert "of the 4 averaged queries, 1 has no relevant document" in err and "1 is not in the run (-c)" in err


def test_compare_fail_on_reject_exits_1_on_a_reject_only(compare_files, capsys):  # noqa: F811
    base = ["compare", "--qrels", str(compare_files / "qrels.txt"), "--baseline", str(compare_files / "fusion.trec"),
            "--queries", str(compare_files / "queries.jsonl"), "--critical-slice", "language", "--json", *FAST,
            "--trials", "20"]
    better, broken = ["--run", str(compare_files / "better.trec")], ["--run", str(compare_files / "ko_broken.trec")]
    assert main([*base, *better, *broken, "--fail-on-reject"]) == 1
    decisions = {name: found["decision"] for name, found in json.loads(capsys.readouterr().out)["challengers"].items()}
    assert decisions == {"better": "ACCEPT", "ko_broken": "REJECT"}  # printed all the same
    assert main([*base, *better, "--fail-on-reject"]) == 0
    assert json.loads(capsys.readouterr().out)["challengers"]["better"]["decision"] == "ACCEPT"


def _options(parser, path):
    """(command path, option) for every argument of the parser and its subcommands."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from ((path, f"command {choice.dest}", choice.help) for choice in action._choices_actions)
            for name, sub in action.choices.items():
                yield from _options(sub, f"{path} {name}")
        else:
            yield path, "/".join(action.option_strings) or action.dest, action.help


def test_every_option_of_every_command_has_help():
    found = list(_options(build_parser(), "rerankeval"))
    assert {"rerankeval evaluate", "rerankeval compare", "rerankeval loadtest", "rerankeval serve"} <= {
        path for path, _, _ in found}
    missing = [f"{path} {option}" for path, option, text in found if not text or text == argparse.SUPPRESS]
    assert missing == []
