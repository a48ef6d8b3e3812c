"""An ir_datasets dataset (registered here from local files, as nothing can be downloaded) exported as BEIR."""

import pytest

from rerankeval.core.errors import CollectionError
from rerankeval.data.beir import load_beir
from rerankeval.data.ir_datasets_export import export


@pytest.fixture(scope="module")
def local_dataset(tmp_path_factory):
    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload

    folder = tmp_path_factory.mktemp("irds")
    (folder / "docs.tsv").write_text("d1\tpayment errors are never retried\nd2\tthe api allows 100 requests\n")
    (folder / "queries.tsv").write_text("q1\tretry a payment?\nq2\tapi limit\n")
    (folder / "qrels.txt").write_text("q1 0 d1 2\nq2 0 d2 1\nq2 0 d1 0\n")
    name = "rerankeval-test/local/test"
    if name not in ir_datasets.registry:
        ir_datasets.registry.register(name, Dataset(
            TsvDocs(LocalDownload(folder / "docs.tsv")), TsvQueries(LocalDownload(folder / "queries.tsv")),
            TrecQrels(LocalDownload(folder / "qrels.txt"), {0: "not relevant", 1: "relevant", 2: "very"})))
    return name


def test_export_writes_a_beir_folder_the_pipeline_reads(local_dataset, tmp_path):
    counts = export([local_dataset], tmp_path / "out")
    assert counts == {"documents": 2, "qrels_test": 3, "queries": 2}
    collection = load_beir(tmp_path / "out")
    assert collection.queries.column("split").to_pylist() == ["test", "test"]
    assert collection.qrels.num_rows == 3 and collection.corpus.num_rows == 2


def test_an_unknown_id_says_where_to_look(tmp_path):
    with pytest.raises(CollectionError, match="ir_datasets has no dataset 'no/such/dataset'"):
        export(["no/such/dataset"], tmp_path)
