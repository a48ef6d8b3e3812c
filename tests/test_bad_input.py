"""Issue 22: bad input is refused with the file, the line or the field and the fix, never a traceback or a silently
wrong answer (the cases handled here: 2, 5, 6, 7, 8, 12's encoding hint)."""

import json
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


def test_a_windows_encoded_file_gets_the_cp1252_hint(tmp_path):  # case 12
    folder = beir_folder(tmp_path / "c")
    (folder / "corpus.jsonl").write_bytes(b'{"_id": "d1", "text": "caf\xe9"}\n{"_id": "d2", "text": "b"}\n')
    with pytest.raises(CollectionError, match=r"corpus\.jsonl:1: byte 0xe9 .*iconv -f cp1252"):
        load_beir(folder)


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

    from rerankeval.systems import BuildContext, build_system
    from tests.test_models import save_tiny_bert

    model = save_tiny_bert(tmp_path / "custom", "BertForSequenceClassification")
    config = json.loads((model / "config.json").read_text())
    config["auto_map"] = {"AutoModelForSequenceClassification": "modeling_custom.CustomBert"}
    (model / "config.json").write_text(json.dumps(config))
    context = BuildContext(qrels=pd.DataFrame({"query_id": [], "doc_id": [], "relevance": []}))
    system = build_system("ce", {"kind": "cross_encoder", "model": str(model), "depth": 5, "max_length": 32, "batch_size": 4,
                                 "cache_dir": str(tmp_path / "cache")}, context)
    described = json.dumps(system.describe())
    assert "remote_code_ignored" in described and "trust_remote_code is false" in described
    assert "warning:" in capsys.readouterr().err


def test_a_lone_surrogate_names_the_line(tmp_path):  # case 12
    docs = [json.dumps({"_id": "d1", "text": "a"}), '{"_id": "d2", "text": "half \\ud800 a pair"}']
    with pytest.raises(CollectionError, match=r"corpus\.jsonl:2: a .* not part of a surrogate pair.*Fix"):
        load_beir(beir_folder(tmp_path / "c", corpus_lines=docs))
