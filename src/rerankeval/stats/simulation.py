"""How often the release rule is wrong on this query set: its operating characteristics, simulated.

A trial keeps the query set, its slice labels and the shape of a challenger's observed per-query deltas, and
draws only what is unknown, the effect: the observed deltas are centred on 0 and each query's sign is flipped at
random (mean 0 in every slice, the spread, ties and outliers of the real ones), then a true effect is added to
every query. Each trial goes through ``stats.evidence.release_evidence`` and ``stats.verdict.decide``, the very code
of the verdict, with the rule's deterministic checks left out (``ReleaseRule.statistical_part``): fallbacks, latency
and unjudged rates, and a non-inferiority claim's saving, do not vary between trials. A non-inferiority claim is
simulated at a true effect of -margin (its ACCEPT rate there is the rule's error rate) and of 0 (its power).
Seeded: the same inputs give the same rates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .config import SUPERIOR, ReleaseClaim, ReleaseRule
from .evidence import deltas_family, release_evidence
from .resampling import CIMethod
from .verdict import Decision, Evidence, decide

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
    """(queries, trials): the centred observed deltas with independent random signs, a true effect of 0."""
    deltas = np.asarray(deltas, dtype=np.float64)
    rng = np.random.default_rng([seed, 0x51])
    signs = rng.integers(0, 2, size=(len(deltas), trials)) * 2 - 1
    return (deltas - deltas.mean())[:, None] * signs


def decisions(trial_deltas: np.ndarray, labels: Mapping[str, np.ndarray], rule: ReleaseRule, *, min_slice_size: int,
              n_samples: int, seed: int, confidence: float, method: CIMethod,
              claim: ReleaseClaim = SUPERIOR) -> np.ndarray:
    """The rule's decision (statistical part) for every column of ``trial_deltas`` (queries x trials)."""
    statistical = rule.statistical_part()
    claimed = claim.model_copy(update={"min_saving": None})
    n_labels = sum(len(np.unique(np.asarray(values))) for values in labels.values()) or 1
    chunk = max(1, _CHUNK_CELLS // (n_samples * n_labels))
    outcomes = []
    for start in range(0, trial_deltas.shape[1], chunk):
        evidence = release_evidence(deltas_family(trial_deltas[:, start:start + chunk], rule.primary_metric),
                                    labels, statistical,
                                    min_slice_size=min_slice_size, n_samples=n_samples, seed=seed,
                                    confidence=confidence, method=method)
        outcomes += [str(decide(statistical, Evidence(primary, slices), claimed).decision)
                     for primary, slices in evidence]
    return np.array(outcomes)


def operating_characteristics(deltas: np.ndarray, labels: Mapping[str, np.ndarray], rule: ReleaseRule,
                              effects: Sequence[float], *, trials: int, n_samples: int, seed: int, confidence: float,
                              method: CIMethod, min_slice_size: int,
                              claim: ReleaseClaim = SUPERIOR) -> list[OperatingPoint]:
    """Decision rates at each true ``effect`` for deltas shaped like ``deltas`` (one challenger's observed ones)
    under the rule for ``claim``."""
    null = sign_flip_trials(deltas, trials, seed)
    points = []
    for effect in effects:
        found = decisions(null + effect, labels, rule, min_slice_size=min_slice_size, n_samples=n_samples, seed=seed,
                          confidence=confidence, method=method, claim=claim)
        rate = {decision: float(np.mean(found == str(decision))) for decision in Decision}
        points.append(OperatingPoint(float(effect), trials, rate[Decision.ACCEPT], rate[Decision.REJECT],
                                     rate[Decision.INCONCLUSIVE]))
    return points

