"""The ``compare`` block of params.yaml (and the dataset's ``critical_slices``), typed, and the statistics' defaults.

Only settings live here (pydantic, ``core.config``, ``eval.config``), so reading params.yaml does not load the
statistics themselves.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from ..core.config import StrictConfig
from ..eval.config import MeasureName

# Defaults of the resampling functions and of the ``compare`` block.
DEFAULT_N_SAMPLES = 10_000
DEFAULT_SEED = 17
DEFAULT_CONFIDENCE = 0.95
DEFAULT_MIN_SLICE_SIZE = 20
DEFAULT_TIE_TOL = 1e-9
DEFAULT_WORST_N = 10


class CriticalSlice(StrictConfig):
    """A slice that must not regress by more than ``budget`` (absolute, e.g. 0.02 = 2 points).

    ``value`` None means every value of ``column``.
    """

    column: str
    budget: float = Field(ge=0)
    value: str | None = None

    @field_validator("value", mode="before")
    @classmethod
    def _label_as_text(cls, value: object) -> object:
        # Slice labels are strings: a YAML `value: 2` must match the label "2".
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    def label(self) -> str:
        """``column=value``, or ``column=*`` for every value."""
        return f"{self.column}={'*' if self.value is None else self.value}"

    def matches(self, column: str, value: object) -> bool:
        return column == self.column and self.value in (None, str(value))


class ReleaseRule(StrictConfig):
    """Thresholds of the release decision (absolute metric units; rates as fractions).

    ``unjudged_margin``: largest allowed challenger - baseline unjudged rate (the unjudged watch flags a difference
    of either sign beyond it); None skips it. ``max_fallback_rate``: largest share of queries served by the
    fused-order fallback (deadline or scoring failure); None skips it. ``latency_p95_max_ms`` /
    ``latency_p95_max_ratio``: challenger p95 latency at most this many ms / at most baseline p95 x ratio; None = no
    such budget.
    """

    primary_metric: MeasureName
    min_delta: float = Field(ge=0)
    critical_slices: list[CriticalSlice] = []
    unjudged_margin: float | None = Field(None, ge=0)
    max_fallback_rate: float | None = Field(None, ge=0, le=1)
    latency_p95_max_ms: float | None = Field(None, ge=0)
    latency_p95_max_ratio: float | None = Field(None, ge=0)

    def statistical_part(self) -> ReleaseRule:
        """The rule without its deterministic checks (unjudged, fallbacks, latency): what a simulation exercises."""
        return self.model_copy(update={"unjudged_margin": None, "max_fallback_rate": None,
                                       "latency_p95_max_ms": None, "latency_p95_max_ratio": None})


class SimulationConfig(StrictConfig):
    """``compare.simulation``: trials per simulated effect and bootstrap resamples per trial (fewer than the
    comparison's own: the rates move by less than their Monte Carlo error, and the stage stays fast)."""

    trials: int = Field(400, ge=20)
    samples: int = Field(2000, ge=100)


class UnjudgedWatch(StrictConfig):
    """Watch how often the top documents are unjudged, per system; the margin is the release rule's
    ``unjudged_margin`` (one margin for the watch and the verdict)."""

    measure: MeasureName = "Judged@10"
    judged_only_measure: MeasureName | None = None


class CompareConfig(StrictConfig):
    """The ``compare`` block of params.yaml."""

    baseline: str
    metrics: list[MeasureName]
    samples: int = Field(DEFAULT_N_SAMPLES, ge=1)
    seed: int = DEFAULT_SEED
    confidence: float = Field(DEFAULT_CONFIDENCE, gt=0, lt=1)
    ci_method: Literal["percentile", "bca"] = "percentile"
    permutations: int = Field(DEFAULT_N_SAMPLES, ge=1)
    correction: Literal["holm", "bh"] = "holm"
    tie_tolerance: float = Field(DEFAULT_TIE_TOL, ge=0)
    worst_n: int = Field(5, ge=0)
    min_slice_size: int = Field(DEFAULT_MIN_SLICE_SIZE, ge=1)
    unjudged: UnjudgedWatch = UnjudgedWatch()
    simulation: SimulationConfig = SimulationConfig()
    release: ReleaseRule
