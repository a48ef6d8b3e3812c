"""compare.json, verdicts.json and costs.json as types: the comparison, the decision and what quality costs, the parts
of one ``stats.analysis.Analysis``, with JSON Schemas generated from them (``docs/schemas/``), so a field a page reads
cannot appear, vanish or change its type unseen.

    python -m rerankeval.stats.schema           # exit 1 and say when docs/schemas/ differs from the models
    python -m rerankeval.stats.schema --write   # write docs/schemas/{compare,verdicts,costs}.schema.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .config import GuardrailRule, ReleaseClaim


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


class PowerStatement(_Strict):
    """How many queries would give the comparison its power at ``min_delta`` (a noninferiority claim: at a true Δ of 0
    against its ``margin``), from the observed spread (``stats.power``); ``queries_needed`` None with ``why`` when
    the size is undefined."""

    method: str
    power: float
    alpha: float
    min_delta: float
    claim: Literal["noninferior"] | None = None
    margin: float | None = None
    sd: float | None
    queries: int
    queries_needed: int | None
    more_queries: int | None
    power_now: float | None
    why: str | None


class Saving(_Strict):
    """A noninferiority claim's saving on ``measure`` against the system it is about (``stats.saving``): the
    challenger's and the other's figure and, where both were timed on 2 or more paired queries, the share saved and
    its CI over those ``queries``."""

    measure: Literal["latency_p95", "cost"]
    challenger: float | None
    against: float | None
    estimate: float | None = None
    ci: tuple[float | None, float | None] | None = None
    confidence: float | None = None
    queries: int | None = None


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
    power: PowerStatement | None
    rates_why: str | None = None
    """Why ``operating_characteristics`` describe no real alternative (deltas without spread, which the simulation
    keeps); absent where they do. The pages then show no rate."""
    claim: ReleaseClaim | None = None
    saving: Saving | None = None
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
    mode: Literal["family", "per_comparison"]
    """``compare.inference``: the release challengers as one family, or each pair alone."""
    release_family: str
    procedure: str
    families: dict[str, FamilyRates]


class RuleRecord(_Strict):
    """The release rule the verdicts applied (``compare.release`` and the settings it reads), with the size and level
    of the critical slices' tests."""

    primary_metric: str
    min_delta: float
    confidence: float
    critical_slices: list[str]
    """Each as ``column=value budget b`` (``*``: every value of the column)."""
    min_slice_size: int
    slices_that_can_reject: int
    slice_tests: int
    """The slices that can REJECT times the first baseline's release family's members: the slice tests' family."""
    slice_confidence: float
    """The level of each slice test, adjusted for ``slice_tests``."""
    unjudged_margin: float | None
    max_fallback_rate: float | None
    max_invalid_rate: float | None
    min_run_coverage: float
    latency_p95_max_ms: float | None
    latency_p95_max_ratio: float | None
    claims: dict[str, ReleaseClaim] | None = None
    guardrails: list[GuardrailRule] | None = None


class DecisionCore(_Strict):
    """What ``stats.comparison.compare`` decides: the part of verdicts.json that every caller of it writes (the compare
    stage, ``rerankeval compare --out``)."""

    baseline: str
    baselines: list[str] | None = None
    queries: int
    verdict_queries: int
    rule: RuleRecord
    baseline_flag: str | None
    simulation: dict[str, Any]
    inference: Inference
    latency_p95_ms: dict[str, float | None]
    fallbacks: dict[str, dict[str, int]]
    verdicts: dict[str, Verdict]
    verdicts_by_baseline: dict[str, dict[str, Verdict]] | None = None


class Verdicts(DecisionCore):
    """verdicts.json: the decision, and what the compare stage adds from the pipeline's other outputs."""

    latency_source: dict[str, str]
    latency_untrusted: dict[str, str]
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


class Interval(_Strict):
    mean: float | None
    low: float | None
    high: float | None


