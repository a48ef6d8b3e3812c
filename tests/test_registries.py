"""One registry mechanism: every open registry refuses an unknown name alike; a kind's role is an attribute of the
kind, so a kind registered here is treated by the report and the sanity checks as its role says; the ``systems``
params are typed once, at load."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from rerankeval.core.errors import ConfigError
from rerankeval.eval.measures import parse_measure
from rerankeval.eval.measures.base import FAMILIES, INPUTS
from rerankeval.pipeline.params import load_params
from rerankeval.pipeline.system_configs import system_configs
from rerankeval.rag.generators import GENERATORS, extractive  # noqa: F401  (registers a built-in generator)
from rerankeval.policies.frontier import frontier_points
from rerankeval.retrieval.dense import ENCODERS
from rerankeval.stats.sanity import first_stage_sanity
from rerankeval.systems.registry import SYSTEM_KINDS, SystemConfig, register_system
from rerankeval.systems.roles import floor_system
from rerankeval.systems.baselines import ColumnSystem
from rerankeval.systems.pair_scoring import EXECUTORS
from rerankeval.systems.pairs import PAIR_SCORERS

REPO = Path(__file__).resolve().parents[1]
BOOT = dict(n_samples=200, seed=3, confidence=0.95, method="percentile")


def _column(config, context):
    return ColumnSystem("fused_score", 1.0)


# Kinds registered by this file only: the report and the checks know them by their attributes alone.
register_system("test_ceiling", SystemConfig, role="ceiling")(_column)
register_system("test_floor", SystemConfig, role="floor")(_column)
register_system("test_fused", SystemConfig, role="first_stage", retriever="hybrid")(_column)
register_system("test_mix", SystemConfig, composite=True)(_column)


def traits_of(systems):
    """What the rerank stage records of each system's kind in its run (``roles.KindTraits``)."""
    return {name: SYSTEM_KINDS.get(config["kind"]).traits for name, config in systems.items()}


@pytest.mark.parametrize("registry", [SYSTEM_KINDS, GENERATORS, FAMILIES, INPUTS, EXECUTORS, PAIR_SCORERS, ENCODERS],
                         ids=lambda registry: registry.what)
def test_every_registry_refuses_an_unknown_name_with_one_error_and_one_message(registry):
    with pytest.raises(ConfigError) as raised:
        registry.get("no_such_entry", where="somewhere.kind")
    pattern = (rf"somewhere\.kind: unknown {re.escape(registry.what)} 'no_such_entry'; known: .+\. "
               rf"Fix: use a known {re.escape(registry.what)}")
    assert re.match(pattern, str(raised.value)), str(raised.value)
    assert "no_such_entry" not in registry


def test_the_user_facing_lookups_raise_the_registry_error():
    with pytest.raises(ConfigError, match=r"unknown measure 'nope'; known: .*nDCG.*Fix: use a known measure"):
        parse_measure("nope@10")
    with pytest.raises(ConfigError, match=r"systems\.s\.executor: unknown executor 'gpu'; known: local, ray, threads"):
        SYSTEM_KINDS.get("cross_encoder").config.parse(
            {"kind": "cross_encoder", "model": "m", "depth": 5, "executor": "gpu"}, "systems.s")
    assert parse_measure("mrr@10") == parse_measure("RR@10")  # aliases, any letter case


def test_a_kind_registered_elsewhere_is_a_bound_or_composite_in_the_frontier():
    systems = {"ceiling": {"kind": "test_ceiling", "depth": 5}, "floor": {"kind": "test_floor", "depth": 5},
               "mix": {"kind": "test_mix", "depth": 5}, "plain": {"kind": "test_fused", "depth": 5}}
    depth_costs = pd.DataFrame([(name, depth, 0.5, 10.0 * depth, 1.0) for name in systems for depth in (5, 10)],
                               columns=["system", "depth", "quality", "p95_ms", "cost_per_1k_queries"])
    own = pd.DataFrame([(name, 0.5, 10.0, 1.0) for name in systems],
                       columns=["system", "quality", "p95_ms", "cost_per_1k_queries"])
    points = frontier_points(depth_costs, traits_of(systems), own, None)
    assert set(points["label"]) == {"plain@5", "plain@10", "mix"}  # bounds left out; the composite as configured


