"""Candidate sources (retrieval.source): a team's TREC run or replay file as the frozen candidates, and
`rerankeval export-candidates`, whose replay file freezes back into the same tables and the same metrics."""

import json
import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from rerankeval.cli.main import main as cli
from rerankeval.core.errors import CollectionError, ConfigError
from rerankeval.core.hashing import sha256_text
from rerankeval.core.io import DIGEST_KEY, read_json, read_table, table_metadata, write_table
from rerankeval.data.beir import load_beir
from rerankeval.data.snapshot import Snapshot, write_snapshot
from rerankeval.pipeline import evaluate, rerank
from rerankeval.pipeline.params import Params, load_params
from rerankeval.pipeline.system_configs import check_first_stage_reads, system_configs
from rerankeval.rag.config import RagConfig
from rerankeval.retrieval import dense
from rerankeval.retrieval.candidates import (CANDIDATES_SCHEMA, FIRST_STAGE_SCHEMA, candidate_source, load_candidates,
                                             write_candidates)
from rerankeval.retrieval.config import ReplayConfig, RunConfig
from rerankeval.retrieval.sources import freeze_candidates
from rerankeval.retrieval.text import passage_text
from tests.stage_fixtures import REPO, frozen_tiny_project, tiny_paths
from tests.analysis_records import method

SYSTEMS = ("fusion", "bm25", "dense", "oracle")


@pytest.fixture
def snapshot(tmp_path, tiny_beir) -> Snapshot:
    write_snapshot(load_beir(tiny_beir), tmp_path / "snapshot", source={})
    return Snapshot(tmp_path / "snapshot")


