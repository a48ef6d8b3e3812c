"""The ``train`` block of params.yaml, typed, and the model card's file name in ``train.out_dir``.

Only settings live here (pydantic and ``core.config``), so reading params.yaml does not load the training code.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from ..core.config import StrictConfig, check_workspace_path

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
    seed: int | None = None
    """One training seed (the form before ``seeds``): the same as ``seeds: [seed]``."""
    out_dir: str
    split: str = "train"
    """The split of the evaluated dataset to train on."""
    fallback_path: str | None = None
    """A BEIR folder whose ``split`` is trained on when the evaluated dataset has none (the bundled demo's, in
    conf/train); None: such a dataset is refused."""
    negative_pool_depth: int = Field(30, ge=1)
    """Negatives are mined from the candidates in the top this many of the pool ranking: BM25's rank for the hybrid
    source (not the fused one: BM25's is the same on every CPU), the candidate source's own order for a run or replay
    source, which ran no BM25 (``training.cross_encoder.mine_examples``'s ``rank_column``)."""
    unjudged_skip_top: int = Field(3, ge=0)
    """Unjudged candidates at pool rank <= this are not used as negatives."""
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
    seeds: list[int] | None = None
    """Training seeds: one model per seed. One seed writes its model to ``out_dir`` itself (as ``seed`` does);
    several write ``out_dir``/seed-<seed>/, each with its model card, and ``out_dir``/seeds.json listing them
    (``rerankeval.training.seeds``). A system naming ``out_dir`` is then reranked and evaluated once per seed and
    compared on the mean over seeds per query, with a CI that counts the between-seed variance (docs/verdict.md)."""

    @model_validator(mode="after")
    def _consistent(self) -> "TrainConfig":
        if (self.seed is None) == (self.seeds is None):
            raise ValueError("set exactly one of seeds (a list of training seeds) and seed (one seed); got "
                             + ("both" if self.seeds is not None else "neither"))
        if self.seeds is not None and (not self.seeds or len(set(self.seeds)) != len(self.seeds)):
            raise ValueError(f"seeds {self.seeds} must list one or more distinct seeds")
        check_workspace_path(self.out_dir, "out_dir")
        if self.split == "test":
            raise ValueError("split must not be the evaluation split 'test'")
        if self.batch_size < self.group_size:
            raise ValueError(f"batch_size {self.batch_size} holds no group of 1 positive + "
                             f"{self.negatives_per_positive} negatives")
        return self

    @property
    def group_size(self) -> int:
        return 1 + self.negatives_per_positive

    @property
    def training_seeds(self) -> list[int]:
        return self.seeds if self.seeds is not None else [self.seed]

    @property
    def only_seed(self) -> int:
        """The seed of settings for one model (mining and training take one seed at a time: ``for_seed``)."""
        if len(self.training_seeds) != 1:
            raise ValueError(f"train.seeds {self.seeds}: one model takes one seed; use TrainConfig.for_seed")
        return self.training_seeds[0]

    def seed_dirs(self) -> dict[int, str]:
        """Each seed's model folder: ``out_dir`` itself for one seed (the layout before ``seeds``), else
        ``out_dir``/seed-<seed>."""
        seeds = self.training_seeds
        if len(seeds) == 1:
            return {seeds[0]: self.out_dir}
        return {seed: f"{self.out_dir.rstrip('/')}/seed-{seed}" for seed in seeds}

    def for_seed(self, seed: int) -> "TrainConfig":
        """The settings one model is trained and mined with: ``seed`` its only seed, its folder ``out_dir``."""
        return self.model_copy(update={"seed": seed, "seeds": None, "out_dir": self.seed_dirs()[seed]})

    def card_settings(self) -> dict:
        """A single-seed config's settings as its model card records them (``seeds`` is the stage's, not the
        model's: one model has one seed)."""
        return self.model_dump(mode="json", exclude={"seeds"})
