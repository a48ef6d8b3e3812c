"""The cross-machine guarantee of docs/data.md ("The same bytes on another machine") as values: how far
``results/demo.yaml`` may depart from the outputs of a ``make demo`` on another CPU and still hold.

- Every number of the first stage, the fusion fit and every fp32 system: exact. Their scores are stored rounded
  (``rerankeval.core.precision.SCORE_DECIMALS``) and every rank and metric is computed from the stored value.
- Every number of a system that runs an int8 model, or is composed of one, and of a sweep of such a system: within
  ``INT8_TOLERANCE`` (absolute), since PyTorch's quantized kernels follow the CPU
  (results/benchmarks/cross_machine.yaml).
- The simultaneous interval of a system whose release family holds such a system (``stats.family``: the family's
  critical value reads every member's replicates): within ``INT8_TOLERANCE`` too.
- Every verdict, and everything that is not a number: identical. A verdict that moved is a changed result.
- Timings: none. Results files hold no timing, since a machine's timing is no expected result.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from ..core.errors import ConfigError
from ..systems.registry import composed_of, parse_systems

INT8_TOLERANCE = 0.02
"""Largest move of an int8 system's number (mean, CI bound, delta) between CPUs: about twice the largest move of
its nDCG@10 measured between three CPUs (results/benchmarks/cross_machine.yaml); its CI bounds and deltas moved
about as much as its mean."""
QUANTIZED_DTYPE = "int8"


def cpu_dependent_systems(params_path: Path) -> set[str]:
    """The systems of ``params_path`` whose numbers follow the CPU: each int8 model, and every system composed of
    one at any depth."""
    with open(params_path, encoding="utf-8") as handle:
        systems = (yaml.safe_load(handle) or {}).get("systems") or {}
    try:
        configs = parse_systems(systems)
    except ConfigError as err:
        raise ConfigError(f"{params_path}: {err}") from None
    return {name for name in configs
            if any(getattr(configs[part], "dtype", None) == QUANTIZED_DTYPE for part in composed_of(name, configs))}


def departures(committed: Mapping[str, Any], generated: Mapping[str, Any], cpu_dependent: set[str]) -> list[str]:
    """Each value of a results file (``generated``: from this workspace's outputs) that departs from the committed
    one beyond the guarantee, as ``<field> committed X, here Y (<rule>)``; [] when every difference is within it."""
    before, after = dict(_leaves(committed)), dict(_leaves(generated))
    baseline = generated.get("baseline")
    found = []
    for field in [*before, *(field for field in after if field not in before)]:
        old, new = before.get(field, "(absent)"), after.get(field, "(absent)")
        if old == new:
            continue
        tolerance, rule = _rule(field, cpu_dependent, baseline, _family_members(generated), _swept(generated))
        if tolerance and _numbers(old, new) and abs(new - old) <= tolerance:
            continue
        found.append(f"{'.'.join(field)} committed {old}, here {new} ({rule})")
    return found


def _family_members(generated: Mapping[str, Any]) -> dict[str, set[str]]:
    """Per release family (results file's ``systems.<name>.family``), its systems."""
    members: dict[str, set[str]] = {}
    for name, entry in (generated.get("systems") or {}).items():
        if isinstance(entry, Mapping) and str(entry.get("family", "")).startswith("release"):
            members.setdefault(entry["family"], set()).add(name)
    return members


def _swept(generated: Mapping[str, Any]) -> dict[str, str]:
    """Per sweep (results file's ``sweeps.policies.<label>``), the system it sweeps."""
    policies = (generated.get("sweeps") or {}).get("policies") or {}
    return {label: policy["system"] for label, policy in policies.items()}


def _rule(field: tuple[str, ...], cpu_dependent: set[str], baseline: Any,
          families: Mapping[str, set[str]] = {}, swept: Mapping[str, str] = {}) -> tuple[float, str]:
    """The tolerance of one field of a results file, and the rule in words."""
    if field[-1] in ("verdict", "family"):
        return 0.0, "a verdict must be the same on every CPU"
    if field[:2] == ("sweeps", "policies") and len(field) > 3:
        # A setting's quality moves with its system; its delta and interval with the baseline's too.
        moved_by = [name for name in (swept.get(field[2]),
                                      baseline if any(part.startswith("delta") for part in field[3:]) else None)
                    if name in cpu_dependent]
        if moved_by:
            return INT8_TOLERANCE, f"{moved_by[0]} runs int8 kernels: within ±{INT8_TOLERANCE:g}"
    if field[0] == "systems" and len(field) > 2:
        # A delta against the baseline moves with either system; its simultaneous interval with any member of its
        # release family.
        family = next((found for found in families.values() if field[1] in found), set())
        members = sorted(family) if field[2] == "delta_ci" else []
        moved_by = [name for name in (field[1], baseline if field[2].startswith("delta") else None, *members)
                    if name in cpu_dependent]
        if moved_by:
            return INT8_TOLERANCE, f"{moved_by[0]} runs int8 kernels: within ±{INT8_TOLERANCE:g}"
    return 0.0, "fp32 and first-stage numbers, like every name and count, are exact on every CPU"


def _numbers(*values: Any) -> bool:
    return all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in values)


def _leaves(data: Any, field: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, value) of every scalar under ``data``; a list item's path ends in its index."""
    if isinstance(data, Mapping):
        for key, value in data.items():
            yield from _leaves(value, (*field, str(key)))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _leaves(value, (*field, str(index)))
    else:
        yield field, data
