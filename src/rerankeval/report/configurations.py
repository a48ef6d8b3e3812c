"""The composed configurations (blend, routed, cascade): what each does, its quality against the baseline with the
paired CI, p95 and cost with CIs, the pairs it scored or read from the cache, the blend's train-split fit, the routed
system's skip rate and the worst regressions among its skipped queries (what skipping lost against the system the
query would otherwise have gone to)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..rerank.cost import SECONDS_PER_HOUR
from ..stats.schema import Comparison, ComparisonCore
from ..systems.base import SKIPPED
from ..systems.roles import KindTraits
from .markdown import fmt, table


def _interval(found: Mapping[str, float] | None, scale: float = 1.0, digits: int = 4, percent: bool = False) -> str:
    if found is None:
        return "n/a"
    mean, low, high = (found[key] * scale for key in ("mean", "low", "high"))
    if percent:
        return f"{mean:.0%} [{low:.0%}, {high:.0%}]"
    return f"{fmt(mean, digits)} [{fmt(low, digits)}, {fmt(high, digits)}]"


def _comparison(compare: ComparisonCore, system: str, metric: str) -> Comparison | None:
    return next((c for c in compare.comparisons if c.challenger == system and c.metric == metric), None)


def _what(kind: str, described: Mapping[str, Any]) -> str:
    if kind == "blend":
        fit = described.get("fit")
        text = described["blend"]
        if fit:
            held_out = " held out of the model's training" if fit.get("held_out_of_training") else ""
            source = fit.get("source", {})
            where = f" of the fallback `{source['path']}` ({source['reason']})" if source.get("fallback") else ""
            text += (f"; weight fitted on the {fit['split']} split{where} ({fit['queries']} queries{held_out}, "
                     f"{_cross_validated(fit)})")
            if fit.get("in_sample"):
                text += (f"; {', '.join(fit['in_sample'])} was fine-tuned on that split, so the fit is in-sample for "
                         "it and favours it")
        return text
    if kind == "routed":
        rules = "; ".join(f"if {', '.join(_condition(k, v) for k, v in rule['when'].items() if v is not None)} then "
                          f"{rule['then']}" for rule in described["rules"])
        return f"{rules}; else {described['default']}"
    return described.get("cascade", kind)


RULES = {"one_se": "the smallest weight within one standard error of the best", "best": "the best mean"}


def _cross_validated(fit: Mapping[str, Any]) -> str:
    """The fit's CV estimate first: the in-sample value beside it is what the weight scored where it was picked."""
    cv, measure = fit["cv"], fit["measure"]
    estimate, gain = cv["estimate"], cv["gain_over_zero"]
    apart = "distinguishable" if cv["distinguishable_from_zero"] else "not distinguishable"
    return (f"{RULES[fit['rule']]} of {len(fit['curve'])} weights; {cv['folds']}-fold CV: fold weights "
            f"{', '.join(f'{w:g}' for w in cv['fold_weights'])}, out-of-fold {measure} {_interval(estimate)}, gain "
            f"over weight 0 {fmt(gain['mean'], signed=True)} [{fmt(gain['low'], signed=True)}, "
            f"{fmt(gain['high'], signed=True)}] ({apart} from 0 at {cv['confidence']:.0%}); in-sample "
            f"{fmt(cv['in_sample_mean'])}, optimistic")


def _condition(key: str, value: Any) -> str:
    if isinstance(value, Mapping):
        return f"{key}({', '.join(f'{k}={v}' for k, v in value.items() if v is not None)})"
    return f"{key}={value}"


