"""What every other subpackage stands on: errors, hashing, file contracts, typed configs and registries.

Nothing here imports from the rest of rerankeval.
"""
