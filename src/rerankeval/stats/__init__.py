"""Paired statistics over per-query deltas: bootstrap intervals (also per slice), significance with family-wise
correction, descriptions of the deltas, and the comparison and release verdict built on them.

Pure numpy/scipy in ``resampling``, ``significance`` and ``deltas``: no I/O, no pandas.
"""

from .deltas import Comparison, DeltaSummary, family_deltas, summarise_deltas
from .resampling import (DEFAULT_CONFIDENCE, DEFAULT_MIN_SLICE_SIZE, DEFAULT_N_SAMPLES, DEFAULT_SEED,
                         DEFAULT_TIE_TOL, DEFAULT_WORST_N, DELTA_PERCENTILES, Intervals, SliceIntervals,
                         bootstrap_ci, bootstrap_means, slice_ci)
from .significance import Significance, adjust_pvalues, randomisation_pvalues, significance, ttest_pvalues

__all__ = ["DEFAULT_CONFIDENCE", "DEFAULT_MIN_SLICE_SIZE", "DEFAULT_N_SAMPLES", "DEFAULT_SEED", "DEFAULT_TIE_TOL",
           "DEFAULT_WORST_N", "DELTA_PERCENTILES", "Comparison", "DeltaSummary", "Intervals", "Significance",
           "SliceIntervals", "adjust_pvalues", "bootstrap_ci", "bootstrap_means", "family_deltas", "randomisation_pvalues",
           "significance", "slice_ci", "summarise_deltas", "ttest_pvalues"]
