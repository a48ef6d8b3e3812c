"""The house shows its architecture: imports run down the floors, no import cycles, small modules, one stage entry
point, heavy libraries imported late."""

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "rerankeval"
HEAVY = {"torch", "transformers", "sentence_transformers", "FlagEmbedding", "ray", "openai", "huggingface_hub",
         "bm25s", "matplotlib", "dvc", "safetensors"}
MAX_MODULE_LINES = 600
FLOORS = {
    0: {"core"},
    1: {"eval"},
    2: {"stats"},
    3: {"data", "models"},
    4: {"retrieval", "training", "online"},
    5: {"systems"},
    6: {"rerank", "rag", "serving"},
    7: {"policies", "workspace"},
    8: {"report", "interop"},
    9: {"pipeline"},
    10: {"cli"},
}
"""The layers of rerankeval (docs/architecture.md states them from here): a package imports itself and packages on
lower floors only, never one beside it or above it."""
PIPELINE_FOR_THE_CLI = {
    "rerankeval.pipeline.params",  # the typed params.yaml, which `serve` and `loadtest` read and `reference` documents
    "rerankeval.pipeline.loadtest",  # the latency stage's load test, which `rerankeval loadtest` runs on its own
}
"""The stage glue the ``rerankeval`` command may import; nothing else outside pipeline/ imports pipeline."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> list[tuple[str, bool]]:
    """(module, imported at module level) for every import of ``path``, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rsplit(".", 1)[0]
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top_level) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.append((base, id(node) in top_level))
            found += [(f"{base}.{alias.name}", id(node) in top_level) for alias in node.names]
    return found


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def package_of(module: str) -> str:
    """The subpackage of a rerankeval module (or of a name imported from one): rerankeval.<package>...."""
    return module.split(".")[1]


def package_imports() -> list[tuple[Path, str, str, str]]:
    """(file, imported module, importing package, imported package) for every import of another rerankeval package,
    at module level or inside a function alike: a late import still makes the importer depend on the imported."""
    known = modules()
    return sorted({(path, target, package_of(name), package_of(target))
                   for name, path in known.items() if name != "rerankeval"
                   for target, _ in imported_modules(path)
                   if target in known and target != "rerankeval" and package_of(target) != package_of(name)})


def test_every_package_stands_on_one_floor():
    placed = [package for packages in FLOORS.values() for package in packages]
    assert len(placed) == len(set(placed)), f"a package on two floors: {sorted(placed)}"
    packages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert packages == set(placed), (f"packages on no floor: {sorted(packages - set(placed))}; floors naming no "
                                     f"package: {sorted(set(placed) - packages)}")


def test_the_architecture_page_states_the_floors_of_this_test():
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| ([a-z, ]+) \|$", page, flags=re.MULTILINE)
    assert {int(floor): set(packages.split(", ")) for floor, packages in rows} == FLOORS


def test_imports_run_down_the_floors():
    floor = {package: number for number, packages in FLOORS.items() for package in packages}
    leaks = sorted({f"{path.relative_to(REPO)} imports {target}: floor {floor[importer]} ({importer}) -> floor "
                    f"{floor[imported]} ({imported})"
                    for path, target, importer, imported in package_imports() if floor[imported] >= floor[importer]})
    assert not leaks, "imports up or across the floors:\n" + "\n".join(leaks)


def test_the_stage_glue_is_imported_only_by_the_command():
    # pipeline/ is run as stages (python -m rerankeval.pipeline); a library others import belongs on a lower floor.
    outside = sorted({f"{path.relative_to(REPO)} imports {target}" for path, target, importer, imported
                      in package_imports() if imported == "pipeline"
                      and (importer != "cli" or target not in PIPELINE_FOR_THE_CLI)})
    assert not outside, "stage glue imported from outside pipeline/:\n" + "\n".join(outside)


def test_no_import_cycles_anywhere_in_the_package():
    known = modules()
    graph = {name: sorted({target for target, _ in imported_modules(path) if target in known and target != name})
             for name, path in known.items()}
    # A package's __init__ importing its own submodules is how it re-exports them, not a cycle.
    for name in graph:
        graph[name] = [target for target in graph[name] if not target.startswith(name + ".")]
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for target in graph[node]:
            if state.get(target) == 1:
                cycle = trail[trail.index(target):] + [target] if target in trail else [node, target]
                raise AssertionError(f"import cycle: {' -> '.join(cycle)}")
            if target not in state:
                visit(target, trail + [target])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


def test_modules_are_small():
    long = {str(path.relative_to(REPO)): n for path in [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.[ch]")]
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_every_stage_runs_through_the_one_entry_point():
    # Stage code deps are derived from the entry module and each stage's module (rerankeval.pipeline.render); a stage
    # run some other way (a script of its own) would escape that.
    from rerankeval.pipeline.render import stage_modules
    from rerankeval.pipeline.table import STAGES

    for stage in STAGES:
        modules = stage_modules(stage)
        assert modules[0] == "rerankeval.pipeline.__main__"
        assert (PACKAGE / "pipeline" / f"{modules[1].rpartition('.')[2]}.py").is_file()


def test_heavy_libraries_are_imported_only_where_they_are_used():
    eager = sorted(f"{path.relative_to(PACKAGE)}: {target}" for path in PACKAGE.rglob("*.py")
                   for target, top_level in imported_modules(path) if top_level and target.split(".")[0] in HEAVY)
    assert not eager, f"heavy imports at module level: {eager}"
