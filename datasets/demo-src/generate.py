"""Generate the bundled demo collection (datasets/demo) from the YAML next to this script.

    python datasets/demo-src/generate.py --out datasets/demo

The collection is a bilingual (Korean/English) support knowledge base built to give rerankers something to do. Its
traps are the ones real support search falls into:

* near-twin error codes: adjacent codes written from one template that differ in the condition and carry the
  opposite rule ("PAY-1042: never retry automatically" next to "PAY-1041: retry at most twice");
* price lists whose numbers swap between tiers and between years (2023 Pro = 30 days, 2024 Basic = 30 days);
* versioned manuals where the older model's page is outdated for the newer one (Orion S1 vs S2);
* policies whose answer needs several conditions from several pages (admin roles + SSO + emergency recovery);
* Markdown tables and code snippets, Korean, English and mixed pages, and code-switched questions.

Grades follow one scale everywhere: 3 answers the question, 2 answers part of it (or needs another passage),
1 is on topic without answering (the twin code, the outdated manual), 0 is a judged hard negative. Whenever an error
page answers, its twin page is judged too. Release notes, error-code index tables and troubleshooting checklists are
never judged although they rank high lexically: they are the deliberate holes in the judgments. Translations in a
language the question is not written in are judged only when the question names an identifier or is code-switched
(see ``_reachable_languages``), as a pooled assessment would have found them.

The source, one file per concern: ``error_codes.yaml`` (the twin pairs and their symptoms), ``error_pages.yaml`` (how
codes become error pages, index tables and release notes), ``plans.yaml`` (price lists), ``orion_manuals.yaml``,
``pages/<doc_type>.yaml`` (hand-written policies, API references, manuals, guides, announcements, FAQs, checklists),
``questions.yaml`` (hand-written questions, their judgments and gold answers), ``question_templates.yaml`` (the
questions asked about every error code) and ``unanswerable.yaml`` (questions the corpus cannot answer). Each file's
header says how it is read.

Gold answers (``metadata.answers``, any one counts): hand-written for the questions of ``questions.yaml``; for the
questions about error codes, the first sentence of the page section that answers (the fix, or the overview for
"what does it mean"), without its "How to handle X:" lead, in every language of the product. Every question carries
a ``query_type``: ``single_document`` or ``multi_document`` (its answering passages come from one topic or several),
``comparison`` or ``abstention`` (unanswerable: ``answerable: false``, every judgment 0).

Output is deterministic: one ``random.Random(seed)`` drawn in a fixed order, no set iteration, no hashing, no clock,
and the BEIR files are written atomically with sorted JSON keys, raw UTF-8 and ``\\n`` line ends.
``tests/test_demo_collection.py`` checks that this script reproduces the committed ``datasets/demo`` byte for byte.
Pages are numbered (d0001, d0001-p1, ...) in the order they are generated and the random draws follow each other, so
an edit usually changes more than the edited record: regenerate, commit the data with its source, rerun the pipeline.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

SOURCE_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = SOURCE_DIR.parent / "demo"
DEFAULT_SEED = 13
TEST_FRACTION = 0.45  # of each (intent, language) cell; 94 test and 116 train questions with the default seed

EN, KO, CS = "en", "ko", "ko_en_code_switch"  # query languages
KO_EN = "ko_en"  # page language of Korean pages written with many English terms (Keystone)
QUERY_LANGUAGES = (KO, EN, CS)
INTENTS = ("exact_id", "troubleshooting", "temporal", "comparison", "multi_hop")
SPLITS = ("train", "test")
# Document types that are never judged although they share many words with the questions.
UNJUDGED_DOC_TYPES = ("error_index", "release_note", "checklist")
# pages/<doc_type>.yaml, numbered in this order after the generated error pages, price lists and Orion manuals.
HAND_WRITTEN_DOC_TYPES = ("policy", "api", "manual", "guide", "announcement", "faq", "checklist")
ERROR_PAGE_SECTIONS = ("overview", "fix", "example")


@dataclass(frozen=True)
class DemoCollection:
    """BEIR-shaped records plus the bookkeeping the tests need (not written to disk)."""

    corpus: list[dict]
    queries: list[dict]
    qrels: dict[str, list[tuple[str, str, int]]]  # split -> (query-id, corpus-id, grade), sorted
    twin_parents: dict[str, str] = field(default_factory=dict)  # parent id -> parent id of its near-twin page


@dataclass(frozen=True)
class Question:
    """A question, the passages judged for it, and the metadata written for it."""

    text: str
    judgments: tuple[tuple[str, str, int], ...]  # (topic, section, grade)
    metadata: dict  # written to queries.jsonl: language, intent and any further field of the question's record

    @property
    def language(self) -> str:
        return self.metadata["language"]

    @property
    def intent(self) -> str:
        return self.metadata["intent"]


@dataclass(frozen=True)
class Source:
    """The YAML files, as loaded."""

    error_codes: dict[str, list[dict]]  # product -> codes, twin next to twin
    error_pages: dict
    plans: list[dict]
    orion_manuals: dict
    pages: dict[str, list[dict]]  # doc type -> hand-written pages
    questions: dict[str, list[dict]]  # intent -> hand-written question records
    question_templates: dict
    unanswerable: list[dict]  # question records (with intent and a pinned split) the corpus cannot answer
    access: dict  # restricted runbooks, portal pages, superseded editions, who asks as of when (access.yaml)


# ---------------------------------------------------------------------------------------------------------------------
# Reading the source
# ---------------------------------------------------------------------------------------------------------------------


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that rejects a repeated key; plain YAML would silently keep the last one (a lost judgment)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen = []
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                        f"found duplicate key {key!r}", key_node.start_mark)
            seen.append(key)
        return super().construct_mapping(node, deep)


def load_yaml(path: Path):
    """One source file; a repeated key is an error."""
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=_UniqueKeyLoader)


def _load_source(source_dir: Path) -> Source:
    source_dir = Path(source_dir)
    unknown = sorted({p.stem for p in (source_dir / "pages").glob("*.yaml")} - set(HAND_WRITTEN_DOC_TYPES))
    if unknown:
        raise ValueError(f"{source_dir / 'pages'}: unknown doc types {unknown}; list them in HAND_WRITTEN_DOC_TYPES")
    return Source(
        error_codes=load_yaml(source_dir / "error_codes.yaml"),
        error_pages=load_yaml(source_dir / "error_pages.yaml"),
        plans=load_yaml(source_dir / "plans.yaml"),
        orion_manuals=load_yaml(source_dir / "orion_manuals.yaml"),
        pages={doc_type: load_yaml(source_dir / "pages" / f"{doc_type}.yaml") for doc_type in HAND_WRITTEN_DOC_TYPES},
        questions=load_yaml(source_dir / "questions.yaml"),
        question_templates=load_yaml(source_dir / "question_templates.yaml"),
        unanswerable=load_yaml(source_dir / "unanswerable.yaml"),
        access=load_yaml(source_dir / "access.yaml"),
    )


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _fill(template: str, values: Mapping[str, object]) -> str:
    """Replace each {name} by its value; other braces (JSON, code) are literal text. An unknown name is a KeyError."""
    return _PLACEHOLDER.sub(lambda match: str(values[match.group(1)]), template)


def _twin_pairs(codes: list[dict]) -> list[tuple[dict, dict]]:
    if len(codes) % 2:
        raise ValueError(f"error codes come in twin pairs; {codes[-1]['code']} has no twin")
    return list(zip(codes[0::2], codes[1::2], strict=True))


def _twin_of(source: Source) -> dict[str, str]:
    return {code["code"]: twin["code"] for codes in source.error_codes.values()
            for a, b in _twin_pairs(codes) for code, twin in ((a, b), (b, a))}


# ---------------------------------------------------------------------------------------------------------------------
# Corpus
# ---------------------------------------------------------------------------------------------------------------------


class _CorpusBuilder:
    """Numbers pages (d0001) and their passages (d0001-p1) in the order they are added, and finds them by topic."""

    def __init__(self) -> None:
        self.records: list[dict] = []
        self.parent_of: dict[tuple[str, str], str] = {}  # (topic, lang) -> parent id
        self._by_topic: dict[str, list[tuple[str, str, str]]] = {}  # topic -> [(section, lang, passage id)]

    def add(self, topic: str, lang: str, title: str, sections: Iterable[tuple[str, str]], *, doc_type: str,
            product: str, version: str | None = None) -> str:
        if (topic, lang) in self.parent_of:
            raise ValueError(f"page {topic!r} in {lang!r} added twice")
        parent = f"d{len(self.parent_of) + 1:04d}"
        self.parent_of[(topic, lang)] = parent
        for number, (section, text) in enumerate(sections, start=1):
            passage_id = f"{parent}-p{number}"
            metadata = {"parent_id": parent, "doc_type": doc_type, "lang": lang, "product": product}
            if version is not None:
                metadata["version"] = version
            self.records.append({"_id": passage_id, "title": title, "text": text, "metadata": metadata})
            self._by_topic.setdefault(topic, []).append((section, lang, passage_id))
        return parent

    def entries(self, topic: str) -> list[tuple[str, str, str]]:
        """(section, lang, passage id) of every passage of ``topic``; fails on an unknown topic."""
        if topic not in self._by_topic:
            raise KeyError(f"no page with topic {topic!r}")
        return list(self._by_topic[topic])

    def metadata(self, passage_id: str) -> dict:
        return next(record["metadata"] for record in self.records if record["_id"] == passage_id)

    def find(self, topic: str, section: str, langs: frozenset[str]) -> list[str]:
        """Passage ids of one section of ``topic`` in the given languages; fails on an unknown topic or section."""
        entries = self._by_topic.get(topic, [])
        if all(s != section for s, _, _ in entries):
            raise KeyError(f"no passage for topic {topic!r} section {section!r}")
        return [pid for s, lang, pid in entries if s == section and lang in langs]


def _error_pages(builder: _CorpusBuilder, source: Source, rng: random.Random) -> dict[str, str]:
    """Error pages, twin next to twin, in every language of the product; returns parent id -> twin's parent id."""
    twin_parents: dict[str, str] = {}
    for product, codes in source.error_codes.items():
        style = source.error_pages["products"][product]
        for pair in _twin_pairs(codes):
            for lang in style["languages"]:
                parents = []
                for err in pair:
                    status = str(err["status"])
                    values = {"code": err["code"], "name": err["name"][lang], "status": status,
                              "english_name": err["name"].get(EN, err["name"][lang]), "log_level": status.upper(),
                              "rid": f"{rng.getrandbits(32):08x}"}
                    # An HTTP status shows up in a response body, a log level in a log.
                    example = style["example"]["http" if status.isdigit() else "log"][lang]
                    sections = [("overview", err["overview"][lang]), ("fix", err["fix"][lang]),
                                ("example", _fill(example, values))]
                    parents.append(builder.add(err["code"], lang, _fill(style["page_title"][lang], values), sections,
                                               doc_type="error_code", product=product))
                twin_parents[parents[0]], twin_parents[parents[1]] = parents[1], parents[0]
    return twin_parents


