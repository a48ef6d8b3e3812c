"""Each DVC stage's code deps, derived from the import graph instead of kept by hand.

A stage's code is its entry script (``stages/<stage>.py`` in its ``cmd``) and the import closure of it within
``rerankeval``: module-level and in-function imports (found with ``ast``), the ``__init__`` of every package on the
way, and, for a package that imports its own submodules by name (``import_module(f".{name}", __name__)``), every
submodule a string of it names. A compiled module stands for the C sources beside it. The closure is listed in
dvc.yaml as whole folders where every file of the folder is in it, else file by file.

    python -m rerankeval.pipeline.deps           # exit 1 and print what differs from dvc.yaml
    python -m rerankeval.pipeline.deps --write   # rewrite the code lines of each stage's deps in dvc.yaml
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import yaml

from ..core.errors import ConfigError
from .paths import DVC_YAML

PACKAGE = "rerankeval"
SOURCE_ROOT = Path("src")
CODE_SUFFIXES = (".py", ".c", ".h")
_ENTRY_SCRIPT = re.compile(r"sh stages/python (stages/[\w.-]+\.py)")


def module_files(module: str, root: Path) -> list[Path]:
    """The files (relative to ``root``) that make ``module``, or none when it is not a module of the package."""
    base = SOURCE_ROOT / Path(*module.split("."))
    if (root / base / "__init__.py").is_file():
        return [base / "__init__.py"]
    if (root / base.with_suffix(".py")).is_file():
        return [base.with_suffix(".py")]
    if (root / base.with_suffix(".c")).is_file():  # a compiled kernel: its C sources are what DVC can hash
        return sorted(path.relative_to(root) for path in (root / base.parent).iterdir()
                      if path.suffix in (".c", ".h"))
    return []


def imported_names(path: Path, module: str) -> set[str]:
    """Every ``rerankeval`` name ``path`` (the file of ``module``) imports, anywhere in it, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    imports_by_name = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "import_module"
              and len(node.args) == 2 and getattr(node.args[1], "id", "") == "__name__"):
            imports_by_name = True
    if imports_by_name:
        names.update(f"{module}.{node.value}" for node in ast.walk(tree)
                     if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier())
    return {name for name in names if name == PACKAGE or name.startswith(PACKAGE + ".")}


def import_closure(entry: Path, root: Path = Path(".")) -> set[Path]:
    """The files (relative to ``root``) the script ``entry`` runs: itself and every package file it imports."""
    files = {entry}
    seen: set[str] = set()
    pending = sorted(imported_names(root / entry, "__main__"))
    while pending:
        name = pending.pop()
        parts = name.split(".")
        for depth in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b first
            module = ".".join(parts[:depth])
            if module in seen:
                continue
            seen.add(module)
            found = module_files(module, root)
            files.update(found)
            for path in found:
                if path.suffix == ".py":
                    pending.extend(imported_names(root / path, module) - seen)
    return files


def collapsed(files: set[Path], root: Path = Path(".")) -> list[str]:
    """``files`` as dvc.yaml lists them: a folder of the package where every code file in it is in ``files``."""
    listed = set(files)
    package_dir = SOURCE_ROOT / PACKAGE
    folders = sorted({folder for path in files for folder in path.parents if package_dir in folder.parents},
                     key=lambda folder: len(folder.parts))
    for folder in folders:
        if any(folder.is_relative_to(entry) for entry in listed if entry != folder and entry in folders):
            continue
        inside = {path.relative_to(root) for path in (root / folder).rglob("*")
                  if path.suffix in CODE_SUFFIXES and "__pycache__" not in path.parts}
        if inside <= files:
            listed = {entry for entry in listed if not entry.is_relative_to(folder)} | {folder}
    return sorted(str(entry) for entry in listed)


def stage_entries(dvc_yaml: Path) -> dict[str, Path]:
    """Each stage's entry script, read from its ``cmd``."""
    stages = (yaml.safe_load(dvc_yaml.read_text(encoding="utf-8")) or {}).get("stages", {})
    entries = {}
    for name, stage in stages.items():
        match = _ENTRY_SCRIPT.search(stage.get("do", stage).get("cmd", ""))
        if match is None:
            raise ConfigError(f"{dvc_yaml}: stage {name}: cmd does not run `sh stages/python stages/<stage>.py`; "
                              "rerankeval derives its code deps from that script.")
        entries[name] = Path(match.group(1))
    return entries


def is_code(dep: str) -> bool:
    return dep.startswith(("stages/", f"{SOURCE_ROOT}/"))


def derived_deps(dvc_yaml: Path = DVC_YAML, root: Path = Path(".")) -> dict[str, list[str]]:
    """Each stage's code deps as its import closure gives them."""
    return {name: collapsed(import_closure(entry, root), root) for name, entry in stage_entries(dvc_yaml).items()}


def declared_deps(dvc_yaml: Path = DVC_YAML) -> dict[str, list[str]]:
    """Each stage's code deps as dvc.yaml lists them."""
    stages = yaml.safe_load(dvc_yaml.read_text(encoding="utf-8"))["stages"]
    return {name: [dep for dep in stage.get("do", stage).get("deps", []) if is_code(str(dep))]
            for name, stage in stages.items()}


def rewritten(text: str, deps: dict[str, list[str]]) -> str:
    """dvc.yaml's text with each stage's code deps replaced by ``deps[stage]``; every other line kept as it is."""
    out: list[str] = []
    stage = None
    in_deps = False
    for line in text.splitlines():
        if match := re.fullmatch(r"  ([\w-]+):", line):
            stage, in_deps = match.group(1), False
        elif stage in deps and (match := re.fullmatch(r"(\s+)deps:", line)):
            in_deps = True
            out.append(line)
            out.extend(f"{match.group(1)}  - {dep}" for dep in deps[stage])
            continue
        elif in_deps and (item := re.fullmatch(r"\s+- (\S+)", line)):
            if is_code(item.group(1)):
                continue
        else:
            in_deps = False
        out.append(line)
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    derived, declared = derived_deps(), declared_deps()
    if "--write" in argv:
        DVC_YAML.write_text(rewritten(DVC_YAML.read_text(encoding="utf-8"), derived), encoding="utf-8")
        return 0
    stale = {name: (sorted(set(derived[name]) - set(declared[name])), sorted(set(declared[name]) - set(derived[name])))
             for name in derived if derived[name] != declared[name]}
    for name, (missing, extra) in stale.items():
        print(f"{name}: missing {missing}, not imported {extra}")
    if stale:
        print("Fix: python -m rerankeval.pipeline.deps --write")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
