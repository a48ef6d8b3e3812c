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


def write_run(path, rows):
    path.write_text("".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, d, s in rows))
    return path


def test_score_parity_fails_beyond_the_tolerance_and_names_where():
    from rerankeval.stats.agreement import score_parity

    reference = pd.DataFrame({"query_id": ["q", "q", "r"], "doc_id": ["a", "b", "a"], "score": [0.0, 2.0, None]})
    served = pd.DataFrame({"query_id": ["q", "q", "r"], "doc_id": ["a", "b", "a"],
                           "score": [0.5, 1 / (1 + np.exp(-2.0)) + 3e-4, 0.7]})
    found = score_parity(reference, served, 1e-3, "sigmoid")  # sigmoid(0) = 0.5; r's unscored row is left out
    assert found["passed"] and found["pairs"] == 2 and found["max_diff"] == pytest.approx(3e-4)
    failed = score_parity(reference, served, 1e-4, "sigmoid")
    assert not failed["passed"] and failed["at"] == {"query_id": "q", "doc_id": "b"}
    assert not score_parity(reference, served.assign(doc_id="z"), 1.0)["passed"]  # no pair in common fails


def test_the_agreement_command_prints_the_measures_and_exits_1_when_parity_fails(tmp_path):
    from test_cli_evaluate import rerankeval

    reference = write_run(tmp_path / "a.txt", [("q1", "a", 3.0), ("q1", "b", 2.0), ("q1", "c", 1.0),
                                               ("q2", "a", 3.0), ("q2", "b", 2.0)])
    swapped = write_run(tmp_path / "b.txt", [("q1", "a", 3.0), ("q1", "b", 1.0), ("q1", "c", 2.0),
                                             ("q2", "a", 3.0), ("q2", "b", 2.0)])
    result = rerankeval("agreement", reference, swapped, "--k", "3")
    lines = dict(line.split(None, 1) if not line.startswith(("rbo", "top", "largest")) else
                 (line[:24].strip(), line[24:]) for line in result.stdout.splitlines())
    assert lines["queries"] == "2" and lines["top 3 changed"].startswith("0.5000")  # q1's last two swapped
    assert lines["largest score diff"] == "1"
    failed = rerankeval("agreement", reference, swapped, "--score-tolerance", "0.5", check=False)
    assert failed.returncode == 1 and "FAIL: largest |difference| 1 (> tolerance 0.5) at query q1" in failed.stdout
    assert rerankeval("agreement", reference, reference, "--score-tolerance", "0").returncode == 0
    disjoint = write_run(tmp_path / "c.txt", [("q9", "a", 1.0)])
    refused = rerankeval("agreement", reference, disjoint, check=False)
    assert refused.returncode == 2 and "share no query id" in refused.stderr and "Traceback" not in refused.stderr
