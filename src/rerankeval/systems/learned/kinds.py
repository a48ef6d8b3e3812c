"""The learned system kinds: ``cross_encoder`` (sentence-transformers), ``flag_reranker`` (FlagEmbedding) and
``bi_encoder`` (any sentence-transformers embedding model), all scored through ``scorers.py``.

The model is resolved to a local directory (``rerankeval.models.resolve``) and checked (a trained head, safetensors
unless declared otherwise, remote code only when allowed). torch, transformers, sentence_transformers and
FlagEmbedding are imported only when such a system is built.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from ...core.errors import ConfigError
from ...models.heads import check_trained_head
from ...models.resolve import ResolvedModel, ignored_remote_code, is_local, require_safetensors, resolve_model
from ...retrieval.text import PASSAGE_TEMPLATE_VERSION
from ..baselines import require_watched
from ..registry import BuildContext
from ..pairs import PairScorerConfig, register_pair_scorer
from .language import LanguageCheckConfig, language_check, load_tokenizer
from .precision import Precision, apply_precision, describe_precision, precision_key
from .scorers import SCORER_VERSION, BiEncoderScorer, CrossEncoderScorer


class LearnedConfig(PairScorerConfig):
    """The keys of a learned system's config (conf/system/*.yaml)."""

    model: str
    """A local ``save_pretrained`` directory, ``minilm`` (bundled) or a hub id (with a pinned ``revision``)."""
    revision: str | None = None
    max_length: int = Field(ge=8)
    batch_size: int = Field(32, ge=1)
    truncation: Literal["head", "query_window"] = "head"
    trust_remote_code: bool = False
    use_safetensors: bool = True
    dtype: Precision = "float32"
    """``int8``: dynamic quantization of the Linear layers; ``bfloat16`` is fast only on CPUs with bf16 instructions
    (``precision.py``)."""
    language_check: LanguageCheckConfig = LanguageCheckConfig()
    """Whether the model's tokenizer can read the collection, per language slice (``language.py``)."""

    @model_validator(mode="after")
    def _consistent(self) -> "LearnedConfig":
        if self.kind == "bi_encoder" and self.truncation != "head":
            raise ValueError("a bi_encoder encodes the passage alone; only truncation 'head' applies")
        if is_local(self.model) and self.model != "minilm":
            require_watched(self.model, self.depends_on)
        return self


class LearnedModel:
    """A model as a ``PairScorer``: the identity of its exact weights, and its batched scorer, loaded when a pair
    first needs scoring (``prepare``): a run served from the pair-score cache never loads the network, which is what
    keeps composites of cached models and sweeps cheap."""

    def __init__(self, load: Callable[[], CrossEncoderScorer | BiEncoderScorer], family: str, config: LearnedConfig,
                 resolved: ResolvedModel):
        self._load, self.family, self.config, self.resolved = load, family, config, resolved
        self._scorer: CrossEncoderScorer | BiEncoderScorer | None = None

    @property
    def scorer(self) -> CrossEncoderScorer | BiEncoderScorer:
        if self._scorer is None:
            self._scorer = self._load()
        return self._scorer

    def prepare(self) -> None:
        """Load the network now (``PairSystem`` calls it before scoring): a model that cannot load fails the stage,
        not each query."""
        self.scorer  # noqa: B018  (the property loads it)

    def fingerprint(self) -> dict[str, Any]:
        return {"model": self.resolved.identity, "scorer": f"{self.family}/{SCORER_VERSION}",
                "passage_template": PASSAGE_TEMPLATE_VERSION, "max_length": self.config.max_length,
                "truncation": self.config.truncation, **precision_key(self.config.dtype)}

    def score_batches(self, query: str, passages: list[str]):
        return self.scorer.score_batches(query, passages)

    def language_check(self, queries, candidates, depth: int) -> dict[str, Any]:
        """``language.language_check`` with this model's tokenizer (loaded alone: a cached run loads no network)."""
        tokenizer = load_tokenizer(str(self.resolved.directory), self.config.trust_remote_code)
        return language_check(tokenizer, self.config.language_check, queries, candidates, depth)

    def describe(self) -> dict[str, Any]:
        config = self.config
        return {
            "kind": config.kind, "model": config.model, "revision": self.resolved.revision,
            "weights_sha256": self.resolved.weights_sha256, "model_dir": self.resolved.portable_directory,
            "dtype": config.dtype, "precision": describe_precision(config.dtype), "max_length": config.max_length,
            "truncation": config.truncation,
            "raw_scores": "cosine" if self.family == "bi" else "logits",
            "batch_size": config.batch_size, "trust_remote_code": config.trust_remote_code,
            "use_safetensors": config.use_safetensors, "scorer_version": SCORER_VERSION,
            **ignored_remote_code(self.resolved.directory, config.trust_remote_code),
        }


