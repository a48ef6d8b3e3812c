"""The metric engine: per-query IR measures from run and qrels DataFrames.

    from rerankeval.eval.engine import evaluate
    evaluate(run, qrels, ["nDCG@10", "RR@10", "AP@100"])  # query_id x measure, float64

- ``measures``: Measure values, their parsing (``parse_measure``), and the registry of measure
  families; ``ranking`` holds trec_eval's families (every measure named as trec_eval's equals
  it, ties and negative grades included), ``candidates`` CandidateRecall and Coverage.
- ``matrix``: the run and qrels validated and turned into a GradeMatrix (input contract,
  TIE_BREAK_RULE and the handling of negative grades are in its docstring).
- ``engine``: ``evaluate``, ``evaluate_matrix``, ``assign_ranks``, ``oracle_run``, ``oracle_values``.

This package re-exports the measures only: every stage imports it (params.yaml's measure names are
validated at load), so ``matrix`` and ``engine`` (pandas, pyarrow and the C kernels) are imported
from their modules, by the code that evaluates, and are no other stage's code (its DVC deps).

Adding a measure family takes one new module under ``measures/``, imported by
``measures/__init__.py``: a kernel ``kernel(measure, input) -> one float64 per query``,
decorated with ``register_measure(name, cutoff=..., parameters=..., summary=..., aliases=...,
trec_eval=..., needs=...)``. ``needs`` names the input kind the kernel reads: ``ranking`` (a
RankedLists of each query's grades in rank order) or ``candidate_order`` (the same in the
run's fused_rank order). A family whose per-query input is something else (generated answers,
say) declares its own kind and registers, in the same module, how that input is built from
the GradeMatrix with ``@register_input(kind)``; ``evaluate`` builds each kind once per call.
A family that names a ``trec_eval`` equivalent is held to it by
``tests/test_metrics_trec_eval.py`` through pytrec_eval.
"""

from .measures import (
    Family,
    Measure,
    as_measure,
    describe_measures,
    families,
    family,
    measure_names,
    parse_measure,
    register_input,
    register_measure,
)

__all__ = [
    "Family", "Measure", "as_measure", "describe_measures", "families", "family", "measure_names", "parse_measure",
    "register_input", "register_measure",
]
