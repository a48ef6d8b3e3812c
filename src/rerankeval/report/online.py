"""The details page's online section: per challenger, the impressions an online experiment needs to detect the offline
difference (team-draft, balanced and probabilistic interleaving, an A/B test) against the judged queries the paired
offline comparison needs, each method's achieved power in simulation, and the null check; a plot of the power curves.
Rendered from the online stage's ``online.json``; nothing computed here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..online.readout import ARM_MEASURES
from . import plots
from .markdown import table

METHODS = {"team_draft": "team-draft", "balanced": "balanced", "probabilistic": "probabilistic", "ab": "A/B",
           "offline": "paired offline"}
PLOT = "online_power.png"


def _count(value: int | None) -> str:
    return "never (no difference)" if value is None else f"{value:,}"


def _achieved(value: float | None, needed: int | None, limit: int) -> str:
    if needed is None:
        return "n/a"
    return f"{value:.0%}" if value is not None else f"not simulated: over {limit:,}"


def online_section(found: Mapping[str, Any] | None, plots_dir: Path, plots_link: str) -> str:
    """Empty when the stage was off (``online.enabled: false``) or there was no challenger."""
    if not found or not found.get("enabled") or not found.get("challengers"):
        return ""
    power_curves(found, plots_dir / PLOT)
    power, alpha, model = found["power"], found["alpha"], found["click_model"]
    limit = found["check_max_impressions"]
    bias = found.get("bias_check") or {}
    # the interleaving methods the stage sized, in its order (``online.interleaving.METHODS``)
    methods = list(next(iter(found["challengers"].values()))["interleaving"])

    def sized(found: Mapping[str, Any], biased: bool = False) -> str:
        needed = found["impressions_needed"]
        return (f"{_count(needed)} ({_achieved(found['achieved_power'], needed, limit)})"
                + (" ⚠ biased beyond α" if biased else ""))

    rows = []
    for system, pair in found["challengers"].items():
        offline, interleaving = pair["offline"], pair["interleaving"]
        same = " (shows the baseline's pages: no experiment can tell them apart)" if pair.get("same_pages") else ""
        rows.append([f"`{system}`{same}", f"{offline['delta']:+.4f}",
                     *(f"{interleaving[method]['preference']:+.3f}" for method in methods),
                     f"{pair['ab']['difference']:+.4f}",
                     *(sized(interleaving[method], bias.get(method, {}).get(system, {}).get("material", False))
                       for method in methods), sized(pair["ab"]),
                     _count(offline["judged_queries_needed"]),
                     "yes" if pair["directions_agree"] else "**no**"])
    null = found["null_check"]
    nulls = {"labels": "sides' labels drawn at random (the test's calibration)",
             "grade_blind": "users whose clicks ignore the grade (the method's bias)"}
    null_rows = [[METHODS[method], nulls[kind], f"{found_null['detected']} of {null['pairs']:,}",
                  f"{found_null['rate']:.1%} [{found_null['low']:.1%}, {found_null['high']:.1%}]",
                  f"{found_null['exact_size']:.1%}", "yes" if found_null["holds"] else "**no**"]
                 for method in methods for kind in nulls
                 for found_null in [null[method][kind]]]
    return (
        "## Online: the experiment each challenger would need\n\n"
        f"Simulated users ({model['kind']}: click {model['click'][0]} at grade 0 to {model['click'][1]} at grade "
        f"{found['top_grade']}, stop {model['stop'][0]} to {model['stop'][1]}) on the top {found['depth']} of each "
        f"ranking, every one of the {found['queries']} evaluated queries equally likely (those without a relevant "
        "document too: users ask them). Impressions needed to detect "
        f"the difference against `{found['baseline']}` at power {power:.0%} and level {alpha} (in brackets: the "
        f"share of {found['check_trials']} simulated experiments of that size that detected it, in the right "
        "direction); the offline column "
        f"is judged queries for the paired t-test on {found['metric']}. Interleaving's preference is wins minus "
        f"losses per impression; the A/B difference is in {found['ab_metric']} "
        "per impression. ⚠ biased beyond α: the bias check below finds the method biased on that pair enough to "
        "detect a difference that is not there more often than α, so its count there is not to be trusted.\n\n"
        + table(["challenger", f"offline Δ {found['metric']}",
                 *(f"{METHODS[method]} preference" for method in methods), "A/B Δ",
                 *(f"{METHODS[method]} impressions" for method in methods), "A/B impressions",
                 "judged queries (offline)", "directions agree"], rows)
        + f"\n\n![power curves]({plots_link}/{PLOT})\n\n"
        + f"False detections on {null['pairs']:,} seeded null pairs (the challengers' real rankings, "
          f"{null['impressions']:,} impressions each) under two nulls, with the exact 95% interval and the sign "
          "test's exact size at those pairs; a null holds when the interval's low end is at most α:\n\n"
        + table(["method", "null", "detected", "rate [95% CI]", "exact size", "holds"], null_rows)
        + _bias_lines(found, alpha)
        + "\n\nSimulated, not observed: the click model's parameters are stated defaults (docs/online.md), and the "
          "directions can disagree (balanced interleaving is known to be biased for some pairs of rankings: the "
          "grade-blind null measures it here). A RAG "
          "generator that merges one context set cannot be interleaved as a result page can: interleave its context "
          "candidates only where the product shows its sources.")


def _bias_lines(found: Mapping[str, Any], alpha: float) -> str:
    """The bias check's table (``online.sensitivity.bias_check``), with the methods biased beyond α named; "" when
    the stage wrote none."""
    bias = found.get("bias_check") or {}
    methods = [method for method in METHODS if method in bias]  # the null table's order
    if not methods:
        return ""
    rows = [[METHODS[method], f"`{system}`",
             f"{checked['preference']:+.4f} [{checked['low']:+.4f}, {checked['high']:+.4f}]",
             f"{checked['false_detection']:.1%}",
             ("**yes, beyond α**" if checked["material"] else "yes") if checked["biased"] else "no"]
            for method in methods for system, checked in bias[method].items()]
    material = [METHODS[method] for method in methods if any(c["material"] for c in bias[method].values())]
    return ("\n\nEach method's bias on each pair, measured with every simulated impression: the preference users "
            f"whose clicks ignore the grade give it ({found['sessions_per_query']:,} sessions of every query; 0 for "
            f"an unbiased method; intervals simultaneous at {1 - alpha:.0%} over a method's pairs, Bonferroni), and "
            "the false detection rate that preference gives an experiment of "
            f"{found['null_check']['impressions']:,} impressions (for an unbiased method, about the sign test's exact "
            "size above; beyond α: a bias that raises it above α):\n\n"
            + table(["method", "challenger", "preference, grade-blind users [simultaneous 95% CI]",
                     "false detection rate", "biased"], rows)
            + (f"\n\nBiased beyond α on some pair: {', '.join(material)}. Read its preference on those pairs with "
               "care, and prefer an unbiased method for the experiment." if material else ""))


def logged_section(readouts: Sequence[str], shadows: Sequence[str]) -> str:
    """Links to the pages the readout and shadow stages write beside the details page (``reports/online/``), one per
    configured log; empty without one."""
    if not readouts and not shadows:
        return ""
    lines = ["## Online: logged traffic", ""]
    lines += [f"- Shadow replay [`{name}`](online/shadow_{name}.md): the log's queries through every system, without "
              f"judgments; its judging queue [`shadow_{name}_queue.tsv`](online/shadow_{name}_queue.tsv)"
              for name in shadows]
    lines += [f"- Online experiment readout [`{name}`](online/readout_{name}.md)" for name in readouts]
    return "\n".join(lines)


def power_curves(found: Mapping[str, Any], path: Path) -> None:
    """One panel per challenger: each method's power against impressions (judged queries for offline), log x."""
    challengers = list(found["challengers"])
    fig, axes = plots.grid(len(challengers), (3.4, 2.3))
    palette = dict(zip(METHODS, plots.PALETTE))
    for axis, system in zip(axes, challengers):
        curve = found["challengers"][system]["curve"]
        for method, label in METHODS.items():
            if method not in curve:  # a method the stage did not size
                continue
            axis.plot(curve["impressions"], curve[method], label=label, color=palette[method], linewidth=1.2)
        axis.axhline(found["power"], **plots.BOUND_STYLE)
        axis.set_xscale("log")
        axis.set_ylim(0, 1.02)
        axis.set_title(system, fontsize=9)
        axis.tick_params(labelsize=7)
    for axis in axes[-plots.COLUMNS:]:
        axis.set_xlabel("impressions (offline: judged queries)", fontsize=8)
    for axis in axes[::plots.COLUMNS]:
        axis.set_ylabel("power", fontsize=8)
    axes[0].legend(fontsize=6.5, loc="lower right")
    fig.tight_layout()
    plots._save(fig, path)


