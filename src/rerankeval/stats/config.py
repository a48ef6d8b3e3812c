"""The ``compare`` block of params.yaml, typed (the statistics' defaults: ``defaults``; a critical slice:
``critical_slices``).

Only settings live here (pydantic, ``core.config``, ``eval.config``), so reading params.yaml does not load the
statistics themselves.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..core.config import StrictConfig
from ..eval.measure_names import MeasureName
from .critical_slices import CriticalSlice
from .defaults import (DEFAULT_CONFIDENCE, DEFAULT_MIN_RUN_COVERAGE, DEFAULT_MIN_SLICE_SIZE, DEFAULT_N_SAMPLES,
                       DEFAULT_SEED, DEFAULT_TIE_TOL, DEFAULT_TRIALS)


class ReleaseClaim(StrictConfig):
    """What a challenger claims (``compare.release.claims.<system>``).

    ``superior`` (the default for every challenger): today's rule, a gain of at least ``min_delta``.
    ``noninferior``: not worse than ``against`` by more than ``margin`` (absolute, primary metric) and cheaper by at
    least ``min_saving`` (a share, 0.2 = 20%) of ``saving_on``: ``latency_p95`` (p95 query latency) or ``cost``
    (mean cold seconds per query, which the machine price per hour scales into cost per query); None = no saving
    required. ``against``: the system the claim is about, the reference of its delta and of its saving (None: the
    first baseline); the pair joins the release family of ``against``.
    """

    claim: Literal["superior", "noninferior"] = "superior"
    margin: float | None = Field(None, gt=0)
    min_saving: float | None = Field(None, ge=0, lt=1)
    saving_on: Literal["latency_p95", "cost"] = "latency_p95"
    against: str | None = None

    @model_validator(mode="after")
    def _margin_only_for_noninferiority(self) -> ReleaseClaim:
        if self.claim == "noninferior" and self.margin is None:
            raise ValueError("claim noninferior needs a margin (e.g. margin: 0.02)")
        if self.claim == "superior" and (self.margin is not None or self.min_saving is not None):
            raise ValueError("margin and min_saving belong to claim noninferior; superior uses min_delta")
        return self


SUPERIOR = ReleaseClaim()


class ReleaseRule(StrictConfig):
    """Thresholds of the release decision (absolute metric units; rates as fractions).

    ``unjudged_margin``: largest allowed challenger - baseline unjudged rate (the unjudged watch flags a difference
    of either sign beyond it); None skips it. ``max_fallback_rate``: largest share of queries served by the
    fused-order fallback (deadline or scoring failure); None skips it. ``latency_p95_max_ms`` /
    ``latency_p95_max_ratio``: challenger p95 latency at most this many ms / at most baseline p95 x ratio; None = no
    such budget. ``latency_p99_max_ms``: challenger p99 latency at most this many ms, for an online readout's logged
    latency only (``online.readouts.<name>.latency_p99_max_ms``, whose rule is built without this validation): the
    offline latency measurement's few rounds give no p99, so ``compare.release`` refuses it.
    """

    primary_metric: MeasureName
    min_delta: float = Field(ge=0)
    critical_slices: list[CriticalSlice] = []
    unjudged_margin: float | None = Field(None, ge=0)
    max_fallback_rate: float | None = Field(None, ge=0, le=1)
    latency_p95_max_ms: float | None = Field(None, ge=0)
    latency_p95_max_ratio: float | None = Field(None, ge=0)
    latency_p99_max_ms: float | None = Field(None, ge=0)
    max_invalid_rate: float | None = Field(None, ge=0, le=1)
    """Largest share of an LLM reranker's calls whose output was invalid (a malformed permutation, an unreadable
    label: ``systems.llm``); above it the system cannot be ACCEPTed. None skips it; systems without LLM calls pass."""
    min_run_coverage: float = Field(DEFAULT_MIN_RUN_COVERAGE, ge=0, le=1)
    """Smallest share of the reranked queries an external run (a ``trec_run`` system) must rank itself: below it the
    rest keep the fused order, so the run's delta is mostly the baseline's and the system cannot be ACCEPTed (nor
    can any challenger of a baseline below it). ``rerankeval compare --min-coverage`` refuses such a run."""
    claims: dict[str, ReleaseClaim] = {}

    @field_validator("latency_p99_max_ms")
    @classmethod
    def _online_only(cls, value: float | None) -> float | None:
        if value is not None:
            raise ValueError("a p99 budget is for online readouts (online.readouts.<name>.latency_p99_max_ms): the "
                             "offline latency measurement's few rounds give no p99. Fix: remove it, or set "
                             "latency_p95_max_ms")
        return value

    def claim_for(self, system: str, reference: str, baseline: str) -> ReleaseClaim:
        """The claim that decides ``system`` against ``reference``: its declared claim against the system it names
        (``against``, else ``baseline``, the first baseline), superior against every other."""
        claim = self.claims.get(system)
        if claim is not None and (claim.against or baseline) == reference:
            return claim
        return SUPERIOR

    def statistical_part(self) -> ReleaseRule:
        """The rule without its deterministic checks (unjudged, fallbacks, latency): what a simulation exercises."""
        return self.model_copy(update={"unjudged_margin": None, "max_fallback_rate": None,
                                       "latency_p95_max_ms": None, "latency_p95_max_ratio": None,
                                       "latency_p99_max_ms": None,
                                       "max_invalid_rate": None})


class SimulationConfig(StrictConfig):
    """``compare.simulation``: trials per simulated effect and bootstrap resamples per trial (fewer than the
    comparison's own: the rates move by less than their Monte Carlo error, and the stage stays fast)."""

    trials: int = Field(DEFAULT_TRIALS, ge=20)
    samples: int = Field(2000, ge=100)


class UnjudgedWatch(StrictConfig):
    """Watch how often the top documents are unjudged, per system; the margin is the release rule's
    ``unjudged_margin`` (one margin for the watch and the verdict)."""

    measure: MeasureName = "Judged@10"
    judged_only_measure: MeasureName | None = None


class GeneratorCheck(StrictConfig):
    """``compare.generator_check``: the answer measure on which the oracle and the baseline must beat the random
    ranking for answer-level numbers to compare rankings (``stats.caveats``). AnswerF1, not the first answer measure
    of ``metrics`` (AnswerEM there): F1 gives partial credit, so it separates rankings on fewer queries."""

    metric: MeasureName = "AnswerF1"


class GuardrailRule(StrictConfig):
    """``compare.guardrails``: a guardrail the release cannot trade away for quality, checked before any quality check.

    ``zero``: any query with a non-zero value REJECTs (``ACLViolation@k``: a document the asking user may not see).
    ``max_increase``: the challenger's mean may exceed the compared system's by at most this much (absolute, e.g. 0.02
    for ``Stale@5``); REJECT when the paired CI of the increase lies entirely above it, INCONCLUSIVE when the mean
    increase does without that evidence. A collection without the labels a guardrail reads skips it with a note.

    ``slice_budgets`` (``max_increase`` only): a slice's own budget for this guardrail (``column``, ``value`` or every
    value of the column, ``budget``: its max_increase), checked within the slice as the dataset's critical slices are,
    whether or not it is one of them; the critical slices without one of their own are held to ``max_increase``. A
    value's budget comes before its column's."""

    measure: MeasureName
    zero: bool = False
    max_increase: float | None = Field(None, ge=0)
    slice_budgets: list[CriticalSlice] = []

    @model_validator(mode="after")
    def _one_budget(self) -> "GuardrailRule":
        if self.zero == (self.max_increase is not None):
            raise ValueError("a guardrail has one budget: zero: true (none allowed) or max_increase: <share>")
        if self.zero and self.slice_budgets:
            raise ValueError("slice_budgets need a max_increase guardrail: zero: true allows no violation in any slice")
        labels = [budget.label() for budget in self.slice_budgets]
        twice = sorted({label for label in labels if labels.count(label) > 1})
        if twice:
            raise ValueError(f"slice_budgets name a slice twice: {', '.join(twice)}; keep one budget per slice")
        return self

    def slice_budget(self, column: str, value: object) -> float | None:
        """The budget within slice ``column`` = ``value``: its own (a value's before its column's), else
        ``max_increase``."""
        own = [budget for budget in self.slice_budgets if budget.matches(column, value)]
        own.sort(key=lambda budget: budget.value is None)  # the value's own first
        return own[0].budget if own else self.max_increase


class ServedParity(StrictConfig):
    """A served system that must score as the model it serves does in-process: ``system`` (an ``http_rerank`` to the
    endpoint) against ``reference`` (the in-process system), every document both scored within ``tolerance`` after
    ``reference_transform`` on the reference's scores (``sigmoid`` when the reference stores logits and the endpoint
    returns probabilities). Failing it is a hard check: the evaluated model is not the one behind the endpoint."""

    system: str
    reference: str
    tolerance: float = Field(1e-4, ge=0)
    reference_transform: Literal["none", "sigmoid"] = "none"


class CompareConfig(StrictConfig):
    """The ``compare`` block of params.yaml.

    ``baselines``: every challenger is compared with each, one release family per baseline (``stats.family``); the
    first is *the* baseline of compare.json's ``comparisons``, the report and the sweep. ``baseline: NAME`` is the
    one-element case. A later baseline is compared with the earlier ones as a challenger, not with itself or them again.
    """

    baselines: list[str] = Field(min_length=1)
    metrics: list[MeasureName]
    samples: int = Field(DEFAULT_N_SAMPLES, ge=1)
    seed: int = DEFAULT_SEED
    confidence: float = Field(DEFAULT_CONFIDENCE, gt=0, lt=1)
    ci_method: Literal["percentile", "bca"] = "percentile"
    permutations: int = Field(DEFAULT_N_SAMPLES, ge=1)
    correction: Literal["holm", "bh"] = "holm"
    """The correction of the descriptive family (every comparison the release decision does not read: secondary
    metrics, reference systems)."""
    inference: Literal["family", "per_comparison"] = "family"
    """How the release decision's intervals and adjusted p are computed (``stats.family``): ``family``, simultaneous
    over the release challengers against each baseline on the primary metric; ``per_comparison``, each pair alone
    (no multiplicity control across challengers; the pages say so)."""
    tie_tolerance: float = Field(DEFAULT_TIE_TOL, ge=0)
    worst_n: int = Field(5, ge=0)
    min_slice_size: int = Field(DEFAULT_MIN_SLICE_SIZE, ge=1)
    unjudged: UnjudgedWatch = UnjudgedWatch()
    simulation: SimulationConfig = SimulationConfig()
    generator_check: GeneratorCheck = GeneratorCheck()
    guardrails: list[GuardrailRule] = []
    served_parity: list[ServedParity] = []
    release: ReleaseRule

    @model_validator(mode="before")
    @classmethod
    def _one_baseline(cls, data: Any) -> Any:
        if isinstance(data, dict) and "baseline" in data:
            if "baselines" in data:
                raise ValueError("give baselines (a list) or baseline (one name), not both")
            data = {**data, "baselines": [data["baseline"]]}
            del data["baseline"]
        return data

    @model_validator(mode="after")
    def _baselines_once(self) -> CompareConfig:
        if len(set(self.baselines)) != len(self.baselines):
            raise ValueError(f"baselines {self.baselines} name a system twice")
        return self

    def resampling(self, with_method: bool = True) -> dict[str, Any]:
        """The bootstrap's settings as the interval functions take them (``n_samples``, ``seed``, ``confidence`` and,
        for those that choose, ``method``): unpacked here once, not at every call."""
        found = {"n_samples": self.samples, "seed": self.seed, "confidence": self.confidence}
        return {**found, "method": self.ci_method} if with_method else found

    @property
    def baseline(self) -> str:
        """The first baseline: the one compare.json's ``comparisons`` and the report's tables are against."""
        return self.baselines[0]

    def references(self, systems: Collection[str]) -> dict[str, list[str]]:
        """Per reference system (each baseline, then each claim's ``against`` that is none), its challengers in
        sorted order: the pairs the verdicts decide and the family compares (on every metric against a baseline, on
        the primary metric against a claim's other ``against``)."""
        self.refuse_unknown(systems)
        pairs: dict[str, list[str]] = {}
        for k, baseline in enumerate(self.baselines):
            pairs[baseline] = sorted(set(systems) - set(self.baselines[:k + 1]))
        for system, claim in sorted(self.release.claims.items()):
            against = claim.against or self.baseline
            if system not in pairs.get(against, []):
                pairs.setdefault(against, []).append(system)
        return {reference: challengers for reference, challengers in pairs.items() if challengers}

    def inactive_claims(self, systems: Collection[str]) -> list[str]:
        """The claims whose challenger or ``against`` this run does not configure (a system dropped with
        ``-S '~system@systems.NAME'``, or a misspelt name): they decide nothing, and the compare stage says so."""
        return sorted(system for system, claim in self.release.claims.items()
                      if system not in systems or (claim.against is not None and claim.against not in systems))

    def for_systems(self, systems: Collection[str]) -> CompareConfig:
        """These settings without the claims ``inactive_claims`` lists."""
        inactive = set(self.inactive_claims(systems))
        claims = {system: claim for system, claim in self.release.claims.items() if system not in inactive}
        return self.model_copy(update={"release": self.release.model_copy(update={"claims": claims})})

    def refuse_unknown(self, systems: Collection[str], where: str = "compare") -> None:
        """Refuse a baseline naming no system of ``systems``, and a claim that cannot hold, by name. A claim for a
        system this run lacks is not refused (``inactive_claims``): dropping a system must not need its claim
        dropped too."""
        known = ", ".join(sorted(systems))
        for baseline in self.baselines:
            if baseline not in systems:
                raise ValueError(f"{where}.baselines: {baseline!r} is not among the systems ({known})")
        for system, claim in self.for_systems(systems).release.claims.items():
            field = f"{where}.release.claims.{system}"
            if system == self.baseline:
                raise ValueError(f"{field}: {system!r} is the baseline, which claims nothing; drop the claim")
            if claim.against == system:
                raise ValueError(f"{field}.against: a system cannot be compared with itself")
