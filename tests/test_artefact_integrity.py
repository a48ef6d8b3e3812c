"""Parquet artefacts carry digests of their columns and metadata (core.io): a truncated, bit-flipped or edited
candidates or run file is refused naming its path, by whichever stage or command reads it; never read silently."""

import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rerankeval.cli.main import main
from rerankeval.core.errors import ContractError
from rerankeval.core.io import DIGEST_KEY, METADATA_KEY, column_sha256, read_table, table_metadata, write_table
from rerankeval.data.beir import load_beir
from rerankeval.workspace.runs import load_runs
from rerankeval.rerank.assemble import RUN_SCHEMA
from rerankeval.retrieval.config import HybridConfig
from rerankeval.retrieval.freeze import CANDIDATES_SCHEMA, freeze
from tests.test_retrieval import FakeRetriever, PriorRetriever


@pytest.fixture
def candidates(tmp_path, tiny_beir):
    collection = load_beir(tiny_beir)
    table = freeze(collection.corpus, collection.queries, HybridConfig(top_n=10, fusion_depth=10),
                   lexical_retriever=FakeRetriever, dense_retriever=PriorRetriever).candidates
    write_table(tmp_path / "candidates.parquet", table, {"snapshot": {"corpus": "c0ffee"}})
    return tmp_path / "candidates.parquet", table


def test_a_written_table_reads_back_verified_whole_or_by_column(candidates):
    path, table = candidates
    assert read_table(path, CANDIDATES_SCHEMA).equals(table)
    assert read_table(path, CANDIDATES_SCHEMA, columns=["query_id", "bm25_score"]).equals(
        table.select(["query_id", "bm25_score"]))
    assert table_metadata(path) == {"snapshot": {"corpus": "c0ffee"}}
    rechunked = pa.concat_tables([table.slice(0, 7), table.slice(7)])
    assert all(column_sha256(table.column(n)) == column_sha256(rechunked.column(n)) for n in table.column_names)


@pytest.mark.parametrize("keep", [0.5, 0.98])
def test_a_truncated_file_is_refused_naming_its_path(candidates, keep):
    path, _ = candidates
    path.write_bytes(path.read_bytes()[:int(path.stat().st_size * keep)])
    for read in (read_table, table_metadata):
        with pytest.raises(ContractError, match=rf"{path}: not a readable Parquet file .* truncated or corrupted"):
            read(path)


def test_any_flipped_bit_is_refused_or_harmless(candidates):
    """Flipping bits 0 and 5 of every byte of a 10 KB file (21,340 files) gave 18,499 refusals and 2,841 harmless
    flips (statistics, padding), none read silently wrong; here a seeded sample of 200."""
    path, table = candidates
    original = path.read_bytes()
    rng = np.random.default_rng(10)
    refused = 0
    for position, bit in zip(rng.integers(0, len(original), 200), rng.integers(0, 8, 200)):
        flipped = bytearray(original)
        flipped[position] ^= 1 << int(bit)
        path.write_bytes(bytes(flipped))
        try:
            values, metadata = read_table(path), table_metadata(path)
        except ContractError as err:
            assert str(path) in str(err) and "Fix: re-run the stage" in str(err)
            refused += 1
            continue
        assert values.equals(table) and metadata == {"snapshot": {"corpus": "c0ffee"}}, (position, bit)
    assert refused >= 100  # most bytes are data pages (checksummed) and their headers


def rewrite(path, edit_table=lambda t: t, edit_metadata=lambda m: m):
    """Rewrite a file as valid Parquet with an edited value or metadata, keeping the digests recorded before."""
    table = pq.read_table(path)
    table = edit_table(table).replace_schema_metadata(edit_metadata(dict(table.schema.metadata)))
    pq.write_table(table, path)


def test_an_edited_value_or_metadata_in_valid_parquet_is_refused(candidates):
    path, _ = candidates
    saved = path.read_bytes()

    def bump(table):  # the case: one BM25 score changed (2.51 -> 3.64), the file still valid Parquet
        scores = table.column("bm25_score").to_numpy().copy()
        scores[3] += 1.13
        return table.set_column(table.schema.get_field_index("bm25_score"), "bm25_score", pa.array(scores))

    rewrite(path, bump)
    with pytest.raises(ContractError, match=rf"{path}: column 'bm25_score' does not match the sha256 recorded"):
        read_table(path, CANDIDATES_SCHEMA)
    assert read_table(path, columns=["doc_id"]).num_rows == 80  # an untouched column alone still reads
    path.write_bytes(saved)
    rewrite(path, edit_metadata=lambda m: {**m, METADATA_KEY: b'{"snapshot":{"corpus":"beef"}}'})
    for read in (read_table, table_metadata):
        with pytest.raises(ContractError, match=rf"{path}: its metadata does not match the sha256 recorded"):
            read(path)
    rewrite(path, edit_metadata=lambda m: {key: value for key, value in m.items() if key != DIGEST_KEY})
    with pytest.raises(ContractError, match=rf"{path}: records no valid content digest"):
        read_table(path)


def test_a_corrupted_run_file_is_refused_by_the_stages_and_the_command(tmp_path, candidates):
    run = pd.DataFrame({"query_id": ["q0", "q0"], "doc_id": ["d0a", "d0b"], "parent_id": ["d0", "d0"],
                        "score": [2.0, 1.0], "rank": [1, 2], "fused_rank": [2, 1], "mode": ["RERANKED"] * 2,
                        "degraded_reason": [None, None], "query_tokens": [3, 3], "passage_tokens": [9, 9],
                        "truncated": [False, False]})
    path = tmp_path / "run_bm25.parquet"
    write_table(path, pa.Table.from_pandas(run, schema=RUN_SCHEMA, preserve_index=False), {"system": "bm25"})
    shutil.copy(path, tmp_path / "intact.parquet")
    rewrite(path, lambda t: t.set_column(3, "score", pa.array([1.0, 2.0])))
    with pytest.raises(ContractError, match=rf"{path}: column 'score' does not match"):
        load_runs(str(tmp_path / "run_{system}.parquet"), ["bm25"])
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(ContractError, match=rf"{path}: not a readable Parquet file"):
        load_runs(str(tmp_path / "run_{system}.parquet"), ["bm25"])
    (tmp_path / "qrels.txt").write_text("q0 0 d0a 1\n")
    assert main(["evaluate", "--qrels", str(tmp_path / "qrels.txt"), "--run", str(path), "--metric", "P@1"]) == 2
    assert main(["evaluate", "--qrels", str(tmp_path / "qrels.txt"), "--run", str(tmp_path / "intact.parquet"),
                 "--metric", "P@1", "--json"]) == 0


def test_the_command_names_a_truncated_parquet_run(tmp_path, capsys):
    pd.DataFrame({"query_id": ["q0"], "doc_id": ["d"], "score": [1.0]}).to_parquet(tmp_path / "run.parquet")
    (tmp_path / "run.parquet").write_bytes((tmp_path / "run.parquet").read_bytes()[:50])
    (tmp_path / "qrels.txt").write_text("q0 0 d 1\n")
    assert main(["evaluate", "--qrels", str(tmp_path / "qrels.txt"), "--run", str(tmp_path / "run.parquet"),
                 "--metric", "P@1"]) == 2
    assert f"{tmp_path / 'run.parquet'}: cannot read as Parquet" in capsys.readouterr().err