def _error_distractors(builder: _CorpusBuilder, source: Source, rng: random.Random) -> None:
    """Code index tables, then release notes naming two twin pairs each: lexically close, never judged."""
    pages = source.error_pages
    for product, codes in source.error_codes.items():
        for lang in pages["products"][product]["languages"]:
            index = pages["products"][product]["index_page"][lang]
            rows = [f"| {err['code']} | {err['name'][lang]} | {err['status']} |" for err in codes]
            table = "\n".join([index["intro"], "", pages["index_table_header"][lang], "|---|---|---|", *rows])
            builder.add(f"{product.lower()}-error-index", lang, index["title"], [("table", table)],
                        doc_type="error_index", product=product)
    for product, codes in source.error_codes.items():
        pairs = _twin_pairs(codes)
        for lang in pages["products"][product]["languages"]:
            for number, version in enumerate(pages["products"][product]["release_versions"]):
                sections = []
                for a, b in pairs[number * 2: number * 2 + 2]:
                    values = {"product": product, "version": version, "a": a["code"], "b": b["code"],
                              "name_a": a["name"][lang], "name_b": b["name"][lang]}
                    sections.append((a["code"], _fill(rng.choice(pages["release_note_templates"][lang]), values)))
                title = _fill(pages["release_note_title"][lang], {"product": product, "version": version})
                builder.add(f"{product.lower()}-release-{version}", lang, title, sections, doc_type="release_note",
                            product=product, version=version)


