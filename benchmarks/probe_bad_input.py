"""Issue 40's probe re-run: bad inputs of each class the probe tried that run without Ray, a GPU, the network or a
DVC run (a BEIR folder for ``rerankeval check-collection``, run and qrels files for ``evaluate``, ``trec_eval`` and
``compare``, a replay file for the freeze stage's reader, names in params.yaml), each built here in a temporary
folder and run in its own process with a timeout, and each outcome tallied: ``refused`` (a nonzero exit, no
traceback, a message naming the file, the line or the field and the fix), ``accepted`` (exit 0 where that is right,
with the warning a case expects), ``inconclusive`` (a compare that decides no verdict), or a wrong outcome:
``traceback``, ``crash`` (killed by a signal), ``hang`` (past the timeout), ``silent-wrong`` (exit 0 where a refusal
is due, or a compare ACCEPT on a run that barely overlaps the qrels), or an unclear one: ``refused-unclear``
(refused without naming where or without the fix), ``accepted-unwarned`` and ``over-refused``. The classes that
need a served endpoint, a model or ``dvc exp run`` are listed in the notes with the tests that cover them. Nothing
here is asserted: a wrong outcome is a finding.

    .venv/bin/python benchmarks/probe_bad_input.py
    .venv/bin/python benchmarks/probe_bad_input.py --keep /tmp/probe --case replay-401-digit-score   # keep the files
    .venv/bin/python benchmarks/probe_bad_input.py record --commit C --command ... --conditions ... \\
        --out results/benchmarks/probe_bad_input.yaml
    .venv/bin/python benchmarks/probe_bad_input.py --smoke    # 3 cheap cases: checks that the script runs
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from tempfile import TemporaryDirectory

import yaml

from rerankeval.report.results_data import add_provenance_arguments, print_benchmark

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
CLI = str(Path(sys.executable).parent / "rerankeval")
TIMEOUT_S = 10.0
TRACEBACK = "Traceback (most recent call last)"
OUTCOMES = ("refused", "accepted", "inconclusive", "refused-unclear", "accepted-unwarned", "over-refused",
            "traceback", "crash", "hang", "silent-wrong")
WRONG = ("traceback", "crash", "hang", "silent-wrong")
SMOKE = ("queries-fifo", "corpus-bad-json-line", "params-system-name-escapes")

NOT_RE_RUN = [
    "served /v2/rerank (deep JSON, lone surrogates, a bad request failing its batch-mates): covered by "
    "tests/test_serving_validation.py, not re-run here (needs Ray Serve and a model)",
    "secrets echoed by a rerank API or an LLM endpoint (raw, JSON-escaped, URL-encoded, base64) reaching runs, "
    "reasons, answers or caches; credentials in a base_url; a cache on a read-only disk: covered by "
    "tests/test_http_client.py, not re-run here (needs a fake endpoint and a pipeline run)",
    "two `dvc exp run` at once on one workspace: covered by tests/test_concurrent_runs.py, not re-run here (needs DVC)",
    "a system name run by the stage entry point, its files inside the workspace: covered by "
    "tests/test_bad_input.py (test_a_safe_system_name_makes_files_inside_its_folder) and tests/test_launcher.py, "
    "not re-run here (needs the workspace's dvc.yaml); the names are re-run below through load_params",
    "an empty or garbage GGUF .verified.json stamp, a tampered GGUF with its modification time restored: covered by "
    "tests/test_local_llm_setup.py, not re-run here (needs the local LLM's files)",
    "max_length beyond the model's positions: covered by tests/test_systems.py, not re-run here (needs a model)",
    "the compare stage's coverage rule (min_run_coverage): covered by tests/test_comparison.py and "
    "tests/test_external_runs.py, not re-run here (needs a pipeline run); the CLI's rule is re-run below",
]

FREEZE = """
import sys
from rerankeval.core.errors import RerankevalError
from rerankeval.data.snapshot import Snapshot
from rerankeval.retrieval.config import ReplayConfig
from rerankeval.retrieval.sources import freeze_candidates
try:
    frozen = freeze_candidates(Snapshot(sys.argv[1]), ReplayConfig(source="replay", path=sys.argv[2]))
except RerankevalError as err:  # as the stage entry point reports it (rerankeval.pipeline.__main__.run_stage)
    print(f"freeze: error: {err}", file=sys.stderr)
    sys.exit(2)
for line in frozen.log:
    print(f"freeze: {line}")
"""
"""The freeze stage's reader of a replay file (no CLI reads one), errors reported as the stage entry point does."""

