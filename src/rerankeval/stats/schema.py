"""verdicts.json as types: the decision the compare stage writes (and ``rerankeval compare --json`` reads from), checked
against these models before it is written, with a JSON Schema generated from them (``docs/schemas/``), so a field a
page reads cannot appear, vanish or change its type unseen.

    python -m rerankeval.stats.schema           # exit 1 and say when docs/schemas/ differs from the models
    python -m rerankeval.stats.schema --write   # write docs/schemas/verdicts.schema.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..core.errors import ContractError

SCHEMA_FILE = Path("docs/schemas/verdicts.schema.json")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OperatingPoint(_Strict):
    """Shares of simulated trials at a true effect that end in each decision."""

    effect: float
    trials: int
    accept: float
    reject: float
    inconclusive: float


class Verdict(_Strict):
    """One (challenger, baseline) pair's decision, the reason that decided it, and what it rests on."""

    decision: Literal["ACCEPT", "REJECT", "INCONCLUSIVE"]
    decided_by: str
    metric: str
    delta: float | None
    ci: tuple[float | None, float | None]
    """The simultaneous interval of the pair's release family (``family``)."""
    confidence: float
    reasons: list[str]
    notes: list[str]
    family: str
    """``release vs <baseline>`` or ``alone: <pair>`` (a reference system)."""
    p_adjusted: float | None
    """From the same procedure as ``ci``: below 1 - confidence exactly when ``ci`` excludes 0."""
    operating_characteristics: dict[str, OperatingPoint]
    power: dict[str, Any] | None
    claim: dict[str, Any] | None = None
    saving: dict[str, Any] | None = None
    ci_seeds: list[int] | None = None


class FamilyRates(_Strict):
    """A multiplicity family's members and its simulated family-wise error rates."""

    members: list[str]
    baseline: str
    trials: int
    size: int
    any_false_accept: float
    any_false_reject: float
    any_error: float


class Inference(_Strict):
    release_family: str
    procedure: str
    families: dict[str, FamilyRates]


class Verdicts(_Strict):
    """verdicts.json."""

    baseline: str
    baselines: list[str] | None = None
    queries: int
    verdict_queries: int
    rule: dict[str, Any]
    baseline_flag: str | None
    simulation: dict[str, Any]
    inference: Inference
    latency_p95_ms: dict[str, float | None]
    latency_source: dict[str, str]
    latency_untrusted: dict[str, str]
    fallbacks: dict[str, dict[str, int]]
    generator_flag: str | None
    inactive_claims: list[str]
    variants: dict[str, Any]
    verdicts: dict[str, Verdict]
    verdicts_by_baseline: dict[str, dict[str, Verdict]] | None = None


def checked_verdicts(verdicts: dict[str, Any], where: str) -> dict[str, Any]:
    """``verdicts`` when it is what ``Verdicts`` declares; a ``ContractError`` naming the first field that is not."""
    from pydantic import ValidationError

    try:
        Verdicts.model_validate(verdicts)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise ContractError(f"{where}: {field}: {first['msg']} (stats.schema.Verdicts declares what verdicts.json "
                            "holds: a new field is declared there first, and docs/schemas/ regenerated)") from None
    return verdicts


def schema_text() -> str:
    return json.dumps(Verdicts.model_json_schema(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    text = schema_text()
    if "--write" in argv:
        SCHEMA_FILE.parent.mkdir(parents=True, exist_ok=True)
        SCHEMA_FILE.write_text(text, encoding="utf-8")
        return 0
    if not SCHEMA_FILE.exists() or SCHEMA_FILE.read_text(encoding="utf-8") != text:
        print(f"{SCHEMA_FILE} differs from stats.schema's models. Fix: python -m rerankeval.stats.schema --write")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
