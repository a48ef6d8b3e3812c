"""How often the release rule is wrong on this query set: its operating characteristics, simulated.

A trial keeps the query set, its slice labels and the shape of a challenger's observed per-query deltas, and
draws only what is unknown, the effect: the observed deltas are centred on 0 and each query's sign is flipped at
random (mean 0 in every slice, the spread, ties and outliers of the real ones), then a true effect is added to
every query. Each trial goes through ``stats.evidence.release_evidence`` and ``stats.verdict.decide``, the very code
of the verdict, with the rule's deterministic checks left out (``ReleaseRule.statistical_part``): fallbacks, latency
and unjudged rates, and a non-inferiority claim's saving, do not vary between trials. A non-inferiority claim is
simulated at a true effect of -margin (its ACCEPT rate there is the rule's error rate) and of 0 (its power).
The members of a multiplicity family are simulated together (``family_characteristics``: one sign per query and
trial for every member, and the family's simultaneous intervals), so the rates are the family's: how often some
member is wrongly ACCEPTed or REJECTed. Seeded: the same inputs give the same rates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .config import SUPERIOR, ReleaseClaim, ReleaseRule
from .evidence import deltas_family, release_evidence
from .resampling import CIMethod
from .verdict import Decision, Evidence, decide

NO_SPREAD = ("every query has the same delta (a run identical to the baseline's, or shifted alike on every query): "
             "the trials keep the observed spread, so the simulated rates describe no real alternative")
SIMULATED_DELTAS = ("each challenger's observed per-query deltas of the primary metric, centred on 0, each query's "
                    "sign flipped at random, plus the true effect on every query")

# Trials per release_evidence call: bounds the slice replicates held at once (slices x samples x chunk floats).
_CHUNK_CELLS = 1 << 22


@dataclass(frozen=True)
class OperatingPoint:
    """Shares of the trials with a true effect ``effect`` (on every query) that end in each decision."""

    effect: float
    trials: int
    accept: float
    reject: float
    inconclusive: float

    def to_dict(self) -> dict[str, float | int]:
        return {"effect": round(self.effect, 6), "trials": self.trials, "accept": round(self.accept, 4),
                "reject": round(self.reject, 4), "inconclusive": round(self.inconclusive, 4)}


def sign_flip_trials(deltas: np.ndarray, trials: int, seed: int) -> np.ndarray:
    """(queries, trials, members): each member's centred observed deltas, one random sign per query and trial shared
    by every member (which keeps the members' correlation), a true effect of 0. A 1-D ``deltas`` (one member) gives
    (queries, trials)."""
    deltas = np.asarray(deltas, dtype=np.float64)
    matrix = deltas[:, None] if deltas.ndim == 1 else deltas
    rng = np.random.default_rng([seed, 0x51])
    signs = rng.integers(0, 2, size=(len(matrix), trials)) * 2 - 1
    cube = (matrix - matrix.mean(axis=0))[:, None, :] * signs[:, :, None]
    return cube[:, :, 0] if deltas.ndim == 1 else cube


def decisions(trial_deltas: np.ndarray, labels: Mapping[str, np.ndarray], rule: ReleaseRule, *, min_slice_size: int,
              n_samples: int, seed: int, confidence: float, method: CIMethod,
              claim: ReleaseClaim | Sequence[ReleaseClaim] = SUPERIOR) -> np.ndarray:
    """The rule's decision (statistical part) for every trial of ``trial_deltas``: (queries, trials) gives one
    decision per trial; (queries, trials, members) one per trial and member, the members of a trial forming one
    multiplicity family (``stats.family``), each deciding its own ``claim`` (one, or one per member)."""
    one_member = trial_deltas.ndim == 2
    cube = trial_deltas[:, :, None] if one_member else trial_deltas
    n_queries, n_trials, n_members = cube.shape
    claims = [claim] * n_members if isinstance(claim, ReleaseClaim) else list(claim)
    statistical = rule.statistical_part()
    claims = [found.model_copy(update={"min_saving": None}) for found in claims]
    n_labels = sum(len(np.unique(np.asarray(values))) for values in labels.values()) or 1
    chunk = max(1, _CHUNK_CELLS // (n_samples * n_labels * n_members))
    outcomes = np.empty((n_trials, n_members), dtype=object)
    for start in range(0, n_trials, chunk):
        stop = min(start + chunk, n_trials)
        columns = cube[:, start:stop, :].reshape(n_queries, -1)  # trial-major: trial t's members are adjacent
        groups = np.repeat(np.arange(start, stop), n_members)
        evidence = release_evidence(deltas_family(columns, rule.primary_metric), labels, statistical, groups,
                                    min_slice_size=min_slice_size, n_samples=n_samples, seed=seed,
                                    confidence=confidence, method=method)
        for k, (primary, slices) in enumerate(evidence):
            trial, member = divmod(k, n_members)
            outcomes[start + trial, member] = str(decide(statistical, Evidence(primary, slices),
                                                         claims[member]).decision)
    return outcomes[:, 0].astype(str) if one_member else outcomes.astype(str)


def _point(effect: float, found: np.ndarray) -> OperatingPoint:
    rate = {decision: float(np.mean(found == str(decision))) for decision in Decision}
    return OperatingPoint(float(effect), len(found), rate[Decision.ACCEPT], rate[Decision.REJECT],
                          rate[Decision.INCONCLUSIVE])


def operating_characteristics(deltas: np.ndarray, labels: Mapping[str, np.ndarray], rule: ReleaseRule,
                              effects: Sequence[float], *, trials: int, n_samples: int, seed: int, confidence: float,
                              method: CIMethod, min_slice_size: int,
                              claim: ReleaseClaim = SUPERIOR) -> list[OperatingPoint]:
    """Decision rates at each true ``effect`` for deltas shaped like ``deltas`` (one challenger's observed ones,
    alone in its family) under the rule for ``claim``."""
    null = sign_flip_trials(np.ravel(deltas), trials, seed)
    return [_point(effect, decisions(null + effect, labels, rule, min_slice_size=min_slice_size, n_samples=n_samples,
                                     seed=seed, confidence=confidence, method=method, claim=claim))
            for effect in effects]


@dataclass(frozen=True)
class FamilyCharacteristics:
    """One family's simulated error rates: per member its rates where its claim is false (``at_null``: a true
    effect of 0 for superiority, -margin for non-inferiority) and where it holds (``at_alternative``: min_delta,
    0), every member at once; and the family-wise rate of trials in which some member is wrongly decided."""

    at_null: tuple[OperatingPoint, ...]
    at_alternative: tuple[OperatingPoint, ...]
    any_false_accept: float
    any_false_reject: float
    any_error: float
    trials: int

    def family_record(self) -> dict[str, float | int]:
        return {"trials": self.trials, "size": len(self.at_null), "any_false_accept": round(self.any_false_accept, 4),
                "any_false_reject": round(self.any_false_reject, 4), "any_error": round(self.any_error, 4)}


def family_characteristics(deltas: np.ndarray, labels: Mapping[str, np.ndarray], rule: ReleaseRule,
                           claims: Sequence[ReleaseClaim], *, trials: int, n_samples: int, seed: int,
                           confidence: float, method: CIMethod, min_slice_size: int) -> FamilyCharacteristics:
    """The family's operating characteristics (``deltas``: queries x members, each member's observed per-query
    deltas; ``claims``: each member's). A false REJECT is a REJECT of a superiority member at a true effect of 0 (a
    non-inferiority member at -margin is truly worse)."""
    null = sign_flip_trials(np.asarray(deltas, dtype=np.float64).reshape(len(deltas), -1), trials, seed)
    superior = np.array([claim.claim == "superior" for claim in claims])
    boundary = np.array([0.0 if claim.claim == "superior" else -claim.margin for claim in claims])
    holds = np.array([rule.min_delta if claim.claim == "superior" else 0.0 for claim in claims])
    stats = dict(min_slice_size=min_slice_size, n_samples=n_samples, seed=seed, confidence=confidence, method=method,
                 claim=claims)
    at_null = decisions(null + boundary, labels, rule, **stats)
    at_alternative = decisions(null + holds, labels, rule, **stats)
    false_accept = (at_null == str(Decision.ACCEPT)).any(axis=1)
    false_reject = ((at_null == str(Decision.REJECT)) & superior).any(axis=1)
    return FamilyCharacteristics(
        tuple(_point(boundary[j], at_null[:, j]) for j in range(len(claims))),
        tuple(_point(holds[j], at_alternative[:, j]) for j in range(len(claims))),
        float(false_accept.mean()), float(false_reject.mean()), float((false_accept | false_reject).mean()), trials)