LOAD_PARAMS = """
import sys
from rerankeval.core.errors import RerankevalError
from rerankeval.pipeline.params import load_params
try:
    load_params(sys.argv[1], stage=sys.argv[2] or None)
except RerankevalError as err:  # as the stage entry point reports it (rerankeval.pipeline.__main__.run_stage)
    print(f"{sys.argv[2] or 'params'}: error: {err}", file=sys.stderr)
    sys.exit(2)
print("params loaded")
"""


@dataclass
class Call:
    argv: list[str]
    cwd: Path


@dataclass
class Case:
    name: str
    kind: str
    """The probe's class of bad input."""
    expect: str
    """``refuse``, ``refuse-or-inconclusive`` (a compare: never ACCEPT), ``accept-with-warning`` or ``accept``."""
    build: Callable[[Path], Call]
    names: tuple[str, ...] = ()
    """What names the bad file in a message (its file name, a run's name); none: no file to name."""
    field: str | None = None
    """The field or key a message should name, when there is one."""
    warning: str = "warning"
    """What an accepted case's output must hold (``accept-with-warning``)."""


@dataclass
class Outcome:
    case: Case
    outcome: str
    code: int | None
    named: list[str] = field(default_factory=list)
    message: str = ""
    stderr: str = ""
    command: str = ""
    seconds: float = 0.0


# ---------------------------------------------------------------------------------------------------------- fixtures

def beir(folder: Path, corpus: list[str] | None = None, queries: list[str] | None = None,
         qrels: str | None = None) -> Path:
    """A small valid BEIR folder, some of whose files are replaced by the given lines."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    corpus = corpus or [json.dumps({"_id": f"d{n}", "text": f"document {n} about topic {n}"}) for n in range(1, 4)]
    queries = queries or [json.dumps({"_id": f"q{n}", "text": f"topic {n}"}) for n in range(1, 3)]
    (folder / "corpus.jsonl").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    (folder / "queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text(
        qrels or "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\nq2\td2\t1\nq2\td3\t0\n", encoding="utf-8")
    return folder


def doc(doc_id: str, **extra) -> str:
    return json.dumps({"_id": doc_id, "text": f"document {doc_id}", **extra}, ensure_ascii=False)


def check(folder: Path) -> Call:
    return Call([CLI, "check-collection", str(folder)], folder.parent)


def collection(corpus: list[str] | None = None, queries: list[str] | None = None,
               qrels: str | None = None) -> Callable[[Path], Call]:
    return lambda where: check(beir(where / "c", corpus, queries, qrels))


def replaced(name: str, make: Callable[[Path], None]) -> Callable[[Path], Call]:
    """A valid BEIR folder whose file ``name`` is made by ``make(path)`` (a FIFO, a link, raw bytes)."""
    def build(where: Path) -> Call:
        folder = beir(where / "c")
        (folder / name).unlink()
        make(folder / name)
        return check(folder)
    return build


QRELS_TREC = "".join(f"q{i} 0 d{j} {int(j == i % 3)}\n" for i in range(20) for j in range(3))


def trec_run(query_ids: list[str], tag: str = "t", score: str | None = None) -> str:
    return "".join(f"{qid} Q0 d{j} {j + 1} {score or 3 - j} {tag}\n" for qid in query_ids for j in range(3))


def run_files(where: Path, run: str | bytes, name: str = "run.txt", qrels: str = QRELS_TREC) -> tuple[Path, Path]:
    where.mkdir(parents=True, exist_ok=True)
    (where / "qrels.txt").write_text(qrels, encoding="utf-8")
    path = where / name
    path.write_bytes(run if isinstance(run, bytes) else run.encode("utf-8"))
    return where / "qrels.txt", path


def evaluate(run: str | bytes, name: str = "run.txt", qrels: str = QRELS_TREC) -> Callable[[Path], Call]:
    def build(where: Path) -> Call:
        qrels_path, run_path = run_files(where, run, name, qrels)
        return Call([CLI, "evaluate", "--qrels", str(qrels_path), "--run", str(run_path), "-m", "nDCG@10"], where)
    return build


def trec_eval(run: str, qrels: str = QRELS_TREC) -> Callable[[Path], Call]:
    def build(where: Path) -> Call:
        qrels_path, run_path = run_files(where, run, "run.txt", qrels)
        return Call([CLI, "trec_eval", "-m", "ndcg_cut.10", str(qrels_path), str(run_path)], where)
    return build


def judged_first(query_ids: list[str], tag: str = "n") -> str:
    """A run that ranks each query's relevant document (``QRELS_TREC``: d<i mod 3> of q<i>) first: against a
    baseline that ties every score, an ACCEPT wherever its queries count."""
    return "".join(f"{qid} Q0 d{j} {rank} {3 - rank} {tag}\n" for qid in query_ids
                   for rank, j in enumerate(sorted(range(3), key=lambda j: j != int(qid[1:]) % 3), start=1))


QUERIES = [f"q{i}" for i in range(20)]
ONE_SHARED = ["q0", *(f"Q{i}" for i in range(1, 20))]
"""Query ids of which 1 of the 20 qrels' ids matches, the other 19 differing in letter case only."""


