"""What every generator kind shares: its config base, the answer it returns, and the calibration interface."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...core.config import StrictConfig
from ...systems.registry import BuildContext  # noqa: F401  (the one build context, re-exported for generator kinds)


class GeneratorConfig(StrictConfig):
    kind: str


@dataclass(frozen=True)
class Generated:
    """One query's answer. ``citations`` index the context (0-based); a failure is neither answer nor abstention."""

    answer: str
    abstained: bool
    citations: tuple[int, ...] = ()
    evidence: float | None = None
    failed: bool = False
    reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    prompt_sha256: str | None = None
    # Timing and transport facts: they go to the timing table, never to the byte-identical answers table.
    seconds: float = 0.0
    cache_hit: bool = False
    attempts: int = 0


@dataclass(frozen=True)
class Example:
    """A calibration example: a question, its context passages' text, and its gold answers."""

    question: str
    passages: Sequence[str]
    answers: Sequence[str]
    answerable: bool


class Generator:
    """A generator answers a question from numbered context passages; the same one serves every system."""

    config: GeneratorConfig
    calibrated = False
    """Whether ``calibrate`` fits anything (the calibrate stage builds the generator only then)."""

    def describe(self) -> dict[str, Any]:
        """What decides its answers (recorded with them; never a secret)."""
        return self.config.to_dict()

    def calibrate(self, examples: Sequence[Example]) -> dict[str, Any]:
        """Settings fitted on the calibration split (default: none)."""
        return {}

    def generate(self, question: str, passages: Sequence[str]) -> Generated:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the generator holds (a server it started); default: nothing."""

    def __enter__(self) -> "Generator":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
