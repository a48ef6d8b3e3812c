"""The house shows its architecture: no import cycles, small modules, one stage entry point, heavy libraries imported
late."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "rerankeval"
HEAVY = {"torch", "transformers", "sentence_transformers", "FlagEmbedding", "ray", "openai", "huggingface_hub",
         "bm25s", "matplotlib", "dvc", "safetensors"}
MAX_MODULE_LINES = 600


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
