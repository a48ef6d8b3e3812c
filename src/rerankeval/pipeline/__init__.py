"""The DVC stages as library functions: ``python -m rerankeval.pipeline <stage> [<system>]`` (``__main__``) runs
``run(params, paths[, system])`` of the stage's module here. ``params`` types params.yaml; ``paths`` is the
artefact paths (``rerankeval.workspace.paths``); ``deps`` keeps each stage's code deps in dvc.yaml equal to its
import closure. Domain logic lives in the packages the stages call, not here; nothing outside this package but the
``rerankeval`` command imports it (tests/test_architecture.py).
"""
