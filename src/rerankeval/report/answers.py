"""The report's answers section: stages 3 and 4 side by side with ranking, per system and per query type.

The ablation holds everything but the ranking fixed: the first-stage order (the comparison baseline) against each
reranker, with the same select rule, generator and prompt. Its numbers come from compare.json (paired CIs over the
same resamples as every other delta, and ``answers``: the means without a CI, outcome counts and the per-query deltas
of ``stats.answers``) and costs.json's end-to-end latency. Pure text and one plot: nothing here computes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..stats.answers import HEADLINE, deltas_frame
from ..stats.schema import AnswerCounts, Answers, Compare, EndToEnd, Outcomes, Reach, SliceComparison
from .caveats import generator_lines
from .markdown import ci, defined, fmt, ms, not_shown, p_value, slice_size, table

if TYPE_CHECKING:
    import pandas as pd

QUERY_TYPE_COLUMN = "query_type"
OUTCOME_COLUMNS = tuple(Outcomes.model_fields)
REACH_COLUMNS = tuple(Reach.model_fields)


@dataclass(frozen=True)
class AnswerInputs:
    """What the section reads besides compare.json and costs.json."""

    generator: Mapping[str, Any] = field(default_factory=dict)
    select: Mapping[str, Any] = field(default_factory=dict)
    calibration: Mapping[str, Any] = field(default_factory=dict)


def _system_rows(compare: Compare, answers: Answers, metrics: Sequence[str]) -> list[list[str]]:
    rows = []
    for system, values in compare.systems.items():
        row = [f"`{system}`"]
        own = answers.means.get(system, {})
        for metric in metrics:
            if metric in values:
                row.append(f"{fmt(values[metric].mean)} [{ci(values[metric])}]")
            else:  # evaluated but not compared: its mean, no interval
                row.append(fmt(own[metric]) if metric in own else "n/a")
        rows.append(row)
    return rows


def _delta_rows(compare: Compare, metrics: Sequence[str]) -> list[list[str]]:
    return [[f"`{c.challenger}`", c.metric, fmt(c.baseline_mean), fmt(c.challenger_mean),
             f"{fmt(c.delta, signed=True)} [{ci(c, signed=True)}]", p_value(c.p_adjusted),
             f"{c.improved}/{c.tied}/{c.regressed}"]
            for c in compare.comparisons if c.metric in metrics]


def _query_type_rows(compare: Compare, metrics: Sequence[str]) -> list[list[str]]:
    rows = []
    for row in compare.slices.get(QUERY_TYPE_COLUMN, []):
        by_challenger: dict[str, dict[str, SliceComparison]] = {}
        for c in row.comparisons:
            by_challenger.setdefault(c.challenger, {})[c.metric] = c
        for challenger, found in sorted(by_challenger.items()):
            cells = [f"{fmt(found[m].delta, signed=True)} [{ci(found[m], signed=True)}]" if m in found else "n/a"
                     for m in metrics]
            rows.append([row.value, slice_size([found[m] for m in metrics if m in found]), f"`{challenger}`",
                         *cells])
    return rows


def end_to_end(measured: Mapping[str, EndToEnd], means: Mapping[str, Mapping[str, float | None]]) -> list[list[str]]:
    """Per system: costs.json's ``end_to_end`` (rerank + generation latency), with compare.json's mean answer tokens
    and generation cost (``answers.means``)."""
    rows = []
    for system, found in measured.items():
        own = means.get(system, {})
        tokens, cost = own.get("AnswerTokens"), own.get("AnswerCost")
        rows.append([f"`{system}`", ms(found.p50_ms), ms(found.p95_ms), fmt(found.generate_mean_ms, 2),
                     found.cached_answers, fmt(tokens, 1), fmt(None if cost is None else cost * 1000, 4)])
    return rows


def answers_section(compare: Compare, inputs: AnswerInputs, latency: Mapping[str, EndToEnd],
                    plots_dir, plots_link: str, skip: Sequence[str] = ()) -> str:
    """The section, or "" when no answer was generated (compare.json holds no ``answers``); ``skip``: the reference
    systems (first-stage orders, oracle, random), left out of the plot."""
    answers = compare.answers
    if answers is None:
        return ""
    baseline, ranking, answer = compare.baseline, answers.ranking_measure, answers.answer_measure
    evaluated = set(answers.means.get(baseline, {}))
    named = [m for m in (ranking, *HEADLINE) if m in evaluated]
    metrics = [m for m in named if defined(compare, m, answers.means)]
    undefined = [m for m in named if m not in metrics]
    compared = [m for m in metrics if any(c.metric == m for c in compare.comparisons)]
    gold = answers.counts.with_gold > 0
    generator = inputs.generator
    calibration = inputs.calibration.get("result", {})
    lines = [f"## Answers: did the ranking gain reach the answer? (stages 3 and 4, Δ vs `{baseline}`)", "",
             f"Every system's ranking goes through the same context selection ({_describe_select(inputs)}) and the "
             f"same generator (`{generator.get('kind', 'n/a')}`"
             + (f", abstains below evidence {calibration['abstain_below']} calibrated on the "
                f"{inputs.calibration.get('split')} split: answer F1 {calibration.get('train_answer_f1')} there, "
                f"{calibration.get('train_answer_f1_never_abstaining')} never abstaining"
                if "abstain_below" in calibration else "")
             + f"). {_query_counts(answers.counts)} Answer measures follow SQuAD 2.0 on unanswerable queries "
               "(abstaining scores 1); ranking measures and evidence coverage are undefined there and averaged over "
               "the queries with a relevant passage; "
               "abstention precision, citation precision and claim support over the queries where the system "
               "abstained, cited or answered (paired CIs of the two means, same resamples).", "",
               *generator_lines(compare.generator_sanity)]
    if undefined:
        lines += [not_shown(undefined), ""]
    lines += [table(["system", *[f"{m} [CI]" for m in metrics]], _system_rows(compare, answers, metrics)), ""]
    if compared:
        lines += ["### Paired deltas", "",
                  table(["challenger", "metric", "baseline", "challenger", "Δ [CI]", "p adj", "win/tie/loss"],
                        _delta_rows(compare, [m for m in compared if m != ranking])), ""]
    type_rows = _query_type_rows(compare, compared)
    if type_rows:
        lines += [f"### Per query type (Δ vs `{baseline}`)", "",
                  table(["query type", "queries", "challenger", *[f"Δ {m}" for m in compared]], type_rows), ""]
    if answers.outcomes and gold:
        lines += ["### Outcomes (queries with gold answers)", "",
                  table(["system", *OUTCOME_COLUMNS], [[system, *[getattr(found, c) for c in OUTCOME_COLUMNS]]
                                                       for system, found in answers.outcomes.items()]), ""]
    heading = f"### Did the ranking gain reach the answer? (per query, Δ {ranking} vs Δ {answer})"
    flag = compare.generator_sanity.flag
    if ranking is None or flag or not gold:  # with a flag, answer deltas would plot the generator's noise
        from .plots import _nothing_to_show

        _nothing_to_show(plots_dir / "ranking_vs_answer.png", "Not drawn: no ranking measure was evaluated."
                         if ranking is None else "Not drawn: no query has a gold answer." if not gold else
                         "Not drawn: the generator cannot tell rankings apart on this collection (the generator "
                         "sanity check).")
        lines += [heading, "", f"Not shown: {flag}.", ""] if ranking is not None and flag and gold else []
    else:
        plot_ranking_vs_answer(deltas_frame(answers.deltas), ranking, answer, plots_dir / "ranking_vs_answer.png", skip)
        lines += [heading, "",
                  table(["challenger", f"{ranking} up", "… answer up", "… answer down", f"{ranking} down",
                         "… answer down", "ranking same, answer moved"],
                        [[f"`{system}`", *[getattr(found, c) for c in REACH_COLUMNS]]
                         for system, found in answers.reach.items()]), "",
                  f"![ranking vs answer]({plots_link}/ranking_vs_answer.png)", ""]
    rows = end_to_end(latency, answers.means)
    if rows:
        lines += ["### End-to-end latency and generation cost (after warm-up; rerank cold, on its measurement's scale, "
                  "+ generate)", "",
                  table(["system", "answer p50 ms", "answer p95 ms", "generate ms (mean)", "cached answers",
                         "tokens / query", "cost / 1k queries (USD)"], rows)]
    return "\n".join(lines)


def _query_counts(counts: AnswerCounts) -> str:
    return (f"{counts.queries} queries: {counts.with_gold} with gold answers, {counts.with_relevant} with a "
            f"relevant passage (ranking measures), {counts.queries - counts.with_relevant} without one.")


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