class PairedDelta(_Strict):
    """What one paired inference (``stats.inference``) gives a pair on one metric, wherever the pair is shown."""

    delta: float | None
    low: float | None
    high: float | None
    family: str
    """The decision family whose procedure gave the interval and p (``release vs <baseline>``, ``alone: <pair>`` in
    the analysis; ``changed systems on <primary metric>`` in a diff), or ``descriptive``."""
    p_adjusted: float | None
    p_randomisation: float | None
    improved: int
    tied: int
    regressed: int


class Comparison(PairedDelta):
    """One (challenger, baseline, metric): its Δ with the interval of its family, and what the deltas look like."""

    challenger: str
    baseline: str
    metric: str
    baseline_mean: float | None
    challenger_mean: float | None
    p_ttest: float | None
    median_delta: float | None
    cohens_dz: float | None
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


class SystemCost(_Strict):
    """One system as configured: latency after warm-up (cold: a cache hit costs its model time), tokens and cost."""

    queries: int
    fallbacks: int
    timeouts: int
    """Of the fallbacks, those whose reason is a timeout (``core.errors.is_timeout``)."""
    skipped: int
    cache_hits: int
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    pairs_per_s: float | None
    measured_p95_ms: float | None
    """What this run took, cache included."""
    pairs: int
    pair_tokens_p50: float | None
    pair_tokens_p95: float | None
    truncation_rate: float | None
    tokens_per_s: float | None
    latency_scale: float
    """The verdict's measured p95 over ``p95_ms`` (the quality run's): the factor that puts this system's depth and
    sweep latencies on the measured scale (``rerank.cost.latency_scales``)."""
    cost_per_1k_queries: float | None
    """The quality run's machine time at ``hourly_price_usd`` (what a claim's cost saving is decided on), or an API's or
    LLM endpoint's prices; None where an API bills unreported tokens."""


class DepthCost(_Strict):
    """One system had it scored only its top ``depth`` candidates (estimated from the full-depth pass)."""

    system: str
    depth: int
    candidate_recall: float | None
    quality: float | None
    p95_ms: float | None
    cost_per_1k_queries: float | None


class SweepPoint(_Strict):
    """One setting of a policy sweep (the sweep stage's ``policies.points``), its p95 on the measured scale."""

    policy: str
    system: str
    parameter: str
    value: str
    position: int
    quality: float | None
    delta: float | None
    low: float | None
    high: float | None
    p_adjusted: float | None
    """In the sweep's family, by the procedure of its interval (``stats.inference``)."""
    p95_ms: float | None
    cost_per_1k_queries: float | None
    model_pairs: int
    skip_rate: float | None
    fallback_rate: float | None
    queries: int
    pairs_scored: int
    pairs_from_cache: int
    pairs_reused: int
    held: bool
    """Whether this setting is a point elsewhere (the depth table's, or its system as configured), whose p95 and cost
    it then carries (``policies.frontier.settings_held_elsewhere``): drawn once, as that point."""


class FrontierPoint(_Strict):
    """One configuration on the quality-cost plane: a system at a depth, a composite as configured, a sweep's setting
    or the served system."""

    policy: str
    system: str
    label: str
    quality: float
    p95_ms: float
    cost_per_1k_queries: float | None
    position: float
    """The setting's place on its policy's curve (a depth, a sweep's index)."""
    frontier: bool


class EndToEnd(_Strict):
    """One system's answer latency: rerank (cold, on the measured scale) plus generation, per query after warm-up."""

    p50_ms: float | None
    p95_ms: float | None
    generate_mean_ms: float | None
    cached_answers: int


