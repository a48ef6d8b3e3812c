"""Report sections on latency as a service sees it: the dedicated latency measurement the verdict reads, the load
test (table, latency-vs-concurrency plot, serving overhead) and the ``efficiency`` block of evaluation.yaml. The served
point on the frontier and API prices in the cost table are the compare stage's (``policies.frontier``,
``rerank.cost``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from . import markdown as md
from .plots import _figure, _save


def latency_section(measurements: Mapping[str, Mapping[str, Any]], sources: Mapping[str, str],
                    untrusted: Mapping[str, str] = {}) -> str:
    """``untrusted``: verdicts.json's reason, per system, why its figure cannot REJECT."""
    if not measurements:
        return ""
    rows = [[f"`{system}`", m["queries"], m["repeats"], md.ms(m["p50_ms"]), md.ms(m["p95_ms"]), md.ms(m["p99_ms"]),
             " / ".join(md.ms(v) for v in m["p95_ms_by_round"]), md.ms(m["cpu_p95_ms"]), md.fmt(m["pairs_per_s"], 1),
             " / ".join(str(v) for v in m["other_cpus_by_round"]) + f" of {m['cpus']}",
             f"{m['load_average_1m']['before']} / {m['load_average_1m']['after']}",
             sources.get(system, "in-process").split(",")[0]
             + (f" (not trusted to REJECT: {untrusted[system]})" if system in untrusted else "")]
            for system, m in measurements.items()]
    return ("## Latency measured on its own (what the verdict's latency check reads)\n\n"
            + md.table(["system", "queries", "rounds", "p50 ms", "p95 ms", "p99 ms", "p95 ms by round",
                        "CPU time p95 ms", "pairs/s", "other processes' CPUs by round",
                        "load average 1 min before / after", "verdict reads"], rows)
            + "\n\nEach system scores the first queries of the split at its depth with nothing cached, after a "
              "warm-up, in repeated rounds; p50/p95/p99 are those of the quietest round (load only adds time). "
              "The CPUs other processes kept busy in each round (from /proc/stat) state the noise: above "
              "`serving.latency.max_other_cpus`, an overrun cannot REJECT (the latency check is INCONCLUSIVE, "
              "with that reason). "
              "A load test of a system, when one ran, replaces its figure in the verdict (p95 at the chosen "
              "concurrency). The quality run's own timings (above) are not used for the verdict.")


def loadtest_section(loadtest: Mapping[str, Any] | None, plots_link: str) -> str:
    if not loadtest or not loadtest.get("ran"):
        return ("## Served under load\n\nNo load test ran (`serving.loadtest.enabled` is false): "
                "`dvc exp run -S serving.loadtest.enabled=true` or `rerankeval loadtest --out FILE` runs one.")
    rows = [[level["concurrency"], level["requests"], md.ms(level["p50_ms"]), md.ms(level["p95_ms"]),
             md.ms(level["p99_ms"]), md.fmt(level["requests_per_s"], 2), md.fmt(level["pairs_per_s"], 1),
             md.fmt(level["input_tokens_per_s"], 0), f"{level['timeout_rate']:.1%}", f"{level['retry_rate']:.1%}",
             f"{level['error_rate']:.1%}", md.ms(level["server_compute_p50_ms"])] for level in loadtest["levels"]]
    local = loadtest.get("in_process")
    if local:
        rows.append(["in-process, 1 at a time", local["requests"], md.ms(local["p50_ms"]), md.ms(local["p95_ms"]),
                     md.ms(local["p99_ms"]), "", md.fmt(local["pairs_per_s"], 1), "", "", "", "", ""])
    text = (f"## Served under load: `{loadtest['system']}` at {loadtest['endpoint']}\n\n"
            f"Each request is one query's frozen candidates (depth {loadtest['depth']}, {loadtest['queries']} queries "
            f"cycled); {loadtest['warmup_requests']} warm-up requests per level are not timed. Latency is the "
            "client's, from first send to final reply (queue, serialisation, network and retries included).\n\n"
            + md.table(["concurrency", "requests", "p50 ms", "p95 ms", "p99 ms", "requests/s", "pairs/s",
                        "input tokens/s", "timeouts", "retries", "errors", "server time p50 ms"], rows))
    overhead = loadtest.get("overhead") or {}
    if overhead:
        text += (f"\n\nServing overhead: at concurrency {overhead['concurrency']}, p50 is "
                 f"{overhead['p50_ratio']:.2f}x and p95 {overhead['p95_ratio']:.2f}x the in-process latency of the "
                 f"same requests; the best served throughput is {overhead['best_throughput_ratio']:.2f}x in-process.")
    if loadtest.get("server_peak_rss_mib"):
        text += f" Server peak memory: {loadtest['server_peak_rss_mib']:.0f} MiB."
    parity = loadtest.get("parity")
    if parity:
        text += ("\n\n" + (f"Served parity **failed**: {parity['error']}." if "error" in parity else
                            f"Served parity {'held' if parity['passed'] else '**failed**'}: over "
                            f"{parity['requests']} requests ({parity['pairs']} pairs) the replies' scores differ from "
                            f"the same model's in-process scores by at most {parity['max_abs_diff']:.3g} (tolerance "
                            f"{parity['tolerance']:g}); {parity['requests_reordered']} requests ranked otherwise.")
                 + ("" if parity["passed"] else " The endpoint timed is not the model evaluated: its latency does "
                                                "not speak for it."))
        if parity.get("agreement"):
            from .precision import agreement_markdown

            text += "\n\n" + agreement_markdown(
                [(f"`{loadtest['system']}` served vs in-process", parity["agreement"])], "system",
                "Served and in-process rankings of the same requests", "Each request is one query's candidates.")
    machine = loadtest["machine"]
    text += (f" Load average (1 min) before / after: {machine['before']['load_average_1m']} / "
             f"{machine['after']['load_average_1m']} on {machine['before']['cpus']} CPUs.")
    return text + f"\n\n![latency vs concurrency]({plots_link}/loadtest.png)"


