"""dvc.yaml's code deps are each stage's import closure: a stage re-runs when code it runs changes, and only then;
its outs are what PipelinePaths says it writes."""

from pathlib import Path

import pytest

from rerankeval.pipeline.deps import (collapsed, declared_deps, declared_outputs, derived_deps, derived_outputs,
                                      import_closure, rewritten, stage_modules)

REPO = Path(__file__).resolve().parents[1]
READERS_OF_CANDIDATES = ["freeze", "train", "rerank", "latency", "select", "calibrate", "generate", "evaluate", "sweep"]
KIND_CODE = tuple(f"src/rerankeval/systems/{name}" for name in ("builtin.py", "baselines.py", "learned/", "composite/",
                                                                  "http_rerank.py", "ray_executor.py"))
"""The system kinds' code: what a stage that builds no system must not depend on (editing a kind re-runs none)."""
BUILD_NO_SYSTEM = ["snapshot", "freeze", "train", "select", "calibrate", "generate", "evaluate"]


def closures() -> dict[str, set[str]]:
    return {stage: {str(path) for path in import_closure(modules, REPO)}
            for stage, modules in stage_modules(REPO / "dvc.yaml", REPO).items()}


def test_every_stage_lists_exactly_the_code_it_imports():
    derived, declared = derived_deps(REPO / "dvc.yaml", REPO), declared_deps(REPO / "dvc.yaml")
    for stage, deps in derived.items():
        missing, extra = sorted(set(deps) - set(declared[stage])), sorted(set(declared[stage]) - set(deps))
        assert not missing and not extra, (f"{stage}: deps miss {missing}, name code it does not import {extra}. "
                                           "Fix: python -m rerankeval.pipeline.deps --write")
    assert not any(dep in ("src", "src/rerankeval") for stage_deps in declared.values() for dep in stage_deps)


def test_every_stage_declares_the_outputs_pipeline_paths_says_it_writes():
    declared, written = declared_outputs(REPO / "dvc.yaml"), derived_outputs(REPO / "dvc.yaml", REPO)
    assert declared["rerank"] == ["data/runs/latency_{system}.parquet", "data/runs/run_{system}.parquet",
                                  "data/runs/seed_runs_{system}.parquet"]
    for stage, outputs in written.items():
        assert declared[stage] == outputs, f"{stage}: dvc.yaml's outs and metrics {declared[stage]} != {outputs}"


def test_the_snapshot_stage_runs_no_candidates_systems_statistics_training_or_report_code():
    code = {path for path in closures()["snapshot"] if path.startswith("src/rerankeval/")}
    forbidden = {path for path in code if path == "src/rerankeval/retrieval/candidates.py"
                 or path.startswith(("src/rerankeval/systems/", "src/rerankeval/report/"))}
    # Of stats/ and training/ only their settings (params.yaml's compare and train blocks) and package files.
    forbidden |= {path for path in code if path.startswith(("src/rerankeval/stats/", "src/rerankeval/training/"))
                  and Path(path).name not in ("config.py", "__init__.py")}
    assert not forbidden, f"the snapshot stage imports {sorted(forbidden)}"


def test_the_snapshot_stage_validates_measure_names_without_the_metric_engine():
    # params.yaml's measure names are checked at load by every stage: the names' registry, not matrix/engine.
    engine = [path for path in closures()["snapshot"]
              if path in ("src/rerankeval/eval/engine.py", "src/rerankeval/eval/matrix.py")
              or path.endswith((".c", ".h"))]
    assert engine == [], f"the snapshot stage imports the metric engine: {engine}"


def test_only_the_stages_that_type_build_or_compare_systems_run_the_system_kinds():
    kinds = {stage: sorted(path for path in files if path.startswith(KIND_CODE))
             for stage, files in closures().items()}
    assert {stage: kinds[stage] for stage in BUILD_NO_SYSTEM if kinds[stage]} == {}
    # compare and report read each system's role (the floor, the bounds, the composites) from its run's metadata
    # (systems.roles), so only the stages that build systems run the kinds' code.
    assert {stage for stage, found in kinds.items() if found} == {"rerank", "latency", "sweep"}


