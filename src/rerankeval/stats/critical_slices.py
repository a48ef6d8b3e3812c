"""A critical slice and its budget: read by the dataset's settings (``dataset.critical_slices``) and by the release rule
(``compare.release``). A module of its own, so that the stages reading the dataset's settings (snapshot, freeze, train,
every rerank) do not hold the release rule's code in their DVC code deps: an edit to the rule re-runs the stages that
decide, not the ones that rank.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from ..core.config import StrictConfig


class CriticalSlice(StrictConfig):
    """A slice that must not regress by more than ``budget`` (absolute, e.g. 0.02 = 2 points).

    ``value`` None means every value of ``column``.
    """

    column: str
    budget: float = Field(ge=0)
    value: str | None = None

    @field_validator("value", mode="before")
    @classmethod
    def _label_as_text(cls, value: object) -> object:
        # Slice labels are strings: a YAML `value: 2` must match the label "2".
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    def label(self) -> str:
        """``column=value``, or ``column=*`` for every value."""
        return f"{self.column}={'*' if self.value is None else self.value}"

    def matches(self, column: str, value: object) -> bool:
        return column == self.column and self.value in (None, str(value))
