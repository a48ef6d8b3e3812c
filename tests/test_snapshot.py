import pytest

from rerankeval.data.beir import load_beir
from rerankeval.core.errors import ContractError
from rerankeval.core.io import read_json
from rerankeval.data.snapshot import Snapshot, check_provenance, write_snapshot


def test_manifest_hashes_and_reload(tiny_beir, tmp_path):
    manifest = write_snapshot(load_beir(tiny_beir), tmp_path / "snap", source={"name": "tiny"})
    assert manifest == read_json(tmp_path / "snap" / "manifest.json")
    assert manifest["tables"]["corpus"]["rows"] == 24 and manifest["splits"] == {"test": 6, "train": 2}
    snapshot = Snapshot(tmp_path / "snap")
    assert snapshot.table("qrels").num_rows == 24
    assert snapshot.slice_columns == ["language"]


def test_snapshot_bytes_are_reproducible(tiny_beir, tmp_path):
    write_snapshot(load_beir(tiny_beir), tmp_path / "a", source={})
    write_snapshot(load_beir(tiny_beir), tmp_path / "b", source={})
    for name in ("corpus.parquet", "queries.parquet", "qrels.parquet", "manifest.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_one_changed_qrels_line_changes_only_the_qrels_hash(tiny_beir, tmp_path):
    before = write_snapshot(load_beir(tiny_beir), tmp_path / "a", source={})
    path = tiny_beir / "qrels" / "test.tsv"
    path.write_text(path.read_text().replace("q0\td0b\t2", "q0\td0b\t1"))
    after = write_snapshot(load_beir(tiny_beir), tmp_path / "b", source={})
    changed = {name for name in ("corpus", "queries", "qrels")
               if before["tables"][name]["content_sha256"] != after["tables"][name]["content_sha256"]}
    assert changed == {"qrels"}


def test_tampered_table_is_refused(tiny_beir, tmp_path):
    write_snapshot(load_beir(tiny_beir), tmp_path / "snap", source={})
    (tmp_path / "snap" / "qrels.parquet").write_bytes((tmp_path / "snap" / "corpus.parquet").read_bytes())
    with pytest.raises(ContractError, match=r"qrels.parquet: sha256 .* does not match the manifest"):
        Snapshot(tmp_path / "snap").table("qrels")


def test_provenance_mismatch_names_the_input():
    with pytest.raises(ContractError, match="built from qrels aaaa.*current qrels is bbbb"):
        check_provenance("data/candidates.parquet", {"qrels": "aaaa"}, {"qrels": "bbbb"})
    check_provenance("x", {"qrels": "aaaa"}, {"qrels": "aaaa"})


def test_missing_manifest_says_which_stage_to_run(tmp_path):
    with pytest.raises(ContractError, match="dvc repro snapshot"):
        Snapshot(tmp_path)
