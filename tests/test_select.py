"""Context selection: the per-parent cap's worked example, budgets, MMR, neighbour expansion and the flags."""

from __future__ import annotations

import pytest

from rerankeval.rag.config import SelectConfig
from rerankeval.rag.passages import Passages
from rerankeval.rag.select import NEIGHBOUR, RANKED, Ranked, context_rows, count_tokens, select_context

# Parent A has chunks 3, 4, 5 (in corpus order), parent B chunk 2.
TEXT = {"A/3": "alpha three", "A/4": "alpha four words here", "A/5": "alpha five", "B/2": "beta two"}
PASSAGES = Passages(TEXT, {doc: doc[0] for doc in TEXT}, previous={"A/4": "A/3", "A/5": "A/4"},
                    next={"A/3": "A/4", "A/4": "A/5"})


def ranking(*doc_ids: str) -> list[Ranked]:
    return [Ranked(doc, doc[0], rank) for rank, doc in enumerate(doc_ids, start=1)]


def chosen(config: SelectConfig, *doc_ids: str) -> list[str]:
    return [passage.doc_id for passage in select_context(ranking(*doc_ids), PASSAGES, config)]


def test_parent_cap_worked_example():
    assert chosen(SelectConfig(max_per_parent=2), "A/4", "A/5", "A/3", "B/2") == ["A/4", "A/5", "B/2"]
    assert chosen(SelectConfig(), "A/4", "A/5", "A/3", "B/2") == ["A/4", "A/5", "A/3", "B/2"]
    assert chosen(SelectConfig(max_per_parent=1, max_passages=2), "A/4", "A/5", "A/3", "B/2") == ["A/4", "B/2"]


def test_budgets_skip_what_does_not_fit_and_stop_at_max_passages():
    assert count_tokens("alpha four words here") == 4 and count_tokens("a, b.") == 4
    # A/4 (4 tokens) does not fit a 3-token budget: skipped, the walk goes on.
    assert chosen(SelectConfig(max_tokens=3), "A/4", "A/5", "B/2") == ["A/5"]
    assert chosen(SelectConfig(max_passages=2), "A/4", "A/5", "B/2") == ["A/4", "A/5"]
    assert chosen(SelectConfig(pool_depth=1), "A/4", "A/5", "B/2") == ["A/4"]


def test_mmr_prefers_a_dissimilar_passage_over_a_near_copy():
    config = SelectConfig(max_passages=2, mmr_lambda=0.3)
    # A/5 shares "alpha" with A/4, B/2 shares nothing: with diversity weighted, B/2 comes second.
    assert chosen(config, "A/4", "A/5", "B/2") == ["A/4", "B/2"]
    assert chosen(SelectConfig(max_passages=2, mmr_lambda=1.0), "A/4", "A/5", "B/2") == ["A/4", "A/5"]


def test_neighbours_are_added_around_their_passage_in_document_order():
    context = select_context(ranking("A/4", "B/2"), PASSAGES, SelectConfig(neighbours=1))
    assert [(p.doc_id, p.source) for p in context] == [("A/3", NEIGHBOUR), ("A/4", RANKED), ("A/5", NEIGHBOUR),
                                                       ("B/2", RANKED)]
    # The budget binds neighbours too: the next chunk comes first.
    context = select_context(ranking("A/4"), PASSAGES, SelectConfig(neighbours=1, max_passages=2))
    assert [p.doc_id for p in context] == ["A/4", "A/5"]


def test_context_rows_flag_redundant_parents_and_near_duplicates():
    passages = Passages({"x": "same words here", "y": "same words here", "z": "other"}, {"x": "P", "y": "Q", "z": "P"},
                        {}, {})
    context = select_context([Ranked("x", "P", 1), Ranked("y", "Q", 2), Ranked("z", "P", 3)], passages,
                             SelectConfig())
    rows = context_rows("q", context, passages, near_duplicate_jaccard=0.8)
    assert rows["redundant"] == [False, False, True] and rows["near_duplicate"] == [False, True, False]
    assert rows["position"] == [1, 2, 3] and rows["rank"] == [1, 2, 3]


def test_the_answer_stage_reads_a_systems_access_setting_from_its_run_and_refuses_a_run_that_records_none(tmp_path):
    import pyarrow as pa

    from rerankeval.core.errors import ContractError
    from rerankeval.core.io import write_table
    from rerankeval.pipeline.answer import _ignores_access

    def run(metadata: dict):
        path = tmp_path / f"run_{len(list(tmp_path.iterdir()))}.parquet"
        write_table(path, pa.table({"query_id": ["q"]}), metadata)
        return path

    assert _ignores_access(run({"system": "s", "config": {"kind": "cross_encoder", "access_filter": False}}))
    assert not _ignores_access(run({"system": "s", "config": {"kind": "cross_encoder"}}))  # the default: filtered
    with pytest.raises(ContractError, match=r"records no system settings.*Fix: `dvc repro --force`"):
        _ignores_access(run({"system": "s"}))
