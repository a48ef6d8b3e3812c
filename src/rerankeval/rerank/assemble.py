"""One query's run from its candidates and its system's outcome, and the check that a run only permutes.

A reranker only permutes its candidates. The scored head is ordered by ``TIE_BREAK``; candidates beyond ``depth``
keep their fused order after it. A query whose scoring failed (``FUSION_FALLBACK``, with the reason) or that the
system chose not to rerank (``SKIPPED``) keeps the fused order. A system with ``outdated: demote`` then has its
candidates outdated at the query's as-of date moved below the others (``demoted``), whatever produced the order: the
rule is what its users would see, a fallback's order included.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from ..core.errors import DeadlineExceeded, ScoringFailure
from ..core.precision import stored_scores
from ..systems.base import FUSED_TAIL, FUSION_FALLBACK, PAIR_STATS, RERANKED, SKIPPED, Outcome

TIE_BREAK = "score descending, then fused rank ascending, then doc id ascending"

RUN_SCHEMA = pa.schema(
    [
        ("query_id", pa.string()),
        ("doc_id", pa.string()),
        ("parent_id", pa.string()),
        ("score", pa.float64()),
        ("rank", pa.int32()),
        ("fused_rank", pa.int32()),
        ("mode", pa.string()),
        ("degraded_reason", pa.string()),
        ("query_tokens", pa.int32()),
        ("passage_tokens", pa.int32()),
        ("truncated", pa.bool_()),
    ]
)


DEADLINE_IN_RUN = "deadline: cold compute time over deadline_s (its seconds are in the latency table)"


class PermutationError(AssertionError):
    """A run is not a permutation of its candidates: a bug, never a result."""


def order_head(scores: np.ndarray, fused_rank: np.ndarray, doc_ids: np.ndarray) -> np.ndarray:
    """Indices that sort a query's scored head by the tie-break rule."""
    return np.lexsort((doc_ids, fused_rank, -scores))


def _validated(values: np.ndarray, n: int) -> np.ndarray | str:
    scores = np.asarray(values, dtype=np.float64)
    if scores.shape != (n,):
        return (f"bad_response: system returned {scores.shape[0] if scores.ndim else 'a scalar'} scores for {n} "
                "candidates")
    if np.isnan(scores).any():
        return "bad_response: system returned NaN scores"
    return stored_scores(scores)  # the declared precision; the order below is computed from these stored values


@dataclass(frozen=True)
class QueryRun:
    """One query's run as columns: ``order`` indexes its candidates (in fused order) in rank order, and ``columns``
    holds the run's own columns (``ADDED_COLUMNS``) in that order. The driver turns every query's into one frame at
    once (``run_frame``): a frame built per query cost about 2.8 ms a query in pandas against 0.7 ms, part of every
    query's ``sort_s``, and the demo's sweep stage (3276 queries) took 11.4-12.0 s against 4.6-4.8 s (Intel Xeon, 2
    cores, `python -m rerankeval.pipeline sweep`, twice each; the runs' parquet tables identical)."""

    order: np.ndarray
    columns: dict[str, np.ndarray]
    mode: str
    reason: str | None

    def demoted(self, flags: np.ndarray) -> QueryRun:
        """The flagged rows (``flags`` in rank order) below the others, each part in its order."""
        if not flags.any():
            return self
        moved = demotion_order(flags)
        return QueryRun(self.order[moved], {name: values[moved] for name, values in self.columns.items()}, self.mode,
                        self.reason)


CANDIDATE_COLUMNS = ("query_id", "doc_id", "parent_id", "fused_rank")
"""The run's columns taken from its candidates; the others (``ADDED_COLUMNS``) come from the system's outcome."""
ADDED_COLUMNS = ("score", "mode", "degraded_reason", *PAIR_STATS)


