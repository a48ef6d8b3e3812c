"""How much of an external run (a ``trec_run`` system) the frozen candidates left out, in words: the rerank stage
prints it and the report warns with it, without importing the kind itself."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def coverage_text(coverage: Mapping[str, Any]) -> str:
    """One line on what of a run the frozen candidates left out (``run_coverage``)."""
    parts = [f"{coverage['outside_rows']} of {coverage['run_rows']} run rows ({coverage['outside_share']:.1%}) name "
             f"documents outside the frozen candidates (top {coverage['depth']})"]
    if coverage["other_queries"]:
        examples = ", ".join(coverage["other_query_examples"])
        parts.append(f"run queries not evaluated: {coverage['other_queries']} ({coverage['other_query_rows']} rows, "
                     f"e.g. {examples})")
    if coverage["missing_queries"]:
        parts.append(f"evaluated queries without a run row: {coverage['missing_queries']} (left in fused order)")
    return "; ".join(parts)


def coverage_cut(coverage: Mapping[str, Any]) -> bool:
    """Whether the candidates left any of the run out, or the run left evaluated queries out."""
    return bool(coverage["outside_rows"] or coverage["other_queries"] or coverage["missing_queries"])
