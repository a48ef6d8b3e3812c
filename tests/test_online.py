"""The online step before launch: interleaving, simulated users, and the sizing of each challenger's experiment."""

import numpy as np
import pytest
from scipy import stats

from rerankeval.core.errors import ConfigError
from rerankeval.online.clicks import NO_RESULT, session_measure, simulate_clicks
from rerankeval.online.config import ClickModelConfig, OnlineConfig
from rerankeval.online.interleaving import (ABSENT, METHODS, PROBABILISTIC_TAU, balanced, credit, probabilistic,
                                           team_draft)
from rerankeval.online.sensitivity import (bias_check, online_sizing, pair_simulations, sign_test_power,
                                           sign_test_pvalues, sign_test_size)
from rerankeval.report.online import online_section


def arrays(pages):
    return [np.array([getattr(page, name) for page in pages]) for name in ("team", "rank_a", "rank_b")]


def test_team_draft_enumerates_every_page_with_its_probability():
    a, b = list("abcdefgh"), list("hgfedcba")
    pages = team_draft(a, b, 6)
    assert sum(page.probability for page in pages) == pytest.approx(1.0)
    assert len(pages) == 2 ** 3  # one coin per round of two picks
    for page in pages:
        assert len(set(page.shown)) == 6
        for position, (doc, side) in enumerate(zip(page.shown, page.team)):
            own = a if side == 1 else b
            # each pick is its side's highest-ranked result not shown above it
            assert doc == next(d for d in own if d not in page.shown[:position])
        assert sum(page.team) == 0  # three picks each


def test_team_draft_credits_identical_rankings_to_neither_side():
    # the same ranking on both sides: every position is A's or B's with the same probability, so clicks of any
    # model prefer neither side in expectation
    pages = team_draft(list("abcdef"), list("abcdef"), 6)
    expected_side = sum(page.probability * np.array(page.team) for page in pages)
    np.testing.assert_allclose(expected_side, 0.0, atol=1e-12)


@pytest.mark.parametrize("a, b", [(["x"], ["x", "y", "z"]), (["x", "y", "z"], ["x"])])
def test_team_draft_lets_the_longer_ranking_fill_the_page_when_the_other_runs_out(a, b):
    for page in team_draft(a, b, 10):
        assert sorted(page.shown) == ["x", "y", "z"] and None not in page.shown
        longer = 1 if len(a) > len(b) else -1
        assert page.team[1:] == (longer, longer)  # after x, only the longer ranking has picks left


def test_balanced_interleaving_of_the_textbook_pair():
    pages = balanced(list("abcd"), list("bade"), 4)
    assert [page.shown for page in pages] == [tuple("abcd"), tuple("badc")]
    assert [page.probability for page in pages] == [0.5, 0.5]
    assert pages[0].rank_b == (2, 1, ABSENT, 3)


def test_probabilistic_interleaving_draws_each_result_from_its_sides_softmax():
    a, b = list("abcdefgh"), list("hgfedcba")
    pages = probabilistic(a, b, 6)
    assert sum(page.probability for page in pages) == pytest.approx(1.0)
    assert len({(page.shown, page.team) for page in pages}) == len(pages)  # each distinct page once, with its share
    assert probabilistic(a, b, 6) == pages  # seeded by the two rankings
    for page in pages:
        assert len(set(page.shown)) == 6 and set(page.team) <= {1, -1}
        assert page.rank_a == tuple(a.index(doc) + 1 if doc in a[:6] else ABSENT for doc in page.shown)
    # the first result: A's coin (1/2) times A's softmax weight of its top result (each ranking cut to depth 6; "a"
    # is not in B's top 6)
    weights = np.arange(1, 7, dtype=float) ** -PROBABILISTIC_TAU
    first_a = sum(page.probability for page in pages if page.shown[0] == "a")
    # PROBABILISTIC_DRAWS pages: a standard error of about 0.03 around the method's own probability
    assert first_a == pytest.approx(weights[0] / weights.sum() / 2, abs=0.1)


