"""Every DVC stage's one entry point: ``sh stages/python -m rerankeval.pipeline <stage> [<system>]``.

The stages are the stage table's (``pipeline.table``); the artefact paths come from dvc.yaml's ``vars: paths``
(``PipelinePaths``), the settings from params.yaml, only those the stage declares and only as the code stage recorded
them in the stage's fingerprint (``pipeline.params``, ``pipeline.code``); the stage is
``run(params, paths[, system])`` of its module, imported by name when its stage runs: a stage's import closure, which
``pipeline.render`` lists as its DVC code deps, is this module's and its own module's, never another stage's. Bad input
is a message and exit code 2, never a traceback. Each run appends its stage's wall time to ``STAGE_TIMES`` (a log
beside the outputs, not in them: a timing in an output would change its hash on every run);
``benchmarks/bench_stage_times.py`` sums the latest of each stage.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from importlib import import_module
from pathlib import Path

from ..core.caches import refuse_caches, use_tenant
from ..core.errors import ConfigError, RerankevalError
from ..core.privacy import redact_logs
from ..workspace.paths import PipelinePaths
from .params import Params, configured_items, load_params, load_recorded_params, log_privacy
from .table import STAGES as TABLE
from .table import code_file

STAGES = {stage.name: stage for stage in TABLE}
PER_SYSTEM = tuple(stage.name for stage in TABLE if stage.per_system)
"""The stages DVC runs once per system (``foreach: ${systems}``) or per item of another mapping (``Stage.each``):
their second argument is the system or the item."""
USAGE = (f"python -m rerankeval.pipeline STAGE [SYSTEM]; stages: {', '.join(STAGES)} ("
         + "; ".join(f"{name} takes a system under `systems` in params.yaml" if STAGES[name].each == "systems"
                     else f"{name} takes a name under `{STAGES[name].each}`" for name in PER_SYSTEM) + ")")


STAGE_TIMES = Path("logs/stage_times.jsonl")
"""One JSON line per stage run: stage, seconds, exit code, when it finished (git-ignored)."""


def run_stage(name: str, run: Callable[[], None]) -> int:
    """``run()``; a ``RerankevalError`` is printed as ``<name>: error: ...`` and exit code 2. Its wall time is logged
    (``STAGE_TIMES``) whatever the outcome."""
    started, code = time.perf_counter(), 2
    try:
        run()
        code = 0
    except RerankevalError as err:
        print(f"{name}: error: {err}", file=sys.stderr)
    finally:
        log_stage_time(name, time.perf_counter() - started, code)
    return code


def log_stage_time(name: str, seconds: float, code: int) -> None:
    """Append one line to ``STAGE_TIMES`` (one short write: lines of stages run at once do not interleave); a log
    that cannot be written costs the stage nothing."""
    line = json.dumps({"stage": name, "seconds": round(seconds, 3), "exit": code,
                       "finished": datetime.now(timezone.utc).isoformat(timespec="seconds")}) + "\n"
    try:
        STAGE_TIMES.parent.mkdir(parents=True, exist_ok=True)
        with open(STAGE_TIMES, "a", encoding="utf-8") as handle:
            handle.write(line)
    except OSError:
        pass


def stage_arguments(argv: list[str]) -> tuple[str, list[str]]:
    """(stage, [system] or []) from the command line, or a ConfigError naming the stages."""
    if not argv or argv[0] not in STAGES:
        given = f"no stage {argv[0]!r}" if argv else "no stage given"
        raise ConfigError(f"{given}. Usage: {USAGE}.")
    stage, rest = argv[0], argv[1:]
    wanted = 1 if stage in PER_SYSTEM else 0
    if len(rest) != wanted:
        problem = "needs one system" if wanted else f"takes no system (got {' '.join(rest)})"
        raise ConfigError(f"stage {stage} {problem}. Usage: {USAGE}.")
    return stage, rest


PARAMS_FILE = Path("params.yaml")


def _params_digest() -> str | None:
    try:
        return hashlib.sha256(PARAMS_FILE.read_bytes()).hexdigest()
    except OSError:
        return None


def run(stage: str, system: list[str]) -> None:
    """The stage, refused when params.yaml changed while it ran: another `dvc exp run` in this workspace stashes and
    restores the tracked files before ``workspace.concurrency`` refuses it, and a stage that read params.yaml in
    between read settings that are not its run's (DVC then records none of its outputs)."""
    before = _params_digest()
    _run(stage, system)
    if _params_digest() != before:
        raise ConfigError(f"{PARAMS_FILE} changed while stage {stage} ran (another `dvc exp run` or an edit in this "
                          "workspace?), so its outputs may come from other settings than the ones DVC records. Fix: "
                          "let the other run finish, then run this one again.")


def recorded_params(stage: str, item: str | None, paths: PipelinePaths) -> Params:
    """The settings of ``stage`` (of per-system ``stage``'s instance for ``item``), typed from params.yaml and checked
    against what the code stage wrote for it (``pipeline.code``, ``pipeline.params.load_recorded_params``)."""
    spec = STAGES[stage]
    path = paths.code / (code_file(spec) if item is None else code_file(spec, item))
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))["settings"]
    except FileNotFoundError:
        since = "" if item is None else f" since {item!r} was added under `{spec.each}` in {PARAMS_FILE}"
        raise ConfigError(f"{path}: missing: the code stage has not run{since}. Fix: `dvc repro` (the code stage "
                          "runs first), or `dvc repro code`.") from None
    except KeyError:
        raise ConfigError(f"{path}: holds no settings (written by an older code stage). Fix: `dvc repro` (the code "
                          "stage runs first), or `dvc repro code`.") from None
    return load_recorded_params(recorded, stage, item, str(path))


def _run(stage: str, system: list[str]) -> None:
    redact_logs(log_privacy(PARAMS_FILE))  # the configured patterns too, now that they can be read
    if system and system[0] not in (configured := configured_items(STAGES[stage].each, PARAMS_FILE)):
        kind = "system " if STAGES[stage].each == "systems" else ""
        raise ConfigError(f"{PARAMS_FILE}: no {kind}{system[0]!r} under `{STAGES[stage].each}` (configured: "
                          f"{', '.join(configured)}). Usage: {USAGE}.")
    paths = PipelinePaths.load()
    # The code stage reads params.yaml as it is; every other stage the settings it recorded for it, re-checked.
    item = system[0] if system else None
    params = load_params(stage=stage) if stage == "code" else recorded_params(stage, item, paths)
    if {"privacy", "privacy.tenant"} & set(STAGES[stage].reads):
        use_tenant(params.privacy.tenant)
    else:
        refuse_caches(f"stage {stage} opened a cache but does not declare privacy.tenant in "
                      "rerankeval/pipeline/table.py (add it to `reads`): its entries could mix tenants")
    try:
        import_module(STAGES[stage].module).run(params, paths, *system)
    finally:  # the tenant and the refusal are this stage's, not the process's (a test runs several stages)
        use_tenant(None)


def main(argv: list[str]) -> int:
    try:
        stage, system = stage_arguments(argv)
    except ConfigError as err:
        print(f"pipeline: error: {err}", file=sys.stderr)
        return 2
    return run_stage("@".join([stage, *system]), lambda: run(stage, system))


if __name__ == "__main__":
    redact_logs()  # the process's stdout and stderr: personal data in a query or a passage never reaches a log
    sys.exit(main(sys.argv[1:]))
