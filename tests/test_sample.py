"""`dataset.sample`: a seeded, slice-stratified sample of the evaluated split, recorded in the snapshot manifest and
stated in the report; other splits stay whole; bad settings are refused naming the setting and the fix."""

from types import SimpleNamespace

import pytest

from rerankeval.core.errors import ConfigError
from rerankeval.core.io import read_json
from rerankeval.data.config import DatasetConfig
from rerankeval.data.sample import allocate
from rerankeval.data.snapshot import Snapshot
from rerankeval.pipeline import snapshot as snapshot_stage
from rerankeval.pipeline.params import load_params
from rerankeval.report.markdown import evaluation_record, header_section
from rerankeval.stats.schema import ComparisonCore
from tests.conftest import write_beir
from tests.stage_fixtures import REPO, tiny_paths
from tests.test_params import composed


def test_allocation_is_proportional_and_keeps_every_stratum_when_it_can():
    assert allocate({"en": 60, "ko": 30, "ja": 3}, 10) == {"en": 6, "ko": 3, "ja": 1}
    assert allocate({"en": 50, "ko": 50}, 7) == {"en": 4, "ko": 3}  # the tied remainder goes to the first value
    assert allocate({"en": 97, "ko": 2, "ja": 1}, 5) == {"en": 3, "ko": 1, "ja": 1}  # one each, the rest by share
    assert allocate({"en": 97, "ko": 2, "ja": 1}, 2) == {"en": 2, "ko": 0, "ja": 0}  # too few for every stratum
    assert allocate({"en": 3, "ko": 2}, 9) == {"en": 3, "ko": 2}  # more than there are: every query


@pytest.fixture
def collection(tmp_path):
    """40 test queries (30 English, 10 Korean) and 5 train queries, each judging its own document."""
    corpus = [{"_id": f"d{i}", "title": "", "text": f"document {i}"} for i in range(45)]
    queries = [{"_id": f"q{i:02d}", "text": f"query {i}", "metadata": {"language": "ko" if i % 4 == 3 else "en"}}
               for i in range(45)]
    qrels = {"test": [(f"q{i:02d}", f"d{i}", 1) for i in range(40)],
             "train": [(f"q{i:02d}", f"d{i}", 1) for i in range(40, 45)]}
    return write_beir(tmp_path / "collection", corpus, queries, qrels)


def snapshot_with(folder, collection, sample):
    dataset = DatasetConfig.parse({"name": "c", "path": str(collection), "sample": sample}, "dataset")
    paths = tiny_paths(folder)
    snapshot_stage.run(SimpleNamespace(dataset=dataset), paths)
    return Snapshot(paths.snapshot)


def test_the_sample_is_seeded_stratified_recorded_and_leaves_the_other_splits_whole(tmp_path, collection, capsys):
    sample = {"queries": 8, "stratify": "language", "seed": 17}
    first = snapshot_with(tmp_path / "a", collection, sample)
    record = first.manifest["sample"]
    assert record["strata"] == {"en": {"sampled": 6, "of": 30}, "ko": {"sampled": 2, "of": 10}}
    test = first.queries_of("test")
    assert sorted(test["query_id"]) == record["query_ids"] and len(record["query_ids"]) == 8
    assert test["language"].value_counts().to_dict() == {"en": 6, "ko": 2}
    assert first.manifest["splits"] == {"test": 8, "train": 5}  # the train split whole
    assert set(first.table("qrels").column("query_id").to_pylist()) == set(record["query_ids"]) | {
        f"q{i}" for i in range(40, 45)}
    assert first.table("corpus").num_rows == 45
    assert "sampled 8 of 40 queries, stratified by language, seed 17" in capsys.readouterr().out

    again = snapshot_with(tmp_path / "b", collection, sample)
    assert again.manifest["sample"] == record
    assert (tmp_path / "a" / "snapshot" / "queries.parquet").read_bytes() == \
        (tmp_path / "b" / "snapshot" / "queries.parquet").read_bytes()
    other = snapshot_with(tmp_path / "c", collection, {**sample, "seed": 18}).manifest["sample"]
    assert other["query_ids"] != record["query_ids"] and other["strata"] == record["strata"]
    plain = snapshot_with(tmp_path / "d", collection, {"queries": 8, "stratify": None}).manifest["sample"]
    assert plain["seed"] == 17 and plain["stratify"] is None and len(plain["query_ids"]) == 8
    whole = snapshot_with(tmp_path / "e", collection, None)
    assert "sample" not in read_json(tmp_path / "e" / "snapshot" / "manifest.json")
    assert whole.manifest["splits"] == {"test": 40, "train": 5}


def test_a_sample_of_no_queries_or_by_a_missing_column_is_refused(tmp_path, collection):
    with pytest.raises(ConfigError, match=r"dataset\.sample\.queries: a sample needs at least 1 query, got 0\. "
                                          r"Fix: set a positive number, or dataset\.sample: null"):
        DatasetConfig.parse({"name": "c", "path": "x", "sample": {"queries": 0}}, "dataset")
    with pytest.raises(ConfigError, match=r"dataset\.sample\.stratify: 'lang' is not a slice column of this "
                                          r"collection \(its slice columns: language\)\. Fix: set "
                                          r"dataset\.sample\.stratify to one of them, or to null"):
        snapshot_with(tmp_path, collection, {"queries": 5, "stratify": "lang"})


def test_the_report_states_the_sample(tmp_path, collection):
    manifest = snapshot_with(tmp_path, collection, {"queries": 8, "stratify": "language"}).manifest
    from rerankeval.stats.schema import Method
    from tests.analysis_records import METHOD

    method = Method.model_validate(METHOD)
    context = {"dataset": "c", "split": "test", "queries": 8, "ranked_queries": 8, "no_relevant": "drop",
               "snapshot": {name: entry["content_sha256"] for name, entry in manifest["tables"].items()},
               "retrieval": composed()["retrieval"], "tie_break": "score", "method": method,
               "sample": manifest["sample"]}
    header = header_section(context)
    assert "- Query sample: sampled 8 of 40 queries, stratified by language, seed 17 (the test split" in header
    assert "Query sample" not in header_section({**context, "sample": None})
    compare = ComparisonCore(baseline="fusion", queries=8, method=method, systems={},
                             comparisons=[], slices={}, unjudged={})
    record = evaluation_record(load_params(REPO / "params.yaml"), manifest, compare, {"systems": {}})
    assert record["dataset"]["sample"] == {key: value for key, value in manifest["sample"].items()
                                           if key != "query_ids"}


def test_the_snapshot_stage_reruns_when_any_dataset_setting_it_reads_changes():
    """Each ``dataset.<field>`` the stage's code reads is one of its declared settings, which the code stage (whose DVC
    params cover them) records in its fingerprint: a new sample, or another evaluated split, in a workspace that
    already holds a snapshot must not reuse the old one."""
    import re

    import yaml

    from rerankeval.pipeline.table import BY_NAME

    source = (REPO / "src" / "rerankeval" / "pipeline" / "snapshot.py").read_text(encoding="utf-8")
    read = {f"dataset.{field}" for field in re.findall(r"\bdataset\.(\w+)", source)}
    assert {"dataset.sample", "dataset.eval_split"} <= read
    missing = sorted(read - set(BY_NAME["snapshot"].reads))
    assert not missing, f"the snapshot stage's entry in pipeline/table.py lacks the settings {missing}"
    tracked = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]["code"]["params"]
    untracked = sorted(key for key in read if not any(key == param or key.startswith(param + ".") for param in tracked))
    assert not untracked, f"dvc.yaml's code stage lacks the params {untracked}"
