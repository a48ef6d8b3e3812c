"""Access control and validity (issue: guardrails): labels read and refused by file, line and field; the freeze
stage removes what the asking user may not see before any system scores anything; the guardrail measures and the
verdict's hard guardrail; and a recording test that no unauthorized text or id leaves the process, for every system
kind and the generator."""

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from rerankeval.core.errors import CollectionError, ConfigError
from rerankeval.data.access import AccessDenied, AccessLabels, guardrail_flags
from rerankeval.data.beir import load_beir
from rerankeval.data.snapshot import Snapshot, write_snapshot
from rerankeval.eval.engine import evaluate
from rerankeval.report.guardrails import access_line
from rerankeval.retrieval.candidates import load_candidates, write_candidates
from rerankeval.retrieval.config import AccessConfig, RunConfig
from rerankeval.retrieval.sources import freeze_candidates
from rerankeval.stats.config import ReleaseRule
from rerankeval.stats.verdict import Caveat, DeltaEvidence, Evidence, GuardrailEvidence, decide
from rerankeval.systems.registry import build_system
from tests.composite_fixtures import systems  # noqa: F401  (the word-count scorer's systems, a fixture)
from tests.conftest import write_beir
from tests.test_http_rerank import fake_api  # noqa: F401  (the recording HTTP reranker, a fixture)
from tests.analysis_records import method, rule

MARKER = "SECRET-7731"
NEIGHBOUR_MARKER = "SECRET-NEIGHBOUR-4412"
RUNBOOK = "SECRET-RUNBOOK-9902"


def labelled(tmp_path, *, corpus_extra=(), query_meta=None, doc_meta=None):
    """Public documents p1..p4, a restricted one (acl staff) sharing p1's words, and two price-list editions."""
    corpus = [{"_id": "p1", "text": "router reset steps hold the button", "metadata": {"parent_id": "m"}},
              {"_id": "secret", "text": f"router reset steps {MARKER} staff override", "metadata": {
                  "acl": ["staff"], "parent_id": "m", **(doc_meta or {})}},
              {"_id": "p2", "text": "billing questions and invoices"},
              {"_id": "old", "text": "price list basic plan 30 days", "metadata": {
                  "superseded_by": "new", "valid_to": "2024-04-01"}},
              {"_id": "new", "text": "price list basic plan 60 days", "metadata": {"valid_from": "2024-04-01"}},
              *corpus_extra]
    queries = [{"_id": "q1", "text": "router reset steps", "metadata": {
                   "user_groups": ["customers"], "as_of": "2024-06-01", **(query_meta or {})}},
               {"_id": "q2", "text": "basic plan price list", "metadata": {"user_groups": ["customers", "staff"],
                                                                          "as_of": "2024-06-01"}}]
    qrels = {"test": [("q1", "p1", 2), ("q1", "p2", 0), ("q2", "new", 2), ("q2", "old", 1)]}
    return write_beir(tmp_path / "beir", corpus, queries, qrels)


# ------------------------------------------------------------------------------------------ reading the labels


def test_labels_are_typed_columns_normalised_to_utc_and_never_slices(tmp_path):
    collection = load_beir(labelled(tmp_path, query_meta={"as_of": "2024-06-01T09:00:00+09:00"}))
    corpus = collection.corpus.to_pandas().set_index("doc_id")
    assert list(corpus.loc["secret", "acl"]) == ["staff"] and corpus.loc["p1", "acl"] is None
    assert corpus.loc["old", "valid_to"] == "2024-04-01T00:00:00Z" and corpus.loc["old", "superseded_by"] == "new"
    queries = collection.queries.to_pandas().set_index("query_id")
    assert queries.loc["q1", "as_of"] == "2024-06-01T00:00:00Z"  # 09:00 in UTC+9 is midnight UTC
    assert list(queries.loc["q2", "user_groups"]) == ["customers", "staff"]
    assert "as_of" not in collection.slice_columns and "user_groups" not in collection.slice_columns
    assert any("documents carry metadata.acl" in note for note in collection.notes)


def test_a_collection_without_labels_keeps_its_tables(tiny_beir):
    collection = load_beir(tiny_beir)
    assert "acl" not in collection.corpus.schema.names and "as_of" not in collection.queries.schema.names


@pytest.mark.parametrize("doc_meta, message", [
    ({"acl": "staff"}, r"corpus.jsonl:2: metadata.acl must be a list of non-empty strings"),
    ({"acl": ["staff", 7]}, r"corpus.jsonl:2: metadata.acl must be a list"),
    ({"acl": [f"g{i}" for i in range(1001)]}, r"corpus.jsonl:2: metadata.acl lists 1001 groups"),
    ({"valid_to": "03/04/2024"}, r"corpus.jsonl:2: metadata.valid_to: '03/04/2024' is not an ISO 8601 date"),
    ({"valid_from": "2024-02-30"}, r"corpus.jsonl:2: metadata.valid_from: '2024-02-30' is not a valid date"),
    ({"valid_from": "2024-05-01", "valid_to": "2024-01-01"}, r"corpus.jsonl:2: metadata.valid_from .* is not before"),
    ({"superseded_by": "nowhere"}, r"corpus.jsonl:2: metadata.superseded_by names 'nowhere', which is not in"),
    ({"superseded_by": "secret"}, r"leads back to 'secret' \(a cycle\)"),
    ({"status": "archived"}, r"corpus.jsonl:2: metadata.status must be one of current, outdated"),
])
def test_bad_document_labels_are_refused_naming_file_line_and_field(tmp_path, doc_meta, message):
    with pytest.raises(CollectionError, match=message):
        load_beir(labelled(tmp_path, doc_meta=doc_meta))


@pytest.mark.parametrize("query_meta, message", [
    ({"user_groups": "customers"}, r"queries.jsonl:1: metadata.user_groups must be a list"),
    ({"as_of": 20240601}, r"queries.jsonl:1: metadata.as_of: a date must be a string"),
    ({"as_of": "June 1st"}, r"queries.jsonl:1: metadata.as_of: 'June 1st' is not an ISO 8601 date"),
])
def test_bad_query_labels_are_refused_naming_file_line_and_field(tmp_path, query_meta, message):
    with pytest.raises(CollectionError, match=message):
        load_beir(labelled(tmp_path, query_meta=query_meta))