class Costs(_Strict):
    """costs.json: what quality costs (``pipeline.compare.cost_analysis``), per system, per depth, each sweep setting,
    the frontier and the answers' latency. Timings, apart from compare.json, whose bytes a rerun keeps."""

    hourly_price_usd: float
    warmup_queries: int
    measure: str
    """The quality measure of ``depths`` and ``frontier`` (``evaluation.depth_measures``' first)."""
    latency_resolution: float
    """Relative p95 difference below which two latencies count as one on the frontier: the median spread of a
    system's p95 across its measurement's rounds (``policies.frontier.latency_resolution``)."""
    systems: dict[str, SystemCost]
    depths: list[DepthCost]
    sweeps: list[SweepPoint]
    frontier: list[FrontierPoint]
    end_to_end: dict[str, EndToEnd]
    bounds: dict[str, float]
    """The reference bounds' quality (oracle, random): lines beside the frontier, not configurations."""


class AnswerCounts(_Strict):
    queries: int
    with_gold: int
    """Queries with gold answers (the answer measures' denominator)."""
    with_relevant: int
    """Queries with a relevant passage (the ranking measures')."""


class Outcomes(_Strict):
    """One system's answers to the queries with gold: each counted once."""

    correct: int
    boundary_partial: int
    incorrect_answer: int
    false_refusal: int
    correct_refusal: int
    failed: int


class Reach(_Strict):
    """One challenger's queries by the direction of their ranking and answer deltas against the baseline."""

    ranking_up: int
    ranking_up_answer_up: int
    ranking_up_answer_down: int
    ranking_down: int
    ranking_down_answer_down: int
    ranking_same_answer_moved: int


class Answers(_Strict):
    """compare.json's ``answers`` (``stats.answers.answer_analysis``)."""

    ranking_measure: str | None
    """None when it was not evaluated: then no deltas and no reach."""
    answer_measure: str
    tolerance: float
    counts: AnswerCounts
    means: dict[str, dict[str, float | None]]
    """Per system, each answer measure's mean over the queries where it is defined (tokens and cost included)."""
    outcomes: dict[str, Outcomes] | None
    reach: dict[str, Reach]
    deltas: dict[str, list[tuple[str, float | None, float | None]]]
    """Per challenger, its queries as (query id, Δ ranking measure, Δ answer measure) against the baseline."""


class ReleaseFamily(_Strict):
    """The release decision's multiplicity families: what they hold, the procedure and each one's simulated
    family-wise error rates."""

    what: str
    procedure: str
    families: dict[str, FamilyRates]


class DescriptiveFamily(_Strict):
    """Every comparison no verdict reads, one family of its own."""

    what: str
    size: int
    ci: str
    p_adjusted: str


class UndefinedOnSomeQueries(_Strict):
    metrics: list[str]
    rule: str


class Method(_Strict):
    """How every interval and p-value was computed: the resampling, the tests, the two families."""

    resampling: str
    ci: str
    samples: int
    seed: int
    confidence: float
    tests: list[str]
    permutations: int
    correction: str
    inference: Literal["family", "per_comparison"]
    release_family: ReleaseFamily
    descriptive_family: DescriptiveFamily
    tie_tolerance: float
    undefined_on_some_queries: UndefinedOnSomeQueries | None = None


class DeltaInterval(_Strict):
    delta: float | None
    low: float | None
    high: float | None


class RetrieverCheck(_Strict):
    mean: float
    vs_random: DeltaInterval | None
    at_random_floor: bool


class FirstStageCheck(_Strict):
    """Each first-stage ranking against the random floor and the fused one against its best component
    (``stats.sanity.first_stage_sanity``); ``flag`` says why the baseline cannot carry a decision, or is None."""

    metric: str
    confidence: float
    queries: int
    random: float | None
    retrievers: dict[str, RetrieverCheck]
    best: str
    best_component: str | None
    fusion_vs_best_component: DeltaInterval | None
    baseline: str
    flag: str | None


class GeneratorCheck(_Strict):
    """The ceiling and the baseline against the floor on an answer measure (``stats.caveats.generator_sanity``):
    ``flag`` says why the generator cannot tell rankings apart, ``skipped`` why the check did not run."""

    metric: str
    confidence: float
    ceiling: str | None
    floor: str | None
    baseline: str
    means: dict[str, float | None]
    ceiling_vs_floor: DeltaInterval | None
    baseline_vs_floor: DeltaInterval | None
    flag: str | None
    skipped: str | None
    queries: int | None = None


