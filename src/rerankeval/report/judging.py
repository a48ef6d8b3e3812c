"""The report's "what would settle it" parts: the judging queue's head (read from the compare stage's TSV) and the
power statement of each INCONCLUSIVE verdict (read from verdicts.json). Renders only; nothing is computed here."""

from __future__ import annotations

import pandas as pd

from ..stats.schema import DecisionCore, PowerStatement
from .markdown import fmt, table

SHOWN = 10
QUERY_CHARS, TITLE_CHARS = 70, 60


def power_section(verdicts: DecisionCore) -> str:
    """One line per INCONCLUSIVE verdict: the queries that would give the paired t-test its power at min_delta."""
    against = [(verdicts.baseline, verdicts.verdicts), *(verdicts.verdicts_by_baseline or {}).items()]
    stated = [(system, baseline, verdict.power) for baseline, decided in against
              for system, verdict in decided.items() if verdict.power]
    if not stated:
        return ""
    rows = [[f"`{system}` vs `{baseline}`", statement.queries, fmt(statement.sd),
             "" if statement.power_now is None else f"{statement.power_now:.0%}",
             _needed(statement)] for system, baseline, statement in stated]
    superior = [statement for _, _, statement in stated if statement.claim != "noninferior"]
    first = (superior or [stated[0][2]])[0]
    return "\n\n".join([
        "### How many queries would decide the INCONCLUSIVE verdicts",
        f"Queries that would give a paired t-test {first.power:.0%} power to find a true Δ of "
        f"{first.min_delta:+.4f} significant (two-sided α = {first.alpha:g}), with the spread of the per-query "
        f"deltas observed here ({first.method}). ACCEPT also needs the observed mean to reach min_delta, which a "
        "true Δ of exactly min_delta gives about half the time at any size: the statement sizes the evidence, not "
        "the release." + "".join(_noninferior_line(system, baseline, statement) for system, baseline, statement
                                 in stated if statement.claim == "noninferior"),
        table(["challenger", "queries now", "sd of per-query Δ", "power now", "queries needed (more)"], rows)])


def _noninferior_line(system: str, baseline: str, statement: PowerStatement) -> str:
    """A noninferiority claim is sized for its own test, not for min_delta (``stats.power``)."""
    return (f" `{system}` vs `{baseline}` claims noninferiority: its size is for the one-sided test of Δ > "
            f"-margin {-statement.margin:+.4f} (α = {statement.alpha:g}) at a true Δ of 0.")


def _needed(statement: PowerStatement) -> str:
    if statement.queries_needed is None:
        return f"— ({statement.why})"
    if statement.more_queries == 0:  # the set is large enough: the observed Δ, not the evidence, falls short
        shown = ("a true Δ of 0 would have shown above -margin" if statement.claim == "noninferior"
                 else "a true Δ of min_delta would have shown")
        return f"{statement.queries_needed} (enough now: {shown})"
    return f"{statement.queries_needed} (+{statement.more_queries})"


def judging_section(queue: pd.DataFrame | None, metric: str, watch: str, baseline: str, where: str) -> str:
    """The first ``SHOWN`` pairs of the judging queue: what an assessor should judge first, and why."""
    if queue is None:
        return ""
    head = [f"## What to judge next ({metric})"]
    if queue.empty:
        head.append(f"Every document in the top of the baseline and of every reranker under test (the unjudged "
                    f"watch's {watch}) is judged, or {metric} is not a ranking measure: nothing to queue.")
        return "\n\n".join(head)
    head.append(f"{len(queue)} unjudged (query, document) pairs are in the top of `{baseline}` or of a reranker "
                f"under test ({watch}'s depth). Ordered by the expected move of Δ {metric}: the chance the "
                f"judgment comes out relevant (its query class's, e.g. a query marked unanswerable is unlikely to "
                f"get one) times the swing, the change of the challenger-minus-`{baseline}` mean between judging it "
                f"0 and judging it the top grade (recomputed with the metric engine; each pair credited to the "
                f"challenger it moves most). "
                f"The first {min(SHOWN, len(queue))}; every pair, with a text excerpt, is in `{where}`.")
    rows = [[row.priority, _cut(row.query, QUERY_CHARS) or f"`{row.query_id}`", f"`{row.doc_id}`",
             _cut(row.title, TITLE_CHARS), f"`{row.challenger}`", fmt(row.expected_move),
             f"{row.chance_relevant:.2f}", fmt(row.swing, signed=True),
             f"{fmt(row.delta_if_nonrelevant, signed=True)} → {fmt(row.delta_if_relevant, signed=True)}", row.in_top]
            for row in queue.head(SHOWN).itertuples(index=False)]
    head.append(table(["#", "query", "document", "title", "challenger", "expected move", "chance relevant",
                       "swing of Δ", "Δ if judged 0 → top",
                       "in the top of (system@rank)"], rows))
    return "\n\n".join(head)


def _cut(text: str, chars: int) -> str:
    text = str(text or "").replace("|", "\\|")
    return text if len(text) <= chars else text[:chars].rstrip() + "…"
