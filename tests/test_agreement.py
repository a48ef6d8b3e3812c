"""Run agreement measures (stats.agreement) on rankings whose values are worked out by hand here."""

import numpy as np
import pandas as pd
import pytest

from rerankeval.stats.agreement import rbo_ext, run_agreement


def test_rbo_is_one_for_the_same_order_zero_for_disjoint_lists_and_webbers_sum_in_between():
    assert rbo_ext(list("abcdef"), list("abcdef"), 0.9) == pytest.approx(1.0)
    assert rbo_ext(list("abc"), list("xyz"), 0.9) == 0.0
    # A = a b c, B = b a c, p = 0.5: X_1 = 0, X_2 = 2, X_3 = 3, so
    # X_3/3 p^3 + (1 - p)/p (X_1/1 p + X_2/2 p^2 + X_3/3 p^3) = 0.125 + (0 + 0.25 + 0.125) = 0.5
    assert rbo_ext(list("abc"), list("bac"), 0.5) == pytest.approx(0.5)
    # A swap lower down costs less: a b d c vs a b c d, p = 0.5: X = 1, 2, 2, 4
    # 4/4 * 0.0625 + (0.5 + 0.25 + 2/3 * 0.125 + 0.0625) = 0.0625 + 0.895833 = 0.958333
    assert rbo_ext(list("abdc"), list("abcd"), 0.5) == pytest.approx(0.958333, abs=1e-6)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        rbo_ext(["a"], ["a"], 1.0)


def run(query_docs: dict[str, list[str]], scores: dict[str, list[float]] | None = None) -> pd.DataFrame:
    rows = [{"query_id": query, "doc_id": doc, "rank": rank, "score": (scores or {}).get(query, [0.0] * 10)[rank - 1]}
            for query, docs in query_docs.items() for rank, doc in enumerate(docs, start=1)]
    return pd.DataFrame(rows)


def test_per_query_agreement_of_two_runs_of_the_same_candidates():
    reference = run({"q1": list("abcd"), "q2": list("abcd")}, {"q1": [4, 3, 2, 1], "q2": [4, 3, 2, 1]})
    other = run({"q1": list("abcd"), "q2": list("dcba")}, {"q1": [4.01, 3, 2, 1], "q2": [10, 9, 8, 7]})
    found = run_agreement(reference, other, k=3, p=0.5)
    assert found.loc["q1"].tolist() == [pytest.approx(1.0), 1.0, 1.0, 0.0, pytest.approx(0.01)]
    q2 = found.loc["q2"]
    # top 3: a b c vs d c b: X = 0, 0, 2 -> 2/3 * 0.125 + (0 + 0 + 2/3 * 0.125) = 0.166667
    assert q2["rbo"] == pytest.approx(1 / 6) and q2["tau"] == pytest.approx(-1.0)  # a b c ranked in reverse
    assert q2["overlap"] == pytest.approx(2 / 3) and q2["changed"] == 1.0 and q2["max_score_diff"] == 9.0  # d: 10 vs 1
    assert np.isnan(run_agreement(run({"q1": ["a"]}), run({"q1": ["a"]}), k=1)["tau"].iloc[0])  # one document