def test_probabilistic_interleaving_is_fair_where_both_sides_have_results_left():
    # mirrored draws: every position is A's exactly as often as B's, so clicks that ignore the grade prefer neither
    for a, b in [(list("abcdef"), list("abcdef")), (list("abcdef"), list("fedcba")), (list("abcd"), list("wxyz"))]:
        pages = probabilistic(a, b, 6)
        expected_side = sum(page.probability * np.array(page.team) for page in pages)
        np.testing.assert_allclose(expected_side, 0.0, atol=1e-12)
    # a side with no result left gives way, as team-draft's does
    for page in probabilistic(["x"], ["x", "y", "z"], 10):
        after_x = page.shown.index("x") + 1  # A's only result is shown: B draws the rest
        assert sorted(page.shown) == ["x", "y", "z"] and set(page.team[after_x:]) <= {-1}


def test_probabilistic_credit_is_by_origin():
    page = next(page for page in probabilistic(list("abcd"), list("bade"), 4) if len(set(page.team)) == 2)
    team, rank_a, rank_b = arrays([page])
    clicks = np.zeros((2, 4), dtype=bool)
    clicks[0, page.team.index(1)] = clicks[1, page.team.index(-1)] = True  # one click on each side's pick
    assert credit("probabilistic", clicks, team.repeat(2, 0), rank_a.repeat(2, 0), rank_b.repeat(2, 0)).tolist() \
        == [1, -1]


def test_credit_counts_team_clicks_and_balanced_cut():
    pages = team_draft(list("abcd"), list("bade"), 4)
    team, rank_a, rank_b = arrays(pages)
    first = pages[0]  # a(A) b(B) c(A) d(B)
    assert first.shown == tuple("abcd") and first.team == (1, -1, 1, -1)
    clicks = np.array([[False, True, False, True], [True, False, True, False], [True, True, False, False],
                       [False] * 4])
    outcomes = credit("team_draft", clicks, np.repeat(team[:1], 4, axis=0), rank_a[:1].repeat(4, 0),
                      rank_b[:1].repeat(4, 0))
    assert outcomes.tolist() == [-1, 1, 0, 0]
    page = balanced(list("abcd"), list("bade"), 4)[0]  # a b c d
    _, rank_a, rank_b = arrays([page])
    on_c = np.array([[False, False, True, False]])  # c is A's 3rd and not in B: B's top 3 (b, a, d) holds no click
    on_b_and_d = np.array([[False, True, False, True]])  # d: A's 4th, B's 3rd: top 3 of each; B has b and d, A has b
    assert credit("balanced", on_c, np.zeros((1, 4)), rank_a, rank_b).tolist() == [1]
    assert credit("balanced", on_b_and_d, np.zeros((1, 4)), rank_a, rank_b).tolist() == [-1]


def test_click_models_follow_their_definitions():
    rng = np.random.default_rng(0)
    grades = np.tile(np.array([3, 0, 3, 1, NO_RESULT]), (40000, 1))
    cascade = simulate_clicks(ClickModelConfig(kind="cascade"), grades, 3, rng)
    assert cascade.sum(axis=1).max() == 1 and not cascade[:, 4].any()
    assert cascade[:, 0].mean() == pytest.approx(0.95, abs=0.01)
    pbm = simulate_clicks(ClickModelConfig(kind="pbm", position_bias=1.0), grades, 3, rng)
    np.testing.assert_allclose(pbm[:, :4].mean(axis=0), [0.95, 0.05 / 2, 0.95 / 3, 0.35 / 4], atol=0.01)
    always_stop = simulate_clicks(ClickModelConfig(kind="dcm", click=[1.0, 1.0], stop=[1.0, 1.0]), grades, 3, rng)
    assert always_stop[:, 0].all() and not always_stop[:, 1:].any()
    never_stop = simulate_clicks(ClickModelConfig(kind="dcm", click=[1.0, 1.0], stop=[0.0, 0.0]), grades, 3, rng)
    assert never_stop[:, :4].all() and not never_stop[:, 4].any()  # an empty slot is never clicked
    measured = session_measure(np.array([[False, True, True], [False, False, False]]), "reciprocal_rank")
    assert measured.tolist() == [0.5, 0.0]