def test_suspicious_labels_are_warned_and_zoneless_dates_noted(tmp_path):
    folder = labelled(tmp_path, query_meta={"user_groups": ["custmers"], "as_of": "2024-06-01T10:00"})
    collection = load_beir(folder)
    assert any("groups no document's acl grants" in warning and "'custmers'" in warning
               for warning in collection.warnings)
    assert any("1 date-times without a time zone read as UTC" in note for note in collection.notes)
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "router reset steps"}) + "\n"
                                          + json.dumps({"_id": "q2", "text": "basic plan price list"}) + "\n")
    warnings = load_beir(folder).warnings
    assert any("2 queries have no metadata.user_groups" in warning for warning in warnings)
    assert any("2 queries have no metadata.as_of" in warning for warning in warnings)


# ------------------------------------------------------------------------------------------ what a user may see


def labels_of(tmp_path, **kwargs) -> AccessLabels:
    collection = load_beir(labelled(tmp_path, **kwargs))
    return AccessLabels(collection.corpus, collection.queries)


def test_access_staleness_and_stale_first_at_the_as_of_date(tmp_path):
    labels = labels_of(tmp_path)
    docs = ["p1", "secret", "old", "new"]
    assert labels.may_see("q1", docs).tolist() == [True, False, True, True]
    assert labels.may_see("q2", docs).tolist() == [True, True, True, True]
    assert labels.stale("q1", docs).tolist() == [False, False, True, False]
    assert labels.stale_first("q2", ["old", "p1", "new"]).tolist() == [True, False, False]
    assert labels.stale_first("q2", ["new", "old"]).tolist() == [False, False]  # its successor is above it


def test_before_the_successor_is_in_force_the_old_edition_is_current(tmp_path):
    labels = labels_of(tmp_path, query_meta={"as_of": "2024-03-01"})
    assert labels.stale("q1", ["old", "new"]).tolist() == [False, True]  # the new one is not yet valid


def test_a_query_without_groups_sees_public_documents_or_is_refused_by_policy(tmp_path):
    folder = labelled(tmp_path)
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "router reset steps"}) + "\n"
                                          + json.dumps({"_id": "q2", "text": "basic plan price list"}) + "\n")
    collection = load_beir(folder)
    public = AccessLabels(collection.corpus, collection.queries, "public")
    assert public.may_see("q1", ["p1", "secret"]).tolist() == [True, False]
    with pytest.raises(AccessDenied, match=r"'q1' has no metadata.user_groups .*queries_without_groups is refuse"):
        AccessLabels(collection.corpus, collection.queries, "refuse").may_see("q1", ["p1"])


# ------------------------------------------------------------------------------------------ the freeze filter


def frozen_from_run(tmp_path, run_lines: str, access: AccessConfig = AccessConfig()):
    folder = labelled(tmp_path)
    write_snapshot(load_beir(folder), tmp_path / "snapshot", source={})
    run = tmp_path / "team.trec"
    run.write_text(run_lines)
    return freeze_candidates(Snapshot(tmp_path / "snapshot"), RunConfig(source="run", run=str(run), top_n=10,
                                                                         access=access))


RUN = ("q1 Q0 secret 1 9 team\nq1 Q0 p1 2 8 team\nq1 Q0 old 3 7 team\nq1 Q0 new 4 6 team\n"
       "q2 Q0 secret 1 9 team\nq2 Q0 old 2 8 team\nq2 Q0 new 3 7 team\n")


def test_the_freeze_removes_what_the_user_may_not_see_and_records_it(tmp_path):
    frozen = frozen_from_run(tmp_path, RUN)
    kept = frozen.candidates.to_pandas()
    assert kept[kept["query_id"] == "q1"]["doc_id"].tolist() == ["p1", "old", "new"]
    assert kept[kept["query_id"] == "q1"]["fused_rank"].tolist() == [1, 2, 3]  # renumbered
    assert "secret" in kept[kept["query_id"] == "q2"]["doc_id"].tolist()  # q2's user is staff
    withheld = frozen.withheld.to_pandas()
    assert withheld[["query_id", "doc_id", "fused_rank"]].values.tolist() == [["q1", "secret", 1]]
    assert MARKER in withheld["passage"].iloc[0]
    record = frozen.provenance["access"]
    assert record["removed"] == 1 and record["queries_with_removed"] == 1 and record["removed_from"] == {"run": 1}
    assert any("removed 1 candidates" in line for line in frozen.log)


def test_only_staff_queries_keep_the_restricted_text_in_the_passages_file(tmp_path):
    run = "q1 Q0 secret 1 9 team\nq1 Q0 p1 2 8 team\nq2 Q0 old 1 8 team\n"
    frozen = frozen_from_run(tmp_path, run)
    assert MARKER not in " ".join(frozen.passages.column("passage").to_pylist())


def test_filter_off_removes_nothing_and_says_so(tmp_path):
    frozen = frozen_from_run(tmp_path, RUN, AccessConfig(filter=False))
    assert frozen.candidates.num_rows == 7 and frozen.withheld.num_rows == 0
    assert "unfiltered" in frozen.provenance["access"]


def test_a_source_over_unlabelled_documents_says_it_cannot_filter(tmp_path, tiny_beir):
    queries = tiny_beir / "queries.jsonl"
    records = [json.loads(line) for line in queries.read_text().splitlines()]
    queries.write_text("".join(json.dumps({**r, "metadata": {**r.get("metadata", {}), "user_groups": ["x"]}}) + "\n"
                               for r in records))
    write_snapshot(load_beir(tiny_beir), tmp_path / "snapshot", source={})
    run = tmp_path / "team.trec"
    run.write_text("q0 Q0 d0a 1 9 team\n")
    frozen = freeze_candidates(Snapshot(tmp_path / "snapshot"), RunConfig(source="run", run=str(run), top_n=10))
    assert "no document carries an acl" in frozen.provenance["access"]["cannot_filter"]
    assert any("cannot filter" in line for line in frozen.log)


def test_the_unfiltered_view_puts_the_withheld_candidates_back_in_their_places(tmp_path):
    frozen = frozen_from_run(tmp_path, RUN)
    write_candidates(tmp_path / "candidates.parquet", tmp_path / "passages.parquet", frozen.candidates,
                     frozen.passages, frozen.provenance, (tmp_path / "withheld.parquet", frozen.withheld))
    plain = load_candidates(tmp_path / "candidates.parquet", query_ids=["q1"])
    assert "secret" not in plain["doc_id"].tolist()
    unfiltered = load_candidates(tmp_path / "candidates.parquet", query_ids=["q1"], unfiltered=True)
    assert unfiltered["doc_id"].tolist() == ["secret", "p1", "old", "new"]
    assert unfiltered["fused_rank"].tolist() == [1, 2, 3, 4] and MARKER in unfiltered["passage"].iloc[0]