def _price_lists(builder: _CorpusBuilder, source: Source) -> None:
    for family in source.plans:
        for edition, spec in family["editions"].items():
            for lang in family["languages"]:
                label = spec["label"][lang]
                tiers = [dict(tier, label=label) for tier in spec["tiers"]]
                table = "\n".join([f"{family['product']} ({label}):", "", family["table_header"][lang],
                                   *(_fill(family["table_row"][lang], tier) for tier in tiers)])
                sections = [("table", table)]
                sections += [(tier["tier"], _fill(family["tier_text"][lang], tier).strip()) for tier in tiers]
                title = _fill(family["title"][lang], {"label": label})
                builder.add(f"{family['topic']}-{edition}", lang, title, sections,
                            doc_type="plan", product=family["product"], version=str(edition))


def _orion_manuals(builder: _CorpusBuilder, source: Source) -> None:
    manuals = source.orion_manuals
    for model, model_values in manuals["models"].items():
        for lang in manuals["languages"]:
            values = dict(model_values, reset_note=manuals["reset_note"][model][lang])
            sections = []
            for name, per_lang in manuals["sections"].items():
                template = per_lang[lang]
                if isinstance(template, dict):  # written per model
                    template = template[model]
                sections.append((name, _fill(template, values)))
            builder.add(f"{manuals['topic']}-{model}", lang, _fill(manuals["title"][lang], values), sections,
                        doc_type="manual", product=manuals["product"], version=model)


