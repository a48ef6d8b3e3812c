"""The pipeline's shape is the stage table: dvc.yaml is its rendering, the settings each stage may read are what the
code stage records for it (the code stage's DVC params), and a stage's code deps (its static import closure, plus the
``code`` stage's fingerprint of the kinds it builds) hold the code it runs and not the code it does not: an edit
re-runs what it touches."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from rerankeval.core.errors import ConfigError
from rerankeval.pipeline import code as code_stage
from rerankeval.pipeline.__main__ import recorded_params
from rerankeval.pipeline.params import UndeclaredSetting, load_params
from rerankeval.workspace.paths import PipelinePaths
from rerankeval.pipeline.render import code_deps, import_closure, render, stage_modules
from rerankeval.pipeline.table import BY_NAME, PATHS, STAGES, SYSTEM, code_file, dvc_params

REPO = Path(__file__).resolve().parents[1]


def static_closure(stage: str) -> set[str]:
    return {str(path) for path in import_closure(stage_modules(BY_NAME[stage]), REPO)}


def rerun_by_static_deps(edited: str) -> set[str]:
    """The stages whose listed code deps hold ``edited`` (a file, or inside a listed folder)."""
    return {stage.name for stage in STAGES
            if any(edited == dep or edited.startswith(dep.rstrip("/") + "/") for dep in code_deps(stage, REPO))
            or any(edited.startswith(path + "/") for path in stage.inputs)}


def test_the_committed_dvc_yaml_is_the_rendering_of_the_stage_table():
    assert (REPO / "dvc.yaml").read_text(encoding="utf-8") == render(REPO), \
        "dvc.yaml differs from the stage table. Fix: python -m rerankeval.pipeline.render --write"


def test_each_stage_declares_the_outputs_pipeline_paths_says_it_writes():
    paths = PipelinePaths.load(REPO / "dvc.yaml")
    values = {f"${{paths.{name}}}": str(getattr(paths, name)) for name in paths.__dataclass_fields__}
    for stage in STAGES:
        declared = []
        for output in stage.outputs:
            if output.path.startswith("${train."):
                continue
            path = output.path
            for key, value in values.items():
                path = path.replace(key, value)
            declared.append(str(Path(path)))
        assert sorted(declared) == sorted(str(path) for path in paths.outputs(stage.name)), stage.name


def test_a_stage_reading_a_setting_it_does_not_declare_fails_loudly():
    params = load_params(REPO / "params.yaml", stage="snapshot")
    assert params.dataset.eval_split
    with pytest.raises(UndeclaredSetting, match=r"stage snapshot reads dataset.critical_slices.*table.py"):
        params.dataset.critical_slices
    with pytest.raises(UndeclaredSetting, match=r"stage snapshot reads compare"):
        params.compare


def test_only_the_code_stage_has_dvc_params_and_they_cover_every_stage_s_reads():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    for stage in STAGES:
        rendered = stages[stage.name].get("do", stages[stage.name]).get("params")
        assert rendered == (list(stage.reads) if stage.name == "code" else None), stage.name
        assert dvc_params(stage) == (stage.reads if stage.name == "code" else ())
    code_reads = BY_NAME["code"].reads
    for stage in STAGES:
        for key in stage.reads:
            general = key.removesuffix(f".{SYSTEM}")
            assert any(general == read or general.startswith(read + ".") for read in code_reads), (stage.name, key)


def test_a_stage_runs_on_the_settings_the_code_stage_recorded_for_it_and_refuses_an_unrecorded_edit(fingerprints,
                                                                                                    tmp_path):
    written = fingerprints()
    settings = written["compare.json"]["settings"]
    assert set(settings) == {key.split(".")[0] for key in BY_NAME["compare"].reads}
    assert set(settings["dataset"]) == {"eval_split", "critical_slices"}
    paths = PipelinePaths.load(REPO / "dvc.yaml")
    (tmp_path / paths.code).mkdir(parents=True)
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    with pytest.raises(ConfigError, match=r"compare.json: missing: the code stage has not run\. Fix: `dvc repro`"):
        recorded_params("compare", None, paths)
    (tmp_path / paths.code / "compare.json").write_text(json.dumps(written["compare.json"]))
    params = recorded_params("compare", None, paths)
    assert params.compare.confidence == settings["compare"]["confidence"]
    with pytest.raises(UndeclaredSetting, match="stage compare reads dataset.name"):
        params.dataset.name
    edited = yaml.safe_load((tmp_path / "params.yaml").read_text(encoding="utf-8"))
    edited["compare"]["confidence"] = 0.9
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(edited, sort_keys=False), encoding="utf-8")
    with pytest.raises(ConfigError, match="compare of compare differ from what the code stage last wrote"):
        recorded_params("compare", None, paths)


def test_an_instance_reads_the_settings_it_declares_from_its_code_file_and_no_other(fingerprints, tmp_path):
    written = fingerprints()
    systems = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))["systems"]
    blend = next(name for name, config in systems.items() if config["kind"] == "blend")
    settings = written[f"rerank_{blend}.json"]["settings"]
    # a system it builds reads its components' settings too, and no other system's
    assert set(settings["systems"]) == {blend, *systems[blend]["components"]}
    assert set(written["rerank_bm25.json"]["settings"]["systems"]) == {"bm25"}
    paths = PipelinePaths.load(REPO / "dvc.yaml")
    (tmp_path / paths.code).mkdir(parents=True)
    (tmp_path / paths.code / f"rerank_{blend}.json").write_text(json.dumps(written[f"rerank_{blend}.json"]))
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    params = recorded_params("rerank", blend, paths)
    assert params.systems == settings["systems"] and params.dataset.eval_split == settings["dataset"]["eval_split"]
    with pytest.raises(UndeclaredSetting, match="stage rerank reads dataset.critical_slices"):
        params.dataset.critical_slices
    with pytest.raises(ConfigError, match="rerank_bm25.json: missing.*dvc repro code"):
        recorded_params("rerank", "bm25", paths)
    # an edit of a setting it reads that the code stage has not seen yet: refused, not run on unrecorded settings
    edited = yaml.safe_load((tmp_path / "params.yaml").read_text(encoding="utf-8"))
    component = systems[blend]["components"][0]
    edited["systems"][component]["depth"] = 7
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(edited, sort_keys=False), encoding="utf-8")
    with pytest.raises(ConfigError, match=f"systems.{component} of rerank@{blend} differ from what the code stage"):
        recorded_params("rerank", blend, paths)
    # one it does not read is not its business
    edited["systems"][component]["depth"] = systems[component]["depth"]
    edited["dataset"]["critical_slices"] = []
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(edited, sort_keys=False), encoding="utf-8")
    assert recorded_params("rerank", blend, paths).systems == settings["systems"]


def test_a_measure_kernel_edit_re_runs_what_computes_measures_and_no_reranker():
    rerun = rerun_by_static_deps("src/rerankeval/eval/measures/ranking.py") - {"code"}
    # freeze and fallback fit the RRF weights on a measure when retrieval.fusion.fit asks (and a shadow replay freezes
    # its log's queries with the freeze stage's code); an online readout decides with the verdict's own code, whose
    # rule names its primary by a measure name (stats.config).
    assert rerun == {"freeze", "fallback", "evaluate", "compare", "sweep", "readout", "shadow", "report"}, rerun


def test_the_serving_config_re_runs_latency_and_what_reads_its_outputs_only():
    rerun = rerun_by_static_deps("src/rerankeval/serving/config.py") - {"code"}
    # and a shadow replay, which serves a system (serving.serve) for its `served` check; the compare stage reads the
    # load test's p95 (serving.measure). The report only renders compare.json: it re-runs when that file changes.
    assert rerun == {"latency", "shadow", "compare"}, rerun


def test_the_release_rule_s_settings_re_run_the_stages_that_decide_and_none_that_ranks():
    rerun = rerun_by_static_deps("src/rerankeval/stats/config.py") - {"code"}
    # the stages that read `compare` settings (the sweep scores its policies by the rule's measure; the online stages
    # decide with the verdict's code); a critical slice (stats/critical_slices.py) and the resampling defaults
    # (stats/defaults.py) are modules of their own, so the dataset's settings and the RRF weight fit hold neither.
    assert rerun == {"compare", "sweep", "online", "readout", "shadow", "report"}, rerun


def test_the_evaluation_settings_re_run_the_stages_that_read_them_only():
    rerun = rerun_by_static_deps("src/rerankeval/eval/config.py") - {"code"}
    # a measure name in another block's settings (rag.measures, policies, compare, a blend's fit) is typed by
    # eval/measure_names.py, so context selection, generation and the online stages do not hold this block's code.
    assert rerun == {"evaluate", "compare", "sweep", "report"}, rerun


def test_no_static_closure_holds_a_kind_or_a_generator():
    # baselines.py (fusion, bm25, dense, the column systems composites read) is the composites' shared code, not here.
    kinds = ("src/rerankeval/systems/composite/blend.py",
             "src/rerankeval/systems/composite/routed.py", "src/rerankeval/systems/composite/cascade.py",
             "src/rerankeval/systems/learned/kinds.py", "src/rerankeval/rag/generators/local_llm.py",
             "src/rerankeval/rag/generators/extractive.py")
    for stage in STAGES:
        if stage.name != "code":
            assert not static_closure(stage.name) & set(kinds), stage.name


def test_the_snapshot_stage_runs_no_candidates_systems_kernels_or_report_code():
    code = static_closure("snapshot")
    assert not {path for path in code if path.startswith(("src/rerankeval/systems/", "src/rerankeval/report/"))
                or path.endswith(("engine.py", "matrix.py", "ranking.py", ".c"))}


@pytest.fixture
def fingerprints(tmp_path, monkeypatch):
    """The code stage's fingerprints of the committed params, before and after an edit of a copy of src/."""
    shutil.copytree(REPO / "src", tmp_path / "src", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    monkeypatch.chdir(tmp_path)
    params = load_params(REPO / "params.yaml", stage="code")

    def after(edited: str | None = None) -> dict[str, dict]:
        if edited:
            with open(tmp_path / edited, "a", encoding="utf-8") as handle:
                handle.write("# an edit\n")
        return code_stage.fingerprints(params)

    return after


def test_a_kind_s_edit_changes_the_fingerprints_of_the_systems_built_on_it_only(fingerprints):
    before = fingerprints()
    after = fingerprints("src/rerankeval/systems/composite/blend.py")
    changed = {name for name in before if before[name] != after[name]}
    systems = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))["systems"]
    built_on_blend = {f"rerank_{name}.json" for name, fingerprint in before.items() for name in [name[7:-5]]
                      if name in systems and "blend" in fingerprint.get("kinds", {}).values()}
    # latency, sweep and the shadow replays build every system
    shadows = {name for name in before if name.startswith("shadow_")}
    assert built_on_blend and shadows and changed == built_on_blend | {"latency.json", "sweep.json"} | shadows, changed
    assert "rerank_oracle.json" not in changed and "rerank_random.json" not in changed


