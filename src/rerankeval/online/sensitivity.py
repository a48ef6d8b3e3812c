"""How many impressions an online experiment needs to see the offline difference, per challenger, before launch.

For a challenger A and the baseline B, simulated users (``clicks``) meet (1) interleaved pages of A and B
(``interleaving``; the outcome of an impression is +1, -1 or a tie), (2) an A/B test, half the impressions shown A's
page and half B's, compared on a click measure, and beside them (3) the paired offline comparison on judged queries
(the per-query deltas of the primary metric). Each query is equally likely to be asked.

Sizing: the per-impression outcome distribution is estimated by ``sessions_per_query`` simulated sessions of every
query; an interleaving experiment's test is the exact two-sided sign test on wins against losses (ties left out), an
A/B test's the two-sample z-test, the offline comparison's the paired t-test (``stats.power``). The impressions needed
at the stated power come from each test's power function (the sign test's exact one, the z-test's normal
approximation, the t-test's exact one); each is then checked by simulating ``check_trials`` experiments of that size
(the achieved power); and two nulls (``null_check``): the real pairs with the sides' labels drawn at random in
every impression (the test's calibration), and the real pairs before users whose clicks ignore the grade (a method's
bias); and the bias itself (``bias_check``): the preference grade-blind users give each real pair, with its interval,
and the false detection rate it implies. Seeded: the same inputs give the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from ..stats.power import t_test_power, topic_set_size
from .clicks import NO_RESULT, session_measure, simulate_clicks
from .config import ClickModelConfig, OnlineConfig
from .interleaving import ABSENT, INTERLEAVE, METHODS, credit

CURVE_IMPRESSIONS = tuple(int(round(25 * 2 ** (step / 2))) for step in range(23))
"""The power curve's points: 25 to 51,200 impressions (or judged queries), two per doubling."""
_CHUNK_SESSIONS = 1 << 18
"""Sessions simulated at once (bounds the click matrices held in memory)."""


@dataclass(frozen=True)
class PairPages:
    """Every interleaved page of one pair, one method, padded to (queries, pages, depth): grades shown, each
    position's side and ranks (``interleaving.Page``), and each query's cumulative page probabilities."""

    grades: np.ndarray
    team: np.ndarray
    rank_a: np.ndarray
    rank_b: np.ndarray
    cumulative: np.ndarray

    @cached_property
    def _offset_cumulative(self) -> np.ndarray:
        """``cumulative`` with each query's row number added, flattened: one sorted array, so that a page is drawn
        for any number of sessions by one binary search each. Comparing each draw with every page of its row gave the
        same pages, slower with probabilistic interleaving's 128 pages a pair: the online stage on the demo took
        19.0 s against 14.9-15.8 s (AMD EPYC, 2 cores, `python -m rerankeval.pipeline online`, twice each;
        online.json identical)."""
        return (self.cumulative + np.arange(len(self.cumulative))[:, None]).ravel()

    @classmethod
    def build(cls, method: str, a: Sequence[Sequence[str]], b: Sequence[Sequence[str]],
              grades: Sequence[Mapping[str, int]], depth: int) -> PairPages:
        pages = [INTERLEAVE[method](first, second, depth) for first, second in zip(a, b)]
        width = max(len(found) for found in pages)
        shape = (len(pages), width, depth)
        arrays = {name: np.full(shape, fill, dtype=np.int32) for name, fill in
                  (("grades", NO_RESULT), ("team", 0), ("rank_a", ABSENT), ("rank_b", ABSENT))}
        cumulative = np.ones((len(pages), width))
        for query, found in enumerate(pages):
            cumulative[query, :len(found)] = np.cumsum([page.probability for page in found])
            for number, page in enumerate(found):
                size = len(page.shown)
                arrays["grades"][query, number, :size] = [_grade(grades[query], doc) for doc in page.shown]
                arrays["team"][query, number, :size] = page.team
                arrays["rank_a"][query, number, :size] = page.rank_a
                arrays["rank_b"][query, number, :size] = page.rank_b
        return cls(cumulative=cumulative, **arrays)

    def outcomes(self, method: str, queries: np.ndarray, model: ClickModelConfig, top_grade: int,
                 rng: np.random.Generator) -> np.ndarray:
        """One outcome per session, session i asking ``queries[i]``: a page drawn by its probability, clicks."""
        width = self.cumulative.shape[1]
        drawn = np.searchsorted(self._offset_cumulative, queries + rng.random(len(queries)), side="right")
        pages = np.minimum(drawn - queries * width, width - 1)
        clicks = simulate_clicks(model, self.grades[queries, pages], top_grade, rng)
        return credit(method, clicks, self.team[queries, pages], self.rank_a[queries, pages],
                      self.rank_b[queries, pages])


