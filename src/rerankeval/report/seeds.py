"""The report's "Training seeds" section: each seed's primary metric and Δ of a system trained with several seeds,
their spread, and the seed-aware CI beside the one over queries alone (read from compare.json's ``seeds``).
Renders only; nothing is computed here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..stats.schema import ComparisonCore
from ..stats.verdict import ci_label
from .markdown import fmt, table


def seeds_section(compare: ComparisonCore) -> str:
    """"" when no compared system was trained with several seeds."""
    record = compare.seeds
    if not record:
        return ""
    metric, level = record["metric"], ci_label(record["confidence"])
    parts = ["## Training seeds",
             f"Each system below was trained once per seed (train.seeds) and every seed's model reranked the "
             f"queries; its numbers elsewhere in this report are the mean over seeds per query (its run file, which "
             f"select and generate read, is the first seed's). {level} of the seed-mean Δ: {_method_line(record)}"]
    for system, entry in record["systems"].items():
        baselines = list(entry["against"])
        rows = [[seed, fmt(mean), *(fmt(entry["against"][b]["deltas"][k], signed=True) for b in baselines)]
                for k, (seed, mean) in enumerate(zip(entry["seeds"], entry["means"]))]
        parts.append(f"`{system}`: {metric} over seeds sd {fmt(entry['sd'])}, range {fmt(entry['range'])}.")
        parts.append(table(["seed", metric, *(f"Δ vs `{b}`" for b in baselines)], rows))
        parts.append(table(
            ["vs", "Δ (seed mean)", f"{level}, queries and seeds", f"{level}, queries only", "df",
             "σ² seeds", "σ² queries", "coverage (seed-aware / queries only)"],
            [[f"`{baseline}`", fmt(found["delta"], signed=True), _interval(found["ci"]),
              _interval(found["queries_only_ci"]), f"{found['df']:.1f}", f"{found['variance']['seeds']:.2e}",
              f"{found['variance']['queries']:.2e}",
              f"{found['coverage']['seed_aware']:.1%} / {found['coverage']['queries_only_t']:.1%}"]
             for baseline, found in entry["against"].items()]))
    return "\n\n".join(parts)


def _method_line(record: Mapping[str, Any]) -> str:
    return ("queries and seeds as crossed random effects (Δ + query + seed + noise), its variance (MS_queries + "
            "MS_seeds) / (queries x seeds) from the ANOVA mean squares, the t quantile at Satterthwaite's degrees of "
            "freedom (few seeds that disagree widen it); the verdict reads this interval. The queries-only interval "
            f"is the {record['queries_only_method']}. Coverage: of the seed-aware interval and of a t interval over "
            "queries alone, simulated at each comparison's own numbers of queries and seeds and estimated variance "
            "components (compare.json `seeds`); tests/test_seed_ci.py checks the nominal rate across designs.")


def _interval(bounds: list[float]) -> str:
    return f"{fmt(bounds[0], signed=True)} .. {fmt(bounds[1], signed=True)}"
