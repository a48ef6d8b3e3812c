"""The report's answers section: stages 3 and 4 side by side with ranking, per system and per query type.

The ablation holds everything but the ranking fixed: the first-stage order (the comparison baseline) against each
reranker, with the same select rule, generator and prompt. Its numbers come from compare.json (paired CIs over the
same resamples as every other delta), the per-query table, and the generation timing. Pure text and one plot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .caveats import generator_lines
from .markdown import ci, fmt, p_value, slice_size, table

RANKING_MEASURE = "nDCG@10"
HEADLINE = ("EvidenceCoverage", "AnswerEM", "AnswerF1", "AbstentionPrecision", "AbstentionRecall",
            "CitationPrecision")
QUERY_TYPE_COLUMN = "query_type"
OUTCOME_MEASURES = ("AnswerEM", "CorrectRefusal", "BoundaryPartial", "IncorrectAnswer", "FalseRefusal")


@dataclass(frozen=True)
class AnswerInputs:
    """What the section reads besides compare.json and the per-query table."""

    generator: Mapping[str, Any] = field(default_factory=dict)
    select: Mapping[str, Any] = field(default_factory=dict)
    calibration: Mapping[str, Any] = field(default_factory=dict)


def _system_rows(compare: Mapping[str, Any], per_query: pd.DataFrame, metrics: Sequence[str]) -> list[list[str]]:
    rows = []
    for system in compare["systems"]:
        values = compare["systems"][system]
        own = per_query[per_query["system"] == system]
        row = [f"`{system}`"]
        for metric in metrics:
            if metric in values:
                row.append(f"{fmt(values[metric]['mean'])} [{ci(values[metric])}]")
            else:
                row.append(fmt(_nanmean(own[metric])) if metric in own else "n/a")
        rows.append(row)
    return rows


def _nanmean(values: pd.Series) -> float | None:
    finite = values.dropna()
    return float(finite.mean()) if len(finite) else None


def _delta_rows(compare: Mapping[str, Any], metrics: Sequence[str]) -> list[list[str]]:
    return [[f"`{c['challenger']}`", c["metric"], fmt(c["baseline_mean"]), fmt(c["challenger_mean"]),
             f"{fmt(c['delta'], signed=True)} [{ci(c, signed=True)}]", p_value(c["p_adjusted"]),
             f"{c['improved']}/{c['tied']}/{c['regressed']}"]
            for c in compare["comparisons"] if c["metric"] in metrics]


def _query_type_rows(compare: Mapping[str, Any], metrics: Sequence[str]) -> list[list[str]]:
    rows = []
    for row in compare["slices"].get(QUERY_TYPE_COLUMN, []):
        by_challenger: dict[str, dict[str, Any]] = {}
        for c in row["comparisons"]:
            by_challenger.setdefault(c["challenger"], {})[c["metric"]] = c
        for challenger, found in sorted(by_challenger.items()):
            cells = [f"{fmt(found[m]['delta'], signed=True)} [{ci(found[m], signed=True)}]" if m in found else "n/a"
                     for m in metrics]
            rows.append([row["value"], slice_size([found[m] for m in metrics if m in found]), f"`{challenger}`",
                         *cells])
    return rows


def outcome_counts(per_query: pd.DataFrame) -> pd.DataFrame:
    """Per system: how many answers were correct, partial, wrong, refused wrongly or rightly, or failed."""
    rows = []
    for system, frame in per_query.groupby("system", sort=False):
        gold = frame["AnswerEM"].notna()
        refusals = int(frame.loc[gold, "CorrectRefusal"].sum())
        counts = {"correct": int(frame.loc[gold, "AnswerEM"].sum()) - refusals,
                  "boundary_partial": int(frame.loc[gold, "BoundaryPartial"].sum()),
                  "incorrect_answer": int(frame.loc[gold, "IncorrectAnswer"].sum()),
                  "false_refusal": int(frame.loc[gold, "FalseRefusal"].sum()), "correct_refusal": refusals}
        counts["failed"] = int(gold.sum()) - sum(counts.values())
        rows.append({"system": system, **counts})
    return pd.DataFrame(rows)


def ranking_vs_answer(per_query: pd.DataFrame, baseline: str, ranking: str, answer: str) -> pd.DataFrame:
    """Per challenger and query: delta of the ranking measure and of the answer measure against the baseline."""
    base = per_query[per_query["system"] == baseline].set_index("query_id")
    frames = []
    for system, frame in per_query.groupby("system", sort=False):
        if system == baseline:
            continue
        own = frame.set_index("query_id")
        frames.append(pd.DataFrame({"challenger": system, "ranking_delta": own[ranking] - base[ranking],
                                    "answer_delta": own[answer] - base[answer]}).dropna())
    return pd.concat(frames).rename_axis("query_id").reset_index() if frames else pd.DataFrame(
        columns=["query_id", "challenger", "ranking_delta", "answer_delta"])


def _reach_rows(deltas: pd.DataFrame, tolerance: float = 1e-9) -> list[list[str]]:
    rows = []
    for challenger, frame in deltas.groupby("challenger", sort=False):
        up, down = frame["ranking_delta"] > tolerance, frame["ranking_delta"] < -tolerance
        gain, loss = frame["answer_delta"] > tolerance, frame["answer_delta"] < -tolerance
        rows.append([f"`{challenger}`", int(up.sum()), int((up & gain).sum()), int((up & loss).sum()),
                     int(down.sum()), int((down & loss).sum()), int((~up & ~down & (gain | loss)).sum())])
    return rows


def end_to_end(measured: Mapping[str, Mapping[str, Any]], per_query: pd.DataFrame) -> list[list[str]]:
    """Per system: costs.json's ``end_to_end`` (rerank + generation latency), with the mean answer tokens and
    generation cost of the evaluated answers."""
    rows = []
    for system, found in measured.items():
        own = per_query[per_query["system"] == system]
        tokens = _nanmean(own["AnswerTokens"]) if "AnswerTokens" in own else None
        cost = _nanmean(own["AnswerCost"]) if "AnswerCost" in own else None
        rows.append([f"`{system}`", fmt(found["p50_ms"], 1), fmt(found["p95_ms"], 1), fmt(found["generate_mean_ms"], 2),
                     found["cached_answers"], fmt(tokens, 1), fmt(None if cost is None else cost * 1000, 4)])
    return rows


def answers_section(compare: Mapping[str, Any], per_query: pd.DataFrame, inputs: AnswerInputs,
                    latency: Mapping[str, Mapping[str, Any]], plots_dir, plots_link: str,
                    skip: Sequence[str] = ()) -> str:
    """The section, or "" when no answer measures were evaluated; ``skip``: the reference systems (first-stage
    orders, oracle, random), left out of the plot."""
    if "AnswerF1" not in per_query.columns:
        return ""
    baseline = compare["baseline"]
    metrics = [m for m in (RANKING_MEASURE, *HEADLINE) if m in per_query.columns]
    compared = [m for m in metrics if any(c["metric"] == m for c in compare["comparisons"])]
    generator = inputs.generator
    calibration = inputs.calibration.get("result", {})
    lines = [f"## Answers: did the ranking gain reach the answer? (stages 3 and 4, Δ vs `{baseline}`)", "",
             f"Every system's ranking goes through the same context selection ({_describe_select(inputs)}) and the "
             f"same generator (`{generator.get('kind', 'n/a')}`"
             + (f", abstains below evidence {calibration['abstain_below']} calibrated on the "
                f"{inputs.calibration.get('split')} split: answer F1 {calibration.get('train_answer_f1')} there, "
                f"{calibration.get('train_answer_f1_never_abstaining')} never abstaining"
                if "abstain_below" in calibration else "")
             + f"). {_query_counts(per_query, baseline)} Answer measures follow SQuAD 2.0 on unanswerable queries "
               "(abstaining scores 1); ranking measures and evidence coverage are undefined there and averaged over "
               "the queries with a relevant passage; "
               "abstention precision, citation precision and claim support over the queries where the system "
               "abstained, cited or answered (paired CIs of the two means, same resamples).", "",
               *generator_lines(compare.get("generator_sanity"))]
    lines += [table(["system", *[f"{m} [CI]" for m in metrics]], _system_rows(compare, per_query, metrics)), ""]
    if compared:
        lines += ["### Paired deltas", "",
                  table(["challenger", "metric", "baseline", "challenger", "Δ [CI]", "p adj", "win/tie/loss"],
                        _delta_rows(compare, [m for m in compared if m != RANKING_MEASURE])), ""]
    type_rows = _query_type_rows(compare, compared)
    if type_rows:
        lines += [f"### Per query type (Δ vs `{baseline}`)", "",
                  table(["query type", "queries", "challenger", *[f"Δ {m}" for m in compared]], type_rows), ""]
    if set(OUTCOME_MEASURES) <= set(per_query.columns):
        lines += ["### Outcomes (queries with gold answers)", "",
                  table(["system", "correct", "boundary_partial", "incorrect_answer", "false_refusal",
                         "correct_refusal", "failed"], outcome_counts(per_query).values.tolist()), ""]
    heading = f"### Did the ranking gain reach the answer? (per query, Δ {RANKING_MEASURE} vs Δ AnswerF1)"
    flag = (compare.get("generator_sanity") or {}).get("flag")
    if flag:  # answer-level deltas would plot the generator's noise as if it were the ranking's effect
        from .plots import _nothing_to_show

        _nothing_to_show(plots_dir / "ranking_vs_answer.png", "Not drawn: the generator cannot tell rankings "
                               "apart on this collection (the generator sanity check).")
        lines += [heading, "", f"Not shown: {flag}.", ""]
    else:
        deltas = ranking_vs_answer(per_query, baseline, RANKING_MEASURE, "AnswerF1")
        plot_ranking_vs_answer(deltas, RANKING_MEASURE, "AnswerF1", plots_dir / "ranking_vs_answer.png", skip)
        lines += [heading, "",
                  table(["challenger", f"{RANKING_MEASURE} up", "… answer up", "… answer down",
                         f"{RANKING_MEASURE} down", "… answer down", "ranking same, answer moved"],
                        _reach_rows(deltas)), "",
                  f"![ranking vs answer]({plots_link}/ranking_vs_answer.png)", ""]
    rows = end_to_end(latency, per_query)
    if rows:
        lines += ["### End-to-end latency and generation cost (after warm-up; rerank cold, on its measurement's scale, "
                  "+ generate)", "",
                  table(["system", "answer p50 ms", "answer p95 ms", "generate ms (mean)", "cached answers",
                         "tokens / query", "cost / 1k queries (USD)"], rows)]
    return "\n".join(lines)


def _query_counts(per_query: pd.DataFrame, baseline: str) -> str:
    own = per_query[per_query["system"] == baseline]
    gold = int(own["AnswerEM"].notna().sum())
    ranked = int(own[RANKING_MEASURE].notna().sum()) if RANKING_MEASURE in own else len(own)
    return (f"{len(own)} queries: {gold} with gold answers, {ranked} with a relevant passage (ranking measures), "
            f"{len(own) - ranked} without one.")


def _describe_select(inputs: AnswerInputs) -> str:
    return ", ".join(f"{key} {value}" for key, value in inputs.select.items() if value is not None) or "see params"


def plot_ranking_vs_answer(deltas: pd.DataFrame, ranking: str, answer: str, path, skip: Sequence[str] = ()) -> None:
    """Per challenger (but those in ``skip``, the reference systems) a panel of its queries: Δ ranking measure (x)
    against Δ answer measure (y), sharing both axes. Queries on the same spot (many deltas are exactly 0) are one
    point sized by how many, so the cloud shows where the queries are instead of a blot."""
    from .plots import COLUMNS, _nothing_to_show, _save, grid

    shown = deltas[~deltas["challenger"].isin(skip)]
    if shown.empty:
        _nothing_to_show(path, "No per-query deltas of a reranker under test.")
        return
    challengers = list(dict.fromkeys(shown["challenger"]))
    fig, axes = grid(len(challengers), (3.4, 2.9))
    for axis, challenger in zip(axes, challengers):
        frame = shown[shown["challenger"] == challenger]
        spots = frame.assign(x=frame["ranking_delta"].round(2), y=frame["answer_delta"].round(2)) \
            .groupby(["x", "y"]).size().reset_index(name="queries")
        axis.scatter(spots["x"], spots["y"], s=8 + 20 * spots["queries"] ** 0.5, alpha=0.55, color="#1f77b4",
                     edgecolors="none")
        axis.axhline(0, color="grey", linewidth=0.8)
        axis.axvline(0, color="grey", linewidth=0.8)
        axis.set_title(f"{challenger} ({len(frame)} queries)", fontsize=9)
    for axis in axes[-COLUMNS:]:
        axis.set_xlabel(f"Δ {ranking}", fontsize=8)
    for axis in axes[::COLUMNS]:
        axis.set_ylabel(f"Δ {answer}", fontsize=8)
    fig.suptitle("Did the ranking gain reach the answer? (per query vs the baseline; point size: queries on it)",
                 fontsize=9)
    fig.tight_layout()
    _save(fig, path)
