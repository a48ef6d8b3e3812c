"""The diff of two revisions' evaluate outputs: is the change between them real?

The per-query metrics of both revisions are paired by (system, query_id) and every system × metric delta gets a
paired CI, an adjusted p-value and win/tie/loss counts; then the slices whose delta on the primary metric moved. The
numbers are ``analyze``'s answer to ``Pairs`` (each changed system's head run against its base run): the primary
metric's deltas of the changed systems are one family, their intervals and adjusted p from one procedure
(``stats.family``, as the compare stage's release family), which alone decides what the PR regressed; the other
metrics are descriptive, Holm-adjusted among themselves. A system only in head is shown against head's baseline with
the comparison head's own compare stage made (its compare.json): one set of resamples per comparison, never a second
one here. Pure: the revisions are read by ``report.prdiff.load_revision`` and rendered by
``report.prdiff.markdown_comment``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .agreement import agreement_summary
from .analysis import Pairs, analyze
from .comparison import finite
from .config import CompareConfig
from .family import PROCEDURE
from .schema import RevisionDiff


@dataclass(frozen=True)
class Revision:
    """What the pipeline left at one revision: per-query metrics, query slices, data provenance and params."""

    label: str
    per_query: pd.DataFrame  # one row per (system, query_id), one column per metric
    slices: pd.DataFrame  # index query_id, one column per slice label
    snapshot: Mapping[str, str]  # content sha256 of corpus, queries and qrels the metrics were computed from
    params: Mapping[str, Any]
    compare: Mapping[str, Any] | None = None  # the revision's compare.json, when it has one
    pins: Mapping[str, Mapping[str, Any]] = None  # type: ignore[assignment]
    """Per LLM reranker, what decides its scores as its run recorded it (``systems.llm.pins``); None: not read."""
    runs: Mapping[str, pd.DataFrame] = None  # type: ignore[assignment]
    """Per system its run (query_id, doc_id, rank, score) where the revision's outputs hold it; None: not read."""

    def __post_init__(self) -> None:
        for name in ("pins", "runs"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, {})


PINS = ("model", "served_models", "backends", "system_fingerprints", "template", "template_sha256", "decoding",
        "window", "top_logprobs", "max_passage_words", "yes_words", "no_words", "grades")
"""The pins of an LLM reranker's run that make two runs different systems when they differ: what the model is, what
it is asked (the template, each passage's length) and how its answer is read (the labels). Not the endpoint's URL:
the same model moved to another host is the same system, and the served model and backend say if it is not."""
SAID_BY_THE_SERVER = ("served_models", "backends", "system_fingerprints")
"""Pins a server may leave unsaid, and a run made before they were recorded lacks: compared only where both runs
have them."""


def pin_changes(base: Revision, head: Revision, systems: Sequence[str]) -> list[str]:
    """A warning per system whose pins differ between the revisions: its two runs are not the same system."""
    warnings = []
    for system in systems:
        before, after = base.pins.get(system), head.pins.get(system)
        if before is None or after is None:
            continue
        changed = [f"{key}: {before.get(key)!r} -> {after.get(key)!r}" for key in PINS
                   if before.get(key) != after.get(key)
                   and not (key in SAID_BY_THE_SERVER and not (before.get(key) and after.get(key)))]
        if changed:
            warnings.append(f"`{system}`'s pins differ ({'; '.join(changed)}): base and head ran different systems "
                            "under one name, so its delta is the pins' change as much as the code's.")
    return warnings