POSITION_OFFSET = {"roberta": 2, "xlm-roberta": 2, "camembert": 2}
"""Position ids a model family reserves (RoBERTa's padding offset): its longest input is max_position_embeddings
minus these."""


def model_positions(directory: Path) -> int | None:
    """The longest input a model's config allows (``config.json``: max_position_embeddings, less its family's
    offset), or None when it does not say (a sentence-transformers folder keeps it in a submodule)."""
    try:
        found = json.loads((Path(directory) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    positions = found.get("max_position_embeddings") if isinstance(found, dict) else None
    if not isinstance(positions, int) or isinstance(positions, bool) or positions <= 0:
        return None
    return positions - POSITION_OFFSET.get(str(found.get("model_type", "")), 0)


def _resolve(config: LearnedConfig) -> ResolvedModel:
    resolved = resolve_model(config.model, config.revision, use_safetensors=config.use_safetensors)
    require_safetensors(resolved, config.use_safetensors)
    longest = model_positions(resolved.directory)
    if longest is not None and config.max_length > longest:  # beyond it every long pair fails with a torch error
        raise ConfigError(f"max_length {config.max_length} exceeds the {longest} positions of {config.model} "
                          f"(config.json's max_position_embeddings). Fix: set max_length to at most {longest}")
    for reason in ignored_remote_code(resolved.directory, config.trust_remote_code).values():
        print(f"rerankeval: warning: {reason}", file=sys.stderr)
    return resolved


def _classifier(config: LearnedConfig, load) -> LearnedModel:
    """A sequence-classification reranker: resolved, then, when a pair first needs the network, its head checked and
    the network loaded by ``load(directory)``. The check builds the model's skeleton, so it imports torch and
    transformers: a run served from the pair-score cache (a composite's, a sweep's) skips both imports. Its cached
    scores were computed by an earlier run from these exact weights (the cache key holds their sha256), after this
    check passed there."""
    resolved = _resolve(config)

    def scorer() -> CrossEncoderScorer:
        check_trained_head(resolved.directory, trust_remote_code=config.trust_remote_code)
        network, tokenizer = load(str(resolved.directory))
        return CrossEncoderScorer(apply_precision(network, config.dtype), tokenizer, max_length=config.max_length,
                                  truncation=config.truncation, batch_size=config.batch_size)

    return LearnedModel(scorer, CrossEncoderScorer.family, config, resolved)


@register_pair_scorer("cross_encoder", LearnedConfig, learned=True)
def _cross_encoder(config: LearnedConfig, context: BuildContext) -> LearnedModel:
    def load(directory: str):
        import torch
        from sentence_transformers import CrossEncoder

        # Identity: keep raw logits (sentence-transformers applies a sigmoid by default when num_labels == 1).
        model = CrossEncoder(directory, device="cpu", local_files_only=True,
                             trust_remote_code=config.trust_remote_code, max_length=config.max_length,
                             activation_fn=torch.nn.Identity(),
                             model_kwargs={"use_safetensors": config.use_safetensors})
        return model.model, model.tokenizer

    return _classifier(config, load)


@register_pair_scorer("flag_reranker", LearnedConfig, learned=True)
def _flag_reranker(config: LearnedConfig, context: BuildContext) -> LearnedModel:
    def load(directory: str):
        from FlagEmbedding import FlagReranker

        model = FlagReranker(directory, use_fp16=False, devices="cpu", normalize=False,
                             trust_remote_code=config.trust_remote_code, max_length=config.max_length)
        return model.model, model.tokenizer

    return _classifier(config, load)


@register_pair_scorer("bi_encoder", LearnedConfig, learned=True)
def _bi_encoder(config: LearnedConfig, context: BuildContext) -> LearnedModel:
    resolved = _resolve(config)

    def scorer() -> BiEncoderScorer:
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(resolved.directory), device="cpu", local_files_only=True,
                                    trust_remote_code=config.trust_remote_code,
                                    model_kwargs={"use_safetensors": config.use_safetensors})
        return BiEncoderScorer(apply_precision(model, config.dtype), max_length=config.max_length,
                               batch_size=config.batch_size)

    return LearnedModel(scorer, BiEncoderScorer.family, config, resolved)