def compare(baseline: str, challenger: str, *extra: str) -> Callable[[Path], Call]:
    def build(where: Path) -> Call:
        qrels_path, base = run_files(where, baseline, "base.trec")
        (where / "new.trec").write_text(challenger, encoding="utf-8")
        return Call([CLI, "compare", "--qrels", str(qrels_path), "--baseline", str(base), "--run",
                     str(where / "new.trec"), "--samples", "200", "--trials", "20", "--json", *extra], where)
    return build


def compare_queries(make: Callable[[Path], None]) -> Callable[[Path], Call]:
    def build(where: Path) -> Call:
        call = compare(trec_run(QUERIES, "b"), judged_first(QUERIES), "--critical-slice", "language")(where)
        make(where / "queries.jsonl")
        call.argv += ["--queries", str(where / "queries.jsonl")]
        return call
    return build


def compare_folder_baseline(where: Path) -> Call:
    call = compare(trec_run(QUERIES, "b"), judged_first(QUERIES))(where)
    (where / "base.trec").unlink()
    (where / "base.trec").mkdir()
    return call


def sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def candidate(doc_id: str, text: str, rank: int, score, **extra) -> dict:
    return {"document_id": doc_id, "document_version": f"sha256:{sha256(text)}", "text": text,
            "retrieval_rank": rank, "retrieval_score": score, **extra}


def replay_line(query_id: str, candidates: list[dict], **extra) -> str:
    return json.dumps({"query_id": query_id, "candidate_source": "prod-v7", "corpus_version": "2024-06-01",
                       "candidates": candidates, **extra}, ensure_ascii=False)


def replay(second_line: str | Callable[[Path], None]) -> Callable[[Path], Call]:
    """A replay file whose first line is good and whose second is ``second_line`` (or a file made by a function),
    read by the freeze stage's reader against the shared snapshot."""
    def build(where: Path) -> Call:
        where.mkdir(parents=True, exist_ok=True)
        path = where / "replay.jsonl"
        if callable(second_line):
            second_line(path)
        else:
            good = replay_line("q1", [candidate("d1", "document d1", 1, 2.0)])
            path.write_text(good + "\n" + second_line + "\n", encoding="utf-8")
        return Call([PYTHON, "-c", FREEZE, str(where.parent / "snapshot"), str(path)], where)
    return build


def export_candidates(where: Path) -> Call:
    where.mkdir(parents=True, exist_ok=True)
    (where / "candidates.parquet").write_text("query_id,doc_id\nq1,d1\n", encoding="utf-8")
    return Call([CLI, "export-candidates", "--out", str(where / "replay.jsonl"), "--candidates",
                 str(where / "candidates.parquet"), "--first-stage", str(where / "first_stage.parquet")], where)


def params(edit: Callable[[dict], None], stage: str = "snapshot") -> Callable[[Path], Call]:
    """The project's params.yaml edited by ``edit``, loaded by ``load_params`` for ``stage`` (run from the project
    root, whose files the settings name; nothing is written there)."""
    def build(where: Path) -> Call:
        where.mkdir(parents=True, exist_ok=True)
        data = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
        edit(data)
        (where / "params.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return Call([PYTHON, "-c", LOAD_PARAMS, str(where / "params.yaml"), stage], ROOT)
    return build


def system_named(name: str) -> Callable[[dict], None]:
    def edit(data: dict) -> None:
        data["systems"] = {name: data["systems"]["fusion"], **data["systems"]}
        data["system_names"] = list(data["systems"])
    return edit


def readout_named(name: str) -> Callable[[dict], None]:
    def edit(data: dict) -> None:
        readouts = data["online"]["readouts"]
        data["online"]["readouts"] = {name: next(iter(readouts.values())), **readouts}
    return edit


def out_dir(path: str) -> Callable[[dict], None]:
    def edit(data: dict) -> None:
        data["train"]["out_dir"] = path
    return edit


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def utf16(text: str) -> bytes:
    return text.encode("utf-16")


def gzip_bytes(text: str) -> bytes:
    import gzip

    return gzip.compress(text.encode("utf-8"))


def link_to(target: str) -> Callable[[Path], None]:
    return lambda path: path.symlink_to(target)


def fifo(path: Path) -> None:
    os.mkfifo(path)


def a_folder(path: Path) -> None:
    path.mkdir()


def write(data: str | bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))


