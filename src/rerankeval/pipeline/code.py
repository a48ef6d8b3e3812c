"""Stage `code`: the fingerprint of the code each stage runs and of the settings it reads, one file per stage (per
system for a per-system stage) in ``paths.code``, that stage's one code and settings dep.

A stage runs its static import closure (``pipeline.render.code_deps``) and the kinds its settings name (system kinds,
executors, the generator), imported by name through their entry points, which no static closure holds. DVC cannot give
each system of a ``foreach`` its own list of files, so this stage writes, per stage, the sha256 of every file of both
(for a system: its kind, its executor and every component's, at any depth).

Each stage (each instance of a per-system stage) also finds here the settings it declares (``settings``: for a system
it builds, its components' too); the entry point types them from params.yaml and refuses to run when they differ from
these, its DVC dep (``pipeline.params.load_recorded_params``). This stage declares them all as its DVC params, so DVC
parses params.yaml for one stage, not once per stage, and dvc.lock holds each value once. That parsing, and dvc.lock's
copies, were most of what a no-op ``dvc status`` cost. This stage re-runs on any code or settings edit (it only hashes
files and copies values); a file's bytes change, and so its stage re-runs, only when code it runs or a setting it
reads changed. A ``dvc status`` after an edit shows this stage alone: ``dvc repro`` then re-runs the stages whose code
or settings moved.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib.metadata import entry_points
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from ..core.hashing import sha256_file
from ..core.io import write_text
from .params import Params, stage_keys
from ..workspace.paths import PipelinePaths
from .render import PACKAGE, code_deps, import_closure
from ..systems.registry import composed_of
from .system_configs import system_configs
from .table import STAGES, Stage, code_file

GROUPS = {"system": "rerankeval.systems", "executor": "rerankeval.executors", "generator": "rerankeval.generators"}


def kind_module(group: str, name: str) -> str | None:
    """The module the entry point of ``name`` in ``group`` names (None: not declared; the stage that builds it says
    so)."""
    return _entry_modules(GROUPS[group]).get(name)


@lru_cache(maxsize=None)
def _entry_modules(group: str) -> dict[str, str]:
    """A group's entry points, read once per process (each read scans every installed distribution's metadata)."""
    return {point.name: point.module for point in entry_points(group=group)}


def code_files(modules: Iterable[str]) -> dict[str, str]:
    """sha256 of every file the modules run: this package's import closure, a plugin module's own file."""
    files: dict[str, str] = {}
    for module in sorted(set(modules)):
        if module == PACKAGE or module.startswith(PACKAGE + "."):
            files.update({str(path): sha256_file(path) for path in import_closure([module])})
        elif (spec := find_spec(module)) is not None and spec.origin:  # keyed by name: the same on every machine
            files[module] = sha256_file(spec.origin)
    return dict(sorted(files.items()))


def system_fingerprint(name: str, configs: Mapping[str, Any]) -> dict:
    """What building system ``name`` runs: the kinds and executors of it and of its components, at any depth."""
    members = sorted(composed_of(name, configs))
    modules = [kind_module("system", configs[member].kind) for member in members]
    executors = {getattr(configs[member], "executor", None) for member in members} - {None}
    modules += [kind_module("executor", executor) for executor in sorted(executors)]
    return {"kinds": {member: configs[member].kind for member in members},
            "code": code_files(module for module in modules if module)}


def instances(params: Params, stage: Stage) -> list[str]:
    """The systems (or items of ``stage.each``) DVC runs a per-system stage for."""
    block, _, field = stage.each.partition(".")
    value = getattr(params, block)
    return list(getattr(value, field) if field else value)


def stage_settings(params: Params, stage: Stage, item: str | None, configs: Mapping[str, Any]) -> dict:
    """params.yaml's values of the settings ``stage`` declares (a per-system stage's instance for ``item``); a stage
    that builds its system also reads the settings of the systems it is composed of, at any depth."""
    keys: list[tuple[str, ...]] = []
    for key in stage_keys(stage.name, item):
        if key == ("systems", item) and stage.kinds == "system":
            keys += [("systems", member) for member in sorted(composed_of(item, configs))]
        else:
            keys.append(key)
    return params.declared_values(keys)


def fingerprints(params: Params) -> dict[str, dict]:
    """Each stage's fingerprint, by its file name in ``paths.code``: the code it runs and ``settings``, the values of
    the settings it declares; a per-system stage's, one per system (or item) it runs for."""
    configs = system_configs(params)
    generator = params.rag.generator["kind"]  # a mapping: typed by its kind only where it is built
    generator_module = kind_module("generator", generator)
    found: dict[str, dict] = {}
    for stage in STAGES:
        if stage.name == "code":
            continue
        static = {path: sha256_file(path) for path in code_deps(stage) if Path(path).is_file()}
        kinds: dict = {}
        if stage.kinds == "systems":
            for name in configs:
                kinds.update(system_fingerprint(name, configs)["code"])
        elif stage.kinds == "generator":
            kinds = code_files([generator_module] if generator_module else [])
        shared: dict[str, Any] = {"code": dict(sorted({**static, **kinds}.items()))}
        if stage.kinds == "generator":
            shared["kinds"] = {"generator": generator}
        if not stage.per_system:
            found[code_file(stage)] = {**shared, "settings": stage_settings(params, stage, None, configs)}
            continue
        for item in instances(params, stage):
            fingerprint = dict(shared)
            if stage.kinds == "system":
                built = system_fingerprint(item, configs)
                fingerprint = {"kinds": built["kinds"], "code": dict(sorted({**static, **built["code"]}.items()))}
            found[code_file(stage, item)] = {**fingerprint, "settings": stage_settings(params, stage, item, configs)}
    return found


def run(params: Params, paths: PipelinePaths) -> None:
    paths.code.mkdir(parents=True, exist_ok=True)
    wanted = fingerprints(params)
    for stale in set(path.name for path in paths.code.iterdir()) - set(wanted):
        (paths.code / stale).unlink()
    for name, fingerprint in wanted.items():
        write_text(paths.code / name, json.dumps(fingerprint, indent=1, sort_keys=True, default=str) + "\n")
    print(f"code: {len(wanted)} fingerprints in {paths.code}")
