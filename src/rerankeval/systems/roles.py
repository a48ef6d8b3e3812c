"""What a system is in a comparison, as data: its kind's traits.

The rerank stage writes them into each run's metadata (``pipeline.rerank``), so the comparison and the report read
a system's role from its run and import no kind's code: editing a kind re-runs only the stages that build one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from ..core.errors import ContractError

ROLES = ("reranker", "first_stage", "ceiling", "floor")
"""What a kind's systems are in a comparison: a reranker under test; a first-stage ranking as it is (a reference);
the ceiling (oracle) or floor (random) of what reranking the candidates can do (bounds, not deployable)."""


@dataclass(frozen=True)
class KindTraits:
    role: str = "reranker"
    retriever: str | None = None
    """For a first-stage kind: the first-stage ranking (``first_stage.parquet``'s retriever) it reproduces."""
    composite: bool = False
    """Composed of other configured systems (its settings are swept over their stored scores)."""
    learned: bool = False
    """Scores with a trained model (its precision variants are compared with their float32 twin)."""

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role {self.role!r} is not one of {', '.join(ROLES)}")

    @property
    def reference(self) -> bool:
        """A reference point of the comparison (first stage or bound), not a reranker under test."""
        return self.role != "reranker"

    @property
    def bound(self) -> bool:
        return self.role in ("ceiling", "floor")

    def to_metadata(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_metadata(cls, recorded: Any, where: str) -> KindTraits:
        names = {field.name for field in fields(cls)}
        if not isinstance(recorded, Mapping) or set(recorded) != names:
            raise ContractError(f"{where}: the run's metadata holds no system traits ({', '.join(sorted(names))}), "
                                "so it was written by an older rerankeval. Fix: `dvc repro` re-runs its rerank stage.")
        try:
            return cls(**recorded)
        except ValueError as err:
            raise ContractError(f"{where}: system traits: {err}. Fix: `dvc repro` re-runs its rerank stage.") from None


def floor_system(traits: Mapping[str, KindTraits]) -> str | None:
    """The first system of a floor kind (random): what each first-stage retriever must beat."""
    return next((name for name, found in traits.items() if found.role == "floor"), None)
