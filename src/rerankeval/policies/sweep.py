"""Policy sweeps in one pass over stored scores: every setting of one parameter of a configured system, each a
complete run with its latency table, the components scored once.

A sweep varies ``depth`` of any system, or any setting of a composite (a blend's ``weight``, a routed system's rule
threshold such as ``rules.0.when.margin.at_least``, a cascade's ``second_depth``). Components are built once per
process and memoised (``systems.composite.components``): each (query, candidate list) is scored once, every
setting reuses it, and pair scorers read what their own rerank stage already put in the pair-score cache. A sweep
therefore makes no model call when the cache holds its pairs, and says how many pairs were scored, read from the
cache and reused (``PairCounts``). Settings that change a model's own scores (``max_length``, ``dtype``...) are not
a sweep over stored scores and are refused: run them as experiments (``dvc exp run --queue``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..core.errors import ConfigError
from ..rerank.driver import rerank, settings_of
from ..systems.base import Query
from ..systems.registry import SYSTEM_KINDS, BuildContext, build_system, parse_system_config
from ..systems.composite.components import component
from ..systems.pair_counts import PairCounts, pair_counts
from .config import SweepConfig


@dataclass
class SettingRun:
    value: Any
    run: pd.DataFrame
    latency: pd.DataFrame
    pairs: PairCounts
    """The pairs this setting's run needed from a model (a fit when the system is built not included)."""


@dataclass
class PolicyRuns:
    sweep: SweepConfig
    settings: list[SettingRun]
    pairs: PairCounts

    @property
    def label(self) -> str:
        return self.sweep.label or f"{self.sweep.system}: {self.sweep.parameter}"


def override(mapping: Mapping[str, Any], parameter: str, value: Any, where: str) -> dict[str, Any]:
    """A copy of ``mapping`` with the dotted ``parameter`` (list items by index) set to ``value``."""
    updated = copy.deepcopy(dict(mapping))
    node: Any = updated
    keys = parameter.split(".")
    for depth, key in enumerate(keys):
        last = depth == len(keys) - 1
        if isinstance(node, list) and key.isdigit() and int(key) < len(node):
            key = int(key)
        elif not isinstance(node, dict) or (key not in node and not last):
            raise ConfigError(f"{where}: {parameter!r} is not a setting of this system ({'.'.join(keys[:depth + 1])} "
                              "not found).")
        if last:
            node[key] = value
        else:
            if node[key] is None:
                node[key] = {}
            node = node[key]
    return updated


def setting_value(mapping: Mapping[str, Any], parameter: str) -> Any:
    """The value of the dotted ``parameter`` (list items by index) in ``mapping``; None where it is not set."""
    node: Any = mapping
    for key in parameter.split("."):
        if isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        elif isinstance(node, Mapping) and key in node:
            node = node[key]
        else:
            return None
    return node


def run_policy(sweep: SweepConfig, candidates: pd.DataFrame, queries: Mapping[str, Query], context: BuildContext,
               where: str) -> PolicyRuns:
    """Every setting of ``sweep`` over ``candidates``: runs, latency tables and the pairs it needed."""
    if sweep.system not in context.systems:
        raise ConfigError(f"{where}.system: no system {sweep.system!r} under `systems` "
                          f"(configured: {', '.join(context.systems)}).")
    config = context.systems[sweep.system]
    mapping = config.model_dump(mode="json", exclude_unset=True)  # the settings as written, to vary one of them
    composite = SYSTEM_KINDS.get(config.kind).traits.composite
    if not composite and sweep.parameter != "depth":
        raise ConfigError(f"{where}.parameter: {sweep.parameter!r} of a {config.kind} system changes the scores its "
                          "model computes, so it is not a sweep over stored scores. Sweep `depth`, or a setting of a "
                          "blend, routed or cascade system; run other settings as experiments (dvc exp run --queue).")
    before = pair_counts(context)
    settings = []
    for number, value in enumerate(sweep.values):
        varied = override(mapping, sweep.parameter, value, f"{where}.values[{number}]")
        try:
            setting = parse_system_config(sweep.system, varied)
        except ConfigError as err:
            raise ConfigError(f"{where}.values[{number}] = {value!r}: {err}") from None
        system = build_system(sweep.system, varied, context) if composite else \
            component(context, sweep.system, where)
        started = pair_counts(context)
        run, latency = rerank(candidates, queries, system,
                              settings_of(setting, context.stale, f"{where}.values[{number}]"))
        settings.append(SettingRun(value, run, latency, pair_counts(context) - started))
    return PolicyRuns(sweep, settings, pair_counts(context) - before)
