"""The train stage: fine-tune a cross-encoder on the train split's queries only.

Examples are groups: one train query, one of its judged-relevant candidates (grade >= 1) and
``negatives_per_positive`` hard negatives drawn from the same query's frozen candidates in the top
``negative_pool_depth`` of a pool ranking: judged non-relevant (grade <= 0), or unjudged below that ranking's top
``unjudged_skip_top`` (the top unjudged candidates are the likeliest unjudged positives), never a copy of a positive's
passage. The pool ranking is a column of the candidates (``rank_column``): BM25's for the hybrid source, not the
fused one, because it is the same on every CPU while dense scores move in the last bits (and fused ranks with them):
drawn from the fused ranks, the fine-tuned model's demo scores swung between two CPUs
(results/benchmarks/training_cpu_invariance.yaml). A run or replay source ran no BM25: its own order is the pool.
Nothing of any other split is read past the first filter.

The loss is listwise: softmax cross-entropy putting the positive first within its group (localised contrastive
estimation); on the demo it reranked far better than pointwise binary cross-entropy at the same budget. The fresh head
learns at ``head_learning_rate``; the word embeddings and the lowest ``frozen_layers`` stay as pretrained: on two CPU
cores the budget is a few thousand pairs, and the head must be useful after tens of steps (freezing 2 of MiniLM's 6
layers kept demo quality). Both ablations are in results/benchmarks/training_ablations.yaml. The loop is plain and
seeded: AdamW, linear warm-up and decay, a fixed number of steps, deterministic kernels.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import ConfigError
from ..core.hashing import canonical_json, sha256_text
from ..core.io import write_json
from ..core.progress import Progress
from ..models.resolve import resolve_model
from .config import MODEL_CARD, TrainConfig

LOSS_WINDOW = 20
"""Steps whose mean loss the progress line shows."""


@dataclass
class TrainingSet:
    examples: pd.DataFrame
    """group, query_id, text, doc_id, passage, passage_sha256, the pool ranking's column (``mine_examples``'s
    ``rank_column``), label (grade / max grade, 0 for a negative); each group's positive first; groups in training
    order."""
    stats: dict[str, Any]

    @property
    def sha256(self) -> str:
        rows = self.examples[["query_id", "text", "doc_id", "passage_sha256", "label"]].itertuples(index=False)
        return sha256_text(canonical_json([[q, sha256_text(t), d, p, float(y)] for q, t, d, p, y in rows]))


def mine_examples(queries: pd.DataFrame, qrels: pd.DataFrame, candidates: pd.DataFrame, config: TrainConfig,
                  rank_column: str = "bm25_rank") -> TrainingSet:
    """Groups of (positive, hard negatives) for the ``config.split`` queries, in an order set by its one seed.

    Negatives are pooled by ``rank_column`` of ``candidates`` (1 = best per query). For the hybrid source that is
    BM25's rank, never the dense or fused one, whose scores move in the last bits from one CPU to another; each group
    draws from its own stream seeded by (seed, query, positive), and groups are ordered by a hash of the same keys,
    so one query's change moves no other query's examples."""
    seed = config.only_seed
    if candidates[rank_column].isna().any():
        raise ConfigError(f"train: the candidates' {rank_column!r} is missing for some rows; negatives are pooled by "
                          "it. Fix: pool by a rank every candidate has (the candidate source's own order, fused_rank).")
    split_queries = queries[queries["split"] == config.split][["query_id", "text"]]
    if split_queries.empty:
        raise ConfigError(f"train.split: no queries in split {config.split!r} (splits present: "
                          f"{sorted(queries['split'].unique())}). Fix: set train.split to one of them.")
    held_out = held_out_queries(sorted(split_queries["query_id"]), config)
    split_queries = split_queries[~split_queries["query_id"].isin(held_out)]
    train_ids = set(split_queries["query_id"])
    judged = qrels[qrels["query_id"].isin(train_ids)]
    pool = candidates[candidates["query_id"].isin(train_ids)].merge(
        judged[["query_id", "doc_id", "relevance"]], on=["query_id", "doc_id"], how="left")
    pool = pool.merge(split_queries, on="query_id").sort_values(["query_id", rank_column], kind="stable",
                                                               ignore_index=True)
    in_pool, cut_short = _complete_top(pool, rank_column, config.negative_pool_depth)
    positive = pool["relevance"] >= 1
    positive_passages = set(zip(pool["query_id"][positive], pool["passage_sha256"][positive]))
    copy_of_positive = np.array([pair in positive_passages for pair in zip(pool["query_id"], pool["passage_sha256"])],
                                dtype=bool)
    negative = (in_pool & ~copy_of_positive
                & ((pool["relevance"] <= 0) | (pool["relevance"].isna()
                                               & (pool[rank_column] > config.unjudged_skip_top))))
    max_grade = max(1, int(judged["relevance"].max())) if len(judged) else 1

    groups, short_of_negatives = {}, 0
    for query_id, frame in pool.groupby("query_id", sort=True):
        negatives = frame[negative[frame.index]]
        for index in frame.index[positive[frame.index]]:
            if len(negatives) < config.negatives_per_positive:
                short_of_negatives += 1
                continue
            doc_id = frame.at[index, "doc_id"]
            rng = np.random.default_rng([seed, _stable_int(query_id), _stable_int(doc_id)])
            picked = np.sort(rng.choice(len(negatives), size=config.negatives_per_positive, replace=False))
            groups[sha256_text(canonical_json([seed, query_id, doc_id]))] = pd.concat([
                frame.loc[[index]].assign(label=lambda row: row["relevance"] / max_grade),
                negatives.iloc[picked].assign(label=0.0)])
    if not groups:
        raise ConfigError(f"train.split {config.split!r}: no judged-relevant candidate with "
                          f"{config.negatives_per_positive} hard negatives to train on. Fix: train on a split with "
                          "relevant documents among the candidates, or lower train.negatives_per_positive.")
    examples = pd.concat([groups[key].assign(group=rank) for rank, key in enumerate(sorted(groups))],
                         ignore_index=True)
    columns = ["group", "query_id", "text", "doc_id", "passage", "passage_sha256", rank_column, "label"]
    return TrainingSet(examples[columns], {
        "split_queries": len(train_ids),
        "queries_with_groups": int(examples["query_id"].nunique()),
        "groups": len(groups),
        "positives_short_of_negatives": short_of_negatives,
        "judged_positives_outside_candidates": int((judged["relevance"] >= 1).sum()) - int(positive.sum()),
        "queries_with_bm25_pool_cut_short": cut_short,
        **({"held_out_queries": held_out} if held_out else {}),
    })


def _stable_int(text: str) -> int:
    """The same integer for the same text in every process (Python's own hash() is salted per process)."""
    return int(sha256_text(text), 16)


def _complete_top(pool: pd.DataFrame, rank_column: str, depth: int) -> tuple[pd.Series, int]:
    """Which rows (sorted by query, ``rank_column``) lie in their query's top ``depth`` of that ranking with every
    better rank among the candidates too, and how many queries' pools stop short of ``depth`` for lack of one.

    The fused candidates hold BM25's top ranks unless the fusion ranked enough dense hits above one of them (on the
    demo, BM25's top 30 were always there); such a query's pool could move with dense, so it is cut at the first
    missing rank and counted."""
    position = pool.groupby("query_id", sort=False).cumcount() + 1
    unbroken = (pool[rank_column] == position).groupby(pool["query_id"], sort=False).cummin()
    inside = unbroken & (pool[rank_column] <= depth)
    per_query = inside.groupby(pool["query_id"], sort=False).agg(["sum", "size"])
    return inside, int((per_query["sum"] < np.minimum(depth, per_query["size"])).sum())


def held_out_queries(query_ids: list[str], config: TrainConfig) -> list[str]:
    """The ``config.holdout`` queries kept out of training (own seeded stream: the training draws are unchanged)."""
    if config.holdout >= len(query_ids):
        raise ValueError(f"train.holdout {config.holdout} leaves none of the {len(query_ids)} {config.split!r} queries "
                         "to train on")
    rng = np.random.default_rng([config.only_seed, config.holdout])
    return sorted(rng.choice(np.array(query_ids, dtype=object), config.holdout, replace=False).tolist()) \
        if config.holdout else []


@contextmanager
def _deterministic_torch() -> Iterator[None]:
    """Deterministic kernels for the duration, without NaN-filling fresh tensors (which slows CPU training ~5x)."""
    import torch
    import torch.utils.deterministic

    saved = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
             torch.utils.deterministic.fill_uninitialized_memory)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(saved[0], warn_only=saved[1])
        torch.utils.deterministic.fill_uninitialized_memory = saved[2]