@pytest.mark.parametrize("shared", ["src/rerankeval/systems/composite/components.py",
                                    "src/rerankeval/systems/pairs.py"])
def test_composite_and_pair_scoring_code_is_no_first_stage_order_s_code(fingerprints, shared):
    """Every rerank stage records the pairs composites needed (systems.pair_counts); an edit to the code composites or
    pair scorers share re-runs the systems built on it, never the first-stage orders and the bounds."""
    before = fingerprints()
    after = fingerprints(shared)
    changed = {name for name in before if before[name] != after[name]}
    unaffected = {f"rerank_{name}.json" for name in ("fusion", "bm25", "dense", "oracle", "random")}
    assert changed and "rerank_blend_ce_fusion.json" in changed and not changed & unaffected, changed


def test_the_local_llm_generator_s_edit_changes_nothing_the_demo_runs(fingerprints):
    before = fingerprints()
    assert before["answer.json"]["kinds"] == before["calibrate.json"]["kinds"] == {"generator": "extractive"}
    assert fingerprints("src/rerankeval/rag/generators/local_llm.py") == before


def test_every_stage_s_declared_settings_load_from_the_committed_params():
    for stage in STAGES:
        params = load_params(REPO / "params.yaml", stage=stage.name)
        for key in stage.reads:
            block, _, field = key.partition(".")
            value = getattr(params, block)
            if field and block != "systems":
                getattr(value, field.split(".")[0])


