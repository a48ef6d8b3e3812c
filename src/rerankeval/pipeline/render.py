"""dvc.yaml, rendered whole from the stage table (``pipeline.table``): the paths, and per stage its command, its deps,
the settings it reads (the code stage's params; every other stage's are in its code dep) and its outputs. Nothing in
dvc.yaml is written by hand; a test fails when the committed file differs from the rendering.

A stage's code is the import closure, within ``rerankeval``, of the entry module (``pipeline.__main__``), its own module
and the config modules of the settings it reads (``pipeline.params.BLOCKS``), plus the kinds its settings name. The
closure follows module-level and in-function imports (found with ``ast``), the ``__init__`` of every package on the
way, and, for a package that imports its own submodules by name (``import_module(f".{name}", __name__)``), every
submodule a string of it names. A compiled module stands for the C sources beside it. dvc.yaml names one code dep per
stage, its fingerprint (``pipeline.code``), which lists those files with their sha256.

    python -m rerankeval.pipeline.render           # exit 1 and say what differs from dvc.yaml
    python -m rerankeval.pipeline.render --write   # write dvc.yaml
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from .params import block_module
from .table import PATHS, STAGES, SYSTEM, Stage, code_file, dvc_params

PACKAGE = "rerankeval"
SOURCE_ROOT = Path("src")
ENTRY_MODULE = "rerankeval.pipeline.__main__"
DVC_YAML = Path("dvc.yaml")
LAUNCHER = "stages/python"
RUNS_BY_NAME = {"rerankeval.eval.engine": "rerankeval.eval.measures.families",
                "rerankeval.retrieval.sources": "rerankeval.retrieval.config"}
"""A module that runs code a declaration names as ``module:function`` strings (the engine runs the kernels the measure
families declare): its closure holds those modules, though it imports none of them."""


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
    return set(_imported_names(path.read_text(encoding="utf-8"), str(path), module))


@lru_cache(maxsize=None)
def _imported_names(source: str, filename: str, module: str) -> frozenset[str]:
    """``imported_names`` of one text, kept per distinct text: every stage's and every system's closure visits the same
    files. ``pipeline.code.fingerprints`` of the demo's params parsed about 150 files 3,306 times: 6.7 s, 0.8 s with
    this (timed in one process, Intel Xeon, 2 cores)."""
    tree = ast.parse(source, filename)
    package = module if Path(filename).name == "__init__.py" else module.rpartition(".")[0]
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
    return frozenset(name for name in names if name == PACKAGE or name.startswith(PACKAGE + "."))


def declared_targets(module: str, root: Path = Path(".")) -> list[str]:
    """The modules ``module`` names as ``module:function`` strings, relative to its package."""
    path = root / module_files(module, root)[0]
    package = module.rpartition(".")[0]
    return sorted({f"{package}.{node.value.partition(':')[0].lstrip('.')}"
                   for node in ast.walk(ast.parse(path.read_text("utf-8")))
                   if isinstance(node, ast.Constant) and isinstance(node.value, str)
                   and re.fullmatch(r"\.?\w+(\.\w+)*:\w+", node.value)})


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
            if module in RUNS_BY_NAME:
                pending.extend(set(declared_targets(RUNS_BY_NAME[module], root)) - seen)
    return files


def stage_modules(stage: Stage) -> list[str]:
    """The modules a stage runs: the entry module, its own and the config modules of its reads."""
    configs = {block_module(key) for key in stage.reads} - {None}
    return [ENTRY_MODULE, stage.module, *sorted(configs)]


RENDERED_HERE = (SOURCE_ROOT / PACKAGE / "pipeline" / "table.py",)
"""Code whose whole effect on a stage is what dvc.yaml renders for it (its params, deps, outs and command; a test holds
dvc.yaml to the rendering): not a code dep, so that editing one stage's entry re-runs that stage alone."""


def code_deps(stage: Stage, root: Path = Path(".")) -> list[str]:
    """Every file a stage's own code runs (its kinds aside): what the ``code`` stage fingerprints for it."""
    closure = import_closure(stage_modules(stage), root) - set(RENDERED_HERE)
    return [LAUNCHER, *sorted(str(path) for path in closure)]


