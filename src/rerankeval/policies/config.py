"""The ``policies`` block of params.yaml: which parameters to sweep over stored scores, and with what values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field, model_validator

from ..core.config import StrictConfig
from ..eval.measure_names import MeasureName

class SweepConfig(StrictConfig):
    system: str
    """A system under ``systems``."""
    parameter: str
    """``depth`` of any system, or a setting of a composite; dotted when nested (``rules.0.when.margin.at_least``)."""
    values: list[Any] = Field(min_length=1)
    label: str | None = None
    """The policy's name on the plot; default ``<system>: <parameter>``."""


class PoliciesConfig(StrictConfig):
    sweeps: list[SweepConfig] = []
    measure: MeasureName | None = None
    """Quality axis of the frontier; default: the first of ``evaluation.depth_measures`` (as the depth plots)."""

    @model_validator(mode="after")
    def _one_curve_per_label(self) -> "PoliciesConfig":
        labels = [sweep.label or f"{sweep.system}: {sweep.parameter}" for sweep in self.sweeps]
        repeated = sorted({label for label in labels if labels.count(label) > 1})
        if repeated:
            raise ValueError(f"sweeps share the label(s) {repeated}: give each its own `label`")
        return self


def frontier_measure(measure: str | None, depth_measures: Sequence[str], primary: str) -> str:
    """The frontier's quality axis (``policies.measure``), the sweep stage's and the compare stage's alike: default
    the first of ``evaluation.depth_measures`` (as the depth plots), else the primary metric."""
    return measure or (list(depth_measures) or [primary])[0]