def configurations_section(systems: Sequence[str], configs: Mapping[str, Mapping[str, Any]],
                           traits: Mapping[str, KindTraits],
                           run_metadata: Mapping[str, Mapping[str, Any]], latencies: Mapping[str, pd.DataFrame],
                           latency_metadata: Mapping[str, Mapping[str, Any]], per_query: pd.DataFrame,
                           compare: ComparisonCore, queries: pd.DataFrame | None, metric: str,
                           measured_p95_ms: Mapping[str, float | None],
                           hourly_price: float, composites: Mapping[str, Mapping[str, Any]], worst_n: int) -> str:
    """``compare``: the comparison (compare.json), each composed system's Δ against its baseline; ``composites``:
    verdicts.json's ``variants.composites`` (each system's cold seconds and skip rate with CIs); ``measured_p95_ms``:
    verdicts.json's ``latency_p95_ms``, each system's one p95."""
    composed = [s for s in systems if traits[s].composite]
    if not composed:
        return ""
    baseline = compare.baseline
    rows, notes, beats = [], [], []
    for system in composed:
        kind, latency = configs[system]["kind"], latencies[system]
        described = run_metadata[system].get("describe", {})
        item = _comparison(compare, system, metric)
        delta = "n/a" if item is None else \
            f"{fmt(item.delta, signed=True)} [{fmt(item.low, signed=True)}, {fmt(item.high, signed=True)}]"
        if item is not None and item.low is not None and item.low > 0:
            beats.append(f"`{system}` ({delta})")
        found = composites.get(system, {})
        pairs = latency_metadata[system].get("composite_pairs", {})
        rows.append([f"`{system}`", kind, _what(kind, described),
                     fmt(float(per_query.loc[per_query["system"] == system, metric].mean())), delta,
                     fmt(measured_p95_ms.get(system), 1),
                     _interval(found.get("cold_seconds"), scale=hourly_price / SECONDS_PER_HOUR * 1000, digits=5),
                     _interval(found.get("skipped"), percent=True) if kind == "routed" else "",
                     f"{pairs.get('scored', 'n/a')} / {pairs.get('from_cache', 'n/a')}"])
        if kind == "routed":
            notes.append(_skipped_regressions(system, configs[system], latency, per_query, queries, metric,
                                              worst_n))
    header = ["system", "kind", "what it does", metric, f"Δ vs `{baseline}` [CI]", "p95 ms",
              "cost / 1k queries [CI]", "skipped [CI]", "pairs scored / from cache"]
    verdict = (f"Beating `{baseline}` with a CI above 0: {', '.join(beats)}." if beats else
               f"No configuration beats `{baseline}` with a CI above 0 on {metric}.")
    return "\n\n".join(["## Configurations (composed systems)", table(header, rows), verdict, *notes])


def _skipped_regressions(system: str, config: Mapping[str, Any], latency: pd.DataFrame, per_query: pd.DataFrame,
                         queries: pd.DataFrame | None, metric: str, worst_n: int) -> str:
    target = config.get("default")
    skipped = latency.loc[latency["mode"] == SKIPPED, "query_id"]
    title = f"### `{system}`: the skipped queries ({len(skipped)})"
    if target not in set(per_query["system"]) or skipped.empty:
        return f"{title}\n\nNo evaluated system to compare the skipped queries with (default: `{target}`)."
    values = per_query.pivot(index="query_id", columns="system", values=metric)
    lost = (values[system] - values[target]).reindex(skipped).dropna().sort_values(kind="stable")
    texts = queries.set_index("query_id")["text"] if queries is not None else pd.Series(dtype=object)
    rows = [[query_id, str(texts.get(query_id, ""))[:90], fmt(delta, signed=True)]
            for query_id, delta in lost.head(worst_n).items() if delta < 0]
    summary = (f"On the skipped queries the fused order scores {fmt(float(values[system].reindex(skipped).mean()))} "
               f"{metric} against {fmt(float(values[target].reindex(skipped).mean()))} for `{target}` (what they would "
               f"have been sent to); {int((lost < 0).sum())} of them lose, {int((lost > 0).sum())} gain.")
    if not rows:
        return f"{title}\n\n{summary}"
    return f"{title}\n\n{summary} Worst:\n\n" + table(["query", "text", f"Δ {metric} skipping vs `{target}`"], rows)
