"""The report's line on what the fine-tuned reranker learned from: the dataset's train split, or the fallback."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath
from typing import Any


def training_section(card: Mapping[str, Any] | None, out_dir: str, systems: Mapping[str, Mapping[str, Any]]) -> str:
    """One bullet naming the systems that use the trained model and the queries it was trained on ("" if none)."""
    users = [name for name, config in systems.items()
             if config.get("model") is not None and PurePath(str(config["model"])) == PurePath(out_dir)]
    if card is None or not users:
        return ""
    source = card.get("source") or {}
    split = source.get("split", card.get("split"))
    where = (f"the fallback, the `{split}` split of `{source['path']}` ({source['reason']}; train.fallback_path)"
             if source.get("fallback") else f"the `{split}` split of this dataset")
    return (f"- Fine-tuned {', '.join(f'`{name}`' for name in users)}: trained on {where}, {card['train_queries']} "
            f"queries, {card['steps']} steps.")
