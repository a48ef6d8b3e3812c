"""One pipeline run at a time in a workspace: `dvc exp run -S ...` refused while another run reproduces stages there,
before it rewrites params.yaml.

`dvc exp run -S` composes params.yaml from conf/ (Hydra) and writes it into the workspace, and only then waits for
DVC's locks. A second run started while the first is reproducing rewrites the first's params.yaml under it: the
second then fails on the busy outputs, and the first fails after its whole run ("'NoneType' object is not
subscriptable") with the second's settings on disk. DVC loads Hydra's plugins from the project root before it
composes (``hydra_plugins/rerankeval_workspace_guard``), so the check runs there, in the composing `dvc` process: it
looks for another `dvc` process of this user whose working folder is this workspace and which reproduces stages in it
(``dvc repro``, ``dvc exp run`` without ``--queue`` / ``--run-all`` / ``--temp``), and refuses by raising
``WorkspaceBusy``, naming it. Queued experiments run in temporary copies and are not in the way; queueing while a
run is reproducing in the workspace is refused too, since queueing writes the same params.yaml. Linux (``/proc``);
elsewhere nothing is checked.

DVC stashes the workspace's tracked files and restores them before it composes, so before this check runs:
params.yaml is the committed one for that moment. A stage of the running pipeline that read it then is caught by the
stage entry point (``pipeline.__main__``: params.yaml's digest at the stage's start and end differ) and fails,
saying why; DVC records none of its outputs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import RerankevalError

OUTSIDE_THE_WORKSPACE = ("--queue", "--run-all", "--temp")
"""`dvc exp run` flags whose run reproduces no stage in the workspace itself."""


class WorkspaceBusy(RerankevalError):
    """Another DVC run reproduces stages in this workspace."""


def dvc_words(argv: Sequence[str]) -> list[str] | None:
    """The words after ``dvc`` of a `dvc` command line (its script first, or the Python running it first), or None
    for another program."""
    for at, word in enumerate(argv[:2]):
        if Path(word).name == "dvc":
            return list(argv[at + 1:])
    return None


def _command(words: list[str]) -> list[str]:
    """The command of `dvc` words, global options (``-q``, ``-v``) left out: ``["exp", "run", ...]``."""
    return [word for word in words if not word.startswith("-")]


def reproduces_here(argv: Sequence[str]) -> bool:
    """Whether a command line is a `dvc` run that reproduces stages in its working folder."""
    words = dvc_words(argv)
    if words is None:
        return False
    if _command(words)[:1] == ["repro"]:
        return True
    return _command(words)[:2] == ["exp", "run"] and not set(OUTSIDE_THE_WORKSPACE) & set(words)


def composing_experiment(argv: Sequence[str]) -> bool:
    """Whether this process is a `dvc exp run` (any of its forms: each composes params.yaml in the workspace)."""
    words = dvc_words(argv)
    return words is not None and _command(words)[:2] == ["exp", "run"]


def dvc_root(folder: Path) -> Path:
    """The DVC project ``folder`` is in (the nearest folder up holding ``.dvc``), as DVC finds it from a subfolder;
    ``folder`` itself outside any."""
    folder = folder.resolve()
    return next((parent for parent in (folder, *folder.parents) if (parent / ".dvc").is_dir()), folder)


def other_runs(workspace: Path, proc: Path = Path("/proc")) -> list[tuple[int, str]]:
    """(pid, command line) of the other processes of this user reproducing stages in ``workspace``."""
    found = []
    if not proc.is_dir():
        return found
    me, root = os.getpid(), dvc_root(workspace)
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            argv = [part.decode(errors="replace") for part in (entry / "cmdline").read_bytes().split(b"\0") if part]
            if not reproduces_here(argv) or dvc_root(Path(os.readlink(entry / "cwd"))) != root:
                continue
        except OSError:  # gone, or another user's
            continue
        found.append((int(entry.name), " ".join(argv)))
    return sorted(found)


def refuse_concurrent_run(workspace: Path, argv: Sequence[str] | None = None) -> None:
    """In a `dvc exp run` about to compose params.yaml (``argv``: this process's command line unless given):
    ``WorkspaceBusy`` when another run reproduces in ``workspace``; anywhere else (tests, ``rerankeval``), nothing."""
    if not composing_experiment(sys.argv if argv is None else argv):
        return
    busy = other_runs(workspace)
    if busy:
        running = "; ".join(f"PID {pid}: {command}" for pid, command in busy)
        raise WorkspaceBusy(
            f"{dvc_root(workspace)}: another DVC run reproduces stages in this workspace ({running}). This one "
            "would rewrite its params.yaml under it, so it stops before composing params.yaml (DVC has stashed and "
            "restored the tracked files first; a stage of the running pipeline that read params.yaml meanwhile "
            "fails, saying so). Fix: wait for it to finish, or queue this "
            "experiment once it has (`dvc exp run --queue -S ...`, then `dvc exp run --run-all`: queued runs work "
            "in temporary copies).")
