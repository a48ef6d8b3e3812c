"""The report's plots read at a glance on demo-sized inputs: every figure fits a page (no 10:1 strips), small
multiples share their axes, no point label overlaps another, legends sit outside the data, and the reference systems
are bounds apart from the challengers."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from rerankeval.policies.frontier import POINT_COLUMNS, pareto_front
from rerankeval.report import answers, frontier, plots

CHALLENGERS = ["blend_ce_fusion", "cascade_bm25_ce", "ce_minilm_ft", "ce_minilm_ft_int8", "routed_blend"]
SLICES = [f"{column}={value}" for column, values in (("intent", 6), ("language", 4), ("query_type", 3),
                                                     ("relevant_doc_type", 3)) for value in range(values)]
DEPTHS = [10, 20, 30, 50, 100]


@pytest.fixture
def figures(monkeypatch):
    """Every figure a plot function saves, kept open (with its file written) for the test to measure."""
    saved = []

    def keep(fig, path):
        fig.savefig(path, format="png", dpi=plots.DPI)
        saved.append(fig)

    monkeypatch.setattr(plots, "_save", keep)
    yield saved
    for fig in saved:
        plots._figure().close(fig)


def fits_a_page(path) -> None:
    width, height = Image.open(path).size
    assert width <= plots.MAX_WIDTH_PX and width / height <= plots.MAX_ASPECT, (path.name, width, height)


def overlapping_labels(fig) -> list[tuple[str, str]]:
    """Pairs of text labels drawn in the same axes whose boxes overlap."""
    renderer = fig.canvas.get_renderer()
    pairs = []
    for axis in fig.axes:
        boxes = [(text.get_text(), text.get_window_extent(renderer)) for text in axis.texts if text.get_text()]
        pairs += [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2) if box_a.overlaps(box_b)]
    return pairs


def labels_over_marks(fig) -> list[str]:
    """The placed labels (offset from their point) whose box covers something the axes draw: a line or a marker."""
    renderer = fig.canvas.get_renderer()
    found = []
    for axis in fig.axes:
        marks = plots.drawn_marks(axis)
        for text in axis.texts:
            if getattr(text, "xyann", (0, 0)) == (0, 0):
                continue  # not placed by place_labels
            box = text.get_window_extent(renderer)
            inside = (marks[:, 0] > box.x0) & (marks[:, 0] < box.x1) & (marks[:, 1] > box.y0) & (marks[:, 1] < box.y1)
            if inside.any():
                found.append(text.get_text())
    return found


def legends_over_data(fig) -> list[str]:
    """The titles of the axes whose legend lies over their data area."""
    renderer = fig.canvas.get_renderer()
    return [axis.get_title() for axis in fig.axes if axis.get_legend() is not None
            and axis.get_legend().get_window_extent(renderer).overlaps(axis.get_window_extent(renderer))]


def demo_points() -> pd.DataFrame:
    """Frontier points as crowded as the demo's: a sweep of 11 settings at one latency, several close curves."""
    rows = [("fusion depth", "fusion", f"fusion@{d}", 0.70, 17.0, 0.0003, d) for d in DEPTHS[:1]]
    rows += [("blend weight", "blend_ce_fusion", f"blend_ce_fusion weight={w / 10:g}", 0.58 + 0.015 * (10 - i),
              3700.0, 0.055, i) for i, w in enumerate(range(11))]
    rows += [("routing margin", "routed_blend", f"routed_blend margin={m / 10:g}", 0.697 + 0.0008 * m, 3650.0 - m,
              0.044, m) for m in range(8)]
    rows += [(f"{name} depth", name, f"{name}@{d}", q - 0.02 * i, p * (1 + i), 0.01 * (i + 1), d)
             for name, q, p in (("ce_minilm_ft", 0.66, 1300.0), ("cross-encoder", 0.676, 620.0),
                                ("ce_minilm_ft_int8", 0.658, 360.0), ("bm25", 0.63, 22.0), ("dense", 0.686, 22.5))
             for i, d in enumerate(DEPTHS)]
    rows += [("blend_ce_fusion", "blend_ce_fusion", "blend_ce_fusion", 0.726, 3724.0, 0.055, 0),
             ("routed_blend", "routed_blend", "routed_blend", 0.703, 3556.0, 0.044, 0),
             ("cascade_bm25_ce", "cascade_bm25_ce", "cascade_bm25_ce", 0.625, 1243.0, 0.018, 0)]
    points = pd.DataFrame(rows, columns=POINT_COLUMNS)
    points["frontier"] = pareto_front(points)
    return points