class ComparisonCore(_Strict):
    """What ``stats.comparison.compare`` compares: the part of compare.json that every caller of it writes (the
    compare stage, ``rerankeval compare --out``)."""

    baseline: str
    queries: int
    method: Method
    systems: dict[str, dict[str, Interval]]
    comparisons: list[Comparison]
    comparisons_by_baseline: dict[str, list[Comparison]] | None = None
    slices: dict[str, list[SliceValue]]
    unjudged: dict[str, Any]
    seeds: dict[str, Any] | None = None
    guardrails: dict[str, dict[str, dict[str, Any]]] | None = None
    """Per guardrail measure and system: mean, CI (low, high), queries_with_any, queries; absent when the collection
    carries no access or validity labels."""


class Compare(ComparisonCore):
    """compare.json: the comparison, and what the compare stage adds from the pipeline's other outputs."""

    split: str
    first_stage: FirstStageCheck
    generator_sanity: GeneratorCheck
    language_check: dict[str, Any]
    worst_regressions: dict[str, list[dict[str, Any]]]
    weighted: dict[str, Any] | None = None
    answers: Answers | None = None
    """What the answers show beside the ranking; absent when no answer was generated."""


class RevisionComparison(PairedDelta):
    """One system x metric, base against head, paired by query (``stats.revisions.diff_revisions``)."""

    system: str
    metric: str
    base: float | None
    head: float | None


class RevisionSlice(_Strict):
    system: str
    column: str
    value: str
    queries: int
    too_small: bool
    delta: float | None
    low: float | None
    high: float | None


class DiffMethod(_Strict):
    """The settings of ``compare`` that the diff used, and the primary family's procedure."""

    ci: str
    confidence: float
    samples: int
    seed: int
    permutations: int
    correction: str
    tie_tolerance: float
    min_slice_size: int
    procedure: str


class RevisionDiff(_Strict):
    """``rerankeval diff``: is the change between two revisions real? Every system in both, paired query by query;
    the changed systems on the primary metric are one family (the release family's procedure), which alone decides
    what regressed; the slices that moved; systems only in head against head's own compare.json."""

    base: str
    head: str
    queries: dict[Literal["base", "head", "paired"], int]
    primary_metric: str
    method: DiffMethod
    params_changed: list[dict[str, Any]]
    """Each params key whose value differs (dotted), with ``base`` and ``head`` where present on that side."""
    warnings: list[str]
    systems: dict[Literal["changed", "unchanged", "only_in_base", "only_in_head"], list[str]]
    slice_columns: list[str]
    comparisons: list[RevisionComparison]
    slices: list[RevisionSlice]
    regressions: list[str]
    new_systems: dict[str, Any]
    """Systems only in head against head's baseline: ``comparisons`` from head's compare.json, ``missing`` why
    there are none."""
    agreement: dict[str, Any]
    """How far each system's ranking moved (``stats.agreement``): ``identical``, ``compared``, ``missing``."""


MODELS = {"compare": Compare, "verdicts": Verdicts, "costs": Costs}
"""Each file of the compare stage (``<name>.json``) and the model it holds to."""
SCHEMAS = {**MODELS, "diff": RevisionDiff}
"""Every JSON Schema in ``docs/schemas/``: the compare stage's files and ``rerankeval diff --json``'s."""


def schema_text(name: str) -> str:
    return json.dumps(SCHEMAS[name].model_json_schema(), indent=2, sort_keys=True) + "\n"


def schema_file(name: str) -> Path:
    return SCHEMA_FOLDER / f"{name}.schema.json"


def main(argv: list[str]) -> int:
    stale = []
    for name in SCHEMAS:
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