# ------------------------------------------------------------------------------------------ measures and verdict


def test_guardrail_measures_one_value_per_query(tmp_path):
    labels = labels_of(tmp_path)
    run = pd.DataFrame({"query_id": ["q1"] * 4 + ["q2"] * 2, "doc_id": ["secret", "p1", "old", "new", "new", "old"],
                        "rank": [1, 2, 3, 4, 1, 2]})
    none = pd.DataFrame({"query_id": pd.Series(dtype=str), "doc_id": pd.Series(dtype=str),
                         "relevance": pd.Series(dtype="int64")})
    values = evaluate(run, none, ["ACLViolation@1", "ACLViolation@10", "Stale@2", "Stale@4", "StaleFirst@10"],
                      queries=["q1", "q2"], no_relevant="zero",
                      sources={"guardrails": guardrail_flags(run, labels)})
    assert values.loc["q1"].tolist() == [1.0, 1.0, 0.0, 0.25, 1.0]
    assert values.loc["q2"].tolist() == [0.0, 0.0, 0.5, 0.5, 0.0]  # staff may see it; old below new


RULE = ReleaseRule(primary_metric="nDCG@10", min_delta=0.01)


def evidence(**guardrail) -> Evidence:
    found = GuardrailEvidence(**{"measure": "ACLViolation@10", "zero": True, "max_increase": None,
                                 "challenger_mean": 0.0, "reference_mean": 0.0, "queries_with_any": 0,
                                 "queries": 50, **guardrail})
    return Evidence(primary=DeltaEvidence("nDCG@10", 0.08, 0.05, 0.11), slices=(), guardrails=(found,),
                    caveats=(Caveat("every query: the generator cannot tell rankings apart"),))


def test_one_violation_rejects_whatever_the_quality_gain_and_is_listed_first():
    verdict = decide(RULE, evidence(challenger_mean=0.02, queries_with_any=1))
    assert verdict.decision == "REJECT" and verdict.reasons[0] == verdict.decided_by
    assert verdict.decided_by.startswith("guardrail ACLViolation@10: 1 of 50 queries (2.0%)")
    assert "zero allowed" in verdict.decided_by  # a caveat softens quality checks, never a guardrail
    assert decide(RULE, evidence()).checks[0].passed


def test_an_established_stale_increase_rejects_an_unestablished_one_blocks_accept():
    rise = dict(measure="Stale@5", zero=False, max_increase=0.02, challenger_mean=0.2, reference_mean=0.1)
    established = decide(RULE, evidence(**rise, increase=DeltaEvidence("Stale@5", 0.1, 0.05, 0.15)))
    assert established.decision == "REJECT" and "lies above max_increase +0.0200" in established.decided_by
    unsure = decide(RULE, evidence(**rise, increase=DeltaEvidence("Stale@5", 0.05, -0.01, 0.11)))
    assert not unsure.checks[0].passed and not unsure.checks[0].hard
    within = decide(RULE, evidence(**rise, increase=DeltaEvidence("Stale@5", 0.0, -0.03, 0.03)))
    assert within.checks[0].passed


# ------------------------------------------------------------------------------------------ context selection


def test_neighbour_expansion_stops_at_a_chunk_the_user_may_not_see():
    from rerankeval.rag.config import SelectConfig
    from rerankeval.rag.passages import Passages
    from rerankeval.rag.select import Ranked, select_context

    passages = Passages(text={"a": "one", "b": NEIGHBOUR_MARKER, "c": "three"}, parent={"a": "P", "b": "P", "c": "P"},
                        previous={"b": "a", "c": "b"}, next={"a": "b", "b": "c"})
    config = SelectConfig(neighbours=2, max_passages=5)
    open_context = [p.doc_id for p in select_context([Ranked("a", "P", 1)], passages, config)]
    assert open_context == ["a", "b", "c"]
    guarded = [p.doc_id for p in select_context([Ranked("a", "P", 1)], passages, config, visible=lambda d: d != "b")]
    assert guarded == ["a"]


# ------------------------------------------------------------------------------------------ nothing leaves the process


