"""The ``policies`` block of params.yaml: which parameters to sweep over stored scores, and with what values."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..core.config import StrictConfig
from ..eval.config import MeasureName

COMPOSITE_KINDS = ("blend", "routed", "cascade")


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