@pytest.fixture
def no_encoder(monkeypatch):
    """Any attempt to load a dense encoder fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("a run or replay source loaded an encoder")
    monkeypatch.setattr(dense, "encoder_for", refuse)


def write_run(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_trec_run_freezes_its_top_n_per_query_in_trec_eval_order(tmp_path, snapshot, no_encoder):
    # Lines out of order; q0's d1a, d2a and d3a tie at 2.5 (trec_eval: doc id descending); q0 holds 5 rows, top_n 4.
    run = write_run(tmp_path / "run.trec", [
        "q0 Q0 d1a 1 2.5 prod", "q0 Q0 d0a 2 9.0 prod", "q1 Q0 d1b 1 3.25 prod", "q0 Q0 d3a 3 2.5 prod",
        "q0 Q0 d4c 4 0.5 prod", "q0 Q0 d2a 5 2.5 prod", "q1 Q0 d1a 2 7.0 prod"])
    frozen = freeze_candidates(snapshot, RunConfig(source="run", run=str(run), top_n=4))
    candidates = frozen.candidates.to_pandas()
    assert candidates[["query_id", "doc_id", "fused_rank", "fused_score"]].values.tolist() == [
        ["q0", "d0a", 1, 9.0], ["q0", "d3a", 2, 2.5], ["q0", "d2a", 3, 2.5], ["q0", "d1a", 4, 2.5],
        ["q1", "d1a", 1, 7.0], ["q1", "d1b", 2, 3.25]]
    assert candidates[["bm25_score", "bm25_rank", "dense_score", "dense_rank"]].isna().all().all()
    corpus = snapshot.table("corpus").to_pandas().set_index("doc_id")
    texts = load_passages_of(frozen)
    assert texts[candidates.loc[0, "passage_sha256"]] == passage_text(corpus.loc["d0a", "title"],
                                                                      corpus.loc["d0a", "text"])
    assert frozen.first_stage.num_rows == 0 and frozen.candidates.schema.equals(CANDIDATES_SCHEMA)
    source = candidate_source(frozen.provenance)
    assert source["kind"] == "run" and source["name"] == "run" and source["beyond_top_n"] == 1
    assert source["queries_without_candidates"] == 6
    assert any("6 of 8 queries have no candidates" in line and "of split" in line for line in frozen.log)


def load_passages_of(frozen) -> dict[str, str]:
    table = frozen.passages.to_pydict()
    return dict(zip(table["passage_sha256"], table["passage"]))


def test_run_scores_that_trec_eval_ties_at_32_bits_keep_the_runs_order(tmp_path, snapshot, no_encoder):
    # Equal as 32-bit floats, so trec_eval orders them by doc id descending (d2a first), although d1a's is larger.
    run = write_run(tmp_path / "run.trec", ["q0 Q0 d1a 1 1.000000001 x", "q0 Q0 d2a 2 1.0 x"])
    frozen = freeze_candidates(snapshot, RunConfig(source="run", run=str(run)))
    rows = frozen.candidates.to_pandas()
    assert rows["doc_id"].tolist() == ["d2a", "d1a"] and rows["fused_score"].tolist() == [1.0, 1.0]
    assert candidate_source(frozen.provenance)["scores_at_float32"] == 1


@pytest.mark.parametrize("line, problem", [
    ("q1 Q0 nowhere 1 2.0 x", "line 2: document 'nowhere' is not in the snapshot's corpus"),
    ("q99 Q0 d1a 1 2.0 x", "line 2: query 'q99' is not a query of the snapshot"),
    ("q0 Q0 d0a 3 1.0 x", "line 2: document 'd0a' appears a second time for query 'q0'"),
    ("q0 Q0 d0a 1", "line 2: expected 6 fields, found 4"),
])
def test_a_bad_run_line_is_refused_with_file_and_line(tmp_path, snapshot, line, problem):
    run = write_run(tmp_path / "run.trec", ["q0 Q0 d0a 1 2.0 x", line])
    with pytest.raises(CollectionError) as refused:
        freeze_candidates(snapshot, RunConfig(source="run", run=str(run)))
    assert f"{run}" in str(refused.value) and problem in str(refused.value) and "Fix:" in str(refused.value)


def replay_line(query_id: str, candidates: list[dict], **extra) -> str:
    return json.dumps({"query_id": query_id, "candidate_source": "prod-v7", "corpus_version": "2024-06-01",
                       "candidates": candidates, **extra}, ensure_ascii=False)


def candidate(document_id: str, text: str, rank: int, score: float, **extra) -> dict:
    return {"document_id": document_id, "document_version": f"sha256:{sha256_text(text)}", "text": text,
            "retrieval_rank": rank, "retrieval_score": score, **extra}


def test_a_replay_freezes_its_own_texts_in_rank_order(tmp_path, snapshot, no_encoder):
    path = tmp_path / "replay.jsonl"
    path.write_text("\n".join([
        replay_line("q1", [candidate("d1a", "Basic plan: 30 days (prod text)", 2, 0.5,
                                     document_version=f"SHA-256: {sha256_text('Basic plan: 30 days (prod text)')}"),
                           candidate("not-in-corpus", "미리 보기", 1, 0.9, document_version="v3")]),
        replay_line("q0", []),
    ]) + "\n", encoding="utf-8")
    frozen = freeze_candidates(snapshot, ReplayConfig(source="replay", path=str(path)))
    rows = frozen.candidates.to_pandas()
    assert rows[["query_id", "doc_id", "parent_id", "fused_rank", "fused_score"]].values.tolist() == [
        ["q1", "not-in-corpus", "not-in-corpus", 1, 0.9], ["q1", "d1a", "d1a", 2, 0.5]]
    assert load_passages_of(frozen)[rows.loc[1, "passage_sha256"]] == "Basic plan: 30 days (prod text)"
    source = candidate_source(frozen.provenance)
    assert source["name"] == "prod-v7" and source["queries_without_candidates"] == 7
    assert any("corpus_version '2024-06-01' is not this snapshot's corpus" in line for line in frozen.log)


@pytest.mark.parametrize("bad, problem", [
    (candidate("d1a", "edited text", 1, 0.5, document_version=f"sha256:{sha256_text('the original')}"),
     "line 2: candidate 1 ('d1a'): document_version sha256:"),
    (candidate("d1a", "x", 0, 0.5), "line 2: candidate 1 ('d1a'): retrieval_rank must be an integer >= 1, got 0"),
    ({**candidate("d1a", "x", 1, 0.5), "retreival_score": 1},
     "line 2: candidate 1 has unknown key(s) 'retreival_score'"),
    (candidate("d1a", "x", 1, 10 ** 400), "line 2: candidate 1 ('d1a'): retrieval_score must be a finite number"),
    (candidate("d1a", "edited text", 1, 0.5, document_version=f"SHA256:{sha256_text('the original')}"),
     "line 2: candidate 1 ('d1a'): document_version SHA256:"),
    (candidate("d1a", "edited text", 1, 0.5, document_version=f" sha256:{sha256_text('the original')}"),
     "line 2: candidate 1 ('d1a'): document_version  sha256:"),
    (candidate("d1a", "edited text", 1, 0.5, document_version=f"sha256 :{sha256_text('the original')}"),
     "line 2: candidate 1 ('d1a'): document_version sha256 :"),
    (candidate("d1a", "edited text", 1, 0.5, document_version=f"SHA-256: {sha256_text('the original')}"),
     "line 2: candidate 1 ('d1a'): document_version SHA-256:"),
])
def test_a_bad_replay_candidate_is_refused_with_the_line(tmp_path, snapshot, bad, problem):
    path = tmp_path / "replay.jsonl"
    path.write_text(replay_line("q0", []) + "\n" + replay_line("q1", [bad]) + "\n", encoding="utf-8")
    with pytest.raises(CollectionError) as refused:
        freeze_candidates(snapshot, ReplayConfig(source="replay", path=str(path)))
    assert f"{path}, {problem}" in str(refused.value) and "Fix:" in str(refused.value)
    if "document_version" in problem:
        assert f"is not the sha256 of its text (sha256:{sha256_text('edited text')})" in str(refused.value)


def test_replay_lines_are_one_candidate_set_of_the_snapshots_queries(tmp_path, snapshot):
    path = tmp_path / "replay.jsonl"
    for lines, problem in [
        ([replay_line("q0", []), replay_line("q0", [])], "line 2: query 'q0' again (first on line 1)"),
        ([replay_line("q0", []), replay_line("q9", [])], "line 2: query 'q9' is not a query of the snapshot"),
        ([replay_line("q0", []), replay_line("q1", []).replace("prod-v7", "other")],
         "line 2: candidate_source differs from line 1's"),
        ([replay_line("q0", [candidate("a", "x", 1, 0.1), candidate("b", "y", 2, 0.2)])],
         "line 1: candidate 'b' (retrieval_rank 2) scores 0.2, above 'a'"),
    ]:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(CollectionError, match=re.escape(f"{path}, {problem}")):
            freeze_candidates(snapshot, ReplayConfig(source="replay", path=str(path)))


def freeze_from_replay(folder: Path, snapshot_dir: Path, replay: Path) -> None:
    """Freeze ``replay`` as the freeze stage does, into a project in ``folder`` that shares the snapshot."""
    paths = tiny_paths(folder)
    shutil.copytree(snapshot_dir, paths.snapshot)
    frozen = freeze_candidates(Snapshot(paths.snapshot), ReplayConfig(source="replay", path=str(replay), top_n=5))
    write_candidates(paths.candidates, paths.passages, frozen.candidates, frozen.passages, frozen.provenance)
    write_table(paths.first_stage, frozen.first_stage, frozen.provenance)


def evaluate_systems(folder: Path, params: dict) -> dict:
    params = {**params, "systems": {name: params["systems"][name] for name in SYSTEMS}, "system_names": list(SYSTEMS)}
    (folder / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    typed = load_params(folder / "params.yaml").model_copy(update={"rag": RagConfig(measures=[])})
    for system in SYSTEMS:
        rerank.run(typed, tiny_paths(folder), system)
    evaluate.run(typed, tiny_paths(folder))
    return read_json(tiny_paths(folder).metrics)


def test_export_then_replay_freezes_the_same_tables_and_metrics(tmp_path, tiny_beir, no_encoder):
    hybrid_dir, replay_dir = tmp_path / "hybrid", tmp_path / "replayed"
    params = frozen_tiny_project(hybrid_dir, tiny_beir)
    hybrid, replay = tiny_paths(hybrid_dir), tmp_path / "export.jsonl"
    assert cli(["export-candidates", "--out", str(replay), "--candidates", str(hybrid.candidates),
                "--first-stage", str(hybrid.first_stage)]) == 0
    first = json.loads(replay.read_text(encoding="utf-8").splitlines()[0])
    assert first["candidate_source"] == "hybrid" and first["candidates"][0]["document_version"].startswith("sha256:")
    freeze_from_replay(replay_dir, hybrid.snapshot, replay)
    replayed = tiny_paths(replay_dir)
    for name in ("candidates", "passages", "first_stage"):
        before, after = getattr(hybrid, name), getattr(replayed, name)
        # The same table, value for value and column digest for column digest; only the provenance differs.
        assert pq.read_table(before).equals(pq.read_table(after))
        digests = [json.loads(pq.read_schema(path).metadata[DIGEST_KEY])["columns"] for path in (before, after)]
        assert digests[0] == digests[1]
    assert candidate_source(table_metadata(replayed.candidates))["kind"] == "replay"
    assert load_candidates(replayed.candidates)["passage"].tolist() == load_candidates(hybrid.candidates)[
        "passage"].tolist()
    # Exported again, the replayed set gives the same replay file.
    again = tmp_path / "again.jsonl"
    assert cli(["export-candidates", "--out", str(again), "--candidates", str(replayed.candidates),
                "--first-stage", str(replayed.first_stage)]) == 0
    assert again.read_bytes() == replay.read_bytes()
    assert evaluate_systems(replay_dir, params) == evaluate_systems(hybrid_dir, params)


def test_a_run_source_names_itself_in_metrics_and_first_stage(tmp_path, tiny_beir, no_encoder):
    params = frozen_tiny_project(tmp_path, tiny_beir)
    paths = tiny_paths(tmp_path)
    run = write_run(tmp_path / "run.trec", [f"q{n} Q0 d{n}{part} {rank} {9 - rank} bm25" for n in range(8)
                                            for rank, part in enumerate("cab", 1)])
    frozen = freeze_candidates(Snapshot(paths.snapshot), RunConfig(source="run", run=str(run), top_n=5))
    write_candidates(paths.candidates, paths.passages, frozen.candidates, frozen.passages, frozen.provenance)
    write_table(paths.first_stage, frozen.first_stage, frozen.provenance)
    params["retrieval"] = {"source": "run", "run": str(run), "depends_on": str(run), "top_n": 5}
    params["systems"] = {name: params["systems"][name] for name in ("fusion", "oracle")}
    params["system_names"] = ["fusion", "oracle"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    typed = load_params(tmp_path / "params.yaml").model_copy(update={"rag": RagConfig(measures=[])})
    for system in params["systems"]:
        rerank.run(typed, paths, system)
    evaluate.run(typed, paths)
    metrics = read_json(paths.metrics)
    assert metrics["candidate_source"] == "run" and list(metrics["first_stage"]) == ["run"]
    assert metrics["first_stage"]["run"]["nDCG@10"] == metrics["systems"]["fusion"]["nDCG@10"]
    assert read_table(paths.first_stage, FIRST_STAGE_SCHEMA).num_rows == 0


def composed_with(*overrides: str) -> dict:
    with initialize_config_dir(str(REPO / "conf"), version_base=None):
        config = compose(config_name="config", overrides=list(overrides))
    OmegaConf.resolve(config)
    return OmegaConf.to_container(config)


def test_conf_selects_a_source_whose_file_is_the_freeze_stages_dep():
    run = Params.parse(composed_with("retrieval=run", "retrieval.run=prod.trec"), "").retrieval
    assert isinstance(run, RunConfig) and run.depends_on == "prod.trec" and run.top_n == 100
    replay = Params.parse(composed_with("retrieval=replay", "retrieval.path=r.jsonl"), "").retrieval
    assert isinstance(replay, ReplayConfig) and replay.depends_on == "r.jsonl"
    hybrid = Params.parse(composed_with(), "").retrieval
    assert hybrid.depends_on == "data/snapshot/corpus.parquet" and "source" not in hybrid.settings()
    freeze_deps = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["freeze"]["deps"]
    assert "${retrieval.depends_on}" in freeze_deps
    bad = composed_with("retrieval=run", "retrieval.run=prod.trec", "+retrieval.fusion_depth=5")
    with pytest.raises(ConfigError, match=r"retrieval.fusion_depth: unknown setting. Known settings here: "
                                          r"access, depends_on, run, source, top_n"):
        Params.parse(bad, "")


def test_systems_that_read_bm25_or_dense_are_refused_where_the_candidates_have_neither():
    params = Params.parse(composed_with("retrieval=run", "retrieval.run=prod.trec"), "")
    run = {"source": {"kind": "run", "file": "prod.trec", "first_stage_columns": False}}
    with pytest.raises(ConfigError, match=r"systems.bm25 reads the candidates' BM25 or dense ranking, but the "
                                          r"candidates come from the run source \(prod.trec\).*Fix: drop the system"):
        check_first_stage_reads(params, system_configs(params), run)
    kept = {name: params.systems[name] for name in params.systems if name not in ("bm25", "dense")}
    params = params.model_copy(update={"systems": kept, "system_names": list(kept)})
    with pytest.raises(ConfigError, match=r"systems.routed_blend.rules\[0\].when.identifier_in_lexical_top1 reads"):
        check_first_stage_reads(params, system_configs(params), run)
    # A replay file exported from a hybrid set carries both columns: nothing is refused.
    check_first_stage_reads(params, system_configs(params), {"source": {"kind": "replay", "first_stage_columns": True}})


def test_a_sampled_snapshot_skips_the_files_other_queries(tmp_path, tiny_beir, no_encoder):
    from rerankeval.data.config import SampleConfig
    from rerankeval.data.sample import sample_collection

    collection, record = sample_collection(load_beir(tiny_beir), SampleConfig(queries=2, stratify=None), "test")
    write_snapshot(collection, tmp_path / "sampled", source={}, sample=record)
    snapshot = Snapshot(tmp_path / "sampled")
    run = write_run(tmp_path / "run.trec", [f"q{n} Q0 d{n}a 1 1.0 x" for n in range(8)])
    frozen = freeze_candidates(snapshot, RunConfig(source="run", run=str(run)))
    kept = set(snapshot.table("queries").column("query_id").to_pylist())
    assert set(frozen.candidates.column("query_id").to_pylist()) == kept
    assert candidate_source(frozen.provenance)["rows_outside_sample"] == 8 - len(kept)
    assert any(f"{8 - len(kept)} rows of queries outside the snapshot's dataset.sample (2 of 6 test queries)" in line
               for line in frozen.log)


def test_the_report_names_a_run_source_and_shows_its_order_alone():
    from rerankeval.report.markdown import candidates_line, first_stage_section

    values = {"Success@100": 0.9, "R@100": 0.8, "nDCG@10": 0.5, "RR@10": 0.6}
    section = first_stage_section({"run": values}, 100)
    assert section.startswith("## First stage: first stage (run), its top 100 (no BM25 or dense ranked the corpus")
    assert "| first stage (run) | 0.9000 |" in section and "bm25" not in section
    retrieval = {"source": "run", "run": "/data/team/prod.trec", "top_n": 100}
    assert candidates_line(retrieval, "run").startswith(
        "- Candidates: first stage (run: prod.trec), from the TREC run `/data/team/prod.trec`")
    named = first_stage_section({"run": values}, 100, retrieval=retrieval)
    assert named.startswith("## First stage: first stage (run: prod.trec), its top 100")
    assert "| first stage (run: prod.trec) | 0.9000 |" in named


def test_the_systems_table_names_the_source_whose_order_the_fusion_kind_system_is():
    from rerankeval.report.build import _source_orders
    from rerankeval.report.markdown import systems_section
    from rerankeval.stats.schema import ComparisonCore
    from rerankeval.systems.roles import KindTraits

    traits = {"fusion": KindTraits("first_stage", "hybrid"), "oracle": KindTraits("ceiling"), "ce": KindTraits()}
    run = {"source": "run", "run": "/data/team/prod.trec", "top_n": 100}
    assert _source_orders("run", run, traits) == {"fusion": "first stage (run: prod.trec)"}
    assert _source_orders("prod-bm25-v7", {"source": "replay", "path": "prod.jsonl"}, traits) == {
        "fusion": "first stage (prod-bm25-v7)"}
    assert _source_orders("hybrid", {"source": "hybrid"}, {**traits, "bm25": KindTraits("first_stage", "bm25")}) == {}

    means = {"CandidateRecall@100": 0.9}
    compare = ComparisonCore.model_validate({
        "baseline": "fusion", "queries": 40, "method": method(), "comparisons": [], "slices": {},
        "unjudged": {}, "systems": {s: {"nDCG@10": {"mean": 0.5, "low": 0.4, "high": 0.6}} for s in ("fusion", "ce")}})
    section = systems_section(compare, {"systems": {"fusion": means, "ce": means}}, ["nDCG@10"], [], 100,
                              source_orders=_source_orders("run", run, traits))
    assert "| `fusion` (first stage (run: prod.trec)) |" in section and "| `ce` |" in section
    assert "`fusion` is the candidates in first stage (run: prod.trec)'s own order" in section
    plain = systems_section(compare, {"systems": {"fusion": means, "ce": means}}, ["nDCG@10"], [], 100)
    assert "| `fusion` |" in plain and "own order" not in plain


def test_a_version_names_a_sha256_under_any_spelling_of_its_label_and_other_kinds_go_unchecked():
    from rerankeval.retrieval.sources.replay import _claimed_digest

    digest = sha256_text("x")
    for spelt in (f"sha256:{digest}", f" SHA-256: {digest.upper()} ", f"sha_256 :{digest}", f"Sha 256:{digest}"):
        assert _claimed_digest(spelt) == digest
    # other kinds: a release tag, HTTP's base64 digest header form, a bare hex string
    for other in ("v3", "SHA-256=LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=", digest, "sha2560:abc"):
        assert _claimed_digest(other) is None
