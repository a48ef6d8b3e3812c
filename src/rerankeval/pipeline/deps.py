"""Each DVC stage's code deps, derived from the import graph instead of kept by hand, and its outputs, checked
against what ``PipelinePaths`` says the stage writes.

A stage's ``cmd`` is ``sh stages/python -m rerankeval.pipeline <stage> ...``; its code is the import closure, within
``rerankeval``, of the entry module (``pipeline.__main__``) and of the one module its ``STAGES`` table names for the
stage (read from the table's text: the entry imports that module by name, at run time, so no other stage's code
is in the closure). The closure follows module-level and in-function imports (found with ``ast``), the ``__init__``
of every package on the way, and, for a package that imports its own submodules by name
(``import_module(f".{name}", __name__)``), every submodule a string of it names. A compiled module stands for the C
sources beside it. The closure is listed in dvc.yaml as whole folders where every file of the folder is in it, else
file by file.

    python -m rerankeval.pipeline.deps           # exit 1 and print what differs from dvc.yaml
    python -m rerankeval.pipeline.deps --write   # rewrite the code lines of each stage's deps in dvc.yaml
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable
from pathlib import Path

import yaml

from ..core.errors import ConfigError
from ..workspace.paths import DVC_YAML, SYSTEM_PLACEHOLDER, PipelinePaths, pipeline_paths

PACKAGE = "rerankeval"
SOURCE_ROOT = Path("src")
CODE_SUFFIXES = (".py", ".c", ".h")
ENTRY_MODULE = "rerankeval.pipeline.__main__"
_STAGE_COMMAND = re.compile(r"sh stages/python -m rerankeval\.pipeline ([\w-]+)")
_PARAMS_VARIABLE = re.compile(r"\$\{(?!paths\.|key\})[^}]+\}")


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


def import_closure(modules: Iterable[str], root: Path = Path(".")) -> set[Path]:
    """The files (relative to ``root``) that running ``modules`` runs: theirs and every package file they import."""
    files: set[Path] = set()
    seen: set[str] = set()
    pending = sorted(modules)
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


def stage_table(root: Path = Path(".")) -> dict[str, str]:
    """The entry module's ``STAGES`` (stage -> module), read from its text."""
    path = root / SOURCE_ROOT / Path(*ENTRY_MODULE.split(".")).with_suffix(".py")
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and [getattr(target, "id", None) for target in node.targets] == ["STAGES"]:
            return ast.literal_eval(node.value)
    raise ConfigError(f"{path}: no `STAGES = {{stage: module}}` table; rerankeval derives the stages' code from it.")


def stage_commands(dvc_yaml: Path, root: Path = Path(".")) -> dict[str, str]:
    """The pipeline stage each dvc.yaml stage runs, read from its ``cmd``."""
    table = stage_table(root)
    commands = {}
    for name, stage in _stages(dvc_yaml).items():
        match = _STAGE_COMMAND.search(stage.get("do", stage).get("cmd", ""))
        if match is None or match.group(1) not in table:
            raise ConfigError(f"{dvc_yaml}: stage {name}: cmd does not run `sh stages/python -m rerankeval.pipeline "
                              f"<stage>` with one of the stages {', '.join(table)}; rerankeval derives its code deps "
                              "from that stage's module.")
        commands[name] = match.group(1)
    return commands


def stage_modules(dvc_yaml: Path, root: Path = Path(".")) -> dict[str, list[str]]:
    """The modules each dvc.yaml stage runs: the entry module and its stage's."""
    table = stage_table(root)
    return {name: [ENTRY_MODULE, f"{PACKAGE}.pipeline.{table[stage]}"]
            for name, stage in stage_commands(dvc_yaml, root).items()}


def _stages(dvc_yaml: Path) -> dict:
    return (yaml.safe_load(dvc_yaml.read_text(encoding="utf-8")) or {}).get("stages", {})


def is_code(dep: str) -> bool:
    return dep.startswith(("stages/", f"{SOURCE_ROOT}/"))


def derived_deps(dvc_yaml: Path = DVC_YAML, root: Path = Path(".")) -> dict[str, list[str]]:
    """Each stage's code deps as its import closure gives them."""
    return {name: collapsed(import_closure(modules, root), root)
            for name, modules in stage_modules(dvc_yaml, root).items()}


def declared_deps(dvc_yaml: Path = DVC_YAML) -> dict[str, list[str]]:
    """Each stage's code deps as dvc.yaml lists them."""
    return {name: [dep for dep in stage.get("do", stage).get("deps", []) if is_code(str(dep))]
            for name, stage in _stages(dvc_yaml).items()}


def declared_outputs(dvc_yaml: Path = DVC_YAML) -> dict[str, list[str]]:
    """Each stage's outs and metrics as dvc.yaml spells them, ``${paths.*}`` resolved and ``${key}`` (a per-system
    stage's system) as SYSTEM_PLACEHOLDER; an output named by a params value (``${train.out_dir}``) is left out."""
    values = {f"${{paths.{name}}}": value for name, value in pipeline_paths(dvc_yaml.read_text(encoding="utf-8"),
                                                                          str(dvc_yaml)).items()}
    values["${key}"] = SYSTEM_PLACEHOLDER
    outputs = {}
    for name, stage in _stages(dvc_yaml).items():
        stage = stage.get("do", stage)
        spelt = [next(iter(entry)) if isinstance(entry, dict) else entry
                 for entry in [*stage.get("outs", []), *stage.get("metrics", [])]]
        resolved = [re.sub(r"\$\{(paths\.\w+|key)\}", lambda found: values.get(found.group(0), found.group(0)), entry)
                    for entry in spelt]
        outputs[name] = sorted(str(Path(entry)) for entry in resolved if not _PARAMS_VARIABLE.search(entry))
    return outputs


def derived_outputs(dvc_yaml: Path = DVC_YAML, root: Path = Path(".")) -> dict[str, list[str]]:
    """What each stage writes as ``PipelinePaths.outputs`` says (per-system stages as patterns)."""
    paths = PipelinePaths.load(dvc_yaml)
    return {name: sorted(str(path) for path in paths.outputs(stage))
            for name, stage in stage_commands(dvc_yaml, root).items()}


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
    writes, spelt = derived_outputs(), declared_outputs()
    for name in spelt:
        if writes[name] != spelt[name]:
            print(f"{name}: dvc.yaml's outs and metrics are {spelt[name]}, the stage writes {writes[name]}. Fix: make "
                  "dvc.yaml spell what PipelinePaths.outputs (rerankeval/workspace/paths.py) says.")
    if "--write" in argv:
        DVC_YAML.write_text(rewritten(DVC_YAML.read_text(encoding="utf-8"), derived), encoding="utf-8")
        return 0 if writes == spelt else 1
    stale = {name: (sorted(set(derived[name]) - set(declared[name])), sorted(set(declared[name]) - set(derived[name])))
             for name in derived if derived[name] != declared[name]}
    for name, (missing, extra) in stale.items():
        print(f"{name}: missing {missing}, not imported {extra}")
    if stale:
        print("Fix: python -m rerankeval.pipeline.deps --write")
    return 1 if stale or writes != spelt else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