def _build_corpus(source: Source, rng: random.Random) -> tuple[_CorpusBuilder, dict[str, str]]:
    builder = _CorpusBuilder()
    twin_parents = _error_pages(builder, source, rng)
    _error_distractors(builder, source, rng)
    _price_lists(builder, source)
    _orion_manuals(builder, source)
    for doc_type in HAND_WRITTEN_DOC_TYPES:
        for page in source.pages[doc_type]:
            builder.add(page["topic"], page["lang"], page["title"], page["sections"].items(), doc_type=doc_type,
                        product=page["product"], version=page.get("version"))
    _restricted_runbooks(builder, source)
    _document_labels(builder, source)
    return builder, twin_parents


def _restricted_runbooks(builder: _CorpusBuilder, source: Source) -> None:
    """The staff-only runbooks of access.yaml, after every other page (no other id moves)."""
    spec = source.access["restricted"]
    codes = {err["code"]: (product, err) for product, errs in source.error_codes.items() for err in errs}
    for code in spec["codes"]:
        product, err = codes[code]
        for lang in source.error_pages["products"][product]["languages"]:
            values = {"code": code, "name": err["name"][lang]}
            sections = [("overview", err["overview"][lang]), ("fix", err["fix"][lang]),
                        ("staff", _fill(spec["staff_note"][lang], values).strip())]
            builder.add(f"runbook-{code}", lang, _fill(spec["title"][lang], values), sections, doc_type="runbook",
                        product=product)


def _document_labels(builder: _CorpusBuilder, source: Source) -> None:
    """acl on the runbooks and the portal pages; validity and successors on the superseded editions."""
    access = source.access
    restricted = {pid for code in access["restricted"]["codes"] for _, _, pid in builder.entries(f"runbook-{code}")}
    successor: dict[str, tuple[str, str]] = {}
    for change in access["superseded"]:
        new = {(section, lang): pid for section, lang, pid in builder.entries(change["new"])}
        for section, lang, pid in builder.entries(change["old"]):
            successor[pid] = (new[(section, lang)], change["on"])
        for pid in new.values():
            builder.metadata(pid)["valid_from"] = change["on"]
    for record in builder.records:
        metadata = record["metadata"]
        if record["_id"] in restricted:
            metadata["acl"] = list(access["restricted"]["acl"])
        elif metadata["doc_type"] in access["portal_doc_types"]:
            metadata["acl"] = list(access["portal_acl"])
        if record["_id"] in successor:
            metadata["superseded_by"], metadata["valid_to"] = successor[record["_id"]]


def superseded_passages(builder: _CorpusBuilder, source: Source) -> set[str]:
    return {pid for change in source.access["superseded"] for _, _, pid in builder.entries(change["old"])}


# ---------------------------------------------------------------------------------------------------------------------
# Questions and judgments
# ---------------------------------------------------------------------------------------------------------------------


def _question(record: Mapping, intent: str, judgments: Iterable[tuple[str, str, int]] | None = None) -> Question:
    """A question from its record: text, judgments (topic -> {section: grade}) unless given, the rest is metadata
    (a ``split`` pins the question to that split; ``answerable: false`` makes it an abstention case)."""
    metadata = {key: value for key, value in record.items() if key not in ("text", "judgments")}
    metadata["intent"] = intent
    if intent not in INTENTS or metadata.get("language") not in QUERY_LANGUAGES:
        raise ValueError(f"question {record['text']!r}: unknown intent {intent!r} or language "
                         f"{metadata.get('language')!r}")
    if judgments is None:
        judgments = [(topic, section, grade) for topic, grades in record["judgments"].items()
                     for section, grade in grades.items()]
    metadata["query_type"] = _query_type(intent, metadata.get("answerable", True), judgments)
    return Question(record["text"], tuple(judgments), metadata)


