"""Measure values, their parsing, and the registry of measure families.

Importing this package declares the built-in families (``families``); their kernels live in ``ranking``
(trec_eval's families, DCG and Judged), ``candidates`` (CandidateRecall, Coverage) and ``answers`` (the selected
context and the generated answer: AnswerF1, CitationPrecision, EvidenceCoverage, ...), imported at the first value.
"""

from . import families as _builtin_families  # noqa: F401  (declares the built-in families)
from .base import (
    GAINS,
    IDCGS,
    PARAMETERS,
    Family,
    Measure,
    as_measure,
    build_input,
    describe_measures,
    families,
    family,
    ir_measures_name,
    measure_names,
    parse_measure,
    register_input,
    register_measure,
)

__all__ = [
    "GAINS", "IDCGS", "PARAMETERS", "Family", "Measure", "as_measure", "build_input", "describe_measures",
    "families", "family", "ir_measures_name", "measure_names", "parse_measure", "register_input", "register_measure",
]
