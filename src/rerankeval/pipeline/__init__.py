"""The DVC stages as library functions: each stage script in ``stages/`` parses the paths ``dvc.yaml`` gives it
and calls one ``run`` here. ``params`` types params.yaml; ``paths`` reads the artefact paths from ``dvc.yaml``.
"""
