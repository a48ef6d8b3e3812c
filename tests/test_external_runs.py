"""External runs are never cut silently, and any pipeline run leaves as a TREC file trec_eval reads in our order.

A `trec_run` system counts its rows outside the frozen candidates (per query and in total), its queries that are not
evaluated and the evaluated queries it lacks: in the run's metadata, the stage's log line and a report warning.
`rerankeval export-run` writes a pipeline run with its own scores; pytrec_eval reads the file back in the run's
order and gets the pipeline's nDCG@10 on every query.
"""


import numpy as np
import pandas as pd
import pytest
import pytrec_eval
import yaml

from rerankeval.cli.export_run import export_run
from rerankeval.cli.main import main
from rerankeval.core.errors import ContractError
from rerankeval.core.io import table_metadata
from rerankeval.data.trec import read_trec_run
from rerankeval.eval.engine import evaluate
from rerankeval.pipeline import rerank
from rerankeval.pipeline.params import load_params
from rerankeval.report.build import _run_coverage_warnings
from rerankeval.report.markdown import systems_section
from rerankeval.retrieval.candidates import load_candidates
from rerankeval.stats.schema import ComparisonCore
from rerankeval.systems.base import FUSED_TAIL, FUSION_FALLBACK, RERANKED
from tests.overlap_scorer import KIND
from tests.stage_fixtures import REPO, frozen_tiny_project, tiny_paths
from tests.analysis_records import method


@pytest.fixture
def project(tmp_path, tiny_beir):
    params = frozen_tiny_project(tmp_path, tiny_beir)
    candidates = load_candidates(tiny_paths(tmp_path).candidates, with_text=False)
    test = sorted(set(candidates["query_id"]) - {"q6", "q7"})
    # The team's run: q0..q4's candidates, two documents outside them for q0 and one for q1, the train query q7
    # (not evaluated) and no row for q5.
    rows = [(row.query_id, row.doc_id, 10.0 - row.fused_rank) for row in candidates.itertuples()
            if row.query_id in test[:5]]
    rows += [("q0", "elsewhere1", 20.0), ("q0", "elsewhere2", 19.0), ("q1", "elsewhere3", 0.5)]
    rows += [("q7", doc_id, 1.0) for doc_id in ("d7a", "d7b", "d7c")]
    run_file = tmp_path / "team.trec"
    run_file.write_text("".join(f"{q} Q0 {d} 0 {s} team\n" for q, d, s in rows))
    params["systems"] = {
        "fusion": params["systems"]["fusion"],
        "oracle": {**params["systems"]["oracle"], "depth": 3},
        "overlap": {"kind": KIND, "depth": 4, "seconds_per_pair": 0.0, "fail_on_korean": True,
                    "cache_dir": str(tmp_path / "cache"), "depends_on": "tests"},
        "team": {"kind": "trec_run", "path": str(run_file), "depth": 5, "depends_on": str(run_file)}}
    params["system_names"] = list(params["systems"])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return tmp_path, len(rows) - 3


def test_a_trec_run_with_documents_outside_the_candidates_is_counted_logged_and_warned(project, capsys):
    folder, evaluated_rows = project
    paths = tiny_paths(folder)
    rerank.run(load_params(folder / "params.yaml"), paths, "team")
    expected = (f"3 of {evaluated_rows} run rows ({3 / evaluated_rows:.1%}) name documents outside the frozen "
                "candidates (top 5); run queries not evaluated: 1 (3 rows, e.g. q7); evaluated queries without a run "
                "row: 1 (left in fused order)")
    assert expected in capsys.readouterr().out
    coverage = table_metadata(paths.run("team"))["describe"]["run_coverage"]
    assert coverage["outside_by_query"] == {"q0": 2, "q1": 1}
    assert (coverage["outside_rows"], coverage["run_rows"], coverage["other_queries"],
            coverage["missing_queries"]) == (3, evaluated_rows, 1, 1)
    reranked = set(load_candidates(paths.candidates, with_text=False)["query_id"]) - {"q6", "q7"}  # the test split
    assert coverage["queries"] == len(reranked)
    assert coverage["ranked_queries"] == len(reranked) - 1  # q5 has no row; q0 and q1 name candidates besides others

    rerank.run(load_params(folder / "params.yaml"), paths, "fusion")
    warnings = _run_coverage_warnings({system: table_metadata(paths.run(system)) for system in ("fusion", "team")})
    assert list(warnings) == ["team"]
    means = {"CandidateRecall@5": 1.0}
    compare = ComparisonCore.model_validate({
        "baseline": "fusion", "queries": 6, "method": method(), "comparisons": [], "slices": {},
        "unjudged": {},
        "systems": {s: {"nDCG@10": {"mean": 0.5, "low": 0.4, "high": 0.6}} for s in ("fusion", "team")}})
    section = systems_section(compare, {"systems": {"fusion": means, "team": means}}, ["nDCG@10"], [], 5, warnings)
    assert "| `team` ⚠ |" in section and "| `fusion` |" in section
    assert f"⚠ `team`: {expected}: those rows were not used" in section