def test_every_stage_that_reads_candidates_runs_their_loader_and_only_report_runs_the_report():
    runs = closures()
    loader = "src/rerankeval/retrieval/candidates.py"
    assert [stage for stage in READERS_OF_CANDIDATES if loader not in runs[stage]] == []
    assert [stage for stage, files in runs.items() if "src/rerankeval/report/markdown.py" in files] == ["report"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    files = {
        "src/rerankeval/__init__.py": "",
        "src/rerankeval/go.py": "from .a import run\n",
        "src/rerankeval/a.py": "def run():\n    from .b import late\n",
        "src/rerankeval/b.py": "from .lazy import x\n",
        "src/rerankeval/lazy/__init__.py": ("from importlib import import_module\n_WHERE = {'x': 'inner'}\n"
                                            "def __getattr__(name):\n"
                                            "    return import_module(f'.{_WHERE[name]}', __name__)\n"),
        "src/rerankeval/lazy/inner.py": "from .. import _kernel\n",
        "src/rerankeval/_kernel.c": "", "src/rerankeval/_kernel.h": "",
        "src/rerankeval/unused.py": "",
        "src/rerankeval/pipeline/__init__.py": "",
        "src/rerankeval/pipeline/__main__.py": ("from importlib import import_module\n"
                                                "STAGES = {'first': 'one', 'second': 'two'}\n"
                                                "def run(stage):\n"
                                                "    import_module(f'.{STAGES[stage]}', __package__).run()\n"),
        "src/rerankeval/pipeline/one.py": "from ..go import run\n",
        "src/rerankeval/pipeline/two.py": "",
        "dvc.yaml": ("stages:\n  first:\n    cmd: sh stages/python -m rerankeval.pipeline first\n"
                     "  second:\n    foreach: [x]\n    do:\n      cmd: sh stages/python -m rerankeval.pipeline second"
                     " ${key}\n"),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_closure_follows_in_function_imports_imports_by_name_and_compiled_kernels(tree: Path):
    closure = {str(path) for path in import_closure(["rerankeval.go"], tree)}
    assert closure == {"src/rerankeval/__init__.py", "src/rerankeval/go.py", "src/rerankeval/a.py",
                       "src/rerankeval/b.py", "src/rerankeval/lazy/__init__.py", "src/rerankeval/lazy/inner.py",
                       "src/rerankeval/_kernel.c", "src/rerankeval/_kernel.h"}
    # lazy/ is whole, so it is listed as a folder; the package is not (unused.py is not imported).
    assert "src/rerankeval/lazy" in collapsed(import_closure(["rerankeval.go"], tree), tree)
    assert "src/rerankeval" not in collapsed(import_closure(["rerankeval.go"], tree), tree)


def test_a_stage_runs_the_entry_module_and_its_own_module_only(tree: Path):
    modules = stage_modules(tree / "dvc.yaml", tree)
    assert modules == {"first": ["rerankeval.pipeline.__main__", "rerankeval.pipeline.one"],
                       "second": ["rerankeval.pipeline.__main__", "rerankeval.pipeline.two"]}
    second = {str(path) for path in import_closure(modules["second"], tree)}
    assert second == {"src/rerankeval/__init__.py", "src/rerankeval/pipeline/__init__.py",
                      "src/rerankeval/pipeline/__main__.py", "src/rerankeval/pipeline/two.py"}
    assert "src/rerankeval/go.py" in {str(path) for path in import_closure(modules["first"], tree)}


def test_write_replaces_code_deps_and_keeps_every_other_line():
    text = ("stages:\n  go:\n    cmd: sh stages/python -m rerankeval.pipeline go\n    deps:\n      - src/old.py\n"
            "      - ${paths.snapshot}\n    outs:\n      - out\n")
    assert rewritten(text, {"go": ["src/new.py"]}) == (
        "stages:\n  go:\n    cmd: sh stages/python -m rerankeval.pipeline go\n    deps:\n      - src/new.py\n"
        "      - ${paths.snapshot}\n    outs:\n      - out\n")