def evaluate_replaced(make: Callable[[Path], None]) -> Callable[[Path], Call]:
    """``evaluate`` of a good run file then replaced by ``make(path)`` (a FIFO, a folder)."""
    def build(where: Path) -> Call:
        call = evaluate(trec_run(QUERIES))(where)
        run = Path(call.argv[call.argv.index("--run") + 1])
        run.unlink()
        make(run)
        return call
    return build


Q = [json.dumps({"_id": "q1", "text": "topic 1"})]
DIGITS_500, DIGITS_401, DIGITS_5000 = "9" * 500, "9" * 401, "9" * 5000
CASES = [
    # Bounded readers: what could block, never end or grow without bound is refused with its file and its bound.
    Case("queries-fifo", "bounded readers", "refuse", replaced("queries.jsonl", fifo), ("queries.jsonl",)),
    Case("corpus-link-to-dev-zero", "bounded readers", "refuse", replaced("corpus.jsonl", link_to("/dev/zero")),
         ("corpus.jsonl",)),
    Case("corpus-is-a-folder", "bounded readers", "refuse", replaced("corpus.jsonl", a_folder), ("corpus.jsonl",)),
    Case("corpus-line-nested-100000-deep", "bounded readers", "refuse",
         collection([doc("d1"), '{"_id": "d2", "text": "b", "metadata": ' + deep(100_000) + "}", doc("d3")]),
         ("corpus.jsonl",)),
    Case("corpus-metadata-5000-digit-number", "bounded readers", "refuse",
         collection([doc("d1"), '{"_id": "d2", "text": "b", "metadata": {"big": ' + DIGITS_5000 + "}}", doc("d3")]),
         ("corpus.jsonl",), "big"),
    Case("corpus-line-over-64-MiB", "bounded readers", "refuse",
         replaced("corpus.jsonl", write(doc("d1") + "\n" + '{"_id": "d2", "text": "' + "x" * (65 << 20) + '"}\n')),
         ("corpus.jsonl",)),
    Case("qrels-500-digit-grade", "bounded readers", "refuse",
         collection(qrels=f"query-id\tcorpus-id\tscore\nq1\td1\t{DIGITS_500}\nq2\td2\t1\n"), ("test.tsv",), "score"),
    Case("evaluate-run-is-a-fifo", "bounded readers", "refuse", evaluate_replaced(fifo), ("run.txt",)),
    Case("compare-queries-is-a-fifo", "bounded readers", "refuse", compare_queries(fifo), ("queries.jsonl",)),
    Case("replay-is-a-fifo", "bounded readers", "refuse", replay(fifo), ("replay.jsonl",)),
    # Encodings: bytes that are not UTF-8 text are named with the file, the line and the conversion.
    Case("corpus-invalid-utf8-byte", "encodings", "refuse",
         replaced("corpus.jsonl", write(b'{"_id": "d1", "text": "caf\xe9"}\n{"_id": "d2", "text": "b"}\n'
                                        b'{"_id": "d3", "text": "c"}\n')), ("corpus.jsonl",)),
    Case("corpus-lone-surrogate", "encodings", "refuse",
         collection([doc("d1"), '{"_id": "d2", "text": "half \\ud800 a pair"}', doc("d3")]), ("corpus.jsonl",),
         "text"),
    Case("queries-utf16", "encodings", "refuse",
         replaced("queries.jsonl", write(utf16('{"_id": "q1", "text": "topic 1"}\n'))), ("queries.jsonl",)),
    Case("run-utf16", "encodings", "refuse", evaluate(utf16(trec_run(QUERIES))), ("run.txt",)),
    Case("run-binary", "encodings", "refuse", evaluate(random.Random(13).randbytes(200)), ("run.txt",)),
    Case("run-gzip-without-gz-name", "encodings", "refuse", evaluate(gzip_bytes(trec_run(QUERIES))), ("run.txt",)),
    Case("run-gzip-named-gz", "encodings", "accept", evaluate(gzip_bytes(trec_run(QUERIES)), "run.txt.gz")),
    # Records and fields of a BEIR folder: each fault names the file, the line, the field and the fix.
    Case("corpus-bad-json-line", "records and fields", "refuse",
         collection([doc("d1"), '{"_id": "d2", "text": "b"', doc("d3")]), ("corpus.jsonl",)),
    Case("corpus-missing-id", "records and fields", "refuse",
         collection([doc("d1"), '{"text": "no id"}', doc("d2"), doc("d3")]), ("corpus.jsonl",), "_id"),
    Case("queries-missing-text", "records and fields", "refuse",
         collection(queries=['{"_id": "q1"}', json.dumps({"_id": "q2", "text": "topic 2"})]), ("queries.jsonl",),
         "text"),
    Case("corpus-duplicate-id", "records and fields", "refuse",
         collection([doc("d1"), doc("d2"), doc("d3"), doc("d2")]), ("corpus.jsonl",), "_id"),
    Case("corpus-id-with-tab", "records and fields", "refuse",
         collection([doc("d1"), doc("d2"), doc("d3"), doc("d\t4")]), ("corpus.jsonl",), "_id"),
    Case("queries-zero-width-text", "records and fields", "refuse",
         collection(queries=[json.dumps({"_id": "q1", "text": "\u200b \u200b"}),
                             json.dumps({"_id": "q2", "text": "topic 2"})]), ("queries.jsonl",), "text"),
    Case("qrels-non-numeric-grade", "records and fields", "refuse",
         collection(qrels="query-id\tcorpus-id\tscore\nq1\td1\thigh\nq2\td2\t1\n"), ("test.tsv",), "score"),
    Case("corpus-acl-not-a-list", "records and fields", "refuse",
         collection([doc("d1"), doc("d2", metadata={"acl": "staff"}), doc("d3")]), ("corpus.jsonl",), "acl"),
    Case("corpus-date-does-not-parse", "records and fields", "refuse",
         collection([doc("d1"), doc("d2", metadata={"valid_from": "next tuesday"}), doc("d3")]), ("corpus.jsonl",),
         "valid_from"),
    Case("queries-as-of-impossible-date", "records and fields", "refuse",
         collection(queries=[json.dumps({"_id": "q1", "text": "topic 1", "metadata": {"as_of": "2024-13-45"}}),
                             json.dumps({"_id": "q2", "text": "topic 2"})]), ("queries.jsonl",), "as_of"),
    Case("queries-metadata-500-digit-number", "records and fields", "accept",
         collection(queries=[json.dumps({"_id": "q1", "text": "topic 1"})[:-1] + ', "metadata": {"big": '
                             + DIGITS_500 + "}}", json.dumps({"_id": "q2", "text": "topic 2"})])),
    Case("queries-punctuation-only", "records and fields", "accept-with-warning",
         collection(queries=[json.dumps({"_id": "q1", "text": "?!"}), json.dumps({"_id": "q2", "text": "topic 2"})]),
         warning="hold no letter or digit"),
    # Run and qrels files given to evaluate and trec_eval.
    Case("evaluate-wrong-column-count", "run files", "refuse", evaluate("q0 Q0 d0 1 2.0\n" + trec_run(QUERIES[1:])),
         ("run.txt",)),
    Case("evaluate-nan-score", "run files", "refuse", evaluate(trec_run(["q0"], score="nan") + trec_run(QUERIES[1:])),
         ("run.txt",), "score"),
    Case("trec_eval-nan-score", "run files", "refuse", trec_eval(trec_run(["q0"], score="nan") + trec_run(QUERIES[1:])),
         ("run.txt",), "score"),
    Case("trec_eval-wrong-column-count", "run files", "refuse", trec_eval("q0 Q0 d0 1\n"), ("run.txt",)),
    Case("evaluate-empty-run", "run files", "refuse", evaluate(""), ("run.txt",)),
    Case("evaluate-run-is-a-folder", "run files", "refuse", evaluate_replaced(a_folder), ("run.txt",)),
    Case("evaluate-qrels-infinite-grade", "run files", "refuse",
         evaluate(trec_run(QUERIES), qrels="q0 0 d0 1\nq0 0 d1 1e309\n"), ("qrels.txt",)),
    Case("trec_eval-empty-qrels", "run files", "refuse", trec_eval(trec_run(QUERIES), qrels=""), ("qrels.txt",)),
    # compare: no verdict on a run that covers too few of the judged queries; its other inputs checked as evaluate's.
    Case("compare-baseline-shares-1-of-20-ids-by-case", "verdict coverage", "refuse-or-inconclusive",
         compare(trec_run(ONE_SHARED, "b", "1"), judged_first(QUERIES)), ("base",)),
    Case("compare-challenger-shares-1-of-20-ids-by-case", "verdict coverage", "refuse-or-inconclusive",
         compare(trec_run(QUERIES, "b", "1"), judged_first(ONE_SHARED)), ("new",)),
    Case("compare-baseline-shares-1-of-20-ids-min-coverage-0", "verdict coverage", "refuse-or-inconclusive",
         compare(trec_run(ONE_SHARED, "b", "1"), judged_first(QUERIES), "--min-coverage", "0"), ("base",)),
    Case("compare-baseline-shares-1-of-20-other-ids", "verdict coverage", "refuse-or-inconclusive",
         compare(trec_run(["q0", *(f"x{i}" for i in range(1, 20))], "b", "1"), judged_first(QUERIES)), ("base",)),
    Case("compare-queries-nested-100000-deep", "verdict coverage", "refuse",
         compare_queries(write('{"_id": "q0", "metadata": {"language": "en"}}\n' + "[" * 100_000 + "\n")),
         ("queries.jsonl",)),
    Case("compare-queries-empty", "verdict coverage", "refuse", compare_queries(write("")), ("queries.jsonl",),
         "language"),
    Case("compare-nan-score", "verdict coverage", "refuse",
         compare(trec_run(QUERIES, "b"), trec_run(["q0"], "n", "nan") + trec_run(QUERIES[1:], "n")), ("new",),
         "score"),
    Case("compare-baseline-is-a-folder", "verdict coverage", "refuse", compare_folder_baseline, ("base",)),
    Case("compare-full-coverage", "verdict coverage", "accept", compare(trec_run(QUERIES, "b", "1"),
                                                                      judged_first(QUERIES))),
    # Replay files read by the freeze stage.
    Case("replay-401-digit-score", "replay", "refuse", replay(replay_line("q2", [candidate("d2", "b", 1, 0)]).replace(
        '"retrieval_score": 0', f'"retrieval_score": {DIGITS_401}')), ("replay.jsonl",), "retrieval_score"),
    Case("replay-nan-score", "replay", "refuse", replay(replay_line("q2", [candidate("d2", "b", 1, 0)]).replace(
        '"retrieval_score": 0', '"retrieval_score": NaN')), ("replay.jsonl",), "retrieval_score"),
    Case("replay-upper-case-sha256-mismatch", "replay", "refuse",
         replay(replay_line("q2", [candidate("d2", "edited", 1, 1.0, document_version=f"SHA256:{sha256('orig')}")])),
         ("replay.jsonl",), "document_version"),
    Case("replay-leading-space-sha256-mismatch", "replay", "refuse",
         replay(replay_line("q2", [candidate("d2", "edited", 1, 1.0, document_version=f" sha256:{sha256('orig')}")])),
         ("replay.jsonl",), "document_version"),
    Case("replay-unknown-key", "replay", "refuse",
         replay(replay_line("q2", [candidate("d2", "b", 1, 1.0, retreival_score=1)])), ("replay.jsonl",),
         "retreival_score"),
    Case("replay-line-nested-100000-deep", "replay", "refuse",
         replay('{"query_id": "q2", "candidates": ' + deep(100_000) + "}"), ("replay.jsonl",)),
    Case("replay-acl-not-a-list", "replay", "refuse",
         replay(replay_line("q2", [candidate("d2", "b", 1, 1.0, acl="staff")])), ("replay.jsonl",), "acl"),
    Case("replay-scores-rise-down-the-ranks", "replay", "refuse",
         replay(replay_line("q2", [candidate("d2", "b", 1, 1.0), candidate("d3", "c", 2, 5.0)])),
         ("replay.jsonl",), "retrieval_rank"),
    Case("replay-other-corpus-version", "replay", "accept-with-warning",
         replay(replay_line("q2", [candidate("d2", "b", 1, 1.0)])), warning="is not this snapshot's corpus"),
    Case("export-candidates-text-as-parquet", "replay", "refuse", export_candidates, ("candidates.parquet",)),
    # Names in params.yaml that become files, DVC stages and shell words.
    Case("params-system-name-escapes", "names", "refuse", params(system_named("../../x/escaped")), ("params.yaml",),
         "systems"),
    Case("params-system-name-dollar", "names", "refuse", params(system_named("probe$HOME")), ("params.yaml",),
         "systems"),
    Case("params-system-name-space", "names", "refuse", params(system_named("a b")), ("params.yaml",), "systems"),
    Case("params-readout-name-escapes", "names", "refuse", params(readout_named("../r"), ""), ("params.yaml",),
         "readouts"),
    Case("params-train-out-dir-escapes", "names", "refuse", params(out_dir("../../outside"), ""), ("params.yaml",),
         "out_dir"),
    Case("params-system-name-safe", "names", "accept", params(system_named("ce_minilm-ft.v2"))),
]