def trec_eval_order(trec: pd.DataFrame) -> pd.DataFrame:
    """The file's rows in trec_eval's order: score as a 32-bit float descending, then doc id descending."""
    return trec.assign(single=trec["score"].astype(np.float32)).sort_values(
        ["query_id", "single", "doc_id"], ascending=[True, False, False])


@pytest.mark.parametrize("system", ["fusion", "oracle", "overlap"])
def test_an_exported_run_reads_back_in_its_order_with_its_scores_and_ndcg(project, system):
    folder, _ = project
    paths = tiny_paths(folder)
    rerank.run(load_params(folder / "params.yaml"), paths, system)
    run = pd.read_parquet(paths.run(system)).sort_values(["query_id", "rank"], ignore_index=True)
    summary = export_run(paths, system, folder / f"{system}.trec")
    trec = read_trec_run(folder / f"{system}.trec")

    read_back = trec_eval_order(trec)
    assert read_back.groupby("query_id")["doc_id"].apply(list).to_dict() == \
        run.groupby("query_id")["doc_id"].apply(list).to_dict()
    qrels = pd.read_parquet(paths.snapshot / "qrels.parquet")
    pipeline = evaluate(run, qrels, ["nDCG@10"], queries=sorted(set(run["query_id"])))["nDCG@10"]
    judged = {q: {d: int(r) for d, r in zip(g["doc_id"], g["relevance"])} for q, g in qrels.groupby("query_id")}
    as_read = {q: dict(zip(g["doc_id"], g["score"].astype(float))) for q, g in trec.groupby("query_id")}
    values = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut.10"}).evaluate(as_read)
    assert {q: round(v["ndcg_cut_10"], 12) for q, v in values.items()} == \
        {q: round(v, 12) for q, v in pipeline.items()}

    written = trec.set_index(["query_id", "doc_id"])["score"]
    own = run.set_index(["query_id", "doc_id"])
    reranked = own["mode"] == RERANKED
    changed = reranked & (written.reindex(own.index) != own["score"])
    single = run["score"].astype(np.float32)
    tied = ((single == single.shift()) & (run["query_id"] == run["query_id"].shift())).to_numpy()
    assert not (changed.to_numpy() & ~tied).any(), "a score changed where it did not tie"
    assert summary["nudged"] == int(changed.sum())
    assert summary["unscored"] == int((~reranked).sum())
    unscored = written.reindex(own.index)[~reranked]
    assert (unscored == np.floor(unscored)).all()  # plainly not scores
    if system == "oracle":  # grades tie a lot, and the rows beyond depth 3 keep the fused order
        assert summary["nudged"] > 0 and (own["mode"] == FUSED_TAIL).sum() == 2 * own.index.levels[0].size
    if system == "overlap":  # the Korean queries failed: their whole ranking is the fused order
        assert (own["mode"] == FUSION_FALLBACK).any()


def test_export_run_on_the_command_line_and_for_an_unknown_system(project, monkeypatch, capsys):
    folder, _ = project
    paths = tiny_paths(folder)
    rerank.run(load_params(folder / "params.yaml"), paths, "fusion")
    monkeypatch.chdir(REPO)  # dvc.yaml's paths; --runs points at the test's folder
    assert main(["export-run", "--system", "fusion", "--out", str(folder / "out.trec"), "--runs",
                 str(paths.runs)]) == 0
    assert f"export-run: {folder / 'out.trec'}: 30 rows of 6 queries" in capsys.readouterr().out
    assert main(["export-run", "--system", "nope", "--out", str(folder / "x.trec"), "--runs", str(paths.runs)]) == 2
    error = capsys.readouterr().err
    assert "run_nope.parquet: no run of system 'nope'. Fix: pass --system one of fusion." in error
    with pytest.raises(ContractError, match="no run of system 'team'"):
        export_run(paths, "team", folder / "team_out.trec")
