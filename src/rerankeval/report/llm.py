"""The details page's LLM reranker section: per LLM reranker (``systems.llm``) its calls, invalid outputs by reason,
tokens, and the pins its run recorded (the model asked and the models the endpoint said answered, the server's
backend and fingerprints, the template's sha256, the decoding and window settings). Text read off each run's
metadata (``describe``); nothing computed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .markdown import table


def llm_section(systems: Sequence[str], run_metadata: Mapping[str, Mapping[str, Any]],
                intervals: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """``intervals``: verdicts.json's ``invalid_outputs`` (the per-query share with its CI, from the compare stage)."""
    rows = []
    for system in systems:
        described = run_metadata[system].get("describe", {})
        counted = described.get("invalid_outputs")
        if not counted:
            continue
        rate = f" ({counted['rate']:.1%})" if counted.get("rate") is not None else ""
        settings = described.get("window") or {"scored from": described.get("score_from")}
        found = (intervals or {}).get(system, {})
        share = ("n/a" if found.get("per_query_mean") is None else f"{found['per_query_mean']:.1%}"
                 + (f" [{found['low']:.1%}, {found['high']:.1%}]" if found.get("low") is not None else " (one query)"))
        rows.append([f"`{system}`", f"`{described.get('kind')}`", str(counted["calls"]),
                     f"{counted['invalid_calls']}{rate}",
                     share,
                     ", ".join(f"{reason} {count}" for reason, count in counted["by_reason"].items()) or "none",
                     f"{counted['prompt_tokens']} / {counted['completion_tokens']}",
                     f"{described.get('model')} (served: "
                     + (", ".join(f"{name} x{count}" for name, count in described.get("served_models", {}).items())
                        or "not said") + ")",
                     _counted(described.get("backends")) + " (fingerprints: "
                     + _counted(described.get("system_fingerprints")) + ")",
                     f"`{described.get('template')}` {str(described.get('template_sha256'))[:12]}",
                     ", ".join(f"{key} {value}" for key, value in {**described.get("decoding", {}),
                                                                   **settings}.items())])
    if not rows:
        return ""
    return ("## LLM rerankers: invalid outputs and pins\n\n"
            + table(["system", "kind", "calls", "invalid calls", "per query [95% CI]", "invalid by reason",
                     "prompt / completion tokens",
                     "model", "backend", "template (sha256)", "decoding and window"], rows)
            + "\n\nAn invalid output is repaired by the kind's stated rule and counted (docs/configurations.md, \"LLM "
              "rerankers\"); above compare.release.max_invalid_rate of its calls a system cannot be ACCEPTed. Two runs "
              "that differ in any pin (model, backend, template, decoding, window) are not the same system.")


def _counted(said: Mapping[str, int] | None) -> str:
    return ", ".join(f"{name} x{count}" for name, count in (said or {}).items()) or "not said"