def loadtest_plot(loadtest: Mapping[str, Any] | None, path: Path) -> None:
    if not loadtest or not loadtest.get("ran"):
        return
    plt = _figure()
    levels = pd.DataFrame(loadtest["levels"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for column in ("p50_ms", "p95_ms", "p99_ms"):
        left.plot(levels["concurrency"], levels[column], marker="o", label=column.replace("_ms", ""))
    if loadtest.get("in_process"):
        left.axhline(loadtest["in_process"]["p95_ms"], linestyle="--", color="grey", label="in-process p95")
    left.set(xscale="log", xlabel="concurrent requests", ylabel="latency (ms)",
             title=f"{loadtest['system']}: latency vs concurrency")
    left.set_xticks(levels["concurrency"], [str(c) for c in levels["concurrency"]])
    left.legend(fontsize=8)
    right.plot(levels["concurrency"], levels["pairs_per_s"], marker="o")
    right.set(xscale="log", xlabel="concurrent requests", ylabel="pairs/s", title="throughput")
    left.set_ylim(bottom=0)
    right.set_ylim(bottom=0)
    right.set_xticks(levels["concurrency"], [str(c) for c in levels["concurrency"]])
    fig.tight_layout()
    _save(fig, path)


def efficiency_record(measurements: Mapping[str, Mapping[str, Any]], sources: Mapping[str, str],
                      loadtest: Mapping[str, Any] | None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "latency": {system: {"p50_ms": m["p50_ms"], "p95_ms": m["p95_ms"], "p99_ms": m["p99_ms"],
                             "p95_ms_by_round": m["p95_ms_by_round"], "cpu_p95_ms": m["cpu_p95_ms"],
                             "other_cpus_by_round": m["other_cpus_by_round"], "untrusted": m["untrusted"],
                             "pairs_per_s": m["pairs_per_s"], "load_average_1m": m["load_average_1m"],
                             "verdict_reads": sources.get(system)}
                    for system, m in measurements.items()}}
    if loadtest and loadtest.get("ran"):
        record["loadtest"] = {
            "system": loadtest["system"], "endpoint": loadtest["endpoint"], "depth": loadtest["depth"],
            "levels": [{key: level[key] for key in ("concurrency", "p50_ms", "p95_ms", "p99_ms", "requests_per_s",
                                                    "pairs_per_s", "input_tokens_per_s", "timeout_rate",
                                                    "retry_rate")} for level in loadtest["levels"]],
            "overhead": loadtest.get("overhead"), "server_peak_rss_mib": loadtest.get("server_peak_rss_mib")}
    return record