def test_a_kind_registered_elsewhere_is_the_floor_and_a_fused_baseline_for_sanity():
    systems = {"fused": {"kind": "test_fused", "depth": 5}, "bottom": {"kind": "test_floor", "depth": 5}}
    assert floor_system(traits_of(systems)) == "bottom"
    queries = [f"q{i}" for i in range(30)]
    rng = np.random.default_rng(0)
    first_stage = pd.DataFrame(
        [(retriever, query, value + rng.normal(0, 0.01)) for query in queries
         for retriever, value in (("bm25", 0.8), ("dense", 0.6), ("hybrid", 0.3))],
        columns=["retriever", "query_id", "nDCG@10"])
    floor = pd.Series(0.1, index=queries)
    sanity = first_stage_sanity(first_stage, floor, "nDCG@10", "fused", traits_of(systems)["fused"].retriever, **BOOT)
    assert sanity["flag"] is not None and "fused" in sanity["flag"]  # its retriever is the fused ranking


def test_a_built_in_kind_is_found_by_its_entry_point_and_only_its_module_is_imported():
    # A fresh process that imports the registry alone: "fusion" is declared in pyproject.toml's entry points, so the
    # lookup imports its module (baselines) and no other kind's.
    code = ("import sys\n"
            "from rerankeval.systems.registry import parse_system_config\n"
            "print(type(parse_system_config('s', {'kind': 'fusion', 'depth': 5})).__name__)\n"
            "print(sorted(name for name in sys.modules if name.startswith('rerankeval.systems.')))\n")
    lines = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines[0] == "SystemConfig"
    assert "rerankeval.systems.baselines" in lines[1]
    assert not any(kind in lines[1] for kind in ("composite.blend", "learned.kinds", "http_rerank")), lines[1]


def _params_with(tmp_path: Path, system: str, settings: dict) -> Path:
    data = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    data["systems"][system] = {**data["systems"][system], **settings}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("settings, problem", [
    ({"depht": 10}, r"systems\.{system}\.depht: unknown setting"),
    ({"depth": "10"}, r"systems\.{system}\.depth: expected an integer, got str '10'"),
])
def test_systems_params_are_typed_where_systems_are_built_naming_the_file_and_field(tmp_path, settings, problem):
    system = load_params(REPO / "params.yaml").system_names[-1]
    path = _params_with(tmp_path, system, settings)
    with pytest.raises(ConfigError) as raised:
        system_configs(load_params(path))
    message = str(raised.value)
    assert message.startswith(str(path)), message
    assert len(re.findall(problem.format(system=re.escape(system)), message)) == 1, message


def test_each_system_is_typed_by_its_kind():
    params = load_params(REPO / "params.yaml")
    for name, config in system_configs(params).items():
        assert isinstance(config, SYSTEM_KINDS.get(params.systems[name]["kind"]).config)
        assert config.depth == params.systems[name]["depth"]


def test_one_build_context_for_systems_and_generators():
    from rerankeval.rag.generators import BuildContext as GeneratorContext
    from rerankeval.systems.registry import BuildContext

    assert GeneratorContext is BuildContext


def test_a_candidate_source_is_a_config_class_that_names_its_implementation(monkeypatch):
    from typing import ClassVar, Literal

    from rerankeval.retrieval.config import SOURCES, RetrievalConfig, SourceConfig
    from rerankeval.retrieval.sources import freeze_candidates
    from pydantic import TypeAdapter

    class GreetingConfig(SourceConfig):
        implementation: ClassVar[str] = "tests.plugin_source:freeze_greeting"
        source: Literal["greeting"]
        greeting: str

    for table in ("_entries", "_aliases", "_lookup"):  # registered for this test only
        monkeypatch.setattr(SOURCES, table, dict(getattr(SOURCES, table)))
    SOURCES.add("greeting", GreetingConfig)
    # The access filter runs on whatever a source froze (tests/test_access.py); this test's source freezes nothing.
    monkeypatch.setattr("rerankeval.retrieval.sources.filter_frozen", lambda frozen, snapshot, access: frozen)
    typed = TypeAdapter(RetrievalConfig).validate_python({"source": "greeting", "greeting": "hi"})
    assert isinstance(typed, GreetingConfig) and freeze_candidates("snap", typed) == "frozen"
    from tests.plugin_source import FROZEN

    assert FROZEN == [("snap", "hi")]
    with pytest.raises(ValueError, match="'nope' is not a candidate source; known: greeting, hybrid, replay, run"):
        TypeAdapter(RetrievalConfig).validate_python({"source": "nope"})