def _ci(found: Mapping[str, Any], digits: int = 4) -> str:
    return (f"{found['mean']:+.{digits}f} [{found['ci_low']:+.{digits}f}, {found['ci_high']:+.{digits}f}] "
            f"({found['confidence'] * 100:g}% CI)")


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def readout_page(found: Mapping[str, Any]) -> str:
    """The page of one online experiment's readout (the readout stage's JSON, rendered)."""
    log, verdict = found["log"], found["verdict"]
    design = "A/B test" if found["design"] == "ab" else f"{METHODS[found['design']]} interleaving"
    lines = [f"# Online experiment `{found['experiment']}`: {verdict['decision']}", "",
             f"`{found['challenger']}` against `{found['baseline']}`, {design}; log `{log['path']}` "
             f"(sha256 {found['log_sha256'][:12]}), {log['impressions']:,} impressions of {log['lines']:,} lines"
             + (f", a seeded sample (seed {log['seed']}) of them" if log["sampled"] else "") + ".", "",
             *_synthetic(found), f"**{verdict['decision']}**: {verdict['decided_by']}", ""]
    primary = found["primary"]
    lines += [f"Primary: {primary['metric']} {_ci(primary)}.", ""]
    credit = found.get("interleaving")
    if credit:
        lines += [f"Impressions won by the challenger's picks {credit['wins']:,}, by the baseline's "
                  f"{credit['losses']:,}, ties {credit['ties']:,}; sign test p = {credit['sign_test_p']:.3g}.", ""]
    arms = found["per_arm"]
    confidence = next((row["interval_confidence"] for row in arms.values() if "interval_confidence" in row), None)
    lines += ["## Per arm", "", "Each click measure's mean over the arm's impressions"
              + (f", with its {confidence * 100:g}% percentile bootstrap CI over them." if confidence else "."), "",
              table(
        ["arm", "impressions", "queries", "reciprocal rank", "any click", "clicks", "abandoned", "reformulated",
         "empty", "p50 / p95 / p99 ms"],
        [[f"`{arm}`", f"{row['impressions']:,}", f"{row['queries']:,}",
          *(f"{row[name]:.4f}" + (" [{:.4f}, {:.4f}]".format(*row["intervals"][name]) if "intervals" in row else "")
            for name in ARM_MEASURES),
          f"{_ms(row['p50_ms'])} / {_ms(row['p95_ms'])} / {_ms(row['p99_ms'])}"]
         for arm, row in arms.items()]), ""]
    if found["slices"]:
        lines += ["## Segments (critical slices)", "", table(
            ["segment", "n (queries; A/B: the smaller arm's impressions)", f"{primary['metric']} [adjusted CI]",
             "adjusted for", "too small to REJECT"],
            [[str(item["value"]), str(item["n_queries"]), _ci(item), str(item["adjusted_for"]),
              "yes" if item["too_small"] else "no"] for item in found["slices"]]), ""]
    if found["guardrails"]:
        lines += ["## Guardrails", "", table(
            ["measure", "challenger", "baseline", "increase [CI]", "max increase"],
            [[item["measure"], f"{item['challenger_mean']:.4f}", f"{item['reference_mean']:.4f}",
              _ci(item["increase"]), f"{item['max_increase']:+.4f}"] for item in found["guardrails"]]), ""]
    doubtful = {key: log[key] for key in ("unknown_queries", "outside_candidates", "duplicates", "out_of_order")}
    lines += ["## The log", "", table(["kind", "count", "first lines"],
                                      [[kind.replace("_", " "), str(count), ", ".join(log["examples"].get(kind, []))
                                        or "none"] for kind, count in doubtful.items()]), "",
              "Unknown queries and results outside the frozen candidates are counted and kept (live traffic asks "
              "what the snapshot does not hold); a repeated impression id is dropped after its first; a time earlier "
              "than a line above it is counted.", "", "## Every reason", "",
              *(f"- {reason}" for reason in verdict["reasons"]), *(f"- note: {note}" for note in verdict["notes"])]
    return "\n".join(lines).rstrip() + "\n"