def ranked_lists(run: pd.DataFrame) -> dict[str, list[str]]:
    """A run as ``online_sizing`` reads it: query -> doc ids in rank order."""
    return {query: found.sort_values("rank", kind="stable")["doc_id"].tolist()
            for query, found in run.groupby("query_id")}


def graded(qrels: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Qrels as ``online_sizing`` reads them: query -> doc -> grade."""
    return {query: dict(zip(found["doc_id"], found["relevance"].astype(int)))
            for query, found in qrels.groupby("query_id")}


def _grade(grades: Mapping[str, int], doc: str) -> int:
    """A shown result's grade for the click model: unjudged and negative grades (trec_eval's "in the pool, not judged")
    are 0, never the empty slot's NO_RESULT."""
    return max(int(grades.get(doc, 0)), 0)


def shown_grades(rankings: Sequence[Sequence[str]], grades: Sequence[Mapping[str, int]], depth: int) -> np.ndarray:
    """(queries, depth): the grades of each ranking's top ``depth`` (``NO_RESULT`` past its end)."""
    found = np.full((len(rankings), depth), NO_RESULT, dtype=np.int32)
    for query, ranking in enumerate(rankings):
        top = list(ranking[:depth])
        found[query, :len(top)] = [_grade(grades[query], doc) for doc in top]
    return found


def _chunked(total: int, simulate) -> np.ndarray:
    return np.concatenate([simulate(start, min(total, start + _CHUNK_SESSIONS))
                           for start in range(0, total, _CHUNK_SESSIONS)]) if total else np.zeros(0)


def sign_test_pvalues(wins: np.ndarray, losses: np.ndarray) -> np.ndarray:
    """The exact two-sided sign test of wins against losses (ties left out): 1 when there is no decisive one."""
    wins, losses = np.asarray(wins), np.asarray(losses)
    decisive = wins + losses
    tail = scipy_stats.binom.cdf(np.minimum(wins, losses), np.maximum(decisive, 1), 0.5)
    return np.where(decisive > 0, np.minimum(1.0, 2.0 * tail), 1.0)


def _z(alpha: float, power: float) -> tuple[float, float]:
    return float(scipy_stats.norm.ppf(1.0 - alpha / 2.0)), float(scipy_stats.norm.ppf(power))


def _rejection_bound(decisive: np.ndarray, alpha: float) -> np.ndarray:
    """For each number of decisive impressions, the largest min(wins, losses) the exact two-sided sign test rejects
    at level ``alpha`` (-1: none)."""
    size = np.maximum(decisive, 1)
    bound = scipy_stats.binom.ppf(alpha / 2.0, size, 0.5)
    bound = np.where(2.0 * scipy_stats.binom.cdf(bound, size, 0.5) < alpha, bound, bound - 1)
    return np.where(decisive > 0, bound, -1)


def sign_test_power(impressions: int, win: float, loss: float, alpha: float) -> float:
    """The exact power of the sign test on ``impressions`` i.i.d. impressions with these win and loss shares: the
    decisive ones are binomial, and given them the wins (exact, so the test's conservatism is in it). The sum runs
    over the decisive counts within 10 standard deviations of their mean (the rest weighs under 1e-20), so its cost
    grows with the square root of the impressions."""
    share_decisive = win + loss
    spread = 10 * math.sqrt(impressions * share_decisive * (1 - share_decisive)) + 10
    middle = impressions * share_decisive
    decisive = np.arange(max(0, math.floor(middle - spread)), min(impressions, math.ceil(middle + spread)) + 1)
    weight = scipy_stats.binom.pmf(decisive, impressions, share_decisive)
    bound = _rejection_bound(decisive, alpha)
    share = win / share_decisive if share_decisive > 0 else 0.5
    rejected = np.where(bound >= 0, scipy_stats.binom.cdf(bound, decisive, share)
                        + scipy_stats.binom.sf(decisive - bound - 1, decisive, share), 0.0)
    return float(np.clip((weight * rejected).sum(), 0.0, 1.0))


