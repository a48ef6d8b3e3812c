"""The metric engine: per-query IR measures from run and qrels DataFrames.

    from rerankeval.eval import evaluate
    evaluate(run, qrels, ["nDCG@10", "RR@10", "AP@100"])  # query_id x measure, float64

- ``measures``: Measure values, their parsing (``parse_measure``), and the registry of measure
  families; ``ranking`` holds trec_eval's families (every measure named as trec_eval's equals
  it, ties and negative grades included), ``candidates`` CandidateRecall and Coverage.
- ``matrix``: the run and qrels validated and turned into a GradeMatrix (input contract,
  TIE_BREAK_RULE and the handling of negative grades are in its docstring).
- ``evaluate``: ``evaluate``, ``evaluate_matrix``, ``assign_ranks``, ``oracle_run``, ``oracle_values``.

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

from importlib import import_module

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

# The engine loads pandas and pyarrow: imported on first use, so that reading measures (the
# command line's --help) costs numpy alone.
_ENGINE = {
    "assign_ranks": "evaluate", "evaluate": "evaluate", "evaluate_matrix": "evaluate", "oracle_run": "evaluate",
    "oracle_values": "evaluate", "NO_RELEVANT": "matrix", "TIE_BREAK_RULE": "matrix", "GradeMatrix": "matrix",
    "grade_matrix": "matrix",
}


def __getattr__(name: str):
    if name in _ENGINE:
        # All at once: importing the submodule evaluate sets this package's attribute of that
        # name to the module, which the function must replace.
        for each, module in _ENGINE.items():
            globals()[each] = getattr(import_module(f".{module}", __name__), each)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "NO_RELEVANT", "TIE_BREAK_RULE", "Family", "GradeMatrix", "Measure", "as_measure", "assign_ranks",
    "describe_measures", "evaluate", "evaluate_matrix", "families", "family", "grade_matrix", "measure_names",
    "oracle_run", "oracle_values", "parse_measure", "register_input", "register_measure",
]
