"""The bundled demo collection: reproducible, well-formed, and built with the traps it promises."""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEMO_DIR = ROOT / "datasets" / "demo"
SOURCE_DIR = ROOT / "datasets" / "demo-src"
GENERATOR = SOURCE_DIR / "generate.py"
DOC_TYPES = {"runbook", "error_code", "error_index", "release_note", "plan", "manual", "policy", "api", "guide", "faq",
             "announcement", "checklist"}
DOC_LANGS = {"en", "ko", "ko_en"}


@pytest.fixture(scope="module")
def gen():
    """The stand-alone generator script, imported by path (it is not part of the package)."""
    spec = importlib.util.spec_from_file_location("demo_generate", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is created
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


@pytest.fixture(scope="module")
def collection(gen):
    return gen.generate()


@pytest.fixture(scope="module")
def grades(collection) -> dict[str, dict[str, int]]:
    """query id -> {passage id: grade}, over both splits."""
    judged: dict[str, dict[str, int]] = defaultdict(dict)
    for rows in collection.qrels.values():
        for query_id, passage_id, grade in rows:
            judged[query_id][passage_id] = grade
    return dict(judged)


def _digest(files: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


# --- reproducibility ---------------------------------------------------------------------------------------------


def test_regenerating_gives_the_committed_files_byte_for_byte(gen, collection):
    files = gen.beir_files(collection)
    committed = sorted(str(p.relative_to(DEMO_DIR)) for p in DEMO_DIR.rglob("*") if p.is_file())
    assert committed == sorted([*files, "README.md"]), "datasets/demo holds exactly the generated files and its README"
    for relative, text in files.items():
        assert (DEMO_DIR / relative).read_bytes() == text.encode("utf-8"), (
            f"{relative} differs from generate(); run datasets/demo-src/generate.py")


def test_write_beir_writes_exactly_the_committed_files(gen, tmp_path, collection):
    gen.write_beir(collection, tmp_path)
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == ["corpus.jsonl", "qrels/test.tsv", "qrels/train.tsv", "queries.jsonl"]  # no temp files left
    for relative in written:
        assert (tmp_path / relative).read_bytes() == (DEMO_DIR / relative).read_bytes()
    gen.write_beir(collection, tmp_path)  # overwriting in place is just as exact
    assert (tmp_path / "corpus.jsonl").read_bytes() == (DEMO_DIR / "corpus.jsonl").read_bytes()


def test_main_writes_the_default_collection(gen, tmp_path):
    assert gen.main(["--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "queries.jsonl").read_bytes() == (DEMO_DIR / "queries.jsonl").read_bytes()


@pytest.mark.parametrize("hash_seed", ["0", "4242"])
def test_script_output_does_not_depend_on_hash_randomisation(tmp_path, hash_seed):
    """Run stand-alone, as documented: no package on the path, another working directory, any hash seed."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    subprocess.run([sys.executable, str(GENERATOR), "--out", str(tmp_path / "out")], cwd=tmp_path, check=True,
                   env={**env, "PYTHONHASHSEED": hash_seed})
    for relative in ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/test.tsv"):
        assert (tmp_path / "out" / relative).read_bytes() == (DEMO_DIR / relative).read_bytes(), relative


def test_another_seed_gives_another_but_valid_collection(gen, collection):
    other = gen.generate(seed=7)
    assert _digest(gen.beir_files(other)) != _digest(gen.beir_files(collection))
    splits = {q["metadata"]["split"] for q in other.queries}
    assert splits == set(gen.SPLITS)
    assert [r["_id"] for r in other.corpus] == [r["_id"] for r in collection.corpus]


def test_further_question_fields_become_query_metadata(gen, tmp_path, collection):
    """A question record can carry more metadata (e.g. gold answers) without touching the generator or the rest."""
    source = tmp_path / "demo-src"
    shutil.copytree(SOURCE_DIR, source, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    questions = gen.load_yaml(source / "questions.yaml")
    record = questions["exact_id"][0]
    record["answers"] = ["t=<unix time>,v1=<HMAC-SHA256>"]
    (source / "questions.yaml").write_text(yaml.safe_dump(questions, allow_unicode=True, sort_keys=False), "utf-8")
    extended = gen.generate(source_dir=source)
    changed = [(before, after) for before, after in zip(collection.queries, extended.queries, strict=True)
               if before != after]
    assert len(changed) == 1 and changed[0][0]["text"] == record["text"]
    assert changed[0][1]["metadata"] == {**changed[0][0]["metadata"], "answers": record["answers"]}
    assert extended.corpus == collection.corpus and extended.qrels == collection.qrels


def test_source_files_reject_a_repeated_key(gen, tmp_path):
    """Plain YAML keeps the last of two equal keys, which would silently drop a judgment."""
    path = tmp_path / "questions.yaml"
    path.write_text("judgments:\n  PAY-1041: {fix: 3}\n  PAY-1041: {overview: 1}\n", "utf-8")
    with pytest.raises(yaml.YAMLError, match="duplicate key 'PAY-1041'"):
        gen.load_yaml(path)


def test_files_are_utf8_jsonl_with_sorted_keys_and_unix_line_ends():
    for name in ("corpus.jsonl", "queries.jsonl"):
        raw = (DEMO_DIR / name).read_bytes()
        assert b"\r" not in raw and raw.endswith(b"\n")
        for line in raw.decode("utf-8").splitlines():
            record = json.loads(line)
            assert line == json.dumps(record, sort_keys=True, ensure_ascii=False)
    assert "결제" in (DEMO_DIR / "corpus.jsonl").read_text(encoding="utf-8")  # Hangul is stored raw, not \uXXXX


# --- shape and counts --------------------------------------------------------------------------------------------


def test_corpus_records(collection):
    ids = [r["_id"] for r in collection.corpus]
    assert len(ids) == len(set(ids)) >= 400
    parents = set()
    for record in collection.corpus:
        meta = record["metadata"]
        assert set(record) == {"_id", "title", "text", "metadata"}
        assert re.fullmatch(r"d\d{4}-p\d+", record["_id"]) and record["_id"].startswith(meta["parent_id"] + "-")
        assert {"parent_id", "doc_type", "lang", "product"} <= set(meta) <= {
            "parent_id", "doc_type", "lang", "product", "version", "acl", "valid_from", "valid_to", "superseded_by"}
        assert meta["doc_type"] in DOC_TYPES and meta["lang"] in DOC_LANGS
        assert record["title"].strip() and len(record["text"].split()) >= 8
        parents.add(meta["parent_id"])
    assert 120 <= len(parents) <= 200
    by_lang = {lang: sum(r["metadata"]["lang"] == lang for r in collection.corpus) for lang in DOC_LANGS}
    assert all(count >= 40 for count in by_lang.values()), by_lang


def test_queries_and_split_coverage(gen, collection):
    queries = collection.queries
    assert len(queries) >= 120
    assert all(re.fullmatch(r"q\d{4}", q["_id"]) for q in queries)
    assert len({q["text"] for q in queries}) == len(queries), "duplicate question text"
    test = [q for q in queries if q["metadata"]["split"] == "test"]
    assert len(test) >= 80
    for intent in gen.INTENTS:
        for language in gen.QUERY_LANGUAGES:
            assert any(q["metadata"]["intent"] == intent and q["metadata"]["language"] == language for q in test), (
                f"no test query for intent={intent} language={language}")


def test_split_metadata_matches_the_qrels_file(collection):
    split_of = {q["_id"]: q["metadata"]["split"] for q in collection.queries}
    seen = set()
    for split, rows in collection.qrels.items():
        for query_id, _, _ in rows:
            assert split_of[query_id] == split
            seen.add(query_id)
    assert seen == set(split_of), "every query is judged in exactly one split file"


# --- judgments ---------------------------------------------------------------------------------------------------


def test_qrels_files_are_consistent_with_corpus_and_queries(gen):
    corpus_ids = {json.loads(line)["_id"] for line in (DEMO_DIR / "corpus.jsonl").read_text("utf-8").splitlines()}
    query_ids = {json.loads(line)["_id"] for line in (DEMO_DIR / "queries.jsonl").read_text("utf-8").splitlines()}
    pairs = set()
    for split in gen.SPLITS:
        text = (DEMO_DIR / "qrels" / f"{split}.tsv").read_text("utf-8")
        assert text.startswith("query-id\tcorpus-id\tscore\n")
        for row in csv.DictReader(text.splitlines(), delimiter="\t"):
            assert row["query-id"] in query_ids and row["corpus-id"] in corpus_ids
            assert row["score"] in {"0", "1", "2", "3"}
            pair = (row["query-id"], row["corpus-id"])
            assert pair not in pairs, f"{pair} judged twice"
            pairs.add(pair)


def test_every_answerable_query_has_an_answering_passage_and_gold_answers(collection, grades):
    for query in collection.queries:
        judged = grades[query["_id"]]
        if query["metadata"].get("answerable", True):
            assert max(judged.values()) >= 2, f"{query['_id']} has no passage graded 2 or 3"
            answers = query["metadata"]["answers"]
            assert answers and all(isinstance(a, str) and a.strip() for a in answers), query["_id"]


def test_unanswerable_questions_are_abstention_cases_judged_zero(collection, grades):
    unanswerable = [q for q in collection.queries if q["metadata"].get("answerable") is False]
    assert sum(q["metadata"]["split"] == "test" for q in unanswerable) >= 25
    for query in unanswerable:
        assert query["metadata"]["query_type"] == "abstention" and "answers" not in query["metadata"]
        assert grades[query["_id"]] and set(grades[query["_id"]].values()) == {0}, query["_id"]
    types = {q["metadata"]["query_type"] for q in collection.queries if q["metadata"]["split"] == "test"}
    assert types == {"single_document", "multi_document", "comparison", "abstention"}


def test_pinned_questions_move_no_other_question_between_splits(gen, tmp_path, collection):
    """Without the unanswerable (pinned) questions, every other question keeps its id, text and split."""
    source = tmp_path / "demo-src"
    shutil.copytree(SOURCE_DIR, source, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    (source / "unanswerable.yaml").write_text("[]\n", "utf-8")
    without = gen.generate(source_dir=source)
    assert without.queries == collection.queries[: len(without.queries)]
    assert len(collection.queries) - len(without.queries) >= 25


def test_all_grades_are_used(grades):
    counts = defaultdict(int)
    for judged in grades.values():
        for grade in judged.values():
            counts[grade] += 1
    assert all(counts[grade] >= 50 for grade in range(4)), dict(counts)


def test_multi_hop_needs_passages_from_two_pages(collection, grades):
    parent_of = {r["_id"]: r["metadata"]["parent_id"] for r in collection.corpus}
    multi_hop = [q["_id"] for q in collection.queries
                 if q["metadata"]["intent"] == "multi_hop" and q["metadata"].get("answerable", True)]
    assert len(multi_hop) >= 20
    for query_id in multi_hop:
        parents = {parent_of[p] for p, grade in grades[query_id].items() if grade >= 2}
        assert len(parents) >= 2, f"{query_id}: answer passages all come from one page"


def test_near_twin_pages_are_judged_as_hard_negatives(collection, grades):
    """Where the answer sits on an error page, its near-twin (the adjacent code, opposite rule) is judged 0 or 1."""
    parent_of = {r["_id"]: r["metadata"]["parent_id"] for r in collection.corpus}
    passages_of = defaultdict(list)
    for passage_id, parent in parent_of.items():
        passages_of[parent].append(passage_id)
    twin_grades = []
    for query_id, judged in grades.items():
        answer_parents = {parent_of[p] for p, grade in judged.items() if grade == 3}
        for parent in answer_parents & collection.twin_parents.keys():
            twin = collection.twin_parents[parent]
            if twin in answer_parents:
                continue
            judged_twin = [judged[p] for p in passages_of[twin] if p in judged]
            assert judged_twin, f"{query_id}: twin page {twin} of answer page {parent} is not judged"
            assert max(judged_twin) <= 1, f"{query_id}: twin page {twin} graded as an answer"
            twin_grades.extend(judged_twin)
    assert len(twin_grades) >= 100 and {0, 1} <= set(twin_grades)


def test_twin_pages_really_are_near_duplicates(collection):
    """The trap only works if the twin shares most of its words with the answer."""
    text_of = defaultdict(str)
    for record in collection.corpus:
        text_of[record["metadata"]["parent_id"]] += record["title"] + " " + record["text"] + " "
    error_pages = {r["metadata"]["parent_id"] for r in collection.corpus if r["metadata"]["doc_type"] == "error_code"}
    assert set(collection.twin_parents) == error_pages, "every error page has exactly one near-twin"
    for parent, twin in collection.twin_parents.items():
        assert collection.twin_parents[twin] == parent
        words, twin_words = set(text_of[parent].lower().split()), set(text_of[twin].lower().split())
        assert len(words & twin_words) / len(words | twin_words) >= 0.15, (parent, twin)


def test_outdated_pages_are_judged_on_topic_not_answering(collection, grades):
    """A question about the S2 judges the matching S1 manual section 1, never as an answer."""
    version_of = {r["_id"]: r["metadata"].get("version") for r in collection.corpus if r["metadata"]["doc_type"]
                  == "manual" and r["metadata"]["product"] == "Orion"}
    outdated = 0
    for query in collection.queries:
        judged = grades[query["_id"]]
        s2_answers = any(version_of.get(p) == "S2" and grade == 3 for p, grade in judged.items())
        if s2_answers and "S1" not in query["text"]:  # about the S2 alone, not a comparison
            s1_grades = [grade for p, grade in judged.items() if version_of.get(p) == "S1"]
            assert s1_grades and max(s1_grades) <= 1, f"{query['_id']}: S1 manual not judged as outdated"
            outdated += 1
    assert outdated >= 5


def test_lexical_distractors_are_never_judged(gen, collection, grades):
    never_judged = {r["_id"] for r in collection.corpus if r["metadata"]["doc_type"] in gen.UNJUDGED_DOC_TYPES}
    assert len(never_judged) >= 40
    judged = {p for g in grades.values() for p in g}
    assert not never_judged & judged, f"judged distractors: {sorted(never_judged & judged)[:5]}"


def test_some_high_ranking_passages_are_left_unjudged(gen, collection, grades):
    """BM25 puts a never-judged distractor into the top 10 for a good share of the test questions."""
    bm25s = pytest.importorskip("bm25s")
    from rerankeval.retrieval.text import tokenize

    never_judged = [r["metadata"]["doc_type"] in gen.UNJUDGED_DOC_TYPES for r in collection.corpus]
    retriever = bm25s.BM25()
    retriever.index([tokenize(f"{r['title']}\n{r['text']}") for r in collection.corpus], show_progress=False)
    test = [q for q in collection.queries if q["metadata"]["split"] == "test"]
    with_distractor = 0
    for query in test:
        scores = retriever.get_scores(tokenize(query["text"]))
        top10 = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:10]
        with_distractor += any(never_judged[i] for i in top10)
    assert with_distractor >= 0.25 * len(test), f"only {with_distractor} of {len(test)}"


def test_access_and_validity_labels(gen, collection):
    """access.yaml: staff-only runbooks after every other page, portal pages for customers, the superseded price-list
    editions dated, and every question asked by a customer as of a date (data.access reads them)."""
    access = yaml.safe_load((gen.SOURCE_DIR / "access.yaml").read_text(encoding="utf-8"))
    runbooks = [r for r in collection.corpus if r["metadata"]["doc_type"] == "runbook"]
    assert runbooks and all(r["metadata"]["acl"] == access["restricted"]["acl"] for r in runbooks)
    assert min(r["_id"] for r in runbooks) > max(r["_id"] for r in collection.corpus
                                                 if r["metadata"]["doc_type"] != "runbook")  # no other id moved
    by_id = {r["_id"]: r for r in collection.corpus}
    old = [r for r in collection.corpus if "superseded_by" in r["metadata"]]
    assert old and all(by_id[r["metadata"]["superseded_by"]]["metadata"]["valid_from"] == r["metadata"]["valid_to"]
                       for r in old)
    groups = {tuple(q["metadata"]["user_groups"]) for q in collection.queries}
    assert groups == {tuple(access["questions"]["user_groups"])}
    assert {q["metadata"]["as_of"] for q in collection.queries} == {access["questions"]["as_of"],
                                                                  access["questions"]["historical_as_of"]}