def test_editing_the_stage_table_re_runs_only_what_its_rendering_changes():
    # A stage's entry reaches DVC as its rendered params, deps and outs; the table file itself is no stage's code dep.
    assert rerun_by_static_deps("src/rerankeval/pipeline/table.py") == {"code"}


def test_a_measure_kernel_edit_changes_the_fingerprints_of_the_stages_that_compute_measures_only(fingerprints):
    before = fingerprints()
    after = fingerprints("src/rerankeval/eval/measures/ranking.py")
    changed = {name for name in before if before[name] != after[name]}
    # A blend fits its weight on a measure, so the systems built on it (and latency, which builds every system) run
    # the kernels too; no other reranker does.
    fitted = {name for name, fingerprint in before.items() if "blend" in fingerprint.get("kinds", {}).values()}
    computing = {f"{stage}.json"
                 for stage in ("freeze", "fallback", "latency", "evaluate", "compare", "sweep", "report")}
    computing |= {name for name in before if name.startswith(("readout_", "shadow_"))}
    assert fitted and changed == computing | fitted, changed


def test_each_stage_s_one_code_dep_is_its_fingerprint():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    for stage in STAGES:
        deps = stages[stage.name].get("do", stages[stage.name])["deps"]
        code = [dep for dep in deps if dep.startswith(("src/", "stages/", PATHS["code"]))]
        assert code == (["stages/python", "src/rerankeval"] if stage.name == "code"
                        else [f"{PATHS['code']}/{code_file(stage).replace(SYSTEM, '${key}')}"]), stage.name