def _synthetic(found: Mapping[str, Any]) -> list[str]:
    """The warning a page opens with when its log is no people's traffic (``synthetic`` in its config)."""
    if not found.get("synthetic"):
        return []
    return [f"**A synthetic log**: {found['synthetic']}. What follows shows the readout on it, not how people "
            "behave.", ""]


def shadow_page(found: Mapping[str, Any]) -> str:
    """The page of one shadow replay (the shadow stage's JSON, rendered)."""
    baseline, k = found["baseline"], found["k"]
    lines = [f"# Shadow replay `{found['name']}`", "",
             f"Log `{found['log']}` (sha256 {found['log_sha256'][:12]}): {found['lines']:,} lines; "
             + (f"more than {found['max_queries']:,} distinct queries, of which a seeded sample (seed {found['seed']}) "
                f"of {found['replayed']:,}" if found["sampled"] else f"{found['replayed']:,} distinct queries")
             + f" ({found['replayed_arrivals']:,} arrivals over {found['span_s']:,.0f} s"
             + (f", those of the log's first {found['window_lines']:,} lines, where they reached window_arrivals "
                f"{found['window_arrivals']:,}; the {found['after_window']:,} after them count in the traffic "
                "weights only" if found.get("window_lines") is not None else "")
             + f") replayed at {found['speed']:g}x the recorded pace; lines logged earlier than a line above them: "
               f"{found['out_of_order']:,}. No judgments: nothing here says which system is better, only how they "
               "differ on the traffic, what the traffic costs, and which queries to judge first.", "",
             *_synthetic(found)]
    candidates = found["candidates"]
    lines += [f"First stage: {candidates['rows']:,} candidates; {candidates['removed_by_access']:,} removed by the "
              f"access filter (each logged user's groups); {candidates['queries_without_candidates']:,} queries "
              "found none.", ""]
    rows = []
    for system, entry in found["systems"].items():
        agreement = entry.get("agreement")
        latency = entry["latency"]
        rows.append([f"`{system}`" + (" (baseline)" if system == baseline else ""),
                     *("" if agreement is None else _mean_ci(agreement[name]) for name in ("rbo", "tau", "overlap")),
                     "" if agreement is None else _mean_ci(agreement["changed"]),
                     "" if entry.get("top_k_changed_of_traffic") is None
                     else f"{entry['top_k_changed_of_traffic']:.3f}",
                     f"{_ms(latency['p50_ms'])} / {_ms(latency['p95_ms'])} / {_ms(latency['p99_ms'])}",
                     f"{latency['utilisation']:.2f}", f"{entry['machine_s_per_1k']:.1f}"])
    lines += ["## Against the baseline, at the log's pace", "", table(
        ["system", f"RBO@{k} (p={found['p']:g}) vs baseline", f"Kendall τ, top {k}", f"overlap@{k}",
         f"top {k} changed (share of queries)",
         f"top {k} changed (share of traffic)", "p50 / p95 / p99 ms at the log's arrivals", "server utilisation",
         "machine s per 1,000 arrivals"], rows), "",
              "Latency: each query's cold service time as the replay measured it (pairs already scored replay their "
              "recorded compute time), through one first-in-first-out server at the logged arrival times; "
              "utilisation above 1 means one server cannot keep up with the traffic.", ""]
    if found.get("served"):
        lines += served_replay_section(found["served"])
    guard_rows = [[f"`{system}`", segment, f"{row['arrivals']:,}", f"{row['empty']:,}", f"{row['fallbacks']:,}",
                   f"{row['timeouts']:,}"]
                  for system, entry in found["systems"].items() for segment, row in entry["guardrails"].items()]
    lines += ["## Guardrails per segment", "", table(
        ["system", "segment", "arrivals", "empty pages", "fallbacks to the fused order", "timeouts"], guard_rows), "",
              f"The log's queries to judge first, by traffic times disagreement with the baseline: "
              f"`{found['queue']['path']}` ({found['queue']['rows']} rows).", ""]
    return "\n".join(lines)


