"""The ``dataset`` block of params.yaml, typed: which collection the snapshot stage reads and what is evaluated."""

from __future__ import annotations

from pydantic import field_validator

from ..core.config import StrictConfig
from ..stats.critical_slices import CriticalSlice


class SampleConfig(StrictConfig):
    """A seeded sample of the evaluated split's queries (``data.sample``)."""

    queries: int
    stratify: str | None = None
    """A slice column: each of its values keeps its share of the queries (null: one simple random sample)."""
    seed: int = 17

    @field_validator("queries")
    @classmethod
    def _at_least_one(cls, queries: int) -> int:
        if queries < 1:
            raise ValueError(f"a sample needs at least 1 query, got {queries}. Fix: set a positive number, or "
                             "dataset.sample: null to evaluate every query")
        return queries


class DatasetConfig(StrictConfig):
    name: str
    path: str
    splits: list[str] | None = None
    """The qrels files to read (default: every qrels/*.tsv)."""
    eval_split: str = "test"
    critical_slices: list[CriticalSlice] = []
    sample: SampleConfig | None = None
    """Evaluate a seeded, stratified sample of the evaluated split's queries (null: all of them)."""