# --------------------------------------------------------------------------------------------------------- the probe

def shared_snapshot(root: Path) -> None:
    """The snapshot the replay cases freeze against (the BEIR folder of ``beir``)."""
    from rerankeval.data.beir import load_beir
    from rerankeval.data.snapshot import write_snapshot

    write_snapshot(load_beir(beir(root / "snapshot-collection")), root / "snapshot", source={})


def execute(call: Call, timeout: float) -> tuple[int | None, str, str, float]:
    """(exit code or None on a timeout, stdout, stderr, seconds); the whole process group is killed at the timeout."""
    env = dict(os.environ, RERANKEVAL_PROGRESS="0", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    started = time.perf_counter()
    process = subprocess.Popen(call.argv, cwd=call.cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        code = None
    return code, out, err, time.perf_counter() - started


def error_message(err: str) -> str:
    """The refusal: stderr from its first ``error`` line on (a warning before it is not the refusal)."""
    lines = [line for line in err.splitlines() if line.strip()]
    first = next((n for n, line in enumerate(lines) if "error" in line.lower()), 0)
    return " ".join(line.strip() for line in lines[first:])


def named(case: Case, message: str) -> list[str]:
    found = []
    if case.names and any(name in message for name in case.names):
        found.append("file")
    if re.search(r"(\.\w+:\d+\b|\bline \d+)", message):  # file.jsonl:12, not a clock's 09:00:03
        found.append("line")
    if case.field and re.search(rf"(?<![\w-]){re.escape(case.field)}(?![\w-])", message):
        found.append("field")
    if re.search(r"\bfix\b", message, re.IGNORECASE):
        found.append("fix")
    return found


def decisions(out: str) -> dict[str, str]:
    try:
        return {name: row["decision"] for name, row in json.loads(out)["challengers"].items()}
    except (ValueError, KeyError, TypeError):
        return {}


def classify(case: Case, code: int | None, out: str, err: str) -> tuple[str, list[str], str]:
    """(outcome, what the message named, the message)."""
    if TRACEBACK in err or TRACEBACK in out:
        return "traceback", [], err.strip().splitlines()[-1] if err.strip() else ""
    if code is None:
        return "hang", [], f"no answer within the timeout; stderr: {err.strip()[-80:]}"
    if code < 0:
        return "crash", [], f"killed by signal {-code} (a segfault, the OOM killer); stderr: {err.strip()[-80:]}"
    if code != 0:
        message = error_message(err) or out.strip()
        found = named(case, message)
        if case.expect.startswith("accept"):
            return "over-refused", found, message
        clear = "fix" in found and {"file", "line", "field"} & set(found)
        return ("refused" if clear else "refused-unclear"), found, message
    if case.expect == "refuse-or-inconclusive":
        decided = decisions(out)
        message = ", ".join(f"{name}: {decision}" for name, decision in decided.items()) or out.strip()[:100]
        if not decided or "ACCEPT" in decided.values():
            return "silent-wrong", [], message
        return "inconclusive", [], message
    if case.expect == "refuse":
        return "silent-wrong", [], (out.strip().splitlines() or [""])[0]
    if case.expect == "accept-with-warning":
        shown = next((line for line in (err + out).splitlines() if case.warning in line), "")
        return ("accepted" if shown else "accepted-unwarned"), [], shown or (out.strip().splitlines() or [""])[0]
    shown = ", ".join(f"{name}: {decision}" for name, decision in decisions(out).items())
    return "accepted", [], shown or (out.strip().splitlines() or [""])[0]


def probe(cases: list[Case], root: Path, timeout: float) -> list[Outcome]:
    if any(case.kind == "replay" for case in cases):
        shared_snapshot(root)
    outcomes = []
    for case in cases:
        call = case.build(root / case.name)
        code, out, err, seconds = execute(call, timeout)
        outcome, found, message = classify(case, code, out, err)
        message = message.partition("error: ")[2] or message  # the refusal itself, its folder left out
        message = message.replace(f"{root / case.name}/", "")
        shown = [{CLI: "rerankeval", PYTHON: "python"}.get(arg, arg) if len(arg) < 200
                 else "<the code in benchmarks/probe_bad_input.py>" for arg in call.argv]
        command = f"cd {shlex.quote(str(call.cwd))} && {shlex.join(shown)}".replace(str(root), "DIR")
        err = err.replace(str(root), "DIR")
        outcomes.append(Outcome(case, outcome, code, found, message, err, command, seconds))
        print(f"{case.name}: {outcome} ({seconds:.1f} s)", file=sys.stderr)
    return outcomes


def tables(outcomes: list[Outcome]) -> list[dict]:
    kinds = list(dict.fromkeys(outcome.case.kind for outcome in outcomes))
    shown = [name for name in OUTCOMES if any(outcome.outcome == name for outcome in outcomes) or name in WRONG]
    rows = []
    for kind in [*kinds, "all"]:
        mine = [outcome for outcome in outcomes if kind in ("all", outcome.case.kind)]
        rows.append([kind, len(mine), *(sum(outcome.outcome == name for outcome in mine) for name in shown)])
    counts = {"title": "Outcomes per class of bad input (traceback, crash, hang and silent-wrong are wrong; "
                       "refused-unclear, accepted-unwarned and over-refused are unclear)",
              "columns": ["class", "cases", *shown], "rows": rows}
    cases = {"title": "Each case: what it expects, its outcome, what its message named (file, line, field, fix) and "
                      "the message's first 100 characters",
             "columns": ["case", "class", "expected", "outcome", "exit", "named", "message"],
             "rows": [[outcome.case.name, outcome.case.kind, outcome.case.expect, outcome.outcome,
                       "timeout" if outcome.code is None else outcome.code, ", ".join(outcome.named),
                       _cell(outcome.message[:100])] for outcome in outcomes]}
    return [counts, cases]


def _cell(text: str) -> str:
    """A message excerpt as a Markdown table cell (docs/results.md renders the table): no ``|``, no code span cut."""
    return text.replace("|", "/").replace("`", "'")


def findings(outcomes: list[Outcome]) -> list[str]:
    """A note per case that did not end as expected: how to rerun it, its command and its stderr's tail."""
    return [f"{outcome.outcome}: {outcome.case.name} (rebuild: `.venv/bin/python benchmarks/probe_bad_input.py --keep "
            f"DIR --case {outcome.case.name}`, then `{outcome.command}`); stderr ends: "
            f"{' / '.join(outcome.stderr.strip().splitlines()[-3:])[-400:]}"
            for outcome in outcomes if outcome.outcome not in ("refused", "accepted", "inconclusive")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help=f"only {', '.join(SMOKE)}: checks that the script runs")
    parser.add_argument("--case", action="append", default=[], help="run only this case (repeat for several)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds a case may take before it is a hang")
    parser.add_argument("--keep", type=Path, help="build the cases in this folder and keep it (to rerun a command)")
    steps = parser.add_subparsers(dest="step")
    add_provenance_arguments(steps.add_parser("record", help="write the results YAML"))
    args = parser.parse_args()
    chosen = set(SMOKE if args.smoke else args.case)
    unknown = chosen - {case.name for case in CASES}
    if unknown:
        sys.exit(f"no case {', '.join(sorted(unknown))}; cases: {', '.join(case.name for case in CASES)}")
    cases = [case for case in CASES if not chosen or case.name in chosen]
    started = time.perf_counter()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        outcomes = probe(cases, args.keep.resolve(), args.timeout)
    else:
        with TemporaryDirectory(prefix="probe-bad-input-") as folder:
            outcomes = probe(cases, Path(folder), args.timeout)
    notes = [f"{len(outcomes)} cases, each in its own process with a {args.timeout:g} s timeout, in "
             f"{time.perf_counter() - started:.0f} s; a case's folder is temporary unless --keep names one",
             "refused: exit code nonzero, no traceback, and the message names the file, the line or the field and "
             "says Fix; a compare case may instead decide INCONCLUSIVE (inconclusive), never ACCEPT",
             "replay files are read by rerankeval.retrieval.sources.freeze_candidates (the freeze stage's reader; no "
             "CLI reads one), params by rerankeval.pipeline.params.load_params, each in a subprocess that reports a "
             "RerankevalError as the stage entry point does",
             *(f"not re-run: {line}" for line in NOT_RE_RUN), *findings(outcomes)]
    print_benchmark(args, "issue 40's probe of bad input re-run: each case's outcome (refused naming the file, line or "
                    "field and the fix; accepted; or a wrong or unclear outcome)", notes, tables(outcomes))


if __name__ == "__main__":
    main()