@pytest.mark.slow
def test_no_unauthorized_text_or_id_reaches_any_system_kind_a_cache_a_log_or_a_run(tmp_path, fake_api, capsys,
                                                                                   monkeypatch):
    """Every system kind reranks the filtered candidates: a recording HTTP reranker, the learned kinds' pair cache, a
    team's run naming the restricted document, composites over them, the OpenAI-compatible generator (a recording
    fake endpoint) and a served endpoint (the load test's requests) see no restricted text or id; the same pipeline
    with ``access_filter: false`` does send it, so the recording would catch a leak."""
    from rerankeval.core.io import read_table
    from rerankeval.pipeline import answer, loadtest, rerank
    from rerankeval.pipeline.params import load_params
    from rerankeval.retrieval.freeze import freeze
    from rerankeval.retrieval.sources.base import FrozenSet
    from rerankeval.retrieval.access import filter_frozen
    from rerankeval.core.io import write_json, write_table
    from rerankeval.data.snapshot import retrieval_inputs
    from rerankeval.retrieval.config import HybridConfig
    from tests.fake_openai import FakeOpenAI
    from tests.stage_fixtures import tiny_paths
    from tests.test_models import save_tiny_bert
    from tests.test_params import composed
    from tests.test_retrieval import FakeRetriever, PriorRetriever

    # Runbooks only the security group may see (no query's user is in it), beside public chunks of their manuals.
    restricted = [{"_id": f"secret{k}", "text": f"router reset steps hold the button {RUNBOOK} override {k}",
                   "metadata": {"acl": ["security"], "parent_id": f"manual{k}"}} for k in range(3)]
    neighbours = [{"_id": f"pub{k}", "text": "router reset steps hold the button", "metadata": {
        "parent_id": f"manual{k}"}} for k in range(3)]
    folder = labelled(tmp_path, corpus_extra=[*neighbours, *restricted])
    paths = tiny_paths(tmp_path)
    write_snapshot(load_beir(folder), paths.snapshot, source={})
    snapshot = Snapshot(paths.snapshot)
    config = HybridConfig(top_n=20, fusion_depth=20)  # every document is a candidate of every query
    raw = freeze(snapshot.table("corpus"), snapshot.table("queries"), config, snapshot.table("qrels"),
                 lexical_retriever=FakeRetriever, dense_retriever=PriorRetriever)
    frozen = filter_frozen(FrozenSet(raw.candidates, raw.passages, raw.first_stage, {
        "snapshot": retrieval_inputs(snapshot), "retrieval": config.settings(), "fusion": raw.fusion}),
        snapshot, AccessConfig())
    assert frozen.withheld.num_rows >= 6  # both queries lost every runbook
    write_candidates(paths.candidates, paths.passages, frozen.candidates, frozen.passages, frozen.provenance,
                     (paths.withheld, frozen.withheld))
    write_table(paths.first_stage, frozen.first_stage, frozen.provenance)

    model = save_tiny_bert(tmp_path / "tiny_ce", "BertForSequenceClassification")
    encoder = save_tiny_bert(tmp_path / "tiny_bi", "BertModel")
    server = fake_api(["ok"])
    cache = str(tmp_path / "score_cache")
    learned = {"model": str(model), "depth": 20, "max_length": 48, "batch_size": 4, "cache_dir": cache}
    team_run = tmp_path / "team.trec"
    team_run.write_text("".join(f"q1 Q0 {doc} {rank} {10 - rank} team\n"
                                for rank, doc in enumerate(["secret0", "p1", "pub0", "p2"], start=1)))
    api = {"kind": "http_rerank", "base_url": f"http://127.0.0.1:{server.server_address[1]}", "model": "fake-1",
           "depth": 20, "cache_dir": cache, "backoff_s": 0.01, "request_timeout_s": 5.0}
    systems = {
        "fusion": {"kind": "fusion", "depth": 20}, "bm25": {"kind": "bm25", "depth": 20},
        "dense": {"kind": "dense", "depth": 20}, "oracle": {"kind": "oracle", "depth": 20},
        "random": {"kind": "random", "depth": 20, "seed": 0},
        "ce": {"kind": "cross_encoder", **learned}, "flag": {"kind": "flag_reranker", **learned},
        "bi": {"kind": "bi_encoder", **learned, "model": str(encoder)},
        "api": api, "team": {"kind": "trec_run", "path": str(team_run), "depth": 20},
        "blend": {"kind": "blend", "components": ["api", "fusion"], "weight": 0.5, "depth": 20},
        "cascade": {"kind": "cascade", "first": "column:bm25_score", "second": "ce", "depth": 20, "second_depth": 6},
        "routed": {"kind": "routed", "depth": 20, "rules": [{"when": {"identifier_in_query": True}, "then": "skip"}],
                   "default": "blend"},
        "leaky": {**api, "access_filter": False},
    }
    params = composed()
    params["dataset"] = {**params["dataset"], "name": "labelled", "path": str(folder), "critical_slices": []}
    with FakeOpenAI() as llm:
        # The LLM rerankers ask the same recording endpoint as the generator.
        endpoint = {"base_url": llm.base_url, "model": "fake", "api_key_env": None, "backoff_s": 0.01,
                    "max_retries": 1, "cache_dir": str(tmp_path / "llm_cache")}
        systems = {**{name: config for name, config in systems.items() if name != "leaky"},
                   "llm_list": {"kind": "llm_listwise", "depth": 20, "window": 5, "stride": 3, "endpoint": endpoint},
                   "llm_point": {"kind": "llm_pointwise", "depth": 20, "endpoint": endpoint},
                   "leaky": systems["leaky"]}
        params["systems"], params["system_names"] = systems, list(systems)
        params["rag"]["generator"] = {"kind": "openai_compatible", "base_url": llm.base_url, "model": "fake",
                                      "cache_dir": str(tmp_path / "llm_cache"), "backoff_s": 0.01, "max_retries": 1,
                                      "api_key_env": None}
        params["rag"]["select"] = {**params["rag"]["select"], "neighbours": 2}
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        write_json(paths.calibration, {"result": {}})
        sent_by = {}

        def run_system(name):
            before_api, before_llm = len(server.requests), len(llm.requests)
            loaded = load_params(tmp_path / "params.yaml")
            rerank.run(loaded, paths, name)
            answer.select(loaded, paths, [name])
            answer.generate(loaded, paths, [name])
            sent_by[name] = (json.dumps([body for _, body, _ in server.requests[before_api:]]),
                             json.dumps(llm.requests[before_llm:], ensure_ascii=False))

        for name in systems:
            if name != "leaky":
                run_system(name)
        # A served endpoint is sent what the load test (and `rerankeval loadtest`) builds from the frozen candidates:
        # here to the recording API, as it would be to `rerankeval serve`.
        before_api = len(server.requests)
        loadtest.run(load_params(tmp_path / "params.yaml"), paths.snapshot, paths.candidates,
                     tmp_path / "loadtest.json", force=True, overrides={
                         "system": "api", "concurrency": [1], "pareto_concurrency": 1, "warmup_requests": 0,
                         "requests": 4})
        served = json.dumps([body for _, body, _ in server.requests[before_api:]])
        assert len(server.requests) > before_api and RUNBOOK not in served
        out = capsys.readouterr()
        assert RUNBOOK not in out.out + out.err
        for path in tmp_path.rglob("*"):  # every run, context, answer, cache and record written so far
            # The collection holds the restricted text by design (the snapshot too), the withheld file apart.
            if path.is_file() and not {"beir", "snapshot"} & set(path.parts) and path != paths.withheld:
                assert RUNBOOK.encode() not in path.read_bytes(), f"a restricted text was written to {path}"
        run_system("leaky")
    for name in systems:
        run = read_table(paths.run(name)).to_pandas()
        leaked = RUNBOOK in sent_by[name][0] or RUNBOOK in sent_by[name][1] or \
            bool(set(run["doc_id"]) & {"secret0", "secret1", "secret2"})
        assert leaked == (name == "leaky"), f"{name}: {'a restricted text left the process' if leaked else ''}"
    assert RUNBOOK in sent_by["leaky"][0]  # the recording catches a leak
    assert sent_by["api"][0] != "[]" and sent_by["fusion"][1] != "[]"  # both recorders saw traffic


