"""A system trained with several seeds (issue 24): reranked once per seed, evaluated on the mean over seeds per query,
compared with the seed-aware CI (which the verdict reads), reported per seed; one seed changes nothing."""

import json
import zlib
from collections.abc import Iterator
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml

from rerankeval.core.io import read_table, table_metadata
from rerankeval.data.snapshot import Snapshot
from rerankeval.eval.funnel import per_query_metrics
from rerankeval.eval.measures import parse_measure
from rerankeval.pipeline import evaluate, rerank
from rerankeval.pipeline.params import load_params
from rerankeval.workspace.paths import PER_QUERY_FILE, PER_QUERY_SEEDS_FILE, SYSTEM_PLACEHOLDER
from rerankeval.workspace.runs import SEED_RUNS_SCHEMA, load_runs, load_seed_runs
from rerankeval.pipeline.system_configs import first_seed_configs, seeded_configs, system_configs
from rerankeval.rag.config import RagConfig
from rerankeval.report.seeds import seeds_section
from rerankeval.stats.analysis import analyze
from rerankeval.stats.comparison import compare
from rerankeval.stats.config import CompareConfig
from rerankeval.stats.schema import ComparisonCore
from rerankeval.stats.seed_comparison import SeedValues, seed_comparison
from rerankeval.systems.pair_scoring import PairBatch
from rerankeval.systems.pairs import PairScorerConfig, register_pair_scorer
from rerankeval.training.seeds import write_seed_set
from tests.stage_fixtures import frozen_tiny_project, tiny_paths

KIND = "test_seeded"
SEEDS = [17, 18, 19]


class SeededConfig(PairScorerConfig):
    model: str
    """A model folder: one seed's of a seed set, whose name decides the scores."""


class SeededScorer:
    """Scores a pair by a hash of the model folder's name and the passage: each seed ranks differently."""

    def __init__(self, config: SeededConfig):
        self.name = config.model.rstrip("/").rsplit("/", 1)[-1]

    def fingerprint(self) -> dict:
        return {"scorer": "seeded/v1", "model": self.name}

    def score_batches(self, query: str, passages: list[str]) -> Iterator[PairBatch]:
        yield PairBatch(np.arange(len(passages)),
                        np.array([zlib.crc32(f"{self.name}|{text}".encode()) % 997 for text in passages], float))

    def describe(self) -> dict:
        return {"scorer": "seeded hash", "model": self.name}


register_pair_scorer(KIND, SeededConfig)(lambda config, context: SeededScorer(config))