def diff_revisions(base: Revision, head: Revision, settings: CompareConfig, primary_metric: str) -> RevisionDiff:
    """Every system in both revisions, paired query by query (``markdown_comment`` renders it).

    Systems whose per-query values are identical are listed as unchanged and left out of the family: there is no
    hypothesis to test, and counting them would only weaken the multiplicity correction of the others.
    """
    metrics = list(dict.fromkeys([*settings.metrics, primary_metric]))
    for revision in (base, head):
        missing = [metric for metric in metrics if metric not in revision.per_query.columns]
        if missing:
            raise ValueError(f"revision {revision.label}: per-query metrics have no column {missing}; "
                             "pass --metric with evaluated measures")
    head_systems = list(dict.fromkeys(head.per_query["system"]))
    base_systems = set(base.per_query["system"])
    systems = [system for system in head_systems if system in base_systems]
    if not systems:
        raise ValueError(f"no system is evaluated in both {base.label} and {head.label}")

    base_queries, head_queries = _query_ids(base, systems), _query_ids(head, systems)
    query_ids = sorted(base_queries & head_queries)
    if len(query_ids) < 2:
        raise ValueError(f"{base.label} and {head.label} share {len(query_ids)} evaluated queries; need at least 2")
    warnings = []
    if base_queries != head_queries:
        warnings.append(f"The query sets differ ({len(base_queries - head_queries)} only in base, "
                        f"{len(head_queries - base_queries)} only in head); the diff pairs the {len(query_ids)} "
                        "queries in both.")
    changed_tables = sorted(name for name in set(base.snapshot) | set(head.snapshot)
                            if base.snapshot.get(name) != head.snapshot.get(name))
    if changed_tables:
        warnings.append(f"The snapshot changed ({', '.join(changed_tables)}): judgments or queries differ, so the "
                        "deltas mix the system change with the data change.")

    warnings += pin_changes(base, head, systems)
    base_scores = _scores(base, systems, query_ids, metrics)
    head_scores = _scores(head, systems, query_ids, metrics)
    changed = [s for s in systems if not np.array_equal(base_scores[s], head_scores[s], equal_nan=True)]
    result = {
        "base": base.label, "head": head.label,
        "queries": {"base": len(base_queries), "head": len(head_queries), "paired": len(query_ids)},
        "primary_metric": primary_metric,
        "method": {"ci": settings.ci_method, "confidence": settings.confidence, "samples": settings.samples,
                   "seed": settings.seed, "permutations": settings.permutations, "correction": settings.correction,
                   "tie_tolerance": settings.tie_tolerance, "min_slice_size": settings.min_slice_size,
                   "procedure": PROCEDURE},
        "params_changed": params_changes(base.params, head.params),
        "warnings": warnings,
        "systems": {"changed": changed, "unchanged": [s for s in systems if s not in changed],
                    "only_in_base": sorted(base_systems - set(systems)),
                    "only_in_head": [s for s in head_systems if s not in base_systems]},
        "slice_columns": list(head.slices.columns), "comparisons": [], "slices": [], "regressions": [],
        "new_systems": new_systems(head, [s for s in head_systems if s not in base_systems], metrics),
        "agreement": ranking_agreement(base, head, systems, query_ids, settings.resampling()),
    }
    if not changed:
        return RevisionDiff.model_validate(result)

    # Each changed system's head run against its base run, in one analysis (stats.analysis.Pairs): on the primary
    # metric the changed systems are one decision family, the other metrics descriptive; measures undefined on some
    # queries go by their domain (stats.domains).
    changed_family = f"changed systems on {primary_metric}"
    sides = {side: {system: f"{side}:{system}" for system in changed} for side in ("base", "head")}
    per_query = pd.concat([_named(revision, systems_named, query_ids, metrics) for revision, systems_named in
                           ((base, sides["base"]), (head, sides["head"]))], ignore_index=True)
    analysis = analyze(per_query, head.slices, settings, Pairs(
        [(sides["head"][system], sides["base"][system]) for system in changed], metrics, primary_metric,
        changed_family))
    paired, inference = analysis.paired, analysis.inference
    system_of = {name: system for system, name in sides["head"].items()}
    for j, item in enumerate(paired.comparisons):
        system, metric = system_of[item.challenger], item.metric
        result["comparisons"].append({
            "system": system, "metric": metric,
            "base": finite(np.nanmean(paired.base[:, j])), "head": finite(np.nanmean(paired.challenger[:, j])),
            "delta": finite(inference.shown.mean[j]), "low": finite(inference.shown.low[j]),
            "high": finite(inference.shown.high[j]),
            "family": changed_family if j in inference.decided else "descriptive",
            "p_adjusted": finite(inference.p_adjusted[j]), "p_randomisation": finite(inference.p_randomisation[j]),
            "improved": inference.summaries[j].improved, "tied": inference.summaries[j].tied,
            "regressed": inference.summaries[j].regressed,
        })
        if j in inference.decided and inference.shown.high[j] < 0:
            result["regressions"].append(system)

    for column, found in analysis.slices.items():
        for k, value in enumerate(found.values):
            for i, system in enumerate(changed):
                if found.low[k, i] > 0 or found.high[k, i] < 0:
                    result["slices"].append({
                        "system": system, "column": column, "value": str(value), "queries": int(found.sizes[k, i]),
                        "too_small": bool(found.too_small[k, i]), "delta": finite(found.mean[k, i]),
                        "low": finite(found.low[k, i]), "high": finite(found.high[k, i])})
    return RevisionDiff.model_validate(result)