def test_the_sign_test_is_scipys_and_its_power_is_what_simulation_finds():
    for wins, losses in [(10, 3), (4, 4), (0, 7), (30, 18)]:
        assert sign_test_pvalues(np.array([wins]), np.array([losses]))[0] == pytest.approx(
            stats.binomtest(wins, wins + losses).pvalue)
    assert sign_test_pvalues(np.array([0]), np.array([0]))[0] == 1.0
    win, loss, impressions = 0.3, 0.22, 300
    rng = np.random.default_rng(1)
    draws = rng.multinomial(impressions, [win, loss, 1 - win - loss], size=20000)
    simulated = np.mean(sign_test_pvalues(draws[:, 0], draws[:, 1]) < 0.05)
    assert sign_test_power(impressions, win, loss, 0.05) == pytest.approx(simulated, abs=0.015)
    needed = sign_test_size(win, loss, 0.05, 0.8)
    assert sign_test_power(needed, win, loss, 0.05) >= 0.8 > sign_test_power(needed // 2, win, loss, 0.05)
    assert sign_test_size(0.3, 0.3, 0.05, 0.8) is None
    assert sign_test_power(1000, 0.3, 0.3, 0.05) <= 0.05  # its exact size: the test is exact, so at most alpha


def synthetic_pair(queries=40, seed=3):
    """An ideal ranking (grades descending) against the same ranking with its top half shuffled."""
    rng = np.random.default_rng(seed)
    rankings, qrels = {"good": {}, "base": {}}, {}
    for query in range(queries):
        docs = [f"q{query}d{i}" for i in range(12)]
        grades = dict(zip(docs, rng.integers(0, 4, size=12).tolist()))
        ideal = sorted(docs, key=lambda d: -grades[d])
        rankings["good"][f"q{query}"] = ideal
        rankings["base"][f"q{query}"] = list(rng.permutation(ideal[:6])) + ideal[6:]
        qrels[f"q{query}"] = grades
    return rankings, qrels


def test_sizing_detects_the_better_ranking_at_the_stated_power_and_holds_the_null():
    rankings, qrels = synthetic_pair()
    query_ids = sorted(qrels)
    config = OnlineConfig(sessions_per_query=500, null_pairs=200, null_impressions=300, check_trials=200)
    deltas = {"good": np.full(len(query_ids), 0.1)}
    found = online_sizing(rankings, qrels, deltas, "base", query_ids, config)
    pair = found["challengers"]["good"]
    assert pair["directions_agree"]
    for method in METHODS:
        sized = pair["interleaving"][method]
        assert sized["preference"] > 0 and sized["impressions_needed"] is not None
        # achieved power near the target (200 trials: a standard error of about 0.03)
        assert abs(sized["achieved_power"] - 0.8) < 0.1, sized
    assert pair["ab"]["difference"] > 0 and abs(pair["ab"]["achieved_power"] - 0.8) < 0.1
    assert pair["offline"]["judged_queries_needed"] is None  # identical deltas: no spread, nothing to size
    for method in METHODS:
        for null in ("labels", "grade_blind"):
            assert found["null_check"][method][null]["exact_size"] <= 0.05
        assert found["null_check"][method]["labels"]["holds"]
    assert found["null_check"]["team_draft"]["grade_blind"]["holds"]  # team-draft credits blind clicks evenly
    assert not found["bias_check"]["team_draft"]["good"]["biased"]
    # probabilistic interleaving's coins are fair too, and it reaches deeper into each ranking: less sensitive here
    assert found["null_check"]["probabilistic"]["grade_blind"]["holds"]
    assert not found["bias_check"]["probabilistic"]["good"]["biased"]
    assert pair["interleaving"]["probabilistic"]["impressions_needed"] > pair["interleaving"]["team_draft"][
        "impressions_needed"]
    assert online_sizing(rankings, qrels, deltas, "base", query_ids, config) == found  # seeded


def test_the_bias_check_finds_balanced_interleavings_textbook_bias_and_none_in_team_draft():
    """A = (d1, d2, d3, d5), B = (d2, d3, d4, d5): balanced interleaving credits B for clicks that ignore the grade
    (B's ranks of the shared results are higher, so its top k holds more of them); team-draft's coin makes every
    position A's or B's alike, so its expected preference is exactly 0."""
    config = OnlineConfig(sessions_per_query=200000, depth=4)
    rankings = {"a": {"q": ["d1", "d2", "d3", "d5"]}, "b": {"q": ["d2", "d3", "d4", "d5"]}}
    qrels = {"q": {"d1": 1, "d2": 1, "d3": 0, "d4": 0, "d5": 0}}
    found = bias_check(pair_simulations(rankings, qrels, ["a"], "b", ["q"], config), config)
    balanced, team_draft = found["balanced"]["a"], found["team_draft"]["a"]
    assert balanced["biased"] and balanced["material"] and balanced["high"] < -0.2
    assert balanced["false_detection"] > 0.99
    # 200,000 sessions: a standard error of about 0.002 around team-draft's exact 0
    assert not team_draft["biased"] and not team_draft["material"] and abs(team_draft["preference"]) < 0.006
    assert team_draft["false_detection"] <= 0.05 + 0.01
    assert bias_check(pair_simulations(rankings, qrels, ["a"], "b", ["q"], config), config) == found  # seeded


def test_click_model_settings_are_refused_with_their_key():
    with pytest.raises(ConfigError, match=r"online.click_model.click"):
        OnlineConfig.parse({"click_model": {"click": [0.5]}}, "online")
    with pytest.raises(ConfigError, match=r"online.click_model.kind"):
        OnlineConfig.parse({"click_model": {"kind": "ubm"}}, "online")


def test_the_section_renders_each_methods_bias_on_each_pair(tmp_path):
    rankings, qrels = synthetic_pair()
    query_ids = sorted(qrels)
    config = OnlineConfig(sessions_per_query=200, null_pairs=100, null_impressions=100, check_trials=20)
    found = online_sizing(rankings, qrels, {"good": np.full(len(query_ids), 0.1)}, "base", query_ids, config)
    text = online_section({"enabled": True, "metric": "nDCG@10", **found}, tmp_path, "plots")
    checked = found["bias_check"]["team_draft"]["good"]
    assert (f"| team-draft | `good` | {checked['preference']:+.4f} [{checked['low']:+.4f}, {checked['high']:+.4f}] | "
            f"{checked['false_detection']:.1%} | no |") in text
    assert text.index("| team-draft | `good` |") < text.index("| balanced | `good` |") \
        < text.index("| probabilistic | `good` |")  # the null table's order
    assert ("Biased beyond α on some pair" in text) == found["bias_check"]["balanced"]["good"]["material"]
    # the sizing table marks the method's count on a pair it is biased on beyond α, and only there
    for biased in (False, True):
        found["bias_check"]["balanced"]["good"].update(biased=biased, material=biased)
        page = online_section({"enabled": True, "metric": "nDCG@10", **found}, tmp_path, "plots")
        row = next(line for line in page.splitlines() if line.startswith("| `good` |")).split(" | ")
        assert [cell.endswith("⚠ biased beyond α") for cell in row[6:10]] == [False, biased, False, False]


def test_the_section_is_left_out_when_the_stage_is_off(tmp_path):
    assert online_section({"enabled": False}, tmp_path, "plots") == ""
    assert online_section(None, tmp_path, "plots") == ""


def test_a_challenger_showing_the_baselines_pages_needs_no_impressions_and_the_page_says_why(tmp_path):
    """Identical top lists: every method's expected preference is exactly 0, so no size is computed from the
    simulation's noise (which asked for billions of impressions), and the details page names the reason."""
    from rerankeval.report.online import online_section

    rankings, qrels = synthetic_pair()
    rankings["same"] = {query: list(docs) for query, docs in rankings["base"].items()}
    query_ids = sorted(qrels)
    config = OnlineConfig(sessions_per_query=100, null_pairs=100, null_impressions=100, check_trials=20)
    found = online_sizing(rankings, qrels, {"same": np.zeros(len(query_ids)), "good": np.full(len(query_ids), 0.1)},
                          "base", query_ids, config)
    same, good = found["challengers"]["same"], found["challengers"]["good"]
    assert same["same_pages"] and not good["same_pages"]
    assert all(same["interleaving"][method]["impressions_needed"] is None for method in METHODS)
    assert same["ab"]["impressions_needed"] is None and same["ab"]["achieved_power"] is None
    assert all(good["interleaving"][method]["impressions_needed"] is not None for method in METHODS)
    page = online_section({"enabled": True, "metric": "nDCG@10", **found}, tmp_path, "plots")
    row = next(line for line in page.splitlines() if line.startswith("| `same`"))
    assert "shows the baseline's pages: no experiment can tell them apart" in row
    assert "never (no difference)" in row