def _query_type(intent: str, answerable: bool, judgments: Iterable[tuple[str, str, int]]) -> str:
    if not answerable:
        return "abstention"
    if intent == "comparison":
        return "comparison"
    answering_topics = {topic for topic, _, grade in judgments if grade >= 2}
    return "multi_document" if len(answering_topics) > 1 else "single_document"


def _first_sentence(text: str) -> str:
    """The first sentence of a page section, without a "How to handle X:" / "X 처리 방법:" lead."""
    first = re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0]
    lead, colon, rest = first.partition(": ")
    return rest if colon and len(lead.split()) <= 4 and rest else first


def _code_answers(source: Source, product: str, code: dict, aspect: str) -> list[str]:
    """Gold answers of a question about one code's aspect: that section's first sentence in each product language."""
    languages = source.error_pages["products"][product]["languages"]
    return [_first_sentence(code[aspect][lang]) for lang in languages]


def _error_code_questions(source: Source, rng: random.Random) -> list[Question]:
    """Per code a question naming it and one describing its symptom; compared twins get a comparison question."""
    templates = source.question_templates
    twin_of = _twin_of(source)
    codes = [(product, err) for product, errs in source.error_codes.items() for err in errs]
    questions = []
    for i, (product, err) in enumerate(codes):
        code, twin = err["code"], twin_of[err["code"]]
        # exact_id: the code is named, so every translation is reachable; the twin page is on topic (1).
        # Every third code is asked about in each language; every fourth asks what it means rather than what to do
        # (4 and 3 are coprime, so both aspects occur in every language).
        language = QUERY_LANGUAGES[(i + 1) % 3]
        aspect, other = ("overview", "fix") if i % 4 == 3 else ("fix", "overview")
        phrasings = list(templates["exact_id"][aspect][language])
        if aspect == "fix" and product not in templates["no_retry_products"]:
            phrasings += templates["retry"][language]
        text = _fill(rng.choice(phrasings), {"code": code, "product": product})
        questions.append(_question({"language": language, "text": text,
                                    "answers": _code_answers(source, product, err, aspect)}, "exact_id", [
            (code, aspect, 3), (code, other, 1), (code, "example", 1), (twin, aspect, 1), (twin, other, 0)]))
        # troubleshooting: no code in the question; the twin's fix reads almost the same and is judged 1, its
        # overview describes a similar symptom and is judged a hard negative (0).
        questions.append(_question({**err["symptom"], "answers": _code_answers(source, product, err, "fix")},
                                   "troubleshooting", [
            (code, "fix", 3), (code, "overview", 2), (twin, "fix", 1), (twin, "overview", 0)]))
    errors = {err["code"]: (product, err) for product, err in codes}
    for code, language in templates["compared_twins"].items():
        twin = twin_of[code]
        text = _fill(templates["comparison"][language], {"a": code, "b": twin})
        answers = [answer for name in (code, twin) for answer in _code_answers(source, *errors[name], "fix")]
        questions.append(_question({"language": language, "text": text, "answers": answers}, "comparison", [
            (code, "overview", 2), (code, "fix", 2), (twin, "overview", 2), (twin, "fix", 2),
            (code, "example", 1), (twin, "example", 1)]))
    return questions


def _reachable_languages(language: str, intent: str) -> frozenset[str]:
    """Page languages an assessor judges for a question.

    A question that names an identifier, or mixes both languages, reaches pages in either language; otherwise only
    pages in the question's own language (and the mixed Keystone pages) were pooled and judged. This keeps the
    judgments honest about what a lexical or English-only dense first stage could ever retrieve.
    """
    if intent == "exact_id" or language == CS:
        return frozenset({EN, KO, KO_EN})
    return frozenset({language, KO_EN})


