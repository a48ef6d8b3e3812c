"""The README's "my new reranker against the one in production" recipe: its overrides compose, parse, and decide
every other system against the production reranker on the demo's outputs."""

import json
from pathlib import Path

import pandas as pd
import pytest
from rerankeval.pipeline.params import Params
from tests.test_candidate_sources import composed_with

REPO = Path(__file__).resolve().parents[1]
PER_QUERY = REPO / "data" / "eval" / "per_query.parquet"


def test_the_readmes_production_baseline_overrides_are_the_ones_documented():
    readme = (REPO / "README.md").read_text()
    for override in ("compare.baselines=[ce_minilm_ft]", "compare.baselines=[ce_minilm_ft,fusion]"):
        assert f"-S '{override}'" in readme
        params = Params.parse(composed_with(override), "")
        assert params.compare.baselines == override.split("=")[1].strip("[]").split(",")
        params.compare.refuse_unknown(params.system_names)


@pytest.mark.skipif(not PER_QUERY.exists(), reason="needs the demo's outputs (`make demo`)")
def test_with_production_as_baseline_every_other_reranker_is_decided_against_it():
    from rerankeval.stats.comparison import RunFacts, compare

    params = Params.parse(composed_with("compare.baselines=[ce_minilm_ft]"), "")
    per_query = pd.read_parquet(PER_QUERY)
    settings = params.compare.for_systems(params.system_names).model_copy(
        update={"samples": 500, "permutations": 500,
                "simulation": params.compare.simulation.model_copy(update={"trials": 20, "samples": 200})})
    compare_json = json.loads((REPO / "reports" / "compare.json").read_text())
    references = frozenset({"bm25", "dense", "oracle", "random", "fusion"} & set(compare_json["systems"]))
    result, verdicts = compare(per_query, pd.DataFrame(index=sorted(set(per_query["query_id"]))), settings,
                               settings.release, RunFacts(reference_systems=references))
    assert verdicts["baseline"] == "ce_minilm_ft" and "ce_minilm_ft" not in verdicts["verdicts"]
    assert {"blend_ce_fusion", "ce_minilm_ft_int8", "routed_blend"} <= set(verdicts["verdicts"])
    family = result["method"]["release_family"]["families"]["release vs ce_minilm_ft"]["members"]
    assert "blend_ce_fusion" in family and not references & set(family)
