"""Measure names in configs: validated and canonical, so ``MRR@10`` in one setting and ``RR@10`` in another are
the same column everywhere. A module of its own, so that the settings naming a measure (rag, policies, compare, a
blend's fit) do not hold the ``evaluation`` block's code in their stages' DVC code deps.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from .measures import parse_measure


def canonical_measure(name: str) -> str:
    return str(parse_measure(name))


MeasureName = Annotated[str, AfterValidator(canonical_measure)]