_PATH_VARIABLE = re.compile(r"\$\{paths\.(\w+)\}")


def _dvc(text: str) -> str:
    """A table spelling as dvc.yaml's: the per-system stage's system is ``${key}``, and a path is written out. DVC
    interpolates every ``${...}`` on each load of dvc.yaml, and ``dvc repro`` loads it twice (once for its target,
    once for the graph): written out, a no-op ``dvc repro`` took 1.19-1.23 s against 1.29-1.36 s with ``${paths.*}``
    and ``dvc status`` 0.79-0.82 s against 0.83-0.89 s (5 runs each, Intel Xeon, 2 cores, the demo's 51 stages)."""
    return _PATH_VARIABLE.sub(lambda found: PATHS[found.group(1)], text.replace(SYSTEM, "${key}"))


def _output(output) -> str | dict:
    options = {key: value for key, value in (("cache", output.cache), ("persist", output.persist))
               if value != {"cache": True, "persist": False}[key]}
    return {_dvc(output.path): options} if options else _dvc(output.path)


def _yaml_list(items: Iterable, indent: str) -> list[str]:
    lines = []
    for item in items:
        if isinstance(item, dict):
            (path, options), = item.items()
            lines.append(f"{indent}- {path}:")
            lines += [f"{indent}    {key}: {str(value).lower()}" for key, value in options.items()]
        else:
            lines.append(f"{indent}- {item}")
    return lines


def _comment(text: str, indent: str, width: int = 118) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(indent) + 2 + len(line) + 1 + len(word) > width:
            lines.append(f"{indent}# {line}")
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + ([f"{indent}# {line}"] if line else [])


def render_stage(stage: Stage, root: Path = Path(".")) -> list[str]:
    body = "      " if stage.per_system else "    "
    argument = " ${key}" if stage.per_system else ""
    deps = [_dvc(path) for path in stage.inputs]
    if stage.name != "code":  # its code is in its fingerprint (pipeline.code), the code stage's in its inputs
        deps.insert(0, f"{PATHS['code']}/{_dvc(code_file(stage))}")
    item = "<system>" if stage.each == "systems" else "<name>"
    reads = ", ".join(stage.reads).replace(SYSTEM, item)
    settings = "" if dvc_params(stage) else f" Settings (in its code dep): {reads}."
    lines = [*_comment(stage.about + settings, "  "), f"  {stage.name}:"]
    if stage.per_system:
        lines += [f"    foreach: ${{{stage.each}}}", "    do:"]
    lines.append(f"{body}cmd: sh {LAUNCHER} -m rerankeval.pipeline {stage.name}{argument}")
    lines += [f"{body}deps:", *_yaml_list(deps, body + "  ")]
    if dvc_params(stage):  # every other stage's settings are in its code dep (pipeline.code)
        lines += [f"{body}params:", *_yaml_list((_dvc(key) for key in dvc_params(stage)), body + "  ")]
    outs = [_output(output) for output in stage.outputs if not output.metric]
    metrics = [_output(output) for output in stage.outputs if output.metric]
    for name, entries in (("outs", outs), ("metrics", metrics)):
        if entries:
            lines += [f"{body}{name}:", *_yaml_list(entries, body + "  ")]
    return lines


def render(root: Path = Path(".")) -> str:
    lines = ["# Rendered from the stage table (src/rerankeval/pipeline/table.py) by "
             "`python -m rerankeval.pipeline.render",
             "# --write`: edit the table, not this file (tests/test_stage_table.py fails when they differ).",
             "vars:", "  - paths:", *(f"      {name}: {path}" for name, path in PATHS.items()), "", "stages:"]
    for stage in STAGES:
        lines += [*render_stage(stage, root), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--write" in argv:
        DVC_YAML.write_text(text, encoding="utf-8")
        return 0
    if DVC_YAML.read_text(encoding="utf-8") != text:
        print(f"{DVC_YAML} differs from the stage table's rendering. Fix: python -m rerankeval.pipeline.render --write")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