def test_a_replay_file_is_filtered_too_and_says_what_it_could_not_check(tmp_path):
    from rerankeval.retrieval.config import ReplayConfig

    folder = labelled(tmp_path)
    write_snapshot(load_beir(folder), tmp_path / "snapshot", source={})
    line = {"query_id": "q1", "candidate_source": "prod-v7", "candidates": [
        {"document_id": doc, "text": text, "retrieval_rank": rank, "retrieval_score": 10.0 - rank}
        for rank, (doc, text) in enumerate([("secret", f"router reset {MARKER}"), ("p1", "router reset steps"),
                                            ("outside9", "a document the corpus does not hold")], start=1)]
        + [{"document_id": "outside8", "text": "another one, labelled", "retrieval_rank": 4, "retrieval_score": 1.0,
            "acl": ["customers"]}]}
    replay = tmp_path / "replay.jsonl"
    replay.write_text(json.dumps(line) + "\n")
    frozen = freeze_candidates(Snapshot(tmp_path / "snapshot"), ReplayConfig(source="replay", path=str(replay),
                                                                             top_n=10))
    assert frozen.candidates.column("doc_id").to_pylist() == ["p1", "outside9", "outside8"]
    assert MARKER not in " ".join(frozen.passages.column("passage").to_pylist())
    assert "1 candidates name documents outside the corpus" in frozen.provenance["access"]["cannot_filter"]
    assert frozen.provenance["access"]["removed_from"] == {"prod-v7": 1}
    # the corpus dates its documents, so a document outside it is counted as current, its own acl or not, and the
    # report says so
    assert frozen.provenance["access"]["validity_unknown"].startswith("2 candidates name documents outside the corpus")
    line = access_line(frozen.provenance["access"])
    assert "cannot be filtered" in line and "Stale@k and StaleFirst count them as current" in line
    unknown = "2 candidates name documents outside the corpus, whose validity is unknown"
    assert access_line({"labelled_documents": 0, "validity_unknown": unknown}) == f"Validity: {unknown}."


def test_a_critical_slice_whose_stale_rate_rises_beyond_the_budget_rejects_with_evidence():
    from rerankeval.stats.verdict import SliceEvidence

    rise = dict(measure="Stale@5", zero=False, max_increase=0.02, challenger_mean=0.05, reference_mean=0.04,
                increase=DeltaEvidence("Stale@5", 0.01, -0.01, 0.03))
    korean = SliceEvidence("language", "ko", 40, 0.09, 0.04, 0.14, confidence=0.99, adjusted_for=5)
    tiny = SliceEvidence("intent", "temporal", 8, 0.2, -0.1, 0.5, too_small=True)
    verdict = decide(RULE, evidence(**rise, slices=(korean, tiny)))
    assert verdict.decision == "REJECT"
    assert verdict.decided_by.startswith("guardrail Stale@5 in critical slice language=ko (n=40): increase +0.0900")
    assert "adjusted for 5 slice tests" in verdict.decided_by
    small = next(c for c in verdict.checks if c.name == "guardrail Stale@5 intent=temporal")
    assert not small.passed and not small.hard  # too small to REJECT: it blocks ACCEPT
    assert verdict.checks[0].passed and "within budget in 0 of 2 checked slices" in verdict.checks[0].message


def test_a_slice_budget_of_its_own_holds_that_slice_to_it_and_the_others_to_the_guardrails():
    from rerankeval.stats.verdict import SliceEvidence

    rise = dict(measure="Stale@5", zero=False, max_increase=0.02, challenger_mean=0.05, reference_mean=0.045,
                increase=DeltaEvidence("Stale@5", 0.005, -0.005, 0.015))
    korean = SliceEvidence("language", "ko", 40, 0.015, 0.004, 0.026, confidence=0.99, adjusted_for=2)
    english = SliceEvidence("language", "en", 40, 0.015, 0.004, 0.026, confidence=0.99, adjusted_for=2)
    # within the guardrail's +0.02 in both slices, but Korean queries are held to +0.0 of their own
    verdict = decide(RULE, evidence(**rise, slices=(korean, english), slice_budgets=(0.0, 0.02)))
    assert verdict.decision == "REJECT"
    assert verdict.decided_by == ("guardrail Stale@5 in critical slice language=ko (n=40): increase +0.0150, 99% CI "
                                  "[+0.0040, +0.0260] (adjusted for 2 slice tests) lies above max_increase +0.0000 "
                                  "(its own)")
    assert not any("language=en" in check.name for check in verdict.checks)
    assert "within budget in 1 of 2 checked slices (some with budgets of their own)" in verdict.checks[0].message
    assert decide(RULE, evidence(**rise, slices=(korean, english))).decision != "REJECT"  # +0.02 everywhere