def sign_test_size(win: float, loss: float, alpha: float, power: float) -> int | None:
    """The fewest impressions at which the sign test reaches ``power`` (``sign_test_power``; searched from the
    normal approximation); None when win and loss are equal (no difference to detect)."""
    decisive = win + loss
    if decisive <= 0 or win == loss:
        return None
    share = win / decisive
    z_alpha, z_beta = _z(alpha, power)
    guess = max(1, math.ceil(((0.5 * z_alpha + z_beta * math.sqrt(share * (1 - share))) / abs(share - 0.5)) ** 2
                            / decisive))
    low, high = max(1, guess // 2), guess
    while sign_test_power(high, win, loss, alpha) < power:
        low, high = high, high * 2
    while high - low > 1:  # the smallest size with enough power (bisection; the exact power's sawtooth is small)
        middle = (low + high) // 2
        low, high = (low, middle) if sign_test_power(middle, win, loss, alpha) >= power else (middle, high)
    return high


def ab_size(difference: float, variance_sum: float, alpha: float, power: float) -> int | None:
    """Impressions (both arms together, half each) at which the z-test reaches ``power``."""
    if difference == 0 or variance_sum <= 0:
        return None
    z_alpha, z_beta = _z(alpha, power)
    return max(2, 2 * math.ceil(variance_sum * (z_alpha + z_beta) ** 2 / difference ** 2))


def ab_power(impressions: int, difference: float, variance_sum: float, alpha: float) -> float:
    if difference == 0 or variance_sum <= 0:
        return 0.0
    return float(scipy_stats.norm.cdf(abs(difference) / math.sqrt(2 * variance_sum / impressions)
                                      - _z(alpha, 0.5)[0]))


def _rng(config: OnlineConfig, *keys: int) -> np.random.Generator:
    return np.random.default_rng([config.seed, *keys])


@dataclass
class PairSimulation:
    """One challenger (side A) against the baseline (side B) on the evaluated queries."""

    pages: dict[str, PairPages]
    page_a: np.ndarray
    page_b: np.ndarray
    top_grade: int
    config: OnlineConfig
    model: ClickModelConfig
    """The simulated users (``config.click_model``; the null check's grade-blind ones replace it)."""
    same_pages: bool
    """Whether both sides show every query the same documents in the same order (their top ``depth``): then every
    method's expected preference and the A/B difference are exactly 0, and what a simulation finds is its noise."""

    @classmethod
    def build(cls, challenger: Sequence[Sequence[str]], baseline: Sequence[Sequence[str]],
              grades: Sequence[Mapping[str, int]], top_grade: int, config: OnlineConfig) -> PairSimulation:
        depth = config.depth
        same_pages = all(list(a[:depth]) == list(b[:depth]) for a, b in zip(challenger, baseline, strict=True))
        return cls({method: PairPages.build(method, challenger, baseline, grades, depth) for method in METHODS},
                   shown_grades(challenger, grades, depth), shown_grades(baseline, grades, depth), top_grade, config,
                   config.click_model, same_pages)

    @property
    def queries(self) -> int:
        return len(self.page_a)

    def interleaved(self, method: str, queries: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return _chunked(len(queries), lambda start, stop: self.pages[method].outcomes(
            method, queries[start:stop], self.model, self.top_grade, rng))

    def ab(self, page: np.ndarray, queries: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return _chunked(len(queries), lambda start, stop: session_measure(
            simulate_clicks(self.model, page[queries[start:stop]], self.top_grade, rng),
            self.config.ab_metric))

    def every_query(self) -> np.ndarray:
        return np.repeat(np.arange(self.queries), self.config.sessions_per_query)


def size_pair(simulation: PairSimulation, deltas: np.ndarray, pair: int) -> dict:
    """The sizing of one challenger (module docstring), JSON-ready. A challenger that shows the baseline's pages
    (``PairSimulation.same_pages``) needs no number of impressions: none can tell the two apart. Sizing the
    simulation's noise instead asked for billions (SciFact's blend fitted to weight 0: 3,246,249,031 for
    team-draft), and the online stage took 132.2 s there against 16.0 s without it (Intel Xeon, 2 cores)."""
    config = simulation.config
    alpha, power, sessions = config.alpha, config.power, simulation.every_query()
    found: dict = {"same_pages": simulation.same_pages, "interleaving": {},
                   "curve": {"impressions": list(CURVE_IMPRESSIONS)}}
    for number, method in enumerate(METHODS):
        outcomes = simulation.interleaved(method, sessions, _rng(config, pair, 1, number))
        win, loss = float(np.mean(outcomes == 1)), float(np.mean(outcomes == -1))
        needed = None if simulation.same_pages else sign_test_size(win, loss, alpha, power)
        found["interleaving"][method] = {
            "win": round(win, 6), "loss": round(loss, 6), "tie": round(1 - win - loss, 6),
            "preference": round(win - loss, 6), "impressions_needed": needed,
            "achieved_power": _achieved_interleaving(simulation, method, needed, np.sign(win - loss), pair, number)}
        found["curve"][method] = [round(sign_test_power(n, win, loss, alpha), 4) for n in CURVE_IMPRESSIONS]
    shown = {side: simulation.ab(page, sessions, _rng(config, pair, 2, side))
             for side, page in ((0, simulation.page_a), (1, simulation.page_b))}
    difference = float(shown[0].mean() - shown[1].mean())
    variance_sum = float(shown[0].var() + shown[1].var())
    needed = None if simulation.same_pages else ab_size(difference, variance_sum, alpha, power)
    found["ab"] = {"metric": config.ab_metric, "challenger": round(float(shown[0].mean()), 6),
                   "baseline": round(float(shown[1].mean()), 6), "difference": round(difference, 6),
                   "impressions_needed": needed,
                   "achieved_power": _achieved_ab(simulation, needed, np.sign(difference), pair)}
    found["curve"]["ab"] = [round(ab_power(n, difference, variance_sum, alpha), 4) for n in CURVE_IMPRESSIONS]
    found["offline"] = _offline(deltas, alpha, power)
    found["curve"]["offline"] = [_offline_power(n, found["offline"], alpha) for n in CURVE_IMPRESSIONS]
    directions = {np.sign(found["offline"]["delta"]), *(np.sign(found["interleaving"][m]["preference"])
                                                       for m in METHODS), np.sign(difference)}
    found["directions_agree"] = len(directions - {0}) <= 1
    return found


def _offline(deltas: np.ndarray, alpha: float, power: float) -> dict:
    deltas = deltas[~np.isnan(deltas)]
    if not len(deltas):  # no query where the primary metric is defined for both
        return {"delta": 0.0, "sd": 0.0, "queries": 0, "judged_queries_needed": None}
    mean, sd = float(deltas.mean()), float(deltas.std(ddof=1)) if len(deltas) > 1 else 0.0
    needed = topic_set_size(sd, abs(mean), alpha, power) if mean != 0 and sd > 0 else None
    return {"delta": round(mean, 6), "sd": round(sd, 6), "queries": int(len(deltas)), "judged_queries_needed": needed}


def _offline_power(queries: int, offline: dict, alpha: float) -> float:
    if not offline["judged_queries_needed"]:
        return 0.0
    power = t_test_power(queries, offline["sd"], offline["delta"], alpha)
    return round(power, 4) if math.isfinite(power) else 1.0  # scipy's nct gives NaN far in the tail: power 1 there


def _achieved_interleaving(simulation: PairSimulation, method: str, needed: int | None, direction: float, pair: int,
                           number: int) -> float | None:
    config = simulation.config
    if needed is None or needed > config.check_max_impressions:
        return None
    rng = _rng(config, pair, 3, number)
    queries = rng.integers(simulation.queries, size=needed * config.check_trials)
    outcomes = simulation.interleaved(method, queries, rng).reshape(config.check_trials, needed)
    wins, losses = (outcomes == 1).sum(axis=1), (outcomes == -1).sum(axis=1)
    detected = (sign_test_pvalues(wins, losses) < config.alpha) & (np.sign(wins - losses) == direction)
    return round(float(detected.mean()), 4)


def _achieved_ab(simulation: PairSimulation, needed: int | None, direction: float, pair: int) -> float | None:
    config = simulation.config
    if needed is None or needed > config.check_max_impressions:
        return None
    rng, half = _rng(config, pair, 4), needed // 2
    values = [simulation.ab(page, rng.integers(simulation.queries, size=half * config.check_trials), rng)
              .reshape(config.check_trials, half) for page in (simulation.page_a, simulation.page_b)]
    difference = values[0].mean(axis=1) - values[1].mean(axis=1)
    error = np.sqrt((values[0].var(axis=1, ddof=1) + values[1].var(axis=1, ddof=1)) / half)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(error > 0, difference / error, 0.0)
    detected = (np.abs(z) > _z(config.alpha, 0.5)[0]) & (np.sign(difference) == direction)
    return round(float(detected.mean()), 4)


def grade_blind(model: ClickModelConfig) -> ClickModelConfig:
    """The same user whose click and stop probabilities do not depend on the grade (each its pair's mean): clicks
    that prefer neither ranking, whatever the rankings."""
    click, stop = sum(model.click) / 2, sum(model.stop) / 2
    return ClickModelConfig(kind=model.kind, click=[click, click], stop=[stop, stop],
                            position_bias=model.position_bias)


def _detections(simulation: PairSimulation, method: str, count: int, config: OnlineConfig, rng: np.random.Generator,
                flip: bool) -> tuple[int, float]:
    """(null experiments detected, the test's exact size at their share of decisive impressions) for ``count``
    experiments of ``null_impressions`` impressions each."""
    queries = rng.integers(simulation.queries, size=count * config.null_impressions)
    labels = rng.integers(0, 2, size=len(queries)) * 2 - 1 if flip else 1  # which side is called A, per impression
    outcomes = (simulation.interleaved(method, queries, rng) * labels).reshape(count, config.null_impressions)
    pvalues = sign_test_pvalues((outcomes == 1).sum(axis=1), (outcomes == -1).sum(axis=1))
    half_decisive = float(np.mean(outcomes != 0)) / 2
    return int((pvalues < config.alpha).sum()), sign_test_power(config.null_impressions, half_decisive,
                                                                half_decisive, config.alpha)


def null_check(simulations: Sequence[PairSimulation], config: OnlineConfig) -> dict:
    """Two nulls per interleaving method, each on ``null_pairs`` pairs taken in turn from the challengers' rankings,
    each pair an experiment of ``null_impressions`` impressions, its false detections with their exact 95% interval
    and the sign test's exact size at those pairs' shares of decisive impressions.

    ``labels``: the real users, the sides' labels drawn at random in every impression: neither side can be better,
    by construction, so this checks the test's calibration only. ``grade_blind``: users whose clicks ignore the grade
    (``grade_blind``) on the real pairs, labels kept: a method that credits such clicks to one side more than the
    other is biased (balanced interleaving is, for some pairs of rankings). Each holds when the interval's low end is
    at most ``alpha``."""
    found = {"pairs": config.null_pairs, "impressions": config.null_impressions, "alpha": config.alpha}
    for number, method in enumerate(METHODS):
        found[method] = {}
        for kind, flip in (("labels", True), ("grade_blind", False)):
            detected, sizes = 0, []
            for pair, simulation in enumerate(simulations):
                count = len(range(pair, config.null_pairs, len(simulations)))
                users = simulation if flip else replace(simulation, model=grade_blind(simulation.model))
                found_here, size = _detections(users, method, count, config, _rng(config, pair, 5 + int(not flip),
                                                                                   number), flip)
                detected += found_here
                sizes += [size] * count
            interval = scipy_stats.binomtest(detected, config.null_pairs).proportion_ci(0.95, method="exact")
            found[method][kind] = {"detected": detected, "rate": round(detected / config.null_pairs, 4),
                                   "low": round(float(interval.low), 4), "high": round(float(interval.high), 4),
                                   "exact_size": round(float(np.mean(sizes)), 4),
                                   "holds": bool(interval.low <= config.alpha)}
    return found


def bias_check(simulations: Mapping[str, PairSimulation], config: OnlineConfig) -> dict:
    """Per interleaving method and challenger: the preference (wins minus losses per impression) that users whose
    clicks ignore the grade (``grade_blind``) give the pair, over ``sessions_per_query`` sessions of every query, with
    its interval (normal, from the sessions' outcome variance; simultaneous at 1 - ``alpha`` over a method's pairs,
    Bonferroni, so a method is called biased on some pair by chance at most ``alpha`` of the time), and the false
    detection rate that preference gives an experiment of ``null_impressions`` impressions (``sign_test_power``,
    exact, at the estimated win and loss shares). An unbiased method's preference is 0 and its rate about the sign
    test's size; this measures a method's bias on each real pair with every simulated impression, where the null
    check's detections count only the experiments that cross the threshold. ``biased``: the interval excludes 0;
    ``material``: biased, and the rate it implies is above ``alpha``. Team-draft is unbiased when both rankings fill
    the page; where one runs out, the other takes the rest of the page, and users who click anywhere favour it."""
    z = _z(config.alpha / max(len(simulations), 1), 0.5)[0]
    found: dict = {}
    for number, method in enumerate(METHODS):
        found[method] = {}
        for pair, (system, simulation) in enumerate(simulations.items()):
            blind = replace(simulation, model=grade_blind(simulation.model))
            outcomes = blind.interleaved(method, blind.every_query(), _rng(config, pair, 7, number))
            win, loss = float(np.mean(outcomes == 1)), float(np.mean(outcomes == -1))
            preference = win - loss
            error = float(np.std(outcomes) / math.sqrt(len(outcomes))) if len(outcomes) else 0.0
            low, high = preference - z * error, preference + z * error
            false_detection = sign_test_power(config.null_impressions, win, loss, config.alpha)
            biased = bool(low > 0 or high < 0)
            found[method][system] = {
                "preference": round(preference, 6), "low": round(low, 6), "high": round(high, 6),
                "false_detection": round(false_detection, 4), "biased": biased,
                "material": biased and false_detection > config.alpha}
    return found


def _top_grade(grades: Sequence[Mapping[str, int]]) -> int:
    return max([max(found.values(), default=0) for found in grades] + [1])


def pair_simulations(rankings: Mapping[str, Mapping[str, Sequence[str]]], qrels: Mapping[str, Mapping[str, int]],
                     challengers: Sequence[str], baseline: str, query_ids: Sequence[str],
                     config: OnlineConfig) -> dict[str, PairSimulation]:
    """Each challenger (side A) against ``baseline`` (side B) on ``query_ids`` (``online_sizing``'s arguments)."""
    grades = [dict(qrels.get(query, {})) for query in query_ids]
    top_grade = _top_grade(grades)
    ranked = {system: [list(rankings[system].get(query, ())) for query in query_ids]
              for system in [baseline, *challengers]}
    return {system: PairSimulation.build(ranked[system], ranked[baseline], grades, top_grade, config)
            for system in challengers}


def online_sizing(rankings: Mapping[str, Mapping[str, Sequence[str]]], qrels: Mapping[str, Mapping[str, int]],
                  deltas: Mapping[str, np.ndarray], baseline: str, query_ids: Sequence[str],
                  config: OnlineConfig) -> dict:
    """Every challenger in ``deltas`` (its per-query primary-metric deltas against ``baseline``, in ``query_ids``
    order) sized against ``baseline``; ``rankings``: system -> query -> doc ids in rank order; ``qrels``: query ->
    doc -> grade."""
    simulations = pair_simulations(rankings, qrels, list(deltas), baseline, query_ids, config)
    top_grade = _top_grade([qrels.get(query, {}) for query in query_ids])
    challengers = {system: size_pair(simulation, np.asarray(deltas[system], dtype=np.float64), pair)
                   for pair, (system, simulation) in enumerate(simulations.items())}
    return {"baseline": baseline, "queries": len(query_ids), "top_grade": top_grade, "depth": config.depth,
            "alpha": config.alpha, "power": config.power, "seed": config.seed,
            "click_model": config.click_model.to_dict(), "sessions_per_query": config.sessions_per_query,
            "ab_metric": config.ab_metric, "check_trials": config.check_trials,
            "check_max_impressions": config.check_max_impressions,
            "challengers": challengers,
            "null_check": null_check(list(simulations.values()), config) if simulations else None,
            "bias_check": bias_check(simulations, config) if simulations else None}
