"""The ``train`` block of params.yaml, typed, and the model card's file name in ``train.out_dir``.

Only settings live here (pydantic and ``core.config``), so reading params.yaml does not load the training code.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from ..core.config import StrictConfig

MODEL_CARD = "model_card.json"
"""What the train stage writes beside the model (``training.cross_encoder.train``), read by blends and the report."""


class TrainConfig(StrictConfig):
    """The ``train`` block of params.yaml."""

    backbone: str
    """``minilm`` (the bundled all-MiniLM-L6-v2) or a local model directory."""
    steps: int = Field(ge=1)
    batch_size: int = Field(ge=2)
    """Pairs per step: batch_size // (1 + negatives_per_positive) groups."""
    learning_rate: float = Field(gt=0)
    max_length: int = Field(ge=8)
    negatives_per_positive: int = Field(ge=1)
    seed: int
    out_dir: str
    split: str = "train"
    """The split of the evaluated dataset to train on."""
    fallback_path: str | None = None
    """A BEIR folder whose ``split`` is trained on when the evaluated dataset has none (the bundled demo's, in
    conf/train); None: such a dataset is refused."""
    negative_pool_depth: int = Field(30, ge=1)
    """Negatives are mined from the candidates in BM25's top this many (BM25's rank, not the fused one: the same on
    every CPU)."""
    unjudged_skip_top: int = Field(3, ge=0)
    """Unjudged candidates at BM25 rank <= this are not used as negatives."""
    warmup_fraction: float = Field(0.1, ge=0, le=1)
    weight_decay: float = Field(0.01, ge=0)
    head_learning_rate: float | None = Field(None, gt=0)
    """Learning rate of the freshly initialised pooler and classifier; None: ``learning_rate``."""
    train_embeddings: bool = False
    """Fine-tune the token embeddings too (about half of MiniLM's weights; slower steps, little gain here)."""
    frozen_layers: int = Field(0, ge=0)
    """The lowest N transformer layers stay as pretrained: backpropagation stops above them (faster steps)."""
    holdout: int = Field(0, ge=0)
    """This many of the split's queries (a seeded sample) are left out of training and listed in the model card, so
    settings fitted on the model's scores (a blend's weight) can be fitted out of sample on the same split."""

    @model_validator(mode="after")
    def _consistent(self) -> "TrainConfig":
        if self.split == "test":
            raise ValueError("split must not be the evaluation split 'test'")
        if self.batch_size < self.group_size:
            raise ValueError(f"batch_size {self.batch_size} holds no group of 1 positive + "
                             f"{self.negatives_per_positive} negatives")
        return self

    @property
    def group_size(self) -> int:
        return 1 + self.negatives_per_positive
