"""The ``rag`` block of params.yaml: one context budget, one generator and one prompt for every system."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from ..core.config import StrictConfig
from ..eval.measure_names import MeasureName


class SelectConfig(StrictConfig):
    """How a context is chosen from a system's ranking (see ``rerankeval.rag.select``)."""

    max_passages: int = Field(5, ge=1)
    max_tokens: int | None = Field(None, ge=1)
    """Token budget (words and punctuation marks, ``select.count_tokens``); None: passages only."""
    pool_depth: int = Field(20, ge=1)
    """Only the system's top ``pool_depth`` passages are considered."""
    max_per_parent: int | None = Field(None, ge=1)
    """At most this many ranked passages of one parent document; None: no cap."""
    mmr_lambda: float | None = Field(None, ge=0, le=1)
    """MMR trade-off (1 = ranking only); None: take the ranking in order."""
    similarity: Literal["tokens", "dense"] = "tokens"
    """MMR similarity: token-set Jaccard, or the cosine of the frozen dense embeddings (the embedding cache)."""
    neighbours: int = Field(0, ge=0)
    """Add this many adjacent chunks of the same parent on each side of a selected passage (budget permitting)."""
    near_duplicate_jaccard: float = Field(0.8, gt=0, le=1)
    """A context passage whose token Jaccard with an earlier one reaches this is a near-duplicate."""


class ClaimsConfig(StrictConfig):
    """How claim support is judged: a declared lexical rule, or an LLM judge through the generator's client."""

    judge: Literal["lexical", "llm"] = "lexical"
    support_threshold: float = Field(0.5, gt=0, le=1)
    """Lexical rule: a claim is supported when one cited passage holds at least this share of its tokens."""


class RagConfig(StrictConfig):
    select: SelectConfig = SelectConfig()
    generator: dict[str, Any] = {"kind": "extractive"}
    """Validated by the generator kind's own config class (``rerankeval.rag.generators``)."""
    claims: ClaimsConfig = ClaimsConfig()
    measures: list[MeasureName] = []
    """Answer and context measures evaluated per query (``rerankeval.eval.measures.answers``)."""
    calibration_split: str = "train"
    """The split the generator is calibrated on (never the evaluated one)."""

    @model_validator(mode="after")
    def _llm_judge_needs_a_client(self) -> "RagConfig":
        if self.claims.judge == "llm" and self.generator.get("kind") not in ("openai_compatible", "local_llm"):
            raise ValueError("claims.judge: llm uses the generator's OpenAI-compatible client; set generator.kind "
                             "to openai_compatible or local_llm, or use judge: lexical")
        if self.calibration_split == "test":
            raise ValueError("calibration_split must not be the evaluated split 'test'")
        return self

