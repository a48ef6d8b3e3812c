"""Issue 22: bad input is refused with the file, the line or the field and the fix, never a traceback or a silently
wrong answer (the cases handled here: 2, 5, 6, 7, 8, 12's encoding hint and 13)."""

import gzip
import json
import random
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rerankeval.cli.main import main
from rerankeval.core.errors import CollectionError
from rerankeval.core.io import write_table
from rerankeval.data.beir import load_beir


def beir_folder(folder: Path, corpus_lines=None, query_lines=None) -> Path:
    (folder / "qrels").mkdir(parents=True)
    docs = corpus_lines or [json.dumps({"_id": "d1", "text": "a"}), json.dumps({"_id": "d2", "text": "b"})]
    queries = query_lines or [json.dumps({"_id": "q1", "text": "what"})]
    (folder / "corpus.jsonl").write_text("\n".join(docs) + "\n", encoding="utf-8")
    (folder / "queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\n")
    return folder


def test_zero_width_query_text_is_refused_as_empty(tmp_path):  # case 6
    folder = beir_folder(tmp_path / "c", query_lines=[json.dumps({"_id": "q1", "text": "\u200b\u200b \u200b"})])
    with pytest.raises(CollectionError, match=r"queries\.jsonl:1: query 'q1' has empty text\. Fix"):
        load_beir(folder)


@pytest.mark.parametrize("bad_id", ["d\t1", "d\n1", "d\x001"])
def test_ids_no_qrels_line_can_name_are_refused(tmp_path, bad_id):  # case 7
    docs = [json.dumps({"_id": "d1", "text": "a"}), json.dumps({"_id": "d2", "text": "b"}),
            json.dumps({"_id": bad_id, "text": "c"})]
    with pytest.raises(CollectionError, match=r"corpus\.jsonl:3: \"_id\" .* TAB, line break or NUL.*Fix"):
        load_beir(beir_folder(tmp_path / "c", corpus_lines=docs))


def test_deeply_nested_json_names_the_line(tmp_path):  # case 8
    docs = [json.dumps({"_id": "d1", "text": "a"}), '{"_id": "d2", "metadata": ' + "[" * 200_000 + "]" * 200_000 + "}"]
    with pytest.raises(CollectionError, match=r"corpus\.jsonl:2: JSON nested too deeply.*Fix"):
        load_beir(beir_folder(tmp_path / "c", corpus_lines=docs))


@pytest.mark.parametrize("line, says", [
    ('{"_id": "d2", "metadata": {"n": ' + "7" * 5000 + "}}", r"corpus\.jsonl:2: a number too long to read .*Fix: write "
                                                          "it as a string"),
    ('{"text": "no id"}', r"corpus\.jsonl:2: expected an object with an \"_id\" field\. Fix: give each record its id"),
])
def test_a_record_that_cannot_be_read_names_the_line_and_the_fix(tmp_path, line, says):  # probe_bad_input.py cases
    docs = [json.dumps({"_id": "d1", "text": "a"}), line]
    with pytest.raises(CollectionError, match=says):
        load_beir(beir_folder(tmp_path / "c", corpus_lines=docs))


