"""How many queries would decide an INCONCLUSIVE verdict: Sakai's topic-set-size design for a paired t-test.

Sakai ("Topic set size design", Information Retrieval Journal 19(3), 2016) sizes a test collection from the
minimum difference worth detecting (``min_delta``), the variance of the per-query differences and the test's
error rates. For the two-sided paired t-test at level ``alpha`` and power ``1 - beta``:

1. the normal approximation with his t-correction term gives the starting point
   ``n0 = ((z_{1-alpha/2} + z_{1-beta}) * sd / min_delta)^2 + z_{1-alpha/2}^2 / 2``;
2. the answer is the smallest n >= 2 whose exact power reaches ``1 - beta``: the probability that |T| exceeds
   ``t_{1-alpha/2, n-1}`` when T follows the noncentral t with n - 1 degrees of freedom and noncentrality
   ``sqrt(n) * min_delta / sd`` (searched from n0 up or down, one query at a time).

``sd`` is the observed standard deviation of the per-query deltas (n - 1 in the denominator). The statement is
about the t-test's power to find a true difference of ``min_delta`` significant; the release rule also needs the
observed mean to reach ``min_delta``, which a true difference of exactly ``min_delta`` gives about half the time
at any n (the rule's own simulated rates are ``stats.simulation``'s).

A noninferiority claim (margin δ) is decided by the CI's lower bound lying above -δ: a one-sided test at
(1 - confidence) / 2. Its statement sizes that test at a true Δ of 0 (no loss at all), so the distance to detect is
the margin, not min_delta (which the claim does not use). Pure numpy/scipy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as scipy_stats

DEFAULT_POWER = 0.8
METHOD = ("Sakai's topic-set-size design for a two-sided paired t-test: normal approximation with the "
          "t-correction as the start, then the smallest n whose exact noncentral-t power reaches the target")
NONINFERIORITY_METHOD = ("Sakai's topic-set-size design for the noninferiority claim's one-sided paired t-test of "
                         "Δ > -margin at a true Δ of 0: normal approximation with the t-correction as the start, then "
                         "the smallest n whose exact noncentral-t power reaches the target")


def t_test_power(n: int, sd: float, delta: float, alpha: float, *, two_sided: bool = True) -> float:
    """Exact power of the paired t-test at level ``alpha`` on ``n`` queries at a true mean difference ``delta`` from
    the null (two-sided, or one-sided in ``delta``'s direction)."""
    if n < 2:
        return 0.0
    df = n - 1
    critical = scipy_stats.t.ppf(1.0 - alpha / 2.0 if two_sided else 1.0 - alpha, df)
    noncentrality = math.sqrt(n) * abs(delta) / sd
    far_tail = scipy_stats.nct.cdf(-critical, df, noncentrality) if two_sided else 0.0
    return float(scipy_stats.nct.sf(critical, df, noncentrality) + far_tail)


def topic_set_size(sd: float, min_delta: float, alpha: float, power: float = DEFAULT_POWER, *,
                   two_sided: bool = True) -> int:
    """The smallest number of queries at which the paired t-test reaches ``power`` at a true difference
    ``min_delta`` from the null, for per-query deltas with standard deviation ``sd`` (module docstring)."""
    if not min_delta > 0:
        raise ValueError(f"min_delta must be > 0 to size a query set, got {min_delta}")
    if not sd > 0:
        raise ValueError(f"the per-query deltas' standard deviation must be > 0, got {sd}")
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must lie in (0, 1), got {alpha} and {power}")
    z_alpha = scipy_stats.norm.ppf(1.0 - alpha / 2.0 if two_sided else 1.0 - alpha)
    z_beta = scipy_stats.norm.ppf(power)
    n = max(2, math.ceil(((z_alpha + z_beta) * sd / min_delta) ** 2 + z_alpha ** 2 / 2.0))
    while t_test_power(n, sd, min_delta, alpha, two_sided=two_sided) < power:
        n += 1
    while n > 2 and t_test_power(n - 1, sd, min_delta, alpha, two_sided=two_sided) >= power:
        n -= 1
    return n


def power_statement(deltas: ArrayLike, min_delta: float, confidence: float, power: float = DEFAULT_POWER, *,
                    margin: float | None = None) -> dict[str, Any]:
    """For one comparison's per-query deltas (NaN: undefined, left out): the queries that would give ``power`` at
    ``min_delta`` with their observed spread, as JSON-ready data. ``queries_needed`` is None, with ``why``, when
    the size is undefined (no ``min_delta``, fewer than 2 deltas, or no spread). With ``margin`` (a noninferiority
    claim's): the queries that would give its one-sided test of Δ > -margin ``power`` at a true Δ of 0 (module
    docstring); the statement then says ``claim`` and ``margin``."""
    values = np.asarray(deltas, dtype=np.float64)
    values = values[~np.isnan(values)]
    sd = float(values.std(ddof=1)) if len(values) > 1 else float("nan")
    noninferior = margin is not None
    alpha = (1.0 - confidence) / 2.0 if noninferior else 1.0 - confidence
    distance, sided = (margin, dict(two_sided=False)) if noninferior else (min_delta, {})
    statement: dict[str, Any] = {
        "method": NONINFERIORITY_METHOD if noninferior else METHOD, "power": power, "alpha": round(alpha, 6),
        "min_delta": min_delta, **({"claim": "noninferior", "margin": margin} if noninferior else {}),
        "sd": round(sd, 6) if math.isfinite(sd) else None, "queries": int(len(values)),
        "queries_needed": None, "more_queries": None, "power_now": None, "why": None}
    if not distance > 0:
        statement["why"] = (f"{'margin' if noninferior else 'min_delta'} is 0: no smallest difference worth "
                            "detecting to size the query set for")
    elif not math.isfinite(sd):
        statement["why"] = "fewer than 2 queries with a delta: no spread to size from"
    elif sd == 0:
        statement["why"] = "every query has the same delta: no spread to size from"
    else:
        needed = topic_set_size(sd, distance, alpha, power, **sided)
        statement.update(queries_needed=needed, more_queries=max(0, needed - len(values)),
                         power_now=round(t_test_power(len(values), sd, distance, alpha, **sided), 6))
    return statement