def assemble(frame: pd.DataFrame, depth: int, outcome: Outcome) -> QueryRun:
    """The query's run (``frame``: its candidates in fused order), its mode and the degraded reason, if any."""
    n, head = len(frame), min(depth, len(frame))
    order = np.arange(n)
    score = np.full(n, np.nan)
    reasons = np.full(n, None, dtype=object)
    stats = {column: np.full(n, None, dtype=object) for column in PAIR_STATS}
    if isinstance(outcome, ScoringFailure):
        scores, reason = None, str(outcome)
    else:
        scores = _validated(outcome.values, head)
        reason = scores if isinstance(scores, str) else None
    if reason is not None:
        mode, modes = FUSION_FALLBACK, np.full(n, FUSION_FALLBACK, dtype=object)
        # A missed deadline's detail is timing: it stays in the latency table, so the run is the same on every rerun.
        reasons[:] = DEADLINE_IN_RUN if isinstance(outcome, DeadlineExceeded) else reason
    elif outcome.mode == SKIPPED:
        score[:head] = scores
        mode, modes = SKIPPED, np.full(n, SKIPPED, dtype=object)
    else:
        score[:head] = scores
        for column in PAIR_STATS:  # a system's other per-pair arrays are not part of a run
            if column in outcome.pair_stats:
                values = pd.Series(outcome.pair_stats[column], dtype=object).to_numpy()
                if len(values) != head:
                    raise ValueError(f"pair stat {column!r}: {len(values)} values for {head} scored candidates")
                stats[column][:head] = values
        order = np.concatenate([order_head(scores, frame["fused_rank"].to_numpy()[:head],
                                           frame["doc_id"].to_numpy()[:head]), order[head:]])
        mode, modes = RERANKED, np.array([RERANKED] * head + [FUSED_TAIL] * (n - head), dtype=object)
    columns = {"score": score[order], "mode": modes, "degraded_reason": reasons[order],
               **{column: values[order] for column, values in stats.items()}}
    return QueryRun(order, columns, mode, reason)


def run_frame(candidates: pd.DataFrame, positions: list[np.ndarray], runs: list[QueryRun]) -> pd.DataFrame:
    """One frame of every query's run in ``RUN_SCHEMA`` order: query k's rows are the rows ``positions[k]`` of
    ``candidates`` (its candidates in fused order), reordered by ``runs[k]``, ranked 1..n within the query."""
    if not runs:
        return pd.DataFrame({name: [] for name in RUN_SCHEMA.names})
    taken = np.concatenate([rows[run.order] for rows, run in zip(positions, runs)])
    out = candidates[list(CANDIDATE_COLUMNS)].iloc[taken].reset_index(drop=True)
    for name in ADDED_COLUMNS:
        values = np.concatenate([run.columns[name] for run in runs])
        # The reason and the pair stats stay object columns (None where unset, as the run's readers expect); the
        # mode, set on every row, becomes a string column.
        out[name] = values if name == "mode" else pd.Series(values, dtype=values.dtype)
    out["rank"] = np.concatenate([np.arange(1, len(run.order) + 1, dtype=np.int32) for run in runs])
    return out[RUN_SCHEMA.names]


def demotion_order(flags: np.ndarray) -> np.ndarray:
    """Positions of a query's rows (``flags`` in rank order) with the flagged ones below the others, each part in its
    order: the rule of ``outdated: demote``, for a run being assembled (``QueryRun.demoted``) and a stored one."""
    return np.concatenate([np.flatnonzero(~flags), np.flatnonzero(flags)])


def demoted(rows: pd.DataFrame, flags: np.ndarray) -> pd.DataFrame:
    """A query's run rows with the flagged ones below the others, each part in its order, ranked 1..n again; the rows
    keep their scores and modes (``data.trec.trec_eval_scores`` writes an exported run's order whatever the scores)."""
    if not flags.any():
        return rows
    out = rows.iloc[demotion_order(flags)].reset_index(drop=True)
    out["rank"] = np.arange(1, len(out) + 1, dtype=np.int32)
    return out


def demote_run(run: pd.DataFrame, stale) -> pd.DataFrame:
    """``demoted`` for every query of ``run`` (rows in rank order within each query; ``stale(query_id, doc_ids)``
    flags them)."""
    run = run.sort_values(["query_id", "rank"], kind="stable")
    return pd.concat([demoted(rows.reset_index(drop=True), stale(query_id, rows["doc_id"].tolist()))
                      for query_id, rows in run.groupby("query_id", sort=True)], ignore_index=True)


def check_permutation(candidates: pd.DataFrame, run: pd.DataFrame) -> None:
    """Fail unless, per query, the run holds exactly the candidate doc ids, ranked 1..n without gaps."""
    expected = candidates[["query_id", "doc_id"]].sort_values(["query_id", "doc_id"]).reset_index(drop=True)
    actual = run[["query_id", "doc_id"]].sort_values(["query_id", "doc_id"]).reset_index(drop=True)
    if not expected.equals(actual):
        merged = expected.merge(actual, how="outer", indicator=True)
        bad = merged[merged["_merge"] != "both"].head(3)
        raise PermutationError(f"run is not a permutation of its candidates; first differences:\n{bad}")
    ranks = run.groupby("query_id")["rank"].agg(["min", "max", "count", "nunique"])
    broken = ranks[(ranks["min"] != 1) | (ranks["max"] != ranks["count"]) | (ranks["nunique"] != ranks["count"])]
    if len(broken):
        raise PermutationError(f"ranks are not 1..n for queries {broken.index[:5].tolist()}")


def run_table(run: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(run[RUN_SCHEMA.names], schema=RUN_SCHEMA, preserve_index=False)