def test_a_guardrails_own_slice_budget_is_checked_even_off_the_critical_slices_and_must_name_a_real_slice():
    from rerankeval.core.errors import ConfigError
    from rerankeval.stats.config import GuardrailRule
    from rerankeval.stats.critical_slices import CriticalSlice
    from rerankeval.stats.guardrails import check_slice_budgets, guardrail_evidence

    rule = GuardrailRule(measure="Stale@5", max_increase=0.2, slice_budgets=[
        {"column": "intent", "value": "billing", "budget": 0.0}, {"column": "intent", "budget": 0.01}])
    assert (rule.slice_budget("intent", "billing"), rule.slice_budget("intent", "setup"),
            rule.slice_budget("language", "ko")) == (0.0, 0.01, 0.2)  # the value's own, its column's, the rule's
    n = 60
    labels = {"intent": np.array(["billing", "setup"] * (n // 2)), "language": np.array(["ko"] * n)}
    base = np.zeros(n)
    worse = np.where(labels["intent"] == "billing", 0.2, 0.0)
    boot = {"n_samples": 500, "confidence": 0.95, "seed": 0}
    found, = guardrail_evidence({"a": {"Stale@5": worse}, "b": {"Stale@5": base}}, "a", "b", [rule], boot, labels,
                                [CriticalSlice(column="language", budget=0.05)], min_slice_size=20)
    assert [(item.column, item.value, budget) for item, budget in found.budgeted_slices()] == [
        ("language", "ko", 0.2), ("intent", "billing", 0.0), ("intent", "setup", 0.01)]
    verdict = decide(RULE, Evidence(primary=DeltaEvidence("nDCG@10", 0.08, 0.05, 0.11), slices=(), guardrails=(found,)))
    # the +0.1 overall is within +0.2, and so is every query in Korean; billing's +0.2 is not within its +0.0
    assert verdict.checks[0].passed
    assert verdict.decision == "REJECT" and verdict.decided_by.startswith(
        "guardrail Stale@5 in critical slice intent=billing (n=30): increase +0.2000")

    acl = GuardrailRule(measure="ACLViolation@10", zero=True)
    check_slice_budgets([acl, rule], labels, {"Stale@5"})  # both name real slices
    check_slice_budgets([acl, rule], {}, {"ACLViolation@10"})  # Stale@5 not evaluated: skipped with a note elsewhere
    for bad, problem in ((labels | {"intent": np.array(["setup"] * n)}, "no evaluated query has intent=billing"),
                         ({"language": labels["language"]}, "no query has a slice column 'intent'")):
        with pytest.raises(ConfigError, match=problem) as refused:
            check_slice_budgets([acl, rule], bad, {"Stale@5"})
        assert "compare.guardrails[1] (Stale@5) slice_budgets intent=billing" in str(refused.value)
        assert "Fix:" in str(refused.value)
    for wrong, message in (({"measure": "ACLViolation@10", "zero": True,
                             "slice_budgets": [{"column": "intent", "budget": 0.0}]}, "need a max_increase guardrail"),
                           ({"measure": "Stale@5", "max_increase": 0.02,
                             "slice_budgets": [{"column": "intent", "budget": 0.0}] * 2}, "name a slice twice")):
        with pytest.raises(ValueError, match=message):
            GuardrailRule(**wrong)


def test_a_replay_file_may_label_documents_the_corpus_lacks_and_bad_labels_are_refused(tmp_path):
    from rerankeval.retrieval.config import ReplayConfig

    folder = labelled(tmp_path)
    write_snapshot(load_beir(folder), tmp_path / "snapshot", source={})

    def replay(candidates):
        path = tmp_path / "replay.jsonl"
        path.write_text(json.dumps({"query_id": "q1", "candidate_source": "prod-v7", "candidates": [
            {"document_id": doc, "text": f"text of {doc}", "retrieval_rank": rank, "retrieval_score": 10.0 - rank,
             **extra} for rank, (doc, extra) in enumerate(candidates, start=1)]}) + "\n")
        return freeze_candidates(Snapshot(tmp_path / "snapshot"), ReplayConfig(source="replay", path=str(path),
                                                                               top_n=10))

    frozen = replay([("ext-staff", {"acl": ["staff"]}), ("ext-public", {}), ("p1", {"acl": ["staff"]})])
    assert frozen.candidates.column("doc_id").to_pylist() == ["ext-public", "p1"]  # the corpus says p1 is public
    assert frozen.provenance["access"]["label_conflicts"] == 1
    assert any("other labels in the source than in the corpus (first: 'p1')" in line for line in frozen.log)
    with pytest.raises(CollectionError, match=r"replay.jsonl, line 1: candidate 1 \('ext'\): acl must be a list"):
        replay([("ext", {"acl": "staff"})])


def test_a_replay_file_dates_documents_the_corpus_lacks_and_the_later_stages_read_it(tmp_path):
    from rerankeval.core.io import write_table
    from rerankeval.retrieval.config import ReplayConfig
    from rerankeval.retrieval.sources.replay import export_replay

    write_snapshot(load_beir(labelled(tmp_path)), tmp_path / "snapshot", source={})
    snapshot = Snapshot(tmp_path / "snapshot")
    path = tmp_path / "replay.jsonl"

    def replay(*lines):
        path.write_text("".join(json.dumps({"query_id": query, "candidate_source": "prod-v7", "candidates": [
            {"document_id": doc, "text": f"text of {doc}", "retrieval_rank": rank, "retrieval_score": 10.0 - rank,
             **extra} for rank, (doc, extra) in enumerate(candidates, start=1)]}) + "\n"
                                    for query, candidates in lines))
        return freeze_candidates(snapshot, ReplayConfig(source="replay", path=str(path), top_n=10))

    # an old edition the corpus never held, superseded by a new one, also outside it, from 2024-04-01 on
    editions = [("ext-old", {"valid_to": "2024-04-01", "superseded_by": "ext-new"}),
                ("ext-new", {"valid_from": "2024-04-01T00:00:00Z"}), ("ext-unknown", {}), ("p2", {})]
    frozen = replay(("q2", editions), ("q1", [("ext-old", editions[0][1]), ("p1", {})]))
    assert frozen.provenance["source_labels"] == {
        "ext-new": {"valid_from": "2024-04-01T00:00:00Z"},
        "ext-old": {"superseded_by": "ext-new", "valid_to": "2024-04-01T00:00:00Z"}}
    assert frozen.provenance["access"]["validity_unknown"].startswith("1 candidates name documents outside the corpus")
    write_candidates(tmp_path / "candidates.parquet", tmp_path / "passages.parquet", frozen.candidates,
                     frozen.passages, frozen.provenance, (tmp_path / "withheld.parquet", frozen.withheld))
    labels = AccessLabels.of_candidates(snapshot, tmp_path / "candidates.parquet")
    # q2 is asked on 2024-06-01: the old edition is outdated and read before the new one
    assert labels.stale("q2", ["ext-old", "ext-new", "ext-unknown", "p2"]).tolist() == [True, False, False, False]
    assert labels.stale_first("q2", ["ext-old", "ext-new"]).tolist() == [True, False]
    assert labels.stale_first("q2", ["ext-new", "ext-old"]).tolist() == [False, False]
    run = pd.DataFrame({"query_id": "q2", "doc_id": ["ext-old", "ext-new", "p2"], "rank": [1, 2, 3]})
    flags = guardrail_flags(run, labels)
    assert flags.loc["q2", "stale"].tolist() == [True, False, False]
    assert not AccessLabels.of(snapshot).stale("q2", ["ext-old"]).any()  # the corpus alone cannot tell

    # With the filter off, a restricted replayed document stays, and ACLViolation reads the file's acl
    path.write_text(json.dumps({"query_id": "q1", "candidate_source": "prod-v7", "candidates": [
        {"document_id": "ext-staff", "text": "staff only", "retrieval_rank": 1, "retrieval_score": 1.0,
         "acl": ["staff"]}]}) + "\n")
    unfiltered = freeze_candidates(snapshot, ReplayConfig(source="replay", path=str(path), top_n=10,
                                                          access=AccessConfig(filter=False)))
    write_candidates(tmp_path / "candidates.parquet", tmp_path / "passages.parquet", unfiltered.candidates,
                     unfiltered.passages, unfiltered.provenance, (tmp_path / "withheld.parquet", unfiltered.withheld))
    seen = pd.DataFrame({"query_id": "q1", "doc_id": ["ext-staff"], "rank": [1]})
    assert guardrail_flags(seen, AccessLabels.of_candidates(snapshot, tmp_path / "candidates.parquet")).loc[
        "q1", "forbidden"].tolist() == [True]

    # a replay file is a view: a successor it never shows counts as in force (said), a label below top_n holds, an
    # explicit null is no label, and the corpus's own "current" is no conflict
    noted = replay(("q2", [("ext-old", {"superseded_by": "gone", "acl": None}), ("new", {"status": "current"})]),
                   ("q1", [("p1", {}), *((f"filler-{k}", {}) for k in range(10)), ("ext-old", {"acl": ["staff"]})]))
    assert any("1 documents name a successor (superseded_by) that neither the corpus nor the file holds (first: "
               "'ext-old')" in line for line in noted.log), noted.log
    assert noted.provenance["source_labels"]["ext-old"] == {"acl": ["staff"], "superseded_by": "gone"}
    assert "ext-old" in noted.candidates.column("doc_id").to_pylist()  # q2's user is staff: the acl from q1's line
    assert "label_conflicts" not in noted.provenance["access"]
    # an export of the frozen set carries the labels, and freezes back into the same
    write_candidates(tmp_path / "candidates.parquet", tmp_path / "passages.parquet", noted.candidates,
                     noted.passages, noted.provenance, (tmp_path / "withheld.parquet", noted.withheld))
    first_stage = tmp_path / "first_stage.parquet"
    write_table(first_stage, noted.first_stage, noted.provenance)
    export_replay(tmp_path / "candidates.parquet", first_stage, path)
    again = freeze_candidates(snapshot, ReplayConfig(source="replay", path=str(path), top_n=10))
    assert again.provenance["source_labels"] == noted.provenance["source_labels"]

    refused = {
        "'ext-a': superseded_by leads back to 'ext-a' (a cycle)": [
            ("q2", [("ext-a", {"superseded_by": "ext-b"}), ("ext-b", {"superseded_by": "ext-a"})])],
        "candidate 'ext-old': valid_to": [("q2", [("ext-old", {"valid_to": "next spring"})])],
        "candidate 'ext-old': status must be one of current, outdated": [("q2", [("ext-old", {"status": "old"})])],
        "document 'ext-old' has valid_to '2024-05-01T00:00:00Z' here but valid_to '2024-04-01T00:00:00Z' on line 1": [
            ("q2", [("ext-old", {"valid_to": "2024-04-01", "status": "outdated"})]),
            ("q1", [("ext-old", {"valid_to": "2024-05-01"})])],
        # the chain passes through the corpus's own versions and must still end: old -> new in the corpus
        "'ext-b': superseded_by leads back to 'ext-b' (a cycle)": [
            ("q2", [("ext-b", {"superseded_by": "ext-c"}), ("ext-c", {"superseded_by": "ext-b"}),
                    ("ext-d", {"superseded_by": "old"})])],
    }
    for message, lines in refused.items():
        with pytest.raises(CollectionError, match=re.escape(message)) as error:
            replay(*lines)
        assert "replay.jsonl" in str(error.value) and "Fix:" in str(error.value), str(error.value)


def test_the_latency_stage_times_an_unfiltered_system_on_the_candidates_before_the_filter(tmp_path):
    from types import SimpleNamespace

    from rerankeval.systems.splits import eval_queries

    frozen = frozen_from_run(tmp_path, RUN)
    write_candidates(tmp_path / "candidates.parquet", tmp_path / "passages.parquet", frozen.candidates,
                     frozen.passages, frozen.provenance, (tmp_path / "withheld.parquet", frozen.withheld))
    params = SimpleNamespace(dataset=SimpleNamespace(eval_split="test"))
    _, filtered, _ = eval_queries(params, tmp_path / "snapshot", tmp_path / "candidates.parquet")
    _, unfiltered, _ = eval_queries(params, tmp_path / "snapshot", tmp_path / "candidates.parquet", unfiltered=True)
    assert "secret" not in filtered[filtered["query_id"] == "q1"]["doc_id"].tolist()
    assert unfiltered[unfiltered["query_id"] == "q1"]["doc_id"].tolist()[0] == "secret"


def guarded_verdicts(guardrails: list[dict], **fields):
    """verdicts.json against ``fusion`` whose rule holds ``guardrails``: ``fields`` set, every other record empty."""
    from rerankeval.stats.schema import Verdicts

    return Verdicts.model_validate({
        "baseline": "fusion", "queries": 50, "verdict_queries": 50, "rule": rule(guardrails=guardrails),
        "baseline_flag": None, "simulation": {}, "latency_p95_ms": {}, "fallbacks": {}, "verdicts": {},
        "inference": {"mode": "family", "release_family": "release vs fusion", "procedure": "", "families": {}},
        "latency_source": {}, "latency_untrusted": {}, "generator_flag": None, "inactive_claims": [], "variants": {},
        **fields})


def test_the_guardrail_table_puts_timeouts_beside_empty_results_and_fallbacks():
    from rerankeval.report.guardrails import guardrail_table
    from rerankeval.stats.schema import ComparisonCore, Verdict

    compare = ComparisonCore(baseline="fusion", queries=50, method=method(), systems={}, comparisons=[], slices={},
                             unjudged={}, guardrails={"Stale@5": {"fusion": {"mean": 0.1, "low": 0.05, "high": 0.15},
                                                                  "slow": {"mean": 0.2, "low": 0.1, "high": 0.3}}})
    violated = Verdict(decision="REJECT", decided_by="guardrail Stale@5", metric="nDCG@10", delta=None,
                       ci=(None, None), confidence=0.95, reasons=[], notes=[], family="release vs fusion",
                       p_adjusted=None, operating_characteristics={}, power=None,
                       guardrails=[{"measure": "Stale@5", "outcome": "violated"}])
    verdicts = guarded_verdicts(
        [{"measure": "Stale@5", "max_increase": 0.05}],
        empty_results={"fusion": {"empty": 0, "queries": 50}, "slow": {"empty": 1, "queries": 50}},
        fallbacks={"fusion": {"fallbacks": 0, "timeouts": 0, "queries": 50},
                   "slow": {"fallbacks": 7, "timeouts": 5, "queries": 50}},
        verdicts={"slow": violated})
    header, rows = guardrail_table(compare, verdicts)
    assert header == ["system", "Stale@5", "empty results", "timeouts", "fallbacks", "guardrails"]
    assert rows[1][2:] == ["1/50", "5/50", "7/50", "**violated**: Stale@5"]


def test_the_guardrail_rule_text_names_the_slices_held_to_budgets_of_their_own():
    from rerankeval.report.guardrails import guardrail_rule_text
    from rerankeval.stats.config import GuardrailRule

    rule = GuardrailRule(measure="Stale@5", max_increase=0.02, slice_budgets=[
        {"column": "intent", "value": "billing", "budget": 0.0}, {"column": "language", "budget": 0.01}])
    text = guardrail_rule_text(guarded_verdicts([rule.to_dict()]))
    assert ("Stale@5: at most +0.0200 over the compared system (REJECT when the increase's CI lies above it) and "
            "within slices intent=billing at most +0.0000, language=* at most +0.0100.") in text


def test_outdated_demote_puts_the_stale_documents_below_the_current_ones_each_in_the_system_s_order(systems):
    from rerankeval.rerank.driver import RerankSettings, rerank, settings_of
    from rerankeval.systems.base import RERANKED
    from rerankeval.systems.registry import parse_system_config
    from tests.composite_fixtures import QUERIES, candidates, context

    length = build_system("length", systems["length"], context(systems))
    stale = lambda query_id, doc_ids: np.array([doc == "d1" and query_id == "q1" for doc in doc_ids])  # noqa: E731
    kept, _ = rerank(candidates(), QUERIES, length, RerankSettings(4))
    demoted, latency = rerank(candidates(), QUERIES, length, RerankSettings(4, demote=stale))
    ranked = lambda run, query: run[run["query_id"] == query].sort_values("rank")["doc_id"].tolist()  # noqa: E731
    assert ranked(kept, "q1") == ["d1", "d3", "d0", "d2"]  # by word count
    assert ranked(demoted, "q1") == ["d3", "d0", "d2", "d1"] and ranked(demoted, "q2") == ranked(kept, "q2")
    assert sorted(demoted["rank"][demoted["query_id"] == "q1"]) == [1, 2, 3, 4] and len(latency) == 2
    # beyond the depth too: a stale document the system ranked first goes below the fused tail
    shallow, _ = rerank(candidates(), QUERIES, length, RerankSettings(2, demote=stale))
    assert ranked(shallow, "q1") == ["d0", "d2", "d3", "d1"]
    assert shallow.set_index(["query_id", "doc_id"]).loc[("q1", "d1"), "mode"] == RERANKED  # a mode is kept
    # the rule needs the labels: a caller that read none refuses it, naming the setting
    config = parse_system_config("length", {**systems["length"], "outdated": "demote"})
    assert settings_of(config, stale, "systems.length").demote is stale
    assert settings_of(parse_system_config("length", systems["length"]), stale, "systems.length").demote is None
    with pytest.raises(ConfigError, match="systems.length: outdated: demote needs the collection's validity labels"):
        settings_of(config, None, "systems.length")


def test_on_the_demo_the_freshness_rule_separates_its_stale_rates_from_the_baseline_s():
    """The demo's committed outputs: the cross-encoder with outdated editions demoted reads none in its top 5, and its
    paired Stale@5 and StaleFirst@10 changes against the baseline have CIs below zero; the same model without the
    rule does not separate (the stale rate is a property of the rule, not of the score)."""
    metrics = json.loads(Path("reports/metrics.json").read_text(encoding="utf-8"))["systems"]
    assert metrics["ce_minilm_ft_current_first"]["Stale@5"] == 0.0
    assert metrics["ce_minilm_ft_current_first"]["StaleFirst@10"] == 0.0
    verdicts = json.loads(Path("reports/verdicts.json").read_text(encoding="utf-8"))["verdicts"]
    checked = {rule["measure"]: rule for rule in verdicts["ce_minilm_ft_current_first"]["guardrails"]}
    assert checked["Stale@5"]["ci"][1] < 0 and checked["StaleFirst@10"]["ci"][1] < 0, checked
    plain = {rule["measure"]: rule for rule in verdicts["ce_minilm_ft"]["guardrails"]}
    assert plain["Stale@5"]["ci"][0] <= 0 <= plain["Stale@5"]["ci"][1]


def test_the_freshness_rule_reaches_the_depth_curve_and_is_refused_where_it_would_be_ignored(systems):
    from rerankeval.eval.funnel import depth_curve
    from rerankeval.eval.measures import parse_measure
    from rerankeval.rerank.assemble import demote_run
    from rerankeval.serving.server import serving_recipe
    from rerankeval.systems.composite.components import component
    from tests.composite_fixtures import QRELS, context

    run = pd.DataFrame({"query_id": "q1", "doc_id": ["d1", "d0", "d2"], "fused_rank": [2, 1, 3],
                        "score": [3.0, 2.0, 1.0], "rank": [1, 2, 3]})
    stale = lambda query_id, doc_ids: np.array([doc_id == "d1" for doc_id in doc_ids])  # noqa: E731
    rule = lambda ranked: demote_run(ranked, stale)  # noqa: E731
    curve = depth_curve({"s": run}, QRELS, ["q1"], [3], [parse_measure("RR@10")], no_relevant="zero",
                        after={"s": rule})
    plain = depth_curve({"s": run}, QRELS, ["q1"], [3], [parse_measure("RR@10")], no_relevant="zero")
    at = lambda frame: frame[frame["measure"] == "RR@10"]["value"].item()  # noqa: E731
    assert at(plain) == 1.0 and at(curve) == pytest.approx(1 / 3)  # the judged d1 is outdated: last, as in its run

    demoting = {**systems, "length": {**systems["length"], "outdated": "demote"},
                "blend": {"kind": "blend", "depth": 4, "components": ["length", "fusion"], "weight": 0.5}}
    with pytest.raises(ConfigError, match="'length' has outdated: demote.*composite"):
        component(context(demoting), "length", "systems.blend")
    with pytest.raises(ConfigError, match="serve: systems.length has outdated: demote"):
        serving_recipe("length", demoting)


def test_a_rule_after_the_scores_times_the_same_work_so_the_latency_stage_measures_it_once():
    from rerankeval.pipeline.latency import timed_work
    from rerankeval.pipeline.params import Params
    from tests.test_params import composed

    params = Params.parse(composed(), "")
    # the demo's cross-encoder and the same model with the freshness rule: one measurement serves both
    assert timed_work("ce_minilm_ft_current_first", params) == timed_work("ce_minilm_ft", params)
    # timed on other candidates (the access filter off), or another model: measured on its own
    assert timed_work("ce_minilm_ft_unfiltered", params) != timed_work("ce_minilm_ft", params)
    assert timed_work("ce_minilm_ft_int8", params) != timed_work("ce_minilm_ft", params)