def served_replay_section(served: Mapping[str, Any]) -> list[str]:
    """The served system at the log's arrival pattern beside the simulated queue of the same arrivals."""
    replayed, simulated = served["replayed"], served["simulated"]
    rows = [["served, open loop", f"{replayed['requests']:,}", _ms(replayed["p50_ms"]), _ms(replayed["p95_ms"]),
             _ms(replayed["p99_ms"]), f"{replayed['timeout_rate']:.3f}", f"{replayed['error_rate']:.3f}"],
            ["simulated (in-process service times, one FIFO server)",
             f"{served['arrivals'] - served['without_candidates']:,}", _ms(simulated["p50_ms"]),
             _ms(simulated["p95_ms"]), _ms(simulated["p99_ms"]), "", ""]]
    return [f"## `{served['system']}` served at the log's arrival pattern", "", table(
        ["latency", "requests", "p50 ms", "p95 ms", "p99 ms", "timeout rate", "error rate"], rows), "",
            f"The first {served['arrivals']:,} arrivals ({replayed['span_s']:,.0f} s at {served['speed']:g}x the "
            f"recorded pace) sent at their own times to {served['endpoint']}, whatever was still in flight; each "
            f"response time counts from its scheduled arrival (the client sent at most "
            f"{replayed['max_send_lag_ms']:,.0f} ms late). {served['without_candidates']:,} arrivals found no "
            "candidate and sent nothing.", ""]


def _mean_ci(interval: Mapping[str, float] | None) -> str:
    return "n/a" if not interval else f"{interval['mean']:.3f} [{interval['low']:.3f}, {interval['high']:.3f}]"
