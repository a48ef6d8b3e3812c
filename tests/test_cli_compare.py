"""`rerankeval compare` on small TREC files: the pipeline's comparison and verdict, as Markdown and as JSON."""

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from rerankeval.cli import compare as cli_compare
from rerankeval.cli.main import build_parser, main
from rerankeval.stats import defaults
from rerankeval.data.trec import read_qrels, read_run
from tests.test_cli_evaluate import rerankeval as console

REPO = Path(__file__).resolve().parents[1]
N_QUERIES = 40
FAST = ["--samples", "500", "--trials", "40"]


class Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def rerankeval(capsys):
    """The command in this process (the imports once); ``console`` runs the installed one."""

    def run(*args, check=True):
        returncode = main([str(arg) for arg in args])
        out = capsys.readouterr()
        if check:
            assert returncode == 0, out.err
        return Result(returncode, out.out, out.err)

    return run


def write_run(path, positions, tag):
    """Each query ranks 10 documents; its relevant one, ``rel``, at ``positions[query]`` (1-based)."""
    lines = []
    for query, position in enumerate(positions):
        others = iter(f"d{k}" for k in range(10))
        docs = ["rel" if rank == position else next(others) for rank in range(1, 11)]
        lines += [f"Q{query:02d} Q0 {doc} {rank} {10 - rank}.5 {tag}" for rank, doc in enumerate(docs, start=1)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare")
    rng = np.random.default_rng(5)
    # Judged non-relevant d0 for every query: the qrels are not positive-only.
    (folder / "qrels.txt").write_text("".join(f"Q{q:02d} 0 rel 1\nQ{q:02d} 0 d0 0\n" for q in range(N_QUERIES)))
    baseline = rng.integers(2, 6, N_QUERIES)
    write_run(folder / "fusion.trec", baseline, "fusion")
    write_run(folder / "better.trec", np.ones(N_QUERIES, dtype=int), "better")
    write_run(folder / "copy.trec", baseline, "copy")
    worse_on_ko = np.where(np.arange(N_QUERIES) % 2 == 0, 10, 1)
    write_run(folder / "ko_broken.trec", worse_on_ko, "ko")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as handle:
        for q in range(N_QUERIES):
            language = "ko" if q % 2 == 0 else "en"
            handle.write(json.dumps({"_id": f"Q{q:02d}", "text": f"query {q}", "metadata": {"language": language}})
                         + "\n")
    return folder


def test_json_gives_each_challengers_decision_ci_and_reasons(files):
    out = console("compare", "--qrels", files / "qrels.txt", "--baseline", files / "fusion.trec",
                     "--run", files / "better.trec", "--run", f"same={files / 'copy.trec'}",
                     "--run", files / "ko_broken.trec", "--queries", files / "queries.jsonl",
                     "--critical-slice", "language", "--metric", "nDCG@10", "--metric", "MRR@10", "--json",
                     *FAST).stdout
    result = json.loads(out)
    assert result["baseline"] == "fusion" and result["queries"] == N_QUERIES
    assert result["rule"]["critical_slices"] == ["language=* budget 0.05"]
    assert sorted(result["challengers"]) == ["better", "ko_broken", "same"]
    better = result["challengers"]["better"]
    assert better["decision"] == "ACCEPT" and better["metric"] == "nDCG@10"
    assert better["ci"][0] > 0 and better["delta"] > 0.03 and better["confidence"] == 0.95
    assert better["reasons"] and set(better["operating_characteristics"]) == {"at_zero", "at_min_delta"}
    assert set(better["metrics"]) == {"nDCG@10", "RR@10"}  # MRR@10 is RR@10's alias
    same = result["challengers"]["same"]
    assert same["decision"] == "INCONCLUSIVE"
    assert same["decided_by"].startswith(f"run identical to the baseline's on all {N_QUERIES} queries")
    broken = result["challengers"]["ko_broken"]
    assert broken["decision"] == "REJECT"
    assert broken["decided_by"].startswith("critical slice language=ko (n=20) regresses beyond its budget")
    assert result["unjudged"]["applicable"] is True


def test_markdown_puts_the_decision_and_its_reason_first(files, rerankeval):
    out = rerankeval("compare", "--qrels", files / "qrels.txt", "--baseline", files / "fusion.trec",
                     "--run", files / "better.trec", "--confidence", "0.9", *FAST).stdout
    assert out.startswith(f"# rerankeval compare: {N_QUERIES} queries, baseline `fusion`")
    assert "## Release verdict vs `fusion`" in out
    assert "| challenger | decision | Δ nDCG@10 [90% CI] | decided by |" in out
    assert "| `better` | **ACCEPT** |" in out
    assert "<details><summary>Every reason and note</summary>" in out
    assert "REJECT at effect 0" in out and "95% CI" not in out


def test_positive_only_qrels_turn_the_unjudged_check_off(files, rerankeval):
    (files / "positive.txt").write_text("".join(f"Q{q:02d} 0 rel 1\n" for q in range(N_QUERIES)))
    result = json.loads(rerankeval("compare", "--qrels", files / "positive.txt", "--baseline", files / "fusion.trec",
                                   "--run", files / "better.trec", "--json", *FAST).stdout)
    assert result["unjudged"]["applicable"] is False
    assert result["challengers"]["better"]["decision"] == "ACCEPT"
    assert any("unjudged check not applicable" in note for note in result["challengers"]["better"]["notes"])


def test_bad_input_exits_2_with_a_message(files, rerankeval):
    base = ["compare", "--qrels", files / "qrels.txt", "--baseline", files / "fusion.trec", *FAST]
    no_queries = rerankeval(*base, "--run", files / "better.trec", "--critical-slice", "language", check=False)
    assert no_queries.returncode == 2 and "--critical-slice needs --queries" in no_queries.stderr
    unknown = rerankeval(*base, "--run", files / "better.trec", "--queries", files / "queries.jsonl",
                         "--critical-slice", "intent", check=False)
    assert unknown.returncode == 2 and "'intent': no query in" in unknown.stderr
    clash = rerankeval(*base, "--run", f"fusion={files / 'better.trec'}", check=False)
    assert clash.returncode == 2 and "named alike" in clash.stderr
    (files / "upper.txt").write_text("q00 0 rel 1\n")
    disjoint = rerankeval("compare", "--qrels", files / "upper.txt", "--baseline", files / "fusion.trec",
                          "--run", files / "better.trec", check=False)
    assert disjoint.returncode == 2 and "differ in letter case only" in disjoint.stderr


def test_a_rule_file_states_the_rule_the_flags_would(files, rerankeval):
    base = ["compare", "--qrels", files / "qrels.txt", "--baseline", files / "fusion.trec", "--run",
            files / "better.trec", "--run", files / "copy.trec", "--queries", files / "queries.jsonl", "--json", *FAST]
    flags = rerankeval(*base, "--min-delta", "0.05", "--critical-slice", "language", "--slice-budget", "0.1")
    (files / "rule.yaml").write_text("primary_metric: nDCG@10\nmin_delta: 0.05\nunjudged_margin: 0.1\n"
                                     "critical_slices: [{column: language, budget: 0.1}]\n"
                                     "claims: {copy: {claim: noninferior, margin: 0.02}}\n")
    ruled = rerankeval(*base, "--rule", files / "rule.yaml")
    by_flags, by_rule = (json.loads(result.stdout)["challengers"] for result in (flags, ruled))
    assert by_rule["better"] == by_flags["better"]  # the same rule, the same verdict
    assert by_rule["copy"]["claim"]["claim"] == "noninferior" and "claim" not in by_flags["copy"]  # per system
    both = rerankeval(*base, "--rule", files / "rule.yaml", "--min-delta", "0.05", check=False)
    assert both.returncode == 2 and "states the release rule: drop --min-delta" in both.stderr
    (files / "list.yaml").write_text("- nDCG@10\n")
    not_a_rule = rerankeval(*base, "--rule", files / "list.yaml", check=False)
    assert not_a_rule.returncode == 2 and "not a release rule (a mapping with primary_metric)" in not_a_rule.stderr
    (files / "negative.yaml").write_text("primary_metric: nDCG@10\nmin_delta: -0.01\n")
    negative = rerankeval(*base, "--rule", files / "negative.yaml", check=False)
    assert negative.returncode == 2 and f"--rule {files / 'negative.yaml'}: " in negative.stderr
    assert "min_delta: Input should be greater than or equal to 0 (got -0.01)" in negative.stderr


def test_a_rule_claiming_for_a_system_without_a_run_decides_nothing_and_says_so(files, rerankeval):
    """The pipeline's params.yaml carries claims for the demo's systems; on another collection's runs (SciFact has no
    routed_blend) the same rule file decides the claims it can, as the compare stage does, not a traceback."""
    (files / "shared_rule.yaml").write_text("primary_metric: nDCG@10\nmin_delta: 0.03\nclaims:\n"
                                            "  copy: {claim: noninferior, margin: 0.02}\n"
                                            "  routed_blend: {claim: noninferior, margin: 0.02, against: blend}\n")
    found = rerankeval("compare", "--qrels", files / "qrels.txt", "--baseline", files / "fusion.trec", "--run",
                       files / "copy.trec", "--json", "--rule", files / "shared_rule.yaml", *FAST)
    assert ("rerankeval compare: note: the claim for routed_blend decides nothing: no run is named routed_blend or "
            "the system it is compared with (--rule)") in found.stderr
    challengers = json.loads(found.stdout)["challengers"]
    assert set(challengers) == {"copy"} and challengers["copy"]["claim"]["claim"] == "noninferior"


def test_an_identical_run_whose_ir_metadata_says_it_reduces_to_the_baseline_gets_that_reason(files, rerankeval):
    """export-run --ir-metadata records what a blend at weight 0 reduces to; the CLI reads it as the compare stage
    reads the run's own metadata, so its reason is the pipeline's, not 'probably a configuration that never
    reached the system'."""
    from rerankeval.cli.export_run import ir_metadata_header
    from rerankeval.data.trec import read_ir_metadata, read_trec_run

    why = "its weight fitted on the train split (30 queries, rule one_se) is 0, so it ranks by fusion alone"
    header = ir_metadata_header("blend", {"describe": {"kind": "blend", "reduces_to": {"system": "fusion",
                                                                                       "why": why}}})
    blend = files / "blend.trec"
    blend.write_text(header + (files / "copy.trec").read_text())
    assert read_trec_run(blend).equals(read_trec_run(files / "copy.trec"))  # trec_eval's reading skips the record
    assert read_ir_metadata(blend)["method"]["retrieval"]["reranker"]["reduces to"]["system"] == "fusion"
    assert read_ir_metadata(files / "copy.trec") is None
    found = rerankeval("compare", "--qrels", files / "qrels.txt", "--baseline", f"fusion={files / 'fusion.trec'}",
                       "--run", f"blend={blend}", "--run", f"copy={files / 'copy.trec'}", "--json", *FAST)
    challengers = json.loads(found.stdout)["challengers"]
    assert challengers["blend"]["decided_by"] == f"run identical to the baseline's on all {N_QUERIES} queries: {why}"
    assert "probably a configuration that never reached the system" in challengers["copy"]["decided_by"]


def test_a_run_missing_queries_is_scored_0_there_with_a_warning(files, rerankeval):
    lines = (files / "better.trec").read_text().splitlines()
    (files / "partial.trec").write_text("\n".join(line for line in lines if not line.startswith("Q00 ")) + "\n")
    result = rerankeval("compare", "--qrels", files / "qrels.txt", "--baseline", files / "fusion.trec",
                        "--run", files / "partial.trec", "--json", *FAST)
    assert "run 'partial' has no ranking for 1 of the 40 compared queries" in result.stderr
    assert json.loads(result.stdout)["queries"] == N_QUERIES


def test_defaults_are_the_pipelines():
    conf = yaml.safe_load((REPO / "conf" / "compare" / "default.yaml").read_text())
    release = conf["release"]
    assert (defaults.DEFAULT_PRIMARY_METRIC, defaults.DEFAULT_MIN_DELTA, defaults.DEFAULT_UNJUDGED_MARGIN) == (
        release["primary_metric"], release["min_delta"], release["unjudged_margin"])
    assert defaults.DEFAULT_MIN_RUN_COVERAGE == release["min_run_coverage"]
    assert defaults.DEFAULT_UNJUDGED_MEASURE == conf["unjudged"]["measure"]
    assert (defaults.DEFAULT_N_SAMPLES, defaults.DEFAULT_SEED, defaults.DEFAULT_CONFIDENCE,
            defaults.DEFAULT_TRIALS) == (conf["samples"], conf["seed"], conf["confidence"],
                                         conf["simulation"]["trials"])
    demo = yaml.safe_load((REPO / "conf" / "dataset" / "demo.yaml").read_text())
    assert {spec["budget"] for spec in demo["critical_slices"]} == {defaults.DEFAULT_SLICE_BUDGET}
    # the CLI has no defaults of its own: each of its flags' is the statistics' default
    parsed = build_parser().parse_args(["compare", "--qrels", "q", "--baseline", "b", "--run", "r"])
    assert (parsed.samples, parsed.seed, parsed.confidence, parsed.trials, parsed.min_coverage) == (
        defaults.DEFAULT_N_SAMPLES, defaults.DEFAULT_SEED, defaults.DEFAULT_CONFIDENCE, defaults.DEFAULT_TRIALS,
        defaults.DEFAULT_MIN_RUN_COVERAGE)


def test_a_baseline_that_ranks_one_of_twenty_queries_is_refused_not_accepted(tmp_path, capsys):
    """The probe's case: 19 of the baseline's ids differ from the qrels' in letter case only."""
    qrels = "".join(f"Q{q:02d} 0 rel 1\nQ{q:02d} 0 d0 0\n" for q in range(20))
    (tmp_path / "qrels.txt").write_text(qrels)
    (tmp_path / "base.trec").write_text("".join(f"{'Q' if q == 0 else 'q'}{q:02d} Q0 d0 1 2.0 base\n"
                                                f"{'Q' if q == 0 else 'q'}{q:02d} Q0 rel 2 1.0 base\n"
                                                for q in range(20)))
    (tmp_path / "new.trec").write_text("".join(f"Q{q:02d} Q0 rel 1 2.0 new\nQ{q:02d} Q0 d0 2 1.0 new\n"
                                               for q in range(20)))
    args = ["compare", "--qrels", str(tmp_path / "qrels.txt"), "--baseline", str(tmp_path / "base.trec"), "--run",
            str(tmp_path / "new.trec"), "--samples", "200", "--trials", "20"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "run 'base' ranks 1 of the 20 compared queries" in err and "19 more of its ids match" in err
    assert "Fix: use the qrels' query ids in the run" in err


def test_a_run_misspelling_some_query_ids_in_letter_case_is_refused_whatever_its_coverage(tmp_path, capsys):
    """11 of 20 baseline ids match, 9 differ in letter case only: above --min-coverage, yet those 9 queries would score
    0 for the baseline and hand the challenger an ACCEPT (the audit's case); refused for either role."""
    (tmp_path / "qrels.txt").write_text("".join(f"q{q:02d} 0 rel 1\nq{q:02d} 0 d0 0\n" for q in range(20)))
    (tmp_path / "base.trec").write_text("".join(f"{'q' if q <= 10 else 'Q'}{q:02d} Q0 d0 1 2.0 base\n"
                                                f"{'q' if q <= 10 else 'Q'}{q:02d} Q0 rel 2 1.0 base\n"
                                                for q in range(20)))
    (tmp_path / "new.trec").write_text("".join(f"q{q:02d} Q0 rel 1 2.0 new\nq{q:02d} Q0 d0 2 1.0 new\n"
                                               for q in range(20)))
    for baseline, run in (("base", "new"), ("new", "base")):
        args = ["compare", "--qrels", str(tmp_path / "qrels.txt"), "--baseline", str(tmp_path / f"{baseline}.trec"),
                "--run", str(tmp_path / f"{run}.trec"), "--samples", "200", "--trials", "20"]
        assert main(args) == 2
        err = capsys.readouterr().err
        assert ("run 'base' ranks 9 of the 20 compared queries" in err
                and "differ from theirs in letter case only (run 'Q11', qrels 'q11')" in err)
        assert "Fix: use the qrels' query ids in the run" in err and "ACCEPT" not in err


def test_a_run_ranking_a_judged_query_whose_id_differs_from_a_missing_one_in_case_only_is_not_refused(tmp_path):
    """Q11 and q11 both in the qrels: ranking Q11 and not q11 is no misspelling (q11 then scores 0, with a warning)."""
    (tmp_path / "qrels.txt").write_text("".join(f"q{q:02d} 0 rel 1\nq{q:02d} 0 d0 0\n" for q in range(20))
                                        + "Q11 0 rel 1\n")
    (tmp_path / "run.trec").write_text("".join(f"q{q:02d} Q0 rel 1 2.0 r\n" for q in range(20) if q != 11)
                                       + "Q11 Q0 rel 1 2.0 r\n")
    runs = {"r": read_run(str(tmp_path / "run.trec"))}
    judged = set(map(str, read_qrels(str(tmp_path / "qrels.txt"))["query_id"]))
    cli_compare.refuse_sparse(runs, sorted(judged), 0.5, "qrels.txt", judged)  # nothing raised
    with pytest.raises(ValueError, match=r"\(run 'Q11', qrels 'q11'\)"):
        cli_compare.refuse_sparse(runs, sorted(judged - {"Q11"}), 0.5, "qrels.txt", judged - {"Q11"})
