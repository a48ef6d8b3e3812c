"""compare.json and verdicts.json as types: the comparison and the decision the compare stage writes, checked against
these models before they are written, with JSON Schemas generated from them (``docs/schemas/``), so a field a page
reads cannot appear, vanish or change its type unseen.

    python -m rerankeval.stats.schema           # exit 1 and say when docs/schemas/ differs from the models
    python -m rerankeval.stats.schema --write   # write docs/schemas/{compare,verdicts}.schema.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..core.errors import ContractError

SCHEMA_FOLDER = Path("docs/schemas")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OperatingPoint(_Strict):
    """Shares of simulated trials at a true effect that end in each decision."""

    effect: float
    trials: int
    accept: float
    reject: float
    inconclusive: float


class Verdict(_Strict):
    """One (challenger, baseline) pair's decision, the reason that decided it, and what it rests on."""

    decision: Literal["ACCEPT", "REJECT", "INCONCLUSIVE"]
    decided_by: str
    metric: str
    delta: float | None
    ci: tuple[float | None, float | None]
    """The simultaneous interval of the pair's release family (``family``)."""
    confidence: float
    reasons: list[str]
    notes: list[str]
    family: str
    """``release vs <baseline>`` or ``alone: <pair>`` (a reference system)."""
    p_adjusted: float | None
    """From the same procedure as ``ci``: below 1 - confidence exactly when ``ci`` excludes 0."""
    operating_characteristics: dict[str, OperatingPoint]
    power: dict[str, Any] | None
    claim: dict[str, Any] | None = None
    saving: dict[str, Any] | None = None
    ci_seeds: list[int] | None = None
    guardrails: list[dict[str, Any]] | None = None
    """Each guardrail (``compare.guardrails``) of this pair: the two means, the challenger's queries with a non-zero
    value, and for a ``max_increase`` budget the paired increase with its CI; absent without labelled data."""


class FamilyRates(_Strict):
    """A multiplicity family's members and its simulated family-wise error rates."""

    members: list[str]
    baseline: str
    trials: int
    size: int
    any_false_accept: float
    any_false_reject: float
    any_error: float


class Inference(_Strict):
    release_family: str
    procedure: str
    families: dict[str, FamilyRates]


class Verdicts(_Strict):
    """verdicts.json."""

    baseline: str
    baselines: list[str] | None = None
    queries: int
    verdict_queries: int
    rule: dict[str, Any]
    baseline_flag: str | None
    simulation: dict[str, Any]
    inference: Inference
    latency_p95_ms: dict[str, float | None]
    latency_source: dict[str, str]
    latency_untrusted: dict[str, str]
    fallbacks: dict[str, dict[str, int]]
    invalid_outputs: dict[str, dict[str, Any]] | None = None
    """Per LLM reranker: invalid outputs in total (``invalid`` of ``calls``, ``rate``) and per query (``per_query_mean``
    with its CI ``low``, ``high``)."""
    empty_results: dict[str, dict[str, int]] | None = None
    """Per system: evaluated queries it answered with no document (``empty``) of ``queries``."""
    generator_flag: str | None
    inactive_claims: list[str]
    served_parity: dict[str, dict[str, Any]] = {}
    """Per served system of ``compare.served_parity``: its ``reference``, run ``agreement`` and score ``parity``."""
    variants: dict[str, Any]
    verdicts: dict[str, Verdict]
    verdicts_by_baseline: dict[str, dict[str, Verdict]] | None = None


class Interval(_Strict):
    mean: float | None
    low: float | None
    high: float | None


class Comparison(_Strict):
    """One (challenger, baseline, metric): its Δ with the interval of its family, and what the deltas look like."""

    challenger: str
    baseline: str
    metric: str
    baseline_mean: float | None
    challenger_mean: float | None
    delta: float | None
    low: float | None
    high: float | None
    family: str
    """``release vs <baseline>`` (simultaneous), ``alone: <pair>`` or ``descriptive``."""
    p_adjusted: float | None
    p_randomisation: float | None
    p_ttest: float | None
    median_delta: float | None
    cohens_dz: float | None
    improved: int
    tied: int
    regressed: int
    percentiles: dict[str, float | None]
    worst_regressions: list[str]
    ci_seeds: list[int] | None = None


class SliceComparison(_Strict):
    challenger: str
    metric: str
    queries: int
    too_small: bool
    delta: float | None
    low: float | None
    high: float | None


class SliceValue(_Strict):
    value: str
    comparisons: list[SliceComparison]


class Compare(_Strict):
    """compare.json."""

    baseline: str
    queries: int
    split: str
    method: dict[str, Any]
    systems: dict[str, dict[str, Interval]]
    comparisons: list[Comparison]
    comparisons_by_baseline: dict[str, list[Comparison]] | None = None
    slices: dict[str, list[SliceValue]]
    unjudged: dict[str, Any]
    first_stage: dict[str, Any]
    generator_sanity: dict[str, Any]
    language_check: dict[str, Any]
    worst_regressions: dict[str, list[dict[str, Any]]]
    seeds: dict[str, Any] | None = None
    weighted: dict[str, Any] | None = None
    guardrails: dict[str, dict[str, dict[str, Any]]] | None = None
    """Per guardrail measure and system: mean, CI (low, high), queries_with_any, queries; absent when the collection
    carries no access or validity labels."""


MODELS = {"compare": Compare, "verdicts": Verdicts}
"""Each file of the compare stage (``<name>.json``) and the model it holds to."""


def _checked(model: type[BaseModel], data: dict[str, Any], where: str) -> dict[str, Any]:
    from pydantic import ValidationError

    try:
        model.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise ContractError(f"{where}: {field}: {first['msg']} (stats.schema.{model.__name__} declares what the "
                            "file holds: a new field is declared there first, and docs/schemas/ regenerated)") from None
    return data


def checked_verdicts(verdicts: dict[str, Any], where: str) -> dict[str, Any]:
    """``verdicts`` when it is what ``Verdicts`` declares; a ``ContractError`` naming the first field that is not."""
    return _checked(Verdicts, verdicts, where)


def checked_compare(compare: dict[str, Any], where: str) -> dict[str, Any]:
    """``compare`` when it is what ``Compare`` declares; a ``ContractError`` naming the first field that is not."""
    return _checked(Compare, compare, where)


def schema_text(name: str) -> str:
    return json.dumps(MODELS[name].model_json_schema(), indent=2, sort_keys=True) + "\n"


def schema_file(name: str) -> Path:
    return SCHEMA_FOLDER / f"{name}.schema.json"


def main(argv: list[str]) -> int:
    stale = []
    for name in MODELS:
        path, text = schema_file(name), schema_text(name)
        if "--write" in argv:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        elif not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(str(path))
    if stale:
        print(f"{', '.join(stale)} differ from stats.schema's models. Fix: python -m rerankeval.stats.schema --write")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