def test_a_file_in_another_encoding_gets_an_encoding_neutral_hint(tmp_path, capsys):  # case 12
    folder = beir_folder(tmp_path / "c")
    (folder / "corpus.jsonl").write_bytes(b'{"_id": "d1", "text": "caf\xe9"}\n{"_id": "d2", "text": "b"}\n')
    assert main(["check-collection", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'corpus.jsonl'}:1: byte 0xe9 at column 27 is not UTF-8. Fix: re-encode" in err
    assert "`iconv -f <its encoding> -t utf-8 corpus.jsonl > <utf-8 file>`" in err and "caf\\xe9" in err
    assert "cp1252" not in err and "cp949" not in err  # a guess: a one-byte file could be in any 8-bit encoding


def test_utf16_text_is_named_with_its_conversion(tmp_path, capsys):  # case 13
    qrels, _ = trec_files(tmp_path, ["q0"])
    run = tmp_path / "run.txt"
    run.write_bytes("q0 Q0 d0 1 2.0 t\n".encode("utf-16"))
    assert main(["evaluate", "--qrels", str(qrels), "--run", str(run), "--metric", "nDCG@10"]) == 2
    assert f"{run}: UTF-16 text (byte-order mark ff fe), not UTF-8. Fix: convert it (`iconv -f utf-16 -t utf-8 " \
           "run.txt > <utf-8 file>`)" in capsys.readouterr().err


def trec_files(tmp_path: Path, run_ids: list[str]) -> tuple[Path, Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{i} 0 d{j} {int(j == i % 3)}\n" for i in range(8) for j in range(3)))
    run = tmp_path / f"run_{run_ids[0]}.txt"
    run.write_text("".join(f"{qid} Q0 d{j} {j + 1} {3 - j} tag\n" for qid in run_ids for j in range(3)))
    return qrels, run


@pytest.mark.parametrize("role", ["baseline", "challenger"])
def test_compare_refuses_a_run_whose_ids_differ_in_case(tmp_path, capsys, role):  # case 2
    qrels, good = trec_files(tmp_path / "good", [f"q{i}" for i in range(8)])
    _, upper = trec_files(tmp_path / "upper", [f"Q{i}" for i in range(8)])
    baseline, challenger = (upper, good) if role == "baseline" else (good, upper)
    code = main(["compare", "--qrels", str(qrels), "--baseline", f"base={baseline}", "--run", f"new={challenger}",
                 "--samples", "200", "--trials", "20"])
    err = capsys.readouterr().err
    assert code == 2
    assert "share no query id; the ids differ in letter case only (run 'Q0', qrels 'q0')" in err and "Fix:" in err


def test_evaluate_verifies_the_digests_of_a_pipeline_run(tmp_path, capsys):  # case 5
    qrels, _ = trec_files(tmp_path, ["q0"])
    run = pa.table({"query_id": ["q0", "q0"], "doc_id": ["d0", "d1"], "score": [2.0, 1.0]})
    path = tmp_path / "run_x.parquet"
    write_table(path, run, {"system": "x"})
    assert main(["evaluate", "--qrels", str(qrels), "--run", str(path), "--metric", "nDCG@10"]) == 0
    edited = pq.read_table(path)  # keeps the schema metadata, changes a score
    pq.write_table(edited.set_column(2, "score", pa.array([1.0, 2.0])), path)
    assert main(["evaluate", "--qrels", str(qrels), "--run", str(path), "--metric", "nDCG@10"]) == 2
    assert f"{path}: column 'score' does not match the sha256" in capsys.readouterr().err


def test_a_full_disk_names_the_path_and_the_fix_and_leaves_no_temp_file(tmp_path, monkeypatch):  # case 9
    from rerankeval.core import io
    from rerankeval.core.errors import RerankevalError

    def disk_full(table, where, **options):
        Path(where).write_bytes(b"PAR1")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(io.pq, "write_table", disk_full)
    target = tmp_path / "runs" / "run_x.parquet"
    with pytest.raises(RerankevalError, match=r"run_x\.parquet: cannot be written \(No space left on device\).*"
                                              r"Fix: free disk space"):
        write_table(target, pa.table({"a": [1]}))
    assert list(target.parent.iterdir()) == []


def test_a_read_only_folder_names_the_path_and_the_fix(tmp_path):  # case 9
    import os

    from rerankeval.core.errors import RerankevalError

    folder = tmp_path / "runs"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as a user that writes into read-only folders (root)")
        with pytest.raises(RerankevalError, match=r"run_x\.parquet: cannot be written.*make that folder writable"):
            write_table(folder / "run_x.parquet", pa.table({"a": [1]}))
    finally:
        folder.chmod(0o700)


class _RunsAShell:
    def __reduce__(self):
        import os

        return os.system, ("true",)


def test_a_legacy_pickled_checkpoint_is_read_and_a_malicious_one_refused_naming_the_file(tmp_path):  # case 10
    import torch

    from rerankeval.models.heads import UnsafeCheckpointError, _checkpoint_keys

    legacy = tmp_path / "legacy"
    legacy.mkdir()
    torch.save({"classifier.weight": torch.zeros(1, 2)}, legacy / "pytorch_model.bin",
               _use_new_zipfile_serialization=False)
    assert _checkpoint_keys(legacy) == {"classifier.weight"}
    malicious = tmp_path / "malicious"
    malicious.mkdir()
    torch.save({"classifier.weight": _RunsAShell()}, malicious / "pytorch_model.bin")
    with pytest.raises(UnsafeCheckpointError, match=r"malicious/pytorch_model\.bin: not a plain tensor checkpoint "
                                                     r".*Fix: use the model's \*\.safetensors weights"):
        _checkpoint_keys(malicious)


def test_custom_code_not_trusted_is_said_in_the_metadata_and_the_log(tmp_path, capsys):  # case 14
    import pandas as pd

    from rerankeval.systems.registry import BuildContext, build_system
    from tests.test_models import save_tiny_bert

    model = save_tiny_bert(tmp_path / "custom", "BertForSequenceClassification")
    config = json.loads((model / "config.json").read_text())
    config["auto_map"] = {"AutoModelForSequenceClassification": "modeling_custom.CustomBert"}
    (model / "config.json").write_text(json.dumps(config))
    context = BuildContext(qrels=pd.DataFrame({"query_id": [], "doc_id": [], "relevance": []}))
    system = build_system("ce", {"kind": "cross_encoder", "model": str(model), "depth": 5, "max_length": 32,
                                 "batch_size": 4, "cache_dir": str(tmp_path / "cache")}, context)
    described = json.dumps(system.describe())
    assert "remote_code_ignored" in described and "trust_remote_code is false" in described
    assert "warning:" in capsys.readouterr().err


@pytest.mark.parametrize("file, record, field, escape", [
    ("corpus.jsonl", '{"_id": "d2", "text": "half \\ud800 a pair"}', "text", "\\uD800"),
    ("corpus.jsonl", '{"_id": "d2", "metadata": {"tags": ["ok", "\\uDC00"]}}', "metadata.tags.1", "\\uDC00"),
    ("queries.jsonl", '{"_id": "q2", "text": "what \\ud83d"}', "text", "\\uD83D"),
    ("queries.jsonl", '{"_id": "q2", "text": "what", "metadata": {"\\ud800": 1}}', "metadata.\ud800", "\\uD800"),
])
def test_a_lone_surrogate_names_the_file_line_and_field(tmp_path, capsys, file, record, field, escape):  # case 12
    corpus = [json.dumps({"_id": "d1", "text": "a"}), json.dumps({"_id": "d2", "text": "b"})]
    queries = [json.dumps({"_id": "q1", "text": "what"})]
    (corpus if file == "corpus.jsonl" else queries)[1:] = [record]
    folder = beir_folder(tmp_path / "c", corpus_lines=corpus, query_lines=queries)
    assert main(["check-collection", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"{folder / file}:2: field {field!r} holds the escape {escape}, half a surrogate pair" in err
    assert "Fix: write the character itself, or its full pair" in err and "Traceback" not in err


def test_a_binary_run_is_refused_as_not_a_text_file(tmp_path, capsys):  # case 13
    qrels, _ = trec_files(tmp_path, ["q0"])
    run = tmp_path / "run.txt"
    run.write_bytes(random.Random(13).randbytes(200))
    assert main(["evaluate", "--qrels", str(qrels), "--run", str(run), "--metric", "nDCG@10"]) == 2
    err = capsys.readouterr().err
    assert f"{run}: not a text file (its first bytes hold NUL or control characters: binary data). Fix: pass the " \
           "text file meant here (`file run.txt` tells what this one is)" in err


def test_a_gzip_run_is_read_by_its_name_and_refused_without_it(tmp_path, capsys):  # case 13
    qrels, plain = trec_files(tmp_path, ["q0"])
    compressed = gzip.compress(plain.read_bytes())
    (tmp_path / "run.txt.gz").write_bytes(compressed)
    assert main(["evaluate", "--qrels", str(qrels), "--run", str(tmp_path / "run.txt.gz"), "--metric", "P@1"]) == 0
    (tmp_path / "run.txt").write_bytes(compressed)
    assert main(["evaluate", "--qrels", str(qrels), "--run", str(tmp_path / "run.txt"), "--metric", "P@1"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'run.txt'}: gzip-compressed, not a text file. Fix: decompress it (`gunzip -c run.txt > " \
           "<plain file>`) and pass that file; `rerankeval evaluate` and `compare` also read TREC and qrels files " \
           "named *.gz" in err
    (tmp_path / "cut.txt.gz").write_bytes(compressed[:-12])
    assert main(["evaluate", "--qrels", str(qrels), "--run", str(tmp_path / "cut.txt.gz"), "--metric", "P@1"]) == 2
    assert f"{tmp_path / 'cut.txt.gz'}: named *.gz but not a complete gzip file" in capsys.readouterr().err


NON_INTEGER_GRADES = ["1e309", "inf", "nan", "-1e400", "1e5"]


@pytest.mark.parametrize("grade", NON_INTEGER_GRADES)
def test_a_trec_qrels_grade_that_is_no_integer_is_refused_without_a_warning(tmp_path, capsys, grade):  # case 13
    _, run = trec_files(tmp_path, ["q0"])
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(f"q0 0 d0 1\nq0 0 d1 {grade}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pandas' cast warning used to print before the message
        assert main(["evaluate", "--qrels", str(qrels), "--run", str(run), "--metric", "nDCG@10"]) == 2
    assert capsys.readouterr().err == (
        f"rerankeval evaluate: error: {qrels}, line 2: relevance {grade!r} is not an integer in 'q0 0 d1 {grade}'. "
        "Fix: relevance grades must be integers (0 = judged non-relevant); each line of a TREC qrels reads 'query_id "
        "iteration doc_id relevance' (whitespace-separated), e.g. 'q1 0 doc7 2'\n")


def test_a_trec_qrels_grade_beyond_int64_names_the_line(tmp_path, capsys):  # case 13 (was an OverflowError)
    _, run = trec_files(tmp_path, ["q0"])
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q0 0 d0 1\nq0 0 d1 99999999999999999999\n")
    assert main(["evaluate", "--qrels", str(qrels), "--run", str(run), "--metric", "nDCG@10"]) == 2
    assert f"{qrels}, line 2: relevance 99999999999999999999 is out of range in " in capsys.readouterr().err


@pytest.mark.parametrize("grade", NON_INTEGER_GRADES)
def test_a_beir_qrels_grade_that_is_no_integer_names_the_line_and_the_fix(tmp_path, grade):  # case 13
    folder = beir_folder(tmp_path / "c")
    (folder / "qrels" / "test.tsv").write_text(f"query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t{grade}\n")
    with pytest.raises(CollectionError, match=rf"test\.tsv:3: grade '{grade}' is not an integer \(column score\)\. "
                                              r"Fix: relevance grades must be integers"):
        load_beir(folder)


def test_the_cli_prints_only_the_message_for_an_infinite_grade(tmp_path):  # case 13
    _, run = trec_files(tmp_path, ["q0"])
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q0 0 d0 1\nq0 0 d1 1e309\n")
    command = shutil.which("rerankeval", path=str(Path(sys.executable).parent)) or shutil.which("rerankeval")
    done = subprocess.run([command, "evaluate", "--qrels", str(qrels), "--run", str(run), "--metric", "nDCG@10"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"rerankeval evaluate: error: {qrels}, line 2: relevance '1e309' is not an "
                                        "integer in 'q0 0 d1 1e309'. Fix: relevance grades must be integers (0 = "
                                        "judged non-relevant); each line of a TREC qrels reads 'query_id iteration "
                                        "doc_id relevance' (whitespace-separated), e.g. 'q1 0 doc7 2'"]


@pytest.mark.parametrize("mirrors", [1, 3])
def test_export_ir_datasets_offline_says_where_the_files_go_and_what_else_to_do(tmp_path, monkeypatch, capsys,
                                                                                 mirrors):  # case 13
    """The connection fails as it does offline: urllib3 cannot resolve the host, requests raises its ConnectionError
    and ir_datasets gives up on the mirror (or, with a local copy and a mirror, on every source)."""
    import socket

    import ir_datasets
    import urllib3.util.connection
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import Download, LocalDownload, RequestsDownload

    def unresolvable(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(urllib3.util.connection, "create_connection", unresolvable)
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds-home"))
    monkeypatch.setenv("IR_DATASETS_DL_TRIES", "1")
    url = "https://files.example.org/offline/docs.tsv"
    sources = [RequestsDownload(url)] if mirrors == 1 else [
        LocalDownload(tmp_path / "no-local-copy.tsv"), RequestsDownload(url), RequestsDownload(url + ".mirror")]
    local = tmp_path / "local"
    local.mkdir()
    (local / "queries.tsv").write_text("q1\twhat\n")
    (local / "qrels.txt").write_text("q1 0 d1 1\n")
    name = f"rerankeval-test/offline-{mirrors}/test"
    if name not in ir_datasets.registry:
        ir_datasets.registry.register(name, Dataset(
            TsvDocs(Download(sources, cache_path=str(tmp_path / "cache" / "docs.tsv"))),
            TsvQueries(LocalDownload(local / "queries.tsv")), TrecQrels(LocalDownload(local / "qrels.txt"), {})))
    assert main(["export-ir-datasets", name, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"error: {name}: cannot download the dataset's files (no connection to {url})" in err
    assert f"into its home folder {tmp_path / 'irds-home'} (set by the environment variable IR_DATASETS_HOME) and " \
           "reads copies already placed there" in err
    assert "Fix: run this command once where the network is reachable" in err
    assert "set dataset.path to a BEIR folder of local files (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)" in err
    assert "HTTPSConnectionPool" not in err and "Traceback" not in err


@pytest.mark.parametrize("name", ["../../x/escaped", "probe$FAKE_RERANK_KEY", "a b", "-dash", ".hidden", "", "x" * 101,
                                  "a/b", "q'uote"])
def test_a_system_name_that_could_leave_the_workspace_or_reach_a_shell_is_refused_by_key(tmp_path, name):
    import yaml

    from rerankeval.core.errors import ConfigError
    from rerankeval.pipeline.params import load_params
    from rerankeval.workspace.paths import PipelinePaths

    params = yaml.safe_load(Path("params.yaml").read_text())
    params["systems"] = {name: params["systems"]["fusion"], **params["systems"]}
    params["system_names"] = list(params["systems"])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(ConfigError, match=r"systems: .* is not a usable name: .*Fix: rename it"):
        load_params(tmp_path / "params.yaml", stage="snapshot")
    with pytest.raises(ConfigError, match="is not a usable name"):
        PipelinePaths.load().run(name)


def test_a_safe_system_name_makes_files_inside_its_folder():
    from rerankeval.workspace.paths import PipelinePaths

    paths = PipelinePaths.load()
    assert paths.run("ce_minilm-ft.v2").parent == paths.runs


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_a_device_is_refused_before_it_is_read(tmp_path, kind):
    import os

    from rerankeval.core.errors import CollectionError
    from rerankeval.data.beir import utf8_lines

    path = tmp_path / "queries.jsonl"
    if kind == "fifo":
        os.mkfifo(path)  # reading it would block forever: no writer
    else:
        path.symlink_to("/dev/zero")  # reading it would never end
    with pytest.raises(CollectionError, match=r"not a regular file: reading it could block or never end\. Fix:"):
        list(utf8_lines(path))


def test_a_line_without_end_is_refused_with_its_bound(tmp_path, monkeypatch):
    from rerankeval.core.errors import CollectionError
    from rerankeval.data import beir

    monkeypatch.setattr(beir, "MAX_LINE_BYTES", 1000)
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b'{"_id": "d1", "text": "ok"}\n' + b"x" * 5000)
    with pytest.raises(CollectionError, match=r"corpus.jsonl:2: a line longer than"):
        list(beir.utf8_lines(path))


def test_compare_queries_nested_too_deep_is_refused_with_the_line(tmp_path, capsys):
    from rerankeval.cli.main import main

    (tmp_path / "qrels.txt").write_text("".join(f"Q{q} 0 rel 1\n" for q in range(4)))
    for name in ("base", "new"):
        (tmp_path / f"{name}.trec").write_text("".join(f"Q{q} Q0 rel 1 1.0 {name}\n" for q in range(4)))
    (tmp_path / "queries.jsonl").write_text('{"_id": "Q0", "metadata": {"language": "en"}}\n'
                                            + "[" * 100000 + "\n")
    code = main(["compare", "--qrels", str(tmp_path / "qrels.txt"), "--baseline", str(tmp_path / "base.trec"),
                 "--run", str(tmp_path / "new.trec"), "--queries", str(tmp_path / "queries.jsonl"),
                 "--critical-slice", "language", "--samples", "100", "--trials", "20"])
    error = capsys.readouterr().err
    assert code == 2 and "queries.jsonl:2: JSON nested too deeply to read. Fix: one flat BEIR query record" in error
    (tmp_path / "queries.jsonl").write_text("")
    code = main(["compare", "--qrels", str(tmp_path / "qrels.txt"), "--baseline", str(tmp_path / "base.trec"),
                 "--run", str(tmp_path / "new.trec"), "--queries", str(tmp_path / "queries.jsonl"),
                 "--critical-slice", "language", "--samples", "100", "--trials", "20"])
    assert code == 2 and "queries.jsonl: no query record (the file is empty). Fix:" in capsys.readouterr().err
