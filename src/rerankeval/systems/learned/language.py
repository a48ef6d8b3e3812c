"""The reranker-language check: can a learned system's model read the collection it reranks, per language slice?

The rerank stage measures, with the system's own tokenizer, the share of the evaluated queries' and their scored
candidates' characters it maps to unknown, byte or split pieces (``models.readability``), per value of a slice column
(``language`` by default; the whole collection when the queries carry no such column), and records it in the run's
metadata (``describe.language_check``). A slice above the threshold is one the model cannot read: the comparison
turns it into an INCONCLUSIVE reason on that slice (``stats.caveats``) instead of a silent REJECT of the model.

A labelled slice is decided on its queries' share: the label is the queries' language, and passages carry none (in
a bilingual corpus an English query's candidates hold Korean passages, which say nothing of whether the model reads
English). Without a label the whole collection is decided on queries and passages together.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from pydantic import Field

from ...core.config import StrictConfig
from ...models.readability import readability_by_slice
from ..base import Query

WHOLE_COLLECTION = "(all)"
"""The one slice when the queries carry no slice column of the configured name."""


class LanguageCheckConfig(StrictConfig):
    """``language_check`` of a learned system's config: the slice column, at most ``max_passages`` distinct scored
    passages per slice (the first by sha256: a fixed, content-decided sample), and the largest unreadable share a
    readable slice may have."""

    slice_column: str | None = "language"
    max_passages: int = Field(200, ge=1)
    threshold: float = Field(0.05, gt=0, lt=1)


def load_tokenizer(directory: str, trust_remote_code: bool):
    """The model's tokenizer as the scorer loads it (``AutoTokenizer``), without its network."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(directory, local_files_only=True, trust_remote_code=trust_remote_code)


def language_check(tokenizer, settings: LanguageCheckConfig, queries: Mapping[str, Query],
                   candidates: pd.DataFrame, depth: int) -> dict[str, Any]:
    """``candidates``: query_id, fused_rank, passage_sha256, passage (``load_candidates``); the first ``depth`` of
    each query are the ones the system scores."""
    head = {"slice_column": settings.slice_column, "threshold": settings.threshold,
            "max_passages": settings.max_passages}
    if not getattr(tokenizer, "is_fast", False):
        return {**head, "measured": False,
                "why": f"{type(tokenizer).__name__} is not a fast tokenizer: no character offsets to count with"}
    column = settings.slice_column
    labelled = column is not None and any(query.labels.get(column) is not None for query in queries.values())
    slice_of = {query_id: str(query.labels.get(column) or "(none)") if labelled else WHOLE_COLLECTION
                for query_id, query in queries.items()}
    scored = candidates[candidates["fused_rank"] <= depth]
    texts = {}
    for value in sorted(set(slice_of.values())):
        ids = sorted(query_id for query_id, found in slice_of.items() if found == value)
        passages = (scored[scored["query_id"].isin(set(ids))].drop_duplicates("passage_sha256")
                    .sort_values("passage_sha256").head(settings.max_passages)["passage"].tolist())
        texts[value] = ([queries[query_id].text for query_id in ids], passages)
    slices = readability_by_slice(tokenizer.backend_tokenizer, tokenizer.unk_token_id, texts)
    decided_on = "query_share" if labelled else "share"
    for found in slices.values():
        found["readable"] = found[decided_on] <= settings.threshold
    unreadable = [value for value, found in slices.items() if not found["readable"]]
    return {**head, "measured": True, "column": column if labelled else None, "decided_on": decided_on,
            "slices": slices, "unreadable": unreadable}
