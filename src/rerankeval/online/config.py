"""``online``: the simulated users and the experiment an online readout is sized for (``conf/online/*.yaml``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from ..core.config import StrictConfig, check_name
from ..core.http import RetrySettings

ClickModelKind = Literal["pbm", "cascade", "dcm"]
AbMetric = Literal["reciprocal_rank", "any_click", "clicks"]


def _probability_pair(pair: list[float]) -> list[float]:
    if len(pair) != 2 or not all(0.0 <= value <= 1.0 for value in pair):
        raise ValueError(f"expected [at grade 0, at the top grade], two probabilities in [0, 1]; got {pair}")
    return pair


class ClickModelConfig(StrictConfig):
    """A simulated user. A result of grade g (of the qrels' top grade G), once examined, is clicked with probability
    ``click[0] + (click[1] - click[0]) * g / G`` (unjudged: grade 0), and after a click stops scanning with
    ``stop[0] + (stop[1] - stop[0]) * g / G``. The defaults are the "navigational" user of the interleaving
    literature (click 0.05 -> 0.95, stop 0.2 -> 0.9: Hofmann, Whiteson and de Rijke 2013, Chuklin et al. 2015).

    ``pbm`` (position-based): rank r is examined with probability ``(1 / r) ** position_bias``, clicks independent,
    no stopping. ``cascade``: scans down, clicks the first attractive result and stops. ``dcm`` (dependent click):
    scans down, may click several, stops after a click with the stop probability of its grade."""

    kind: ClickModelKind = "dcm"
    click: list[float] = [0.05, 0.95]
    """P(click | examined) at grade 0 and at the top grade; linear between."""
    stop: list[float] = [0.2, 0.9]
    """``dcm``: P(stop scanning | clicked) at grade 0 and at the top grade; linear between."""
    position_bias: float = Field(1.0, ge=0.0)
    """``pbm``: rank r is examined with probability ``(1 / r) ** position_bias``."""

    @field_validator("click", "stop")
    @classmethod
    def _two_probabilities(cls, pair: list[float]) -> list[float]:
        return _probability_pair(pair)


class ReadoutConfig(StrictConfig):
    """``online.readouts.<name>``: one online experiment's interaction log (``online.logs``) and the rule its
    readout is decided by (``online.readout``): the primary is interleaving credit by origin (``design: team_draft``
    or ``probabilistic``) or an A/B test's click measure (``design: ab``), and the guardrails are checked first."""

    log: str
    """The interaction log, JSON lines or Parquet (docs/online.md); the readout stage's DVC dependency."""
    synthetic: str | None = Field(None, min_length=1)
    """What made the log when it is no people's traffic (the demo's: a seeded click simulation), said at the top of
    its page; null: a real log."""
    challenger: str
    """The system the experiment tried (an arm, or an interleaving side)."""
    baseline: str | None = None
    """The system it was tried against; ``compare.baseline`` when not given."""
    design: Literal["team_draft", "probabilistic", "ab"] = "team_draft"
    """``team_draft`` or ``probabilistic``: interleaved pages, each click credited to the side that put the result there
    (the log's ``origin``); ``ab``: two arms."""
    ab_metric: AbMetric = "reciprocal_rank"
    """``design: ab``: the click measure the verdict reads."""
    min_delta: float = Field(0.0, ge=0.0)
    """ACCEPT needs the primary's CI above 0 and its mean at least this."""
    max_abandonment_increase: float | None = Field(0.02, ge=0.0)
    """``design: ab``: the abandonment rate (impressions without a click) may rise by at most this much (REJECT when
    its CI lies above); None skips it."""
    max_empty_increase: float | None = Field(0.01, ge=0.0)
    """``design: ab``: the share of impressions that showed no result may rise by at most this much (REJECT when its
    CI lies above); None skips it."""
    latency_p95_max_ms: float | None = Field(None, ge=0.0)
    """The p95 of the logged latency may be at most this (both designs); None skips it."""
    latency_p95_max_ratio: float | None = Field(1.2, ge=0.0)
    """``design: ab``: the challenger's p95 latency at most the baseline's times this; None skips it."""
    latency_p99_max_ms: float | None = Field(None, ge=0.0)
    """The p99 of the logged latency may be at most this (both designs; the tail a p95 budget does not see); None
    skips it."""
    segment_budget: float = Field(0.05, ge=0.0)
    """Every segment is a critical slice: its primary may fall by at most this (REJECT when its Bonferroni-adjusted
    CI lies below -budget)."""
    max_impressions: int = Field(1_000_000, ge=100)
    """Above this many impressions the log is sampled (a seeded bottom-k sample of impression ids)."""


class ServedReplayConfig(RetrySettings):
    """``online.shadows.<name>.served``: the log's arrivals sent, at their own times (open loop), to a served system:
    a learned system served for the replay by ``rerankeval serve`` (the ``serve`` extra), or an ``http_rerank``
    system's own endpoint. Off by default: it takes the log's span (divided by ``speed``) in real time."""

    system: str
    """The system served; its in-process replay gives the simulated queue it is set beside."""
    max_arrivals: int = Field(300, ge=1)
    """The first this many arrivals of the replayed log, in time order."""
    max_retries: int = Field(0, ge=0)
    """No retry by default: a retried request would hide an overload its user met."""


class ShadowConfig(StrictConfig):
    """``online.shadows.<name>``: a production query log replayed, without judgments, through the frozen first stage
    and the systems (``online.shadow``, docs/online.md "Shadow replay")."""

    log: str
    """The query log, JSON lines or Parquet: query, time, optional segment, count and user_groups."""
    synthetic: str | None = Field(None, min_length=1)
    """What made the log when it is no people's traffic (the demo's: seeded arrivals of its test queries), said at
    the top of its page; null: a real log."""
    systems: list[str] | None = None
    """The systems replayed; default: the baseline (``compare.baseline``) and every reranker (not the bounds, not the
    other first stages: an oracle has no judgments to read here)."""
    speed: float = Field(1.0, gt=0.0)
    """Replay the log this many times faster than it was recorded (its arrival pattern, compressed)."""
    k: int = Field(10, ge=1)
    """The top k of the agreement measures and of "top k changed"."""
    p: float = Field(0.9, gt=0.0, lt=1.0)
    """RBO's persistence."""
    max_queries: int = Field(5000, ge=1)
    """Distinct queries replayed at most: above it, a seeded sample (the seed is ``online.seed``); the arrivals of the
    others are left out of the latency and guardrail figures, and said so."""
    window_arrivals: int = Field(1_000_000, ge=1)
    """Arrivals of the replayed queries kept for the latency and guardrail figures: the log's from its start up to the
    line where they number this many (counts summed; a contiguous stretch of its arrival pattern); after it, arrivals
    only add to each query's traffic (the judging queue's weight), and are counted on the page. Bounds memory on any
    log."""
    queue_rows: int = Field(50, ge=1)
    """Rows of the log's judging queue."""
    served: ServedReplayConfig | None = None
    """The arrival pattern replayed against a served system too (null: the queue is simulated only)."""


class OnlineConfig(StrictConfig):
    """``online``: the pre-launch sizing of each challenger's online experiment against ``compare.baseline``."""

    enabled: bool = True
    """Off: the stage writes ``{"enabled": false}`` and the details page leaves the section out."""
    click_model: ClickModelConfig = ClickModelConfig()
    depth: int = Field(10, ge=1, le=20)
    """Results on the page: each ranking's top ``depth``, and the interleaved page's length."""
    ab_metric: AbMetric = "reciprocal_rank"
    """The A/B test's per-impression click measure: the first click's reciprocal rank (0 without one), whether there
    was a click, or the number of clicks."""
    alpha: float = Field(0.05, gt=0.0, lt=0.5)
    """Each test's two-sided level, and the bound the null check holds the false detection rate to."""
    power: float = Field(0.8, gt=0.5, lt=1.0)
    """The power each design is sized for."""
    sessions_per_query: int = Field(2000, ge=100)
    """Simulated sessions per query that estimate each method's per-impression outcome distribution."""
    check_trials: int = Field(200, ge=20)
    """Simulated experiments at each method's sized number of impressions: its achieved power, checked."""
    check_max_impressions: int = Field(20000, ge=100)
    """Above this many impressions the achieved power is not simulated (it would be slow), and says so."""
    null_pairs: int = Field(1000, ge=100)
    """Seeded null pairs (two real rankings, neither better) on which the sign test's false detection rate is
    measured."""
    null_impressions: int = Field(1000, ge=50)
    """Each null pair's experiment: impressions of two real rankings with the sides' labels drawn at random."""
    readouts: dict[str, ReadoutConfig] = {}
    """The online experiments to read out, by name: each is a ``readout@<name>`` stage (none without a log)."""
    shadows: dict[str, ShadowConfig] = {}
    """The query logs to replay in shadow, by name: each is a ``shadow@<name>`` stage (none without a log)."""
    seed: int = 0
    """Every simulation's seed: the same runs, qrels and settings give the same numbers."""

    @field_validator("readouts", "shadows")
    @classmethod
    def _usable_names(cls, found: dict) -> dict:
        for name in found:  # each becomes a stage (readout@NAME, shadow@NAME) and files
            check_name(name, "the name")
        return found