def project(folder, collection, seeds):
    """The tiny project with the fusion baseline and a learned system on a seed set of ``seeds`` (one seed: one
    model folder, as train writes it)."""
    params = frozen_tiny_project(folder, collection)
    model = folder / "model"
    if len(seeds) > 1:
        write_seed_set(model, {seed: str(model / f"seed-{seed}") for seed in seeds})
    else:
        (model / "seed-17").mkdir(parents=True)
        model = model / "seed-17"  # its scores equal seed 17's of the set
    params["systems"] = {"fusion": params["systems"]["fusion"],
                         "learned": {"kind": KIND, "depth": 5, "model": str(model),
                                     "cache_dir": str(folder / "cache"), "depends_on": "tests"}}
    params["system_names"] = list(params["systems"])
    (folder / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    loaded = load_params(folder / "params.yaml")
    for system in loaded.system_names:
        rerank.run(loaded, tiny_paths(folder), system)
    evaluate.run(loaded.model_copy(update={"rag": RagConfig(measures=[])}), tiny_paths(folder))
    return loaded, tiny_paths(folder)


def test_a_seeded_system_is_ranked_per_seed_and_evaluated_on_the_mean_over_seeds(tmp_path, tiny_beir):
    params, paths = project(tmp_path / "seeded", tiny_beir, SEEDS)
    assert read_table(paths.seed_runs("fusion"), SEED_RUNS_SCHEMA).num_rows == 0  # always written: uniform outs
    seed_runs = load_seed_runs(paths.seed_runs(SYSTEM_PLACEHOLDER), params.system_names, paths.candidates)
    assert list(seed_runs) == ["learned"] and list(seed_runs["learned"]) == SEEDS
    run = load_runs(paths.run(SYSTEM_PLACEHOLDER), ["learned"])["learned"]
    pd.testing.assert_frame_equal(run, seed_runs["learned"][17])  # the run file is the first seed's
    assert not run["doc_id"].equals(seed_runs["learned"][18]["doc_id"])  # the seeds rank differently
    metadata = table_metadata(paths.run("learned"))
    assert metadata["seeds"] == SEEDS and metadata["answers_from_seed"] == 17
    assert "seeds" not in table_metadata(paths.run("fusion"))

    per_query = read_table(paths.eval / PER_QUERY_FILE).to_pandas()
    per_seed = read_table(paths.eval / PER_QUERY_SEEDS_FILE).to_pandas()
    assert set(per_seed["system"]) == {"learned"} and sorted(set(per_seed["seed"])) == SEEDS
    learned = per_query[per_query["system"] == "learned"].set_index("query_id")["nDCG@10"]
    mean = per_seed.groupby("query_id")["nDCG@10"].mean()
    pd.testing.assert_series_equal(learned, mean.reindex(learned.index), check_names=False)
    assert not per_seed.groupby("query_id")["nDCG@10"].nunique().eq(1).all()  # the mean is not one seed's
    metrics = json.loads(paths.metrics.read_text())
    assert metrics["systems"]["learned"]["nDCG@10"] == pytest.approx(learned.mean(), abs=1e-6)

    # One seed (train.seeds: [17]: one model folder) changes nothing: no seed rows, per_query is the run's own.
    params, paths = project(tmp_path / "one", tiny_beir, [17])
    assert read_table(paths.seed_runs("learned"), SEED_RUNS_SCHEMA).num_rows == 0
    assert "seeds" not in table_metadata(paths.run("learned"))
    assert read_table(paths.eval / PER_QUERY_SEEDS_FILE).num_rows == 0
    snapshot = Snapshot(paths.snapshot)
    runs = load_runs(paths.run(SYSTEM_PLACEHOLDER), params.system_names)
    direct = per_query_metrics(runs, snapshot.table("qrels").to_pandas(),
                               snapshot.queries_of(params.dataset.eval_split)["query_id"].tolist(),
                               [parse_measure(name) for name in params.evaluation.measures],
                               [parse_measure(name) for name in params.evaluation.oracle_measures],
                               no_relevant=params.evaluation.no_relevant)
    pd.testing.assert_frame_equal(read_table(paths.eval / PER_QUERY_FILE).to_pandas(), direct)
    single = load_runs(paths.run(SYSTEM_PLACEHOLDER), ["learned"])["learned"]
    pd.testing.assert_frame_equal(single, seed_runs["learned"][17])  # the same model, the same ranking


def test_a_composite_on_a_seeded_system_is_built_per_seed_and_others_once(tmp_path):
    write_seed_set(tmp_path / "ce", {17: str(tmp_path / "ce" / "seed-17"), 18: str(tmp_path / "ce" / "seed-18")})
    systems = {"ce": {"kind": KIND, "depth": 5, "model": str(tmp_path / "ce")},
               "fusion": {"kind": "fusion", "depth": 5},
               "blend": {"kind": "blend", "depth": 5, "components": ["ce", "fusion"]},
               "outer": {"kind": "blend", "depth": 5, "components": ["blend", "column:bm25_score"]}}
    params = SimpleNamespace(systems=systems, source="params.yaml")
    configs = system_configs(params)
    for name in ("ce", "blend", "outer"):
        per_seed = seeded_configs(params, configs, name)
        assert list(per_seed) == [17, 18] and per_seed[18]["ce"].model == str(tmp_path / "ce" / "seed-18")
    assert seeded_configs(params, configs, "fusion") == {}
    # The stages that build one model per system (latency, load test, sweep) build the first seed's, as the run file.
    assert first_seed_configs(params)["ce"].model == str(tmp_path / "ce" / "seed-17")


BASE = np.linspace(0.2, 0.6, 60)
QUERIES = [f"q{i:02d}" for i in range(60)]
SETTINGS = CompareConfig.parse({"baseline": "fusion", "metrics": ["nDCG@10"], "samples": 1000, "permutations": 500,
                                "simulation": {"trials": 50, "samples": 200},
                                "release": {"primary_metric": "nDCG@10", "min_delta": 0.03}}, "compare")
RULE = SETTINGS.release


def seeded_tables(seed_offsets):
    """fusion, and ce 0.05 better with per-(query, seed) noise plus a per-seed offset (summing to 0: the per-query
    seed means, so per_query, do not depend on the offsets)."""
    noise = np.random.default_rng(5).normal(0.0, 0.04, (60, 3))
    noise += noise.mean() - noise.mean(axis=1, keepdims=True) - noise.mean(axis=0, keepdims=True)  # no mean moves
    values = BASE[:, None] + 0.05 + np.random.default_rng(6).normal(0, 0.03, (60, 1)) + noise + seed_offsets
    per_seed = pd.DataFrame([{"system": "ce", "seed": seed, "query_id": q, "nDCG@10": values[i, k], "Judged@10": 1.0}
                             for k, seed in enumerate(SEEDS) for i, q in enumerate(QUERIES)])
    means = per_seed.groupby("query_id", sort=False)[["nDCG@10", "Judged@10"]].mean().reset_index()
    per_query = pd.concat([pd.DataFrame({"system": "fusion", "query_id": QUERIES, "nDCG@10": BASE,
                                         "Judged@10": 1.0}), means.assign(system="ce")], ignore_index=True)
    return per_query, per_seed


def test_the_seed_aware_ci_widens_when_seeds_disagree_and_the_verdict_reads_it():
    slices = pd.DataFrame(index=QUERIES)
    results = {}
    for name, offsets in {"agree": np.zeros(3), "disagree": np.array([-0.06, 0.0, 0.06])}.items():
        per_query, per_seed = seeded_tables(offsets)
        results[name] = compare(per_query, slices, SETTINGS, RULE, per_query_seeds=per_seed)
    (_, agreed), (disagree, disagreed) = results["agree"], results["disagree"]
    found = {name: result["seeds"]["systems"]["ce"]["against"]["fusion"] for name, (result, _) in results.items()}
    assert found["agree"]["queries_only_ci"] == found["disagree"]["queries_only_ci"]  # the same seed means
    width = {name: entry["ci"][1] - entry["ci"][0] for name, entry in found.items()}
    assert width["disagree"] > 3 * width["agree"]
    assert found["disagree"]["variance"]["seeds"] > 0 == found["agree"]["variance"]["seeds"]
    assert found["disagree"]["deltas_range"] == pytest.approx(0.12, abs=1e-6)
    assert found["disagree"]["coverage"]["seed_aware"] > found["disagree"]["coverage"]["queries_only_t"]
    ndcg = next(c for c in disagree["comparisons"] if c["metric"] == "nDCG@10")
    assert [ndcg["low"], ndcg["high"]] == found["disagree"]["ci"] and ndcg["ci_seeds"] == SEEDS
    assert agreed["verdicts"]["ce"]["decision"] == "ACCEPT"
    verdict = disagreed["verdicts"]["ce"]
    assert verdict["ci"] == found["disagree"]["ci"] and verdict["ci_seeds"] == SEEDS
    assert verdict["decision"] == "INCONCLUSIVE" and "includes 0" in verdict["decided_by"]

    # Without seed rows the comparison is exactly the bootstrap's, as before.
    per_query, per_seed = seeded_tables(np.zeros(3))
    assert compare(per_query, slices, SETTINGS, RULE, per_query_seeds=per_seed.iloc[0:0]) == \
        compare(per_query, slices, SETTINGS, RULE)

    section = seeds_section(ComparisonCore.model_validate(disagree))
    assert section.startswith("## Training seeds") and "Satterthwaite" in section
    assert "| 17 |" in section and "| 19 |" in section and "queries only" in section
    assert f"{found['disagree']['ci'][0]:+.4f} .. {found['disagree']['ci'][1]:+.4f}" in section
    assert seeds_section(analyze(per_query, slices, SETTINGS, RULE).compare) == ""


def test_two_seeded_systems_pair_seed_with_seed():
    values = np.random.default_rng(2).random((10, 3))
    seeded = {"a": SeedValues((17, 18, 19), values + 0.05), "b": SeedValues((17, 18, 19), values)}
    paired = seed_comparison("a", "b", seeded, {}, 0.95)
    np.testing.assert_allclose(paired.deltas, 0.05)
    assert paired.interval.low[0] == pytest.approx(0.05) == pytest.approx(paired.interval.high[0])
    with pytest.raises(ValueError, match="different seeds"):
        seed_comparison("a", "b", {**seeded, "b": SeedValues((17, 18, 20), values)}, {}, 0.95)
    assert seed_comparison("x", "y", seeded, {}, 0.95) is None
