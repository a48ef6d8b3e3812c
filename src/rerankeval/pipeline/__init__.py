"""The DVC stages as library functions: ``python -m rerankeval.pipeline <stage> [<system>]`` (``__main__``) runs
``run(params, paths[, system])`` of the stage's module here. ``params`` types params.yaml; ``paths`` reads the
artefact paths from dvc.yaml's ``vars`` and derives every file name from them; ``deps`` keeps each stage's code
deps in dvc.yaml equal to its import closure. Domain logic lives in the packages the stages call, not here.
"""
