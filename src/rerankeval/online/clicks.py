"""Simulated users clicking on a result page: position-based, cascade and dependent-click models (``ClickModelConfig``).

Vectorised over sessions: a page is a row of grades (``NO_RESULT`` where the page has fewer results than its depth),
and every model returns a boolean click matrix of the same shape.
"""

from __future__ import annotations

import numpy as np

from .config import ClickModelConfig

NO_RESULT = -1
"""The grade of an empty slot: never clicked, and a scanning user stops there."""


def grade_probabilities(pair: list[float], grades: np.ndarray, top_grade: int) -> np.ndarray:
    """``pair[0]`` at grade 0 rising linearly to ``pair[1]`` at ``top_grade`` (a grade above it as ``top_grade``);
    0 on an empty slot. Each grade's probability is computed once and gathered per slot: clipping, scaling and
    selecting over every slot of every session instead made the demo's online stage 17.8 s against 16.5 s
    (Intel Xeon, 2 cores, `sh stages/python -m rerankeval.pipeline online`, twice each; online.json identical)."""
    levels = np.arange(top_grade + 1) / max(top_grade, 1)
    table = np.concatenate([[0.0], pair[0] + (pair[1] - pair[0]) * levels])  # index 0: NO_RESULT
    return np.take(table, grades + 1, mode="clip")


def simulate_clicks(model: ClickModelConfig, grades: np.ndarray, top_grade: int,
                    rng: np.random.Generator) -> np.ndarray:
    """(sessions, depth) clicks of one simulated user per row of ``grades`` (the shown results' qrels grades)."""
    attraction = grade_probabilities(model.click, grades, top_grade)
    draws = rng.random(grades.shape)
    if model.kind == "pbm":
        examined = (1.0 / np.arange(1, grades.shape[1] + 1)) ** model.position_bias
        return draws < attraction * examined
    attracted = draws < attraction
    if model.kind == "cascade":  # the first attractive result is clicked, and the user leaves
        first = attracted & (np.cumsum(attracted, axis=1) == 1)
        return first
    stop = grade_probabilities(model.stop, grades, top_grade)
    stops = rng.random(grades.shape) < stop
    clicks = np.zeros(grades.shape, dtype=bool)
    scanning = np.ones(grades.shape[0], dtype=bool)
    for position in range(grades.shape[1]):
        scanning &= grades[:, position] != NO_RESULT
        clicks[:, position] = scanning & attracted[:, position]
        scanning &= ~(clicks[:, position] & stops[:, position])
    return clicks


def session_measure(clicks: np.ndarray, measure: str) -> np.ndarray:
    """One value per session of an A/B test's click measure (``OnlineConfig.ab_metric``)."""
    if measure == "clicks":
        return clicks.sum(axis=1).astype(np.float64)
    clicked = clicks.any(axis=1)
    if measure == "any_click":
        return clicked.astype(np.float64)
    first = np.argmax(clicks, axis=1)
    return np.where(clicked, 1.0 / (first + 1), 0.0)