def test_the_frontier_labels_never_overlap_and_the_bounds_stand_apart(tmp_path, figures):
    frontier.plot_frontier(demo_points(), "nDCG@10", tmp_path / "pareto.png",
                           {"oracle (ceiling)": 0.97, "random (floor)": 0.05})
    fig = figures[0]
    fits_a_page(tmp_path / "pareto.png")
    assert overlapping_labels(fig) == [] and labels_over_marks(fig) == []
    assert legends_over_data(fig) == []
    texts = [text.get_text() for text in fig.axes[0].texts]
    # The frontier's points are labelled first, so they keep their labels; the floor is far below: written at the
    # edge instead of stretching the axis.
    assert {"fusion@10", "blend_ce_fusion weight=0"} <= set(texts)
    assert any(text.startswith("↓ random (floor) 0.050") for text in texts)
    assert fig.axes[0].get_ylim()[0] > 0.5


def test_the_label_check_sees_an_overlap(figures):
    """The overlap test can fail: two labels drawn on one spot are found."""
    plt = plots._figure()
    fig, axis = plt.subplots()
    axis.annotate("blend weight=0.3", (1, 1))
    axis.annotate("blend weight=0.4", (1, 1))
    assert overlapping_labels(fig) == [("blend weight=0.3", "blend weight=0.4")]
    assert plots.place_labels(axis, [(1, 1, "a third", "black")]) == 0  # placed beside the two, not on them
    plt.close(fig)


def test_slice_deltas_are_small_multiples_on_one_scale(tmp_path, figures):
    rng = np.random.default_rng(3)
    rows = pd.DataFrame([{"challenger": c, "slice": s, "delta": d, "low": d - 0.1, "high": d + 0.1,
                          "too_small": s.startswith("intent=5")}
                         for c in CHALLENGERS for s, d in zip(SLICES, rng.normal(0, 0.1, len(SLICES)))])
    empty = pd.DataFrame([{"challenger": c, "slice": "answerable=False", "delta": None, "low": None, "high": None,
                           "too_small": False} for c in CHALLENGERS])  # outside the metric's domain
    plots.slice_deltas(pd.concat([rows, empty]), "nDCG@10", tmp_path / "slice_deltas.png", 0.95,
                       lambda label: label.startswith("language="))
    fits_a_page(tmp_path / "slice_deltas.png")
    axes = [axis for axis in figures[0].axes if axis.get_visible()]
    assert len(axes) == len(CHALLENGERS) and len({axis.get_xlim() for axis in axes}) == 1  # a shared Δ scale
    worst_first = list(rows.groupby("slice")["delta"].mean().sort_values(kind="stable").index)
    assert [label.get_text() for label in axes[0].get_yticklabels()] == [
        f"★ {name}" if name.startswith("language=") else name for name in worst_first]  # no empty row


