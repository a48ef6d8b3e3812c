"""One paired inference behind every table of deltas, all of them ``analyze``'s: the release comparison (the compare
stage's and ``rerankeval compare``'s, ``stats.comparison``) and its answer to ``Pairs`` (`rerankeval diff`'s
revisions, ``stats.revisions``; a sweep's settings, ``policies.points``).

``paired_inference`` takes a family of paired comparisons (every member on the same queries, so on the same bootstrap
resamples) and each member's multiplicity group: a decision family (the release challengers against one baseline; the
changed systems of a pull request; the settings of one sweep) or None, descriptive. A decision family's members get the
simultaneous intervals and the adjusted p of one procedure (``stats.family``: 0 lies outside a member's interval
exactly when its adjusted p is below alpha); every descriptive member its own interval (``compare.ci_method``) and a p
adjusted with ``compare.correction`` over all descriptive members together. Beside them, each member's randomisation
and t-test p and its win/tie/loss summary. The callers differ in which pairs they form and how they name the families,
never in how a row's numbers are computed, so one pair's Δ, interval and p read the same wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from . import domains
from .config import CompareConfig
from .deltas import DeltaSummary
from .family import SimultaneousIntervals, simultaneous_intervals
from .resampling import Intervals


@dataclass(frozen=True, eq=False)
class PairedInference:
    """Per member of the family, in its order."""

    shown: Intervals
    """The interval each row shows: its decision family's simultaneous one, else its own."""
    p_adjusted: np.ndarray
    """In its decision family by the procedure of ``shown``, else over the descriptive members (NaN: untestable)."""
    p_randomisation: np.ndarray
    p_ttest: np.ndarray
    summaries: tuple[DeltaSummary, ...]
    own: Intervals
    """Each member's own interval, decided or not (the seed-aware intervals and the slices start from it)."""
    decided: tuple[int, ...]
    """The members in a decision family, in order: ``simultaneous`` is theirs."""
    simultaneous: SimultaneousIntervals | None

    @property
    def descriptive(self) -> list[int]:
        """The members in no decision family, in order."""
        decided = set(self.decided)
        return [j for j in range(len(self.p_adjusted)) if j not in decided]


def paired_inference(family: domains.PairedFamily, groups: Sequence[Hashable | None], settings: CompareConfig, *,
                     worst_n: int = 0) -> PairedInference:
    """Every member's shown interval, adjusted p, tests and summary (``groups[j]``: member j's decision family, None
    when it is descriptive; ``worst_n``: how many of the worst regressions each summary names)."""
    if len(groups) != len(family.comparisons):
        raise ValueError(f"{len(groups)} group labels for {len(family.comparisons)} comparisons")
    own = domains.family_intervals(family, **settings.resampling())
    tests = domains.family_significance(family, n_permutations=settings.permutations, seed=settings.seed,
                                        correction=settings.correction)
    decided = [j for j, group in enumerate(groups) if group is not None]
    descriptive = [j for j, group in enumerate(groups) if group is None]
    mean, low, high = own.mean.copy(), own.low.copy(), own.high.copy()
    p_adjusted = np.full(len(groups), np.nan)
    p_adjusted[descriptive] = domains.adjust_testable(tests.p_randomisation[descriptive], settings.correction)
    simultaneous = None
    if decided:
        simultaneous = simultaneous_intervals(family.subset(decided), [groups[j] for j in decided],
                                              **settings.resampling(with_method=False))
        mean[decided], low[decided], high[decided] = (simultaneous.intervals.mean, simultaneous.intervals.low,
                                                      simultaneous.intervals.high)
        p_adjusted[decided] = simultaneous.p_adjusted
    return PairedInference(
        shown=replace(own, mean=mean, low=low, high=high), p_adjusted=p_adjusted,
        p_randomisation=tests.p_randomisation, p_ttest=tests.p_ttest,
        summaries=tuple(domains.family_summaries(family, tie_tol=settings.tie_tolerance, worst_n=worst_n)),
        own=own, decided=tuple(decided), simultaneous=simultaneous)
