"""Stage `code`: the fingerprint of the kinds' code each consumer builds, one file per consumer in ``paths.code``.

A kind (system, executor, generator) is named by settings and imported by name through its entry point, so no
stage's static import closure holds it. DVC cannot give each system of a ``foreach`` its own list of files, so this
stage writes, for every stage the table marks ``kinds``, the sha256 of every file in the import closure of the kinds it
builds (for a system: its kind, its executor and every component's, at any depth) and the settings of the components it
reads; that stage depends on its file. The stage re-runs on any code edit (about a second); a file's bytes change, and
so its consumer re-runs, only when code it builds changed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from importlib.metadata import entry_points
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from ..core.hashing import sha256_file
from ..core.io import write_text
from .params import Params
from ..workspace.paths import PipelinePaths
from .render import PACKAGE, import_closure
from ..systems.registry import composed_of
from .system_configs import system_configs
from .table import STAGES, kinds_file

GROUPS = {"system": "rerankeval.systems", "executor": "rerankeval.executors", "generator": "rerankeval.generators"}


def kind_module(group: str, name: str) -> str | None:
    """The module the entry point of ``name`` in ``group`` names (None: not declared; the stage that builds it says
    so)."""
    return next((point.module for point in entry_points(group=GROUPS[group]) if point.name == name), None)


def code_files(modules: Iterable[str]) -> dict[str, str]:
    """sha256 of every file the modules run: this package's import closure, a plugin module's own file."""
    files: dict[str, str] = {}
    for module in sorted(set(modules)):
        if module == PACKAGE or module.startswith(PACKAGE + "."):
            files.update({str(path): sha256_file(path) for path in import_closure([module])})
        elif (spec := find_spec(module)) is not None and spec.origin:  # keyed by name: the same on every machine
            files[module] = sha256_file(spec.origin)
    return dict(sorted(files.items()))


def system_fingerprint(name: str, configs: Mapping[str, Any], systems: Mapping[str, Any]) -> dict:
    """What building system ``name`` runs and reads besides its own settings: its kinds' code, its components'
    settings."""
    members = sorted(composed_of(name, configs))
    modules = [kind_module("system", configs[member].kind) for member in members]
    executors = {getattr(configs[member], "executor", None) for member in members} - {None}
    modules += [kind_module("executor", executor) for executor in sorted(executors)]
    return {"kinds": {member: configs[member].kind for member in members},
            "components": {member: systems[member] for member in members if member != name},
            "code": code_files(module for module in modules if module)}


def fingerprints(params: Params) -> dict[str, dict]:
    """Each consumer's fingerprint, by its file name in ``paths.code``."""
    configs = system_configs(params)
    generator = params.rag.generator["kind"]  # a mapping: typed by its kind only where it is built
    generator_module = kind_module("generator", generator)
    found: dict[str, dict] = {}
    for stage in STAGES:
        if stage.kinds == "system":
            found.update({kinds_file(stage, name): system_fingerprint(name, configs, params.systems)
                          for name in configs})
        elif stage.kinds == "systems":
            merged = [system_fingerprint(name, configs, params.systems)["code"] for name in configs]
            found[kinds_file(stage)] = {"code": dict(sorted({k: v for code in merged for k, v in code.items()}.items()))}
        elif stage.kinds == "generator":
            found[kinds_file(stage)] = {"kinds": {"generator": generator},
                                        "code": code_files([generator_module] if generator_module else [])}
    return found


def run(params: Params, paths: PipelinePaths) -> None:
    paths.code.mkdir(parents=True, exist_ok=True)
    wanted = fingerprints(params)
    for stale in set(path.name for path in paths.code.iterdir()) - set(wanted):
        (paths.code / stale).unlink()
    for name, fingerprint in wanted.items():
        write_text(paths.code / name, json.dumps(fingerprint, indent=1, sort_keys=True) + "\n")
    print(f"code: {len(wanted)} fingerprints in {paths.code}")