def test_delta_distribution_and_ranking_vs_answer_fit_a_page(tmp_path, figures):
    rng = np.random.default_rng(4)
    deltas = pd.DataFrame({"challenger": np.repeat(CHALLENGERS, 124), "delta": rng.normal(0, 0.2, 620).clip(-1, 1)})
    plots.delta_distribution(deltas, "nDCG@10", tmp_path / "delta_distribution.png")
    fits_a_page(tmp_path / "delta_distribution.png")
    per_query = deltas.assign(query_id=[f"q{i % 124}" for i in range(620)], ranking_delta=deltas["delta"],
                              answer_delta=np.where(rng.random(620) < 0.7, 0.0, rng.normal(0, 0.3, 620)))
    answers.plot_ranking_vs_answer(pd.concat([per_query, per_query.assign(challenger="random")]), "nDCG@10",
                                   "AnswerF1", tmp_path / "ranking_vs_answer.png", skip=["random"])
    fits_a_page(tmp_path / "ranking_vs_answer.png")
    titles = [axis.get_title() for axis in figures[1].axes if axis.get_visible()]
    assert titles == [f"{c} (124 queries)" for c in CHALLENGERS]  # the floor is no challenger
    # Queries on one spot are one point sized by their count, not 434 points drawn on each other.
    offsets = figures[1].axes[0].collections[0].get_offsets()
    assert len(offsets) < 124


def depth_rows() -> pd.DataFrame:
    rows = []
    for system, base in (("bm25", 0.63), ("ce_minilm_ft", 0.66), ("fusion", 0.70), ("oracle", 0.85),
                         ("random", 0.47)):
        for i, depth in enumerate(DEPTHS):
            rows.append({"system": system, "depth": depth, "measure": "nDCG@10", "mean": base - 0.01 * i})
    for depth in DEPTHS:
        rows += [{"system": "fusion", "depth": depth, "measure": f"CandidateRecall@{depth}", "mean": 0.99},
                 {"system": "fusion", "depth": depth, "measure": f"Coverage@{depth}", "mean": 0.8}]
    return pd.DataFrame(rows)


def test_depth_plots_do_not_repeat_a_panel_and_keep_legends_off_the_lines(tmp_path, figures):
    plots.depth_curve(depth_rows(), "nDCG@10", tmp_path / "depth_curve.png", bounds=["oracle", "random"])
    costs = pd.DataFrame([{"system": s, "depth": d, "quality": 0.6, "p95_ms": p * d, "cost_per_1k_queries": p * d / 1e4}
                          for s, p in (("ce_minilm_ft", 130.0), ("ce_minilm_ft_int8", 36.0), ("fusion", 0.2))
                          for d in DEPTHS])
    plots.depth_cost(costs, "nDCG@10", tmp_path / "depth_cost.png")
    curve, cost = figures
    for name in ("depth_curve.png", "depth_cost.png"):
        fits_a_page(tmp_path / name)
    assert legends_over_data(curve) == [] and legends_over_data(cost) == [] and overlapping_labels(cost) == []
    assert len(cost.axes) == 1  # the quality-by-depth panel is depth_curve's alone
    dashed = [line.get_label() for line in curve.axes[0].get_lines() if line.get_linestyle() == "--"]
    assert dashed == ["oracle (bound)", "random (bound)"]


def test_first_stages_get_a_linear_panel_under_the_rerankers_and_the_legend_gives_each_cost(tmp_path, figures):
    costs = pd.DataFrame([{"system": s, "depth": d, "quality": 0.6, "p95_ms": p * d, "cost_per_1k_queries": p * d / 1e4}
                          for s, p in (("ce_minilm_ft", 13.0), ("fusion", 0.0002)) for d in DEPTHS])
    plots.depth_cost(costs, "nDCG@10", tmp_path / "depth_cost.png")
    [cost] = figures
    fits_a_page(tmp_path / "depth_cost.png")
    rerankers, first_stages = cost.axes
    assert (rerankers.get_yscale(), first_stages.get_yscale()) == ("log", "linear")
    assert [line.get_label() for line in first_stages.get_lines()] == [
        f"fusion: ${0.0002 * DEPTHS[-1] / 1e4:.4f} / 1k at depth {DEPTHS[-1]}"]
    assert [text.get_text() for text in rerankers.get_legend().get_texts()] == [
        f"ce_minilm_ft: ${13.0 * DEPTHS[-1] / 1e4:.4f} / 1k at depth {DEPTHS[-1]}",
        f"fusion: ${0.0002 * DEPTHS[-1] / 1e4:.4f} / 1k at depth {DEPTHS[-1]}"]
    assert legends_over_data(cost) == []
