"""The generate stage's tables: each system's answers, and their generation timing apart, so answers are
byte-identical across reruns. The measures computed from them are ``rag.answer_measures``'s (the evaluate stage's)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

ANSWERS_SCHEMA = pa.schema([
    ("query_id", pa.string()),
    ("answer", pa.string()),
    ("abstained", pa.bool_()),
    ("failed", pa.bool_()),
    ("reason", pa.string()),
    ("citations", pa.list_(pa.string())),
    ("evidence", pa.float64()),
    ("claims", pa.int32()),
    ("supported_claims", pa.int32()),
    ("prompt_tokens", pa.int32()),
    ("completion_tokens", pa.int32()),
    ("cost_usd", pa.float64()),
    ("prompt_sha256", pa.string()),
])
TIMING_SCHEMA = pa.schema([("query_id", pa.string()), ("generate_s", pa.float64()), ("cache_hit", pa.bool_()),
                           ("attempts", pa.int32())])


def answer_row(query_id: str, generated, doc_ids: Sequence[str], claims: int, supported: int) -> dict:
    """One ANSWERS_SCHEMA row: what ``generated`` (a generator's answer) says, citations as doc ids."""
    return {"query_id": query_id, "answer": generated.answer, "abstained": generated.abstained,
            "failed": generated.failed, "reason": generated.reason,
            "citations": [doc_ids[i] for i in generated.citations], "evidence": generated.evidence,
            "claims": claims, "supported_claims": supported, "prompt_tokens": generated.prompt_tokens,
            "completion_tokens": generated.completion_tokens, "cost_usd": generated.cost_usd,
            "prompt_sha256": generated.prompt_sha256}
