"""One analysis: ``analyze`` turns the per-query measures, slices, settings and what the runs cost into one typed
``Analysis`` (the comparison, the decision and the costs), and compare.json, verdicts.json and costs.json are its dumps.

The compare stage and ``rerankeval compare`` both call ``analyze`` with the release rule; the CLI has only runs, so its
analysis holds the comparison and the decision without what the stage reads from the pipeline's other outputs
(``PipelineRecords``). The report, the details page, the site and the plots read it back with ``read_analysis`` and
only render it. ``rerankeval diff`` (each changed system's head run against its base run) and the sweep stage (each
setting against the baseline) ask ``analyze`` a question of ``Pairs`` instead: no release rule applies to them, so
their ``PairsAnalysis`` holds the pairs' inference (the same ``stats.inference`` as the release family's, one decision
family on the primary metric) and no verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from ..core.errors import ContractError
from . import domains
from .answers import answer_analysis
from .comparison import RunFacts, compare, metric_arrays, regression_details
from .config import CompareConfig, ReleaseRule
from .deltas import Comparison
from .inference import PairedInference, paired_inference
from .resampling import SliceIntervals
from .schema import Compare, ComparisonCore, Costs, DecisionCore, Verdicts
from .weighted import weighted_comparison


@dataclass(frozen=True)
class RankingEvidence:
    """What the worst regressions' details show: each system's ranking, the judgments and the query texts."""

    runs: Mapping[str, pd.DataFrame]
    qrels: pd.DataFrame
    query_texts: Mapping[str, str]


@dataclass(frozen=True)
class PipelineRecords:
    """What the compare stage found in the pipeline's other outputs and records beside the decision, each computed
    where its inputs live (the sanity checks in ``stats.sanity`` and ``stats.caveats``, costs in ``rerank.cost`` and
    ``policies.frontier``, variants in ``stats.variants``) and handed in as it is recorded."""

    split: str
    systems: Sequence[str]
    """The configured systems, in their order (the weighted table's)."""
    first_stage: Mapping[str, Any]
    generator_sanity: Mapping[str, Any]
    language_check: Mapping[str, Any]
    latency_source: Mapping[str, str]
    empty_results: Mapping[str, Mapping[str, int]]
    inactive_claims: Sequence[str]
    served_parity: Mapping[str, Any]
    variants: Mapping[str, Any]
    costs: Mapping[str, Any]
    """costs.json as ``pipeline.compare.cost_analysis`` computes it (``stats.schema.Costs``)."""
    rankings: RankingEvidence
    invalid_outputs: Mapping[str, Any] = field(default_factory=dict)
    """Per LLM reranker: its invalid outputs in total and per query with a CI (``stats.guardrails``)."""
    weights: pd.Series | None = None
    """Traffic weights by query id (``data.traffic``): weighted means beside the macro average."""


class Analysis(BaseModel):
    """The analysis: what the comparison found (compare.json), what it decided (verdicts.json) and what quality costs
    (costs.json). From the compare stage, ``Compare`` and ``Verdicts`` with ``costs``; from ``rerankeval compare``,
    the cores they extend and no costs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    compare: Compare | ComparisonCore
    verdicts: Verdicts | DecisionCore
    costs: Costs | None = None

    def files(self) -> dict[str, dict[str, Any]]:
        """Each file's JSON (``<name>.json``): the models' dumps, only the fields the analysis set."""
        found = {"compare": self.compare, "verdicts": self.verdicts, "costs": self.costs}
        return {name: model.model_dump(mode="json", exclude_unset=True) for name, model in found.items()
                if model is not None}


@dataclass(frozen=True)
class Pairs:
    """A question without a release rule: is each pair's difference real? ``pairs``: (challenger, baseline) systems
    of the per-query measures. On ``primary_metric`` every pair is a member of one decision family named ``family``
    (simultaneous intervals and adjusted p by the release family's procedure, ``stats.family``); on the other
    ``metrics`` each pair is descriptive."""

    pairs: Sequence[tuple[str, str]]
    metrics: Sequence[str]
    primary_metric: str
    family: str


@dataclass(frozen=True, eq=False)
class PairsAnalysis:
    """What ``analyze`` answers to ``Pairs``: the members ``paired`` (each pair on each metric, pairs first, in the
    question's order; rows: the queries, sorted by id), their ``inference`` in that order, and per slice column the
    decision family's slice intervals (``domains.family_slices``; members in the order of ``inference.decided``)."""

    paired: domains.PairedFamily
    inference: PairedInference
    slices: Mapping[str, SliceIntervals]


NO_FACTS = RunFacts()
"""The default: nothing known besides the per-query measures. A question of ``Pairs`` is answered on them alone."""


def analyze(per_query: pd.DataFrame, slices: pd.DataFrame, settings: CompareConfig, rule: ReleaseRule | Pairs,
            facts: RunFacts = NO_FACTS, per_query_seeds: pd.DataFrame | None = None,
            records: PipelineRecords | None = None) -> Analysis | PairsAnalysis:
    """The comparison and the decision (``stats.comparison.compare``: every pair over one set of resamples, the
    release family's simultaneous intervals, the verdicts with their simulated error rates and power); with
    ``records`` (the stage's; the CLI has only runs), the answers beside the ranking, the pipeline's checks, the
    variants (a compared pair's Δ is its comparison's), the weighted means and the costs. A field the models do not
    declare, or one of the wrong type, is refused here, before anything is written. Asked ``Pairs`` instead of a
    rule (a diff's, a sweep's), the pairs' inference alone (``PairsAnalysis``)."""
    if isinstance(rule, Pairs):
        if per_query_seeds is not None or records is not None or facts is not NO_FACTS:
            raise ValueError("a question of Pairs is answered without a decision: it takes no run facts, seeds or "
                             "pipeline records (pass a ReleaseRule for the release decision)")
        return _pairs_analysis(per_query, slices, settings, rule)
    result, decided = compare(per_query, slices, settings, rule, facts, per_query_seeds)
    if records is None:
        return _typed(result, decided, None, stage=False)
    answers = answer_analysis(per_query, settings.baseline)
    if answers is not None:
        result["answers"] = answers
    decided.update(latency_source=dict(records.latency_source), latency_untrusted=dict(facts.latency_untrusted),
                   generator_flag=records.generator_sanity["flag"], inactive_claims=list(records.inactive_claims),
                   empty_results=dict(records.empty_results), served_parity=dict(records.served_parity),
                   variants=_on_the_comparisons_intervals(records.variants, result))
    if records.invalid_outputs:
        decided["invalid_outputs"] = dict(records.invalid_outputs)
    rankings = records.rankings
    result.update(first_stage=dict(records.first_stage), generator_sanity=dict(records.generator_sanity),
                  language_check=dict(records.language_check), split=records.split,
                  worst_regressions=regression_details(result["comparisons"], rankings.runs, rankings.qrels,
                                                       rankings.query_texts, settings.baseline, rule.primary_metric))
    if records.weights is not None:
        result["weighted"] = weighted_comparison(
            per_query, records.weights, records.systems, list(dict.fromkeys([*settings.metrics, rule.primary_metric])),
            settings.baseline, **settings.resampling(with_method=False))
    return _typed(result, decided, dict(records.costs), stage=True)


def _pairs_analysis(per_query: pd.DataFrame, slices: pd.DataFrame, settings: CompareConfig,
                    question: Pairs) -> PairsAnalysis:
    """Every pair on every metric over one set of resamples (``stats.inference``); the primary metric's pairs one
    decision family, and its slices (``slices``: one row per query, index query_id, a column per label)."""
    systems = list(dict.fromkeys(system for pair in question.pairs for system in pair))
    metrics = list(dict.fromkeys([*question.metrics, question.primary_metric]))
    scores = metric_arrays(per_query, systems, metrics)
    members = [(challenger, baseline, metric) for challenger, baseline in question.pairs for metric in metrics]
    paired = domains.PairedFamily(
        tuple(Comparison(challenger, metric, baseline) for challenger, baseline, metric in members),
        np.column_stack([scores[baseline][metric] for _, baseline, metric in members]),
        np.column_stack([scores[challenger][metric] for challenger, _, metric in members]))
    inference = paired_inference(paired, [question.family if metric == question.primary_metric else None
                                          for _, _, metric in members], settings)
    query_ids = np.sort(per_query[per_query["system"] == systems[0]]["query_id"].to_numpy())
    labels, on_primary = slices.reindex(query_ids), paired.subset(inference.decided)
    found = {column: domains.family_slices(on_primary, labels[column].fillna("(none)").astype(str).to_numpy(),
                                           min_slice_size=settings.min_slice_size, **settings.resampling())
             for column in labels.columns}
    return PairsAnalysis(paired, inference, found)


def _on_the_comparisons_intervals(variants: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    """``variants`` with each precision variant's quality Δ against its twin taken from the comparison of that pair,
    where the analysis compares it (a claim against the twin): one interval for one pair on every page, the family's
    that the verdict reads, not a second per-pair bootstrap of the same deltas."""
    compared = {(row["challenger"], row["baseline"], row["metric"]): row for row in
                [*result["comparisons"], *chain.from_iterable((result.get("comparisons_by_baseline") or {}).values())]}
    precision = []
    for entry in variants.get("precision", []):
        row = compared.get((entry["variant"], entry["twin"], variants["metric"]))
        precision.append(entry if row is None else
                         {**entry, "delta": {"mean": row["delta"], "low": row["low"], "high": row["high"]}})
    return {**variants, "precision": precision} if "precision" in variants else dict(variants)


def _typed(result: dict[str, Any], decided: dict[str, Any], costs: dict[str, Any] | None, stage: bool) -> Analysis:
    models = (Compare, Verdicts) if stage else (ComparisonCore, DecisionCore)
    parts = [("compare", models[0], result, "compare.json"), ("verdicts", models[1], decided, "verdicts.json")]
    parts += [("costs", Costs, costs, "costs.json")] if costs is not None else []
    return _validated(parts, lambda model: f"stats.schema.{model.__name__} declares what the file holds: a new field "
                                           "is declared there first, and docs/schemas/ regenerated")


def read_analysis(compare_path: str | Path, verdicts_path: str | Path,
                  costs_path: str | Path | None = None) -> Analysis:
    """The compare stage's analysis, read back for the pages (without costs when ``costs_path`` is None): refused,
    naming the file and the first field that is not what this version's compare stage writes, when another version
    wrote it or it was edited by hand."""
    from ..core.io import read_json

    files = [("compare", Compare, compare_path), ("verdicts", Verdicts, verdicts_path)]
    files += [("costs", Costs, costs_path)] if costs_path is not None else []
    return _validated([(name, model, read_json(path), str(path)) for name, model, path in files],
                      lambda model: "not what this version's compare stage writes. Fix: re-run it: "
                                    "`dvc repro compare`")


def _validated(parts, why) -> Analysis:
    """``parts``: (field, model, data, where); the first field that is not what its model declares is a
    ``ContractError`` naming ``where``, the field and ``why(model)``."""
    from pydantic import ValidationError

    typed = {}
    for name, model, data, where in parts:
        try:
            typed[name] = model.model_validate(data)
        except ValidationError as err:
            first = err.errors()[0]
            field_name = ".".join(str(part) for part in first["loc"])
            raise ContractError(f"{where}: {field_name}: {first['msg']} ({why(model)})") from None
    return Analysis(**typed)
