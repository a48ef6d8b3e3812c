"""Several training seeds of one model: ``out_dir``/seed-<seed>/ (each a model folder with its model card) and
``out_dir``/seeds.json, written by the train stage for ``train.seeds`` of two or more (``TrainConfig.seed_dirs``).

A system whose ``model`` names such a folder stands for one model per seed. ``seeded_systems`` gives each seed's copy
of the systems' configs, every ``model`` naming the set replaced by that seed's folder, so a composite built on a
learned system (a blend, a cascade) reads the same seed's model. Nothing here knows a system kind: any config with a
``model`` key gets it, so a new learned kind needs no code of its own. The rerank stage builds each seed's system
(``pipeline.system_configs.seeded_configs``), the evaluate stage averages their measures over seeds per query
(``eval.seeds``) and the comparison's CI counts the seeds (``stats.seed_comparison``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from ..core.io import read_json, write_json
from ..models.resolve import SEED_SET


def write_seed_set(out_dir: str | Path, dirs: Mapping[int, str]) -> None:
    """Written last, once every seed's model is complete: a folder without it is no seed set."""
    write_json(Path(out_dir) / SEED_SET, {"seeds": list(dirs), "models": {str(seed): Path(folder).name
                                                                          for seed, folder in dirs.items()}})


def seed_models(model: str) -> dict[int, Path] | None:
    """Each seed's model folder when ``model`` is a seed set's folder, else None (one model, or not a local path)."""
    index = Path(model) / SEED_SET
    if not index.is_file():
        return None
    listed = read_json(index)
    return {int(seed): Path(model) / listed["models"][str(seed)] for seed in listed["seeds"]}


def seeded_systems(systems: Mapping[str, Mapping[str, Any]]) -> dict[int, dict[str, dict[str, Any]]] | None:
    """The systems' configs once per training seed (``model`` of a seed set replaced by the seed's folder), or None
    when no system's model is a seed set. Two seed sets must hold the same seeds: seed s of one is paired with seed s
    of the other."""
    sets = {name: found for name, config in systems.items()
            if isinstance(config.get("model"), str) and (found := seed_models(config["model"])) is not None}
    if not sets:
        return None
    seeds = {tuple(found) for found in sets.values()}
    if len(seeds) > 1:
        raise ConfigError(f"systems {sorted(sets)}: their models are seed sets of different seeds {sorted(seeds)}. "
                          "Fix: train them with the same train.seeds.")
    return {seed: {name: ({**config, "model": str(sets[name][seed])} if name in sets else dict(config))
                   for name, config in systems.items()}
            for seed in next(iter(seeds))}