def ranking_agreement(base: Revision, head: Revision, systems: Sequence[str], query_ids: Sequence,
                      boot: Mapping[str, Any]) -> dict[str, Any]:
    """How far each system's head ranking agrees with its base ranking on the paired queries (``stats.agreement``):
    a change can reorder documents without moving a metric (or move one by luck), and this shows how much moved.
    ``identical``: the systems whose two runs are the same rows; ``compared``: the others' summaries; ``missing``:
    those without a run on one side (outputs not read)."""
    found = {"identical": [], "compared": {}, "missing": []}
    wanted = set(query_ids)
    for system in systems:
        before, after = base.runs.get(system), head.runs.get(system)
        if before is None or after is None:
            found["missing"].append(system)
            continue
        before, after = (_ranked(run[run["query_id"].isin(wanted)]) for run in (before, after))
        if before.equals(after):
            found["identical"].append(system)
        else:
            found["compared"][system] = agreement_summary(before, after, boot)
    return found


def _ranked(run: pd.DataFrame) -> pd.DataFrame:
    return run[["query_id", "doc_id", "rank", "score"]].sort_values(["query_id", "rank"], kind="stable").reset_index(
        drop=True)


def new_systems(head: Revision, systems: Sequence[str], metrics: Sequence[str]) -> dict[str, Any]:
    """``systems`` (those only in head) against head's baseline, with the comparisons head's compare stage made;
    ``missing`` says why there are none (head has no compare.json, or it does not compare a system)."""
    if not systems:
        return {"baseline": None, "comparisons": [], "missing": None}
    if head.compare is None:
        return {"baseline": None, "comparisons": [],
                "missing": f"{head.label} has no compare.json: run `dvc repro compare` there to compare them"}
    found = [entry for entry in head.compare["comparisons"]
             if entry["challenger"] in systems and entry["metric"] in metrics]
    absent = [system for system in systems if not any(entry["challenger"] == system for entry in found)]
    return {"baseline": head.compare["baseline"], "comparisons": found,
            "missing": f"{head.label}'s compare.json does not compare {', '.join(absent)}" if absent else None}


def params_changes(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Params that differ, as dotted keys; a side lacks "base"/"head" when the key is absent there."""
    old, new = _flatten(base), _flatten(head)
    changes = []
    for key in sorted(set(old) | set(new)):
        if old.get(key, ...) != new.get(key, ...):
            changes.append({"key": key} | ({"base": old[key]} if key in old else {})
                           | ({"head": new[key]} if key in new else {}))
    return changes


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(value, Mapping) or not value:
        return {prefix: value}
    flat = {}
    for key, item in value.items():
        flat.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def _query_ids(revision: Revision, systems: Sequence[str]) -> set:
    """Queries evaluated for every one of ``systems`` in this revision."""
    rows = revision.per_query[revision.per_query["system"].isin(systems)]
    return set.intersection(*(set(ids) for _, ids in rows.groupby("system")["query_id"]))


def _named(revision: Revision, names: Mapping[str, str], query_ids: Sequence, metrics: Sequence[str]) -> pd.DataFrame:
    """The revision's per-query ``metrics`` of the systems ``names`` keys, on ``query_ids``, each system renamed to
    its value (base and head of one system are two systems of the analysis)."""
    rows = revision.per_query[revision.per_query["system"].isin(list(names))
                              & revision.per_query["query_id"].isin(list(query_ids))]
    return rows[["system", "query_id", *metrics]].assign(system=rows["system"].map(names))


def _scores(revision: Revision, systems: Sequence[str], query_ids: Sequence, metrics: Sequence[str]) -> dict:
    """``scores[system]``: (queries × metrics) float64 matrix, rows in ``query_ids`` order."""
    frame = revision.per_query.set_index(["system", "query_id"])
    return {system: frame.loc[system].loc[list(query_ids), list(metrics)].to_numpy(dtype=np.float64)
            for system in systems}


