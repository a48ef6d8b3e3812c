"""dvc.yaml's code deps are each stage's import closure: a stage re-runs when code it runs changes, and only then."""

from pathlib import Path

import pytest

from rerankeval.pipeline.deps import collapsed, declared_deps, derived_deps, import_closure, rewritten

REPO = Path(__file__).resolve().parents[1]


def test_every_stage_lists_exactly_the_code_it_imports():
    derived, declared = derived_deps(REPO / "dvc.yaml", REPO), declared_deps(REPO / "dvc.yaml")
    for stage, deps in derived.items():
        missing, extra = sorted(set(deps) - set(declared[stage])), sorted(set(declared[stage]) - set(deps))
        assert not missing and not extra, (f"{stage}: deps miss {missing}, name code it does not import {extra}. "
                                           "Fix: python -m rerankeval.pipeline.deps --write")


def test_report_code_reaches_only_report_and_the_candidates_loader_every_reader():
    def covers(deps: list[str], file: str) -> bool:
        return any(file == dep or file.startswith(dep + "/") for dep in deps)

    deps = declared_deps(REPO / "dvc.yaml")
    assert [stage for stage in deps if covers(deps[stage], "src/rerankeval/report/markdown.py")] == ["report"]
    readers = ["freeze", "train", "rerank", "latency", "select", "calibrate", "generate", "evaluate", "sweep"]
    assert all(covers(deps[stage], "src/rerankeval/retrieval/candidates.py") for stage in readers)
    assert not any(dep in ("src", "src/rerankeval") for stage_deps in deps.values() for dep in stage_deps)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    files = {
        "stages/go.py": "from rerankeval.a import run\n",
        "src/rerankeval/__init__.py": "",
        "src/rerankeval/a.py": "def run():\n    from .b import late\n",
        "src/rerankeval/b.py": "from .lazy import x\n",
        "src/rerankeval/lazy/__init__.py": ("from importlib import import_module\n_WHERE = {'x': 'inner'}\n"
                                            "def __getattr__(name):\n"
                                            "    return import_module(f'.{_WHERE[name]}', __name__)\n"),
        "src/rerankeval/lazy/inner.py": "from .. import _kernel\n",
        "src/rerankeval/_kernel.c": "", "src/rerankeval/_kernel.h": "",
        "src/rerankeval/unused.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_closure_follows_in_function_imports_imports_by_name_and_compiled_kernels(tree: Path):
    closure = {str(path) for path in import_closure(Path("stages/go.py"), tree)}
    assert closure == {"stages/go.py", "src/rerankeval/__init__.py", "src/rerankeval/a.py", "src/rerankeval/b.py",
                       "src/rerankeval/lazy/__init__.py", "src/rerankeval/lazy/inner.py",
                       "src/rerankeval/_kernel.c", "src/rerankeval/_kernel.h"}
    # lazy/ is whole, so it is listed as a folder; the package is not (unused.py is not imported).
    assert "src/rerankeval/lazy" in collapsed(import_closure(Path("stages/go.py"), tree), tree)
    assert "src/rerankeval" not in collapsed(import_closure(Path("stages/go.py"), tree), tree)


def test_write_replaces_code_deps_and_keeps_every_other_line():
    text = ("stages:\n  go:\n    cmd: sh stages/python stages/go.py\n    deps:\n      - stages/go.py\n"
            "      - src/old.py\n      - ${paths.snapshot}\n    outs:\n      - out\n")
    assert rewritten(text, {"go": ["src/new.py", "stages/go.py"]}) == (
        "stages:\n  go:\n    cmd: sh stages/python stages/go.py\n    deps:\n      - src/new.py\n"
        "      - stages/go.py\n      - ${paths.snapshot}\n    outs:\n      - out\n")