def _linear_schedule(step: int, *, steps: int, warmup: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (steps - step) / max(1, steps - warmup))


def _group_batches(n_groups: int, per_step: int, steps: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Group ids per step: the mined order first, then a fresh permutation each epoch."""
    order, cursor = np.arange(n_groups), 0
    for _ in range(steps):
        if cursor + per_step > n_groups:
            order, cursor = rng.permutation(n_groups), 0
        yield order[cursor:cursor + per_step]
        cursor += per_step


def train(training_set: TrainingSet, config: TrainConfig, source: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Fine-tune ``config.backbone`` with a fresh one-logit head; write the model and its card to ``out_dir``.

    ``config`` holds one seed (``TrainConfig.for_seed``), as ``training_set`` was mined with.

    ``source`` says where the training queries came from (dataset, path, split, whether it is the fallback); the
    model card records it."""
    import torch
    from sentence_transformers import CrossEncoder

    seed = config.only_seed
    torch.manual_seed(seed)
    backbone = resolve_model(config.backbone, None)
    model = CrossEncoder(str(backbone.directory), num_labels=1, max_length=config.max_length, device="cpu",
                         local_files_only=True)
    network, tokenizer = model.model, model.tokenizer
    network.train()
    if not config.train_embeddings:
        network.base_model.embeddings.requires_grad_(False)
    layers = network.base_model.encoder.layer
    if config.frozen_layers > len(layers):
        raise ConfigError(f"train.frozen_layers: {config.frozen_layers} > the backbone's {len(layers)} layers.")
    for layer in layers[:config.frozen_layers]:
        layer.requires_grad_(False)
    encoder_prefix = network.base_model_prefix + ".encoder."
    trained = [(name, weight) for name, weight in network.named_parameters() if weight.requires_grad]
    # Everything outside the pretrained encoder (pooler, classifier) is the new head.
    head = [weight for name, weight in trained if not name.startswith(encoder_prefix)]
    body = [weight for name, weight in trained if name.startswith(encoder_prefix)]
    optimizer = torch.optim.AdamW(
        [{"params": body}, {"params": head, "lr": config.head_learning_rate or config.learning_rate}],
        lr=config.learning_rate, weight_decay=config.weight_decay)
    warmup = max(1, int(config.warmup_fraction * config.steps))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: _linear_schedule(step, steps=config.steps, warmup=warmup))
    examples = training_set.examples.set_index("group")
    per_step = config.batch_size // config.group_size
    batches = _group_batches(training_set.stats["groups"], per_step, config.steps, np.random.default_rng(seed))
    losses, pairs = [], 0
    started = time.perf_counter()
    progress = Progress("train", config.steps, unit="steps")
    with _deterministic_torch():
        for step, group_ids in enumerate(batches):
            batch = examples.loc[group_ids]
            features = tokenizer(batch["text"].tolist(), batch["passage"].tolist(), truncation="longest_first",
                                 max_length=config.max_length, padding=True, return_tensors="pt")
            logits = network(**features).logits.view(len(group_ids), config.group_size)
            loss = torch.nn.functional.cross_entropy(logits, torch.zeros(len(group_ids), dtype=torch.long))
            loss.backward()
            torch.nn.utils.clip_grad_norm_([weight for _, weight in trained], 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            losses.append(round(loss.item(), 6))
            pairs += len(batch)
            progress.update(1, f"loss {np.mean(losses[-LOSS_WINDOW:]):.4f}, "
                               f"{pairs / (time.perf_counter() - started):.1f} pairs/s")
    train_s = time.perf_counter() - started

    out_dir = Path(config.out_dir)
    staging = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    network.eval()
    network.save_pretrained(staging, safe_serialization=True)
    tokenizer.save_pretrained(staging)
    card = {
        "backbone": {"model": config.backbone, "sha256": backbone.weights_sha256},
        "training_data_sha256": training_set.sha256,
        "split": config.split,
        "source": dict(source or {}),
        "train_queries": training_set.stats["split_queries"],
        "data": training_set.stats,
        "loss": f"listwise softmax cross-entropy over 1 positive + {config.negatives_per_positive} negatives",
        "steps": config.steps,
        "seed": seed,
        "hyperparameters": config.card_settings(),
        "loss_curve": losses,
        "pairs_seen": pairs,
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }
    # Timings stay out of the card (the stage log has them): the weights are bit-identical across reruns, so the
    # model directory is too, and a copied project or DVC's run cache does not retrain.
    write_json(staging / MODEL_CARD, card)
    shutil.rmtree(out_dir, ignore_errors=True)
    staging.rename(out_dir)  # readers see the old model or the complete new one, never a half-written one
    return {**card, "train_s": round(train_s, 2), "pairs_per_s": round(pairs / train_s, 2)}
