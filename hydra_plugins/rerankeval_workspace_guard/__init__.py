"""Loaded by Hydra's plugin scan, which DVC runs in the project root before `dvc exp run` composes params.yaml:
refuses a run that would rewrite the params.yaml of another run reproducing in this workspace
(``rerankeval.workspace.concurrency``). Not a Hydra plugin itself; importing it is the check. A `dvc` outside this
project's virtualenv (no rerankeval to import) checks nothing."""

from pathlib import Path

try:
    from rerankeval.workspace.concurrency import refuse_concurrent_run
except ImportError:
    refuse_concurrent_run = None

if refuse_concurrent_run is not None:
    refuse_concurrent_run(Path(__file__).resolve().parents[2])
