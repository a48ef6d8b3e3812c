"""Traffic weights: read from metadata.weight or traffic.tsv into the snapshot, and the weighted bootstrap, judged by
its coverage in simulation."""

import json

import numpy as np
import pandas as pd
import pytest

from rerankeval.core.errors import CollectionError
from rerankeval.data.beir import load_beir
from rerankeval.stats.weighted import weighted_bootstrap_ci, weighted_comparison


def test_weighted_mean_by_hand_and_equal_weights_give_the_macro_mean():
    result = weighted_bootstrap_ci([1.0, 0.0, 0.0, 1.0], [3.0, 1.0, 0.0, 0.0], n_samples=500)
    assert result.mean[0] == pytest.approx(0.75) and result.effective_queries == pytest.approx(16 / 10)
    values = np.random.default_rng(0).random((30, 2))
    equal = weighted_bootstrap_ci(values, np.ones(30), n_samples=500)
    np.testing.assert_allclose(equal.mean, values.mean(axis=0))
    assert np.all(equal.low <= equal.mean) and np.all(equal.mean <= equal.high)
    with pytest.raises(ValueError, match="weights sum to 0"):
        weighted_bootstrap_ci([1.0, 2.0], [0.0, 0.0])


def test_weighted_bootstrap_covers_the_traffic_weighted_mean_at_its_nominal_rate():
    """Queries drawn from a population where heavy (frequent) queries score higher: the weighted interval covers the
    population's weighted mean about 95% of the time; the macro interval, aimed at another quantity, rarely does."""
    rng = np.random.default_rng(5)
    population_weight = rng.lognormal(0.0, 1.0, 20_000)
    population_value = np.clip(0.4 + 0.1 * np.log(population_weight) + rng.normal(0, 0.25, 20_000), 0, 1)
    truth = np.sum(population_weight * population_value) / population_weight.sum()
    covered = macro_covered = 0
    simulations = 300
    for simulation in range(simulations):
        sample = rng.choice(20_000, 80, replace=False)
        result = weighted_bootstrap_ci(population_value[sample], population_weight[sample], n_samples=1000,
                                       seed=simulation)
        covered += result.low[0] <= truth <= result.high[0]
        equal = weighted_bootstrap_ci(population_value[sample], np.ones(80), n_samples=1000, seed=simulation)
        macro_covered += equal.low[0] <= truth <= equal.high[0]
    assert 0.88 <= covered / simulations <= 0.99, covered / simulations
    assert macro_covered / simulations < 0.6


def test_weighted_comparison_reports_weighted_and_macro_deltas():
    per_query = pd.DataFrame({"system": ["base"] * 3 + ["new"] * 3, "query_id": ["a", "b", "c"] * 2,
                              "m": [0.0, 0.0, 1.0, 1.0, 0.0, 1.0]})
    result = weighted_comparison(per_query, pd.Series({"a": 2.0, "b": 1.0, "c": 1.0}), ["base", "new"], ["m"], "base",
                                 n_samples=200, seed=1, confidence=0.95)
    delta = result["comparisons"][0]
    assert delta["weighted"] == pytest.approx(0.5) and delta["macro"] == pytest.approx(1 / 3)
    assert result["systems"]["base"]["m"]["weighted"] == pytest.approx(0.25)
    with pytest.raises(ValueError, match="1 evaluated queries have no traffic weight"):
        weighted_comparison(per_query, pd.Series({"a": 1.0, "b": 1.0}), ["base", "new"], ["m"], "base",
                            n_samples=10, seed=1, confidence=0.95)


def _collection(tmp_path, weights=None, traffic=None):
    from tests.conftest import write_beir

    queries = [{"_id": f"q{i}", "text": f"query {i}", "metadata": {} if weights is None else {"weight": weights[i]}}
               for i in range(3)]
    folder = write_beir(tmp_path / "c", [{"_id": f"d{i}", "text": f"doc {i}"} for i in range(3)], queries,
                        {"test": [(f"q{i}", f"d{i}", 1) for i in range(3)]})
    if traffic is not None:
        (folder / "traffic.tsv").write_text(traffic)
    return folder


def test_a_measure_undefined_on_a_query_is_weighted_over_its_domain():
    """An unanswerable question has no nDCG (NaN): weighted means and deltas leave it out, as the macro ones do."""
    per_query = pd.DataFrame({"system": ["base"] * 4 + ["new"] * 4, "query_id": ["a", "b", "c", "u"] * 2,
                              "m": [0.0, 0.0, 1.0, np.nan, 1.0, 0.0, 1.0, np.nan]})
    result = weighted_comparison(per_query, pd.Series({"a": 2.0, "b": 1.0, "c": 1.0, "u": 5.0}), ["base", "new"],
                                 ["m"], "base", n_samples=200, seed=1, confidence=0.95)
    assert result["queries"] == 3 and result["total_weight"] == 4.0
    assert result["comparisons"][0]["weighted"] == pytest.approx(0.5)


def test_weights_come_from_metadata_or_a_traffic_file_into_the_queries_table(tmp_path):
    assert "weight" not in load_beir(_collection(tmp_path)).queries.column_names
    from_metadata = load_beir(_collection(tmp_path / "m", weights=[5, 0.5, 0])).queries
    assert from_metadata.column("weight").to_pylist() == [5.0, 0.5, 0.0]
    from_file = load_beir(_collection(tmp_path / "f", traffic="query-id\tweight\nq0\t5\nq1\t0.5\nq2\t0\n")).queries
    assert from_file.column("weight").to_pylist() == [5.0, 0.5, 0.0]
    assert from_file.column("row_sha256").to_pylist() == from_metadata.column("row_sha256").to_pylist()
    other = load_beir(_collection(tmp_path / "o", weights=[5, 0.5, 1])).queries
    assert other.column("row_sha256").to_pylist()[2] != from_metadata.column("row_sha256").to_pylist()[2]


@pytest.mark.parametrize("weights, traffic, message", [
    ([1, "many", 1], None, "weight 'many' is not a number"),
    ([1, -2, 1], None, "must be a finite number >= 0"),
    ([1, 1, 1], "query-id\tweight\nq0\t1\n", "give weights in one place"),
    (None, "query-id\tweight\nq0\t1\nq1\t1\n", "1 judged queries have no weight (first: 'q2')"),
    (None, "qid\tw\n", "traffic.tsv:1: expected the header"),
    (None, "query-id\tweight\nq0\t1\nq0\t2\nq1\t1\nq2\t1\n", "traffic.tsv:3: query 'q0' is listed twice"),
])
def test_bad_weights_are_refused_with_the_file_and_line(tmp_path, weights, traffic, message):
    with pytest.raises(CollectionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_beir(_collection(tmp_path, weights=weights, traffic=traffic))


def test_a_query_without_metadata_weight_among_weighted_ones_names_its_line(tmp_path):
    folder = _collection(tmp_path, weights=[1, 2, 3])
    lines = (folder / "queries.jsonl").read_text().splitlines()
    record = json.loads(lines[1])
    del record["metadata"]["weight"]
    lines[1] = json.dumps(record)
    (folder / "queries.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(CollectionError, match=r"queries.jsonl:2: query 'q1' has no metadata.weight"):
        load_beir(folder)