def test_a_name_with_a_dot_is_one_key_of_an_instance_s_settings(tmp_path, monkeypatch):
    """System and item names may hold a dot (core.config's safe names): ``systems.bm25.v2`` is the system
    ``bm25.v2``, recorded, compared and re-run as one."""
    params = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    params["systems"] = {"bm25.v2": params["systems"]["bm25"], **params["systems"]}
    params["system_names"] = list(params["systems"])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    loaded = load_params(stage="code")
    from rerankeval.pipeline.system_configs import system_configs

    settings = code_stage.stage_settings(loaded, BY_NAME["rerank"], "bm25.v2", system_configs(loaded))
    assert settings["systems"] == {"bm25.v2": params["systems"]["bm25"]}
    (tmp_path / "data" / "code").mkdir(parents=True)
    (tmp_path / "data" / "code" / "rerank_bm25.v2.json").write_text(json.dumps({"settings": settings}))
    paths = PipelinePaths.load(REPO / "dvc.yaml")
    assert list(recorded_params("rerank", "bm25.v2", paths).systems) == ["bm25.v2"]
    params["systems"]["bm25.v2"] = {**params["systems"]["bm25.v2"], "depth": 7}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"systems\.bm25\.v2 of rerank@bm25\.v2 differ"):
        recorded_params("rerank", "bm25.v2", paths)
    (tmp_path / "data" / "code" / "rerank_bm25.v2.json").write_text(json.dumps({"code": {}}))  # an older code stage
    with pytest.raises(ConfigError, match="holds no settings.*dvc repro"):
        recorded_params("rerank", "bm25.v2", paths)


def test_dvc_lock_holds_the_stages_of_the_rendered_pipeline_and_no_other():
    # DVC keeps a removed or renamed stage's entry in dvc.lock, and every `dvc status` and `dvc repro` parses it.
    params = load_params(REPO / "params.yaml")
    stages = {name for stage in STAGES
              for name in ([f"{stage.name}@{item}" for item in code_stage.instances(params, stage)]
                           if stage.per_system else [stage.name])}
    locked = set(yaml.safe_load((REPO / "dvc.lock").read_text(encoding="utf-8"))["stages"])
    assert locked == stages, (f"dvc.lock's entries of no stage: {sorted(locked - stages)}; stages without one: "
                              f"{sorted(stages - locked)}. Fix: delete the stale entries, then `dvc repro`")