def _judge(builder: _CorpusBuilder, twin_of: Mapping[str, str], question: Question) -> dict[str, int]:
    langs = _reachable_languages(question.language, question.intent)
    # An assessor reading an answering error page sees its near-twin right next to it, so the twin is always judged:
    # 1 for the section that answers (on topic, wrong code), 0 for its other sections. Explicit judgments win.
    grades: dict[str, int] = {}
    for topic, section, grade in question.judgments:
        if grade >= 2 and topic in twin_of:
            for twin_section in ERROR_PAGE_SECTIONS:
                for passage_id in builder.find(twin_of[topic], twin_section, langs):
                    twin_grade = 1 if twin_section == section else 0
                    grades[passage_id] = max(twin_grade, grades.get(passage_id, twin_grade))
    explicit: dict[str, int] = {}
    for topic, section, grade in question.judgments:
        for passage_id in builder.find(topic, section, langs):
            explicit[passage_id] = max(grade, explicit.get(passage_id, grade))
    grades.update(explicit)
    if question.metadata.get("answerable", True) is False:
        if not grades or any(grade > 0 for grade in grades.values()):
            raise ValueError(f"unanswerable question {question.text!r} needs reachable judgments, all 0")
    elif not any(grade >= 2 for grade in grades.values()):
        raise ValueError(f"question {question.text!r} has no reachable passage graded 2 or 3")
    return grades


def _assign_splits(questions: list[Question], rng: random.Random) -> list[str]:
    """Split stratified by (intent, language): a fixed share of every cell, at least one, goes to test. A question
    with a pinned ``split`` keeps it and takes no part in the draw, so pinned additions move no other question."""
    splits = [q.metadata.get("split", "train") for q in questions]
    for intent in INTENTS:
        for language in QUERY_LANGUAGES:
            cell = [i for i, q in enumerate(questions)
                    if q.intent == intent and q.language == language and "split" not in q.metadata]
            rng.shuffle(cell)
            for i in cell[: max(1, round(len(cell) * TEST_FRACTION))]:
                splits[i] = "test"
    return splits


def generate(seed: int = DEFAULT_SEED, source_dir: Path = SOURCE_DIR) -> DemoCollection:
    """Build the demo collection. The same seed and source give the same collection on every run and machine."""
    source = _load_source(source_dir)
    rng = random.Random(seed)
    builder, twin_parents = _build_corpus(source, rng)
    questions = _error_code_questions(source, rng)
    questions += [_question(record, intent) for intent, records in source.questions.items() for record in records]
    questions += [_question({**{k: v for k, v in record.items() if k != "intent"}, "answerable": False},
                            record["intent"]) for record in source.unanswerable]
    splits = _assign_splits(questions, rng)
    twin_of = _twin_of(source)
    queries: list[dict] = []
    qrels: dict[str, list[tuple[str, str, int]]] = {split: [] for split in SPLITS}
    asked = source.access["questions"]
    superseded = superseded_passages(builder, source)
    for number, (question, split) in enumerate(zip(questions, splits, strict=True), start=1):
        query_id = f"q{number:04d}"
        grades = _judge(builder, twin_of, question)
        # A question a superseded edition answers is about that edition's time (access.yaml).
        historical = any(grades[pid] >= 2 for pid in superseded if pid in grades)
        labels = {"user_groups": list(asked["user_groups"]),
                  "as_of": asked["historical_as_of" if historical else "as_of"]}
        queries.append({"_id": query_id, "text": question.text,
                        "metadata": {**question.metadata, "split": split, **labels}})
        qrels[split].extend((query_id, passage_id, grades[passage_id]) for passage_id in sorted(grades))
    return DemoCollection(corpus=builder.records, queries=queries, qrels=qrels, twin_parents=twin_parents)


# ---------------------------------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------------------------------


def _jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records)


def _qrels_tsv(rows: list[tuple[str, str, int]]) -> str:
    return "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in rows)


def _write_atomically(path: Path, text: str) -> None:
    """Write via a temporary file in the same directory and os.replace, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp creates the file as 0600; keep the mode of the file being replaced, or use an ordinary 0644.
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
        raise


def beir_files(collection: DemoCollection) -> dict[str, str]:
    """Relative path -> exact file content of the BEIR layout (UTF-8, ``\\n`` line ends)."""
    files = {"corpus.jsonl": _jsonl(collection.corpus), "queries.jsonl": _jsonl(collection.queries)}
    for split in SPLITS:
        files[f"qrels/{split}.tsv"] = _qrels_tsv(collection.qrels[split])
    return files


def write_beir(collection: DemoCollection, out_dir: str | os.PathLike[str]) -> None:
    """Write corpus.jsonl, queries.jsonl and qrels/{train,test}.tsv under ``out_dir``, byte-identical on every run."""
    for relative, text in beir_files(collection).items():
        _write_atomically(Path(out_dir) / relative, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate the demo collection in BEIR layout (deterministic).")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                        help=f"output folder (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    write_beir(generate(), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
