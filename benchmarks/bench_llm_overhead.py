"""The answer stage's loop around the local LLM against the runtime's own performance counters: for each request, the
wall time of ``LocalLLMGenerator.generate`` (prompt, the in-process decode loop, parsing; the response cache in a
fresh folder, so every request reaches the model) beside llama.cpp's ``llama_get_timings`` for the same request
(prompt evaluation plus generation), and the tokens per second each implies. Run by hand after `make llm`, nothing
else running; nothing here is asserted. The target: rerankeval's overhead under 10% of the model's time.

    .venv/bin/python benchmarks/bench_llm_overhead.py --requests 12
    .venv/bin/python benchmarks/bench_llm_overhead.py --requests 12 record --commit C --command ... \\
        --conditions ... --out results/benchmarks/llm_overhead.yaml
    .venv/bin/python benchmarks/bench_llm_overhead.py --smoke    # 1 short request, 2 tokens: checks that it runs
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
import yaml

from rerankeval.report.results_data import add_provenance_arguments, print_benchmark

ROOT = Path(__file__).resolve().parents[1]


def requests(count: int) -> list[tuple[str, list[str]]]:
    """The demo's first ``count`` test queries (id order), each with its top 4 fused candidates' texts."""
    from rerankeval.data.snapshot import Snapshot
    from rerankeval.retrieval.candidates import load_candidates

    queries = Snapshot(ROOT / "data" / "snapshot").queries_of("test").sort_values("query_id").head(count)
    candidates = load_candidates(ROOT / "data" / "candidates.parquet", query_ids=queries["query_id"].tolist())
    top = candidates[candidates["fused_rank"] <= 4].sort_values(["query_id", "fused_rank"])
    passages = top.groupby("query_id")["passage"].apply(list)
    return [(text, passages[qid]) for qid, text in zip(queries["query_id"], queries["text"]) if qid in passages]


SMOKE = [("How high is Mount Fuji?", ["Mount Fuji is the highest mountain in Japan, at 3,776 metres."])]


def measure(count: int, smoke: bool = False) -> tuple[list[list], list[str]]:
    from ik_llama_cpp import _ctypes_api as api

    from rerankeval.rag.generators import build_generator

    settings = yaml.safe_load((ROOT / "conf" / "rag" / "local_llm.yaml").read_text(encoding="utf-8"))["generator"]
    rows, walls, model_s, prompt_tokens, completion_tokens, evaluated, eval_s = [], [], [], [], [], [], []
    with TemporaryDirectory() as cache:
        generator = build_generator({**settings, "cache_dir": cache, **({"max_tokens": 2} if smoke else {})})
        try:
            started = time.perf_counter()
            context = generator.load()._context.ctx
            load_s = time.perf_counter() - started
            for question, passages in SMOKE if smoke else requests(count):
                api.llama_reset_timings(context)
                started = time.perf_counter()
                answer = generator.generate(question, passages)
                walls.append(time.perf_counter() - started)
                timings = api.llama_get_timings(context)
                model_s.append((timings.t_p_eval_ms + timings.t_eval_ms + timings.t_sample_ms) / 1000)
                eval_s.append(timings.t_eval_ms / 1000)
                prompt_tokens.append(timings.n_p_eval)
                evaluated.append(timings.n_eval)
                completion_tokens.append(answer.completion_tokens or 0)
        finally:
            generator.close()
    wall, model = np.asarray(walls), np.asarray(model_s)
    generated = np.asarray(completion_tokens)
    rows = [["requests", len(wall)],
            ["prompt tokens per request (mean)", round(float(np.mean(prompt_tokens)), 1)],
            ["generated tokens per request (mean)", round(float(generated.mean()), 1)],
            ["wall s per request, rerankeval's generate (mean)", round(float(wall.mean()), 3)],
            ["model s per request, llama.cpp's counters (mean)", round(float(model.mean()), 3)],
            ["overhead: (wall - model) / model, all requests", f"{(wall.sum() - model.sum()) / model.sum():.2%}"],
            ["overhead, largest of one request", f"{float(((wall - model) / model).max()):.2%}"],
            ["generated tokens/s over the generation phase, llama.cpp's counters",
             round(float(np.sum(evaluated) / np.sum(eval_s)), 2) if np.sum(eval_s) > 0 else "n/a"],
            ["generated tokens/s over the whole request, rerankeval's wall",
             round(float(generated.sum() / wall.sum()), 2)]]
    notes = [f"model load (not in the rows): {load_s:.1f} s; settings conf/rag/local_llm.yaml (threads "
             f"{settings['server']['threads']}, {settings['max_tokens']} tokens at most, greedy); the model's time is "
             "llama_get_timings' prompt evaluation, generation and sampling, reset before each request; rerankeval "
             "decodes greedily itself, so the runtime's sampling time is 0 and the argmax over the vocabulary is in "
             "the overhead; the counters' generation phase decodes every generated token but the last (which ends the "
             "reply and is never fed back)"]
    return rows, notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=12)
    parser.add_argument("--smoke", action="store_true", help="one short request: checks that the script runs")
    steps = parser.add_subparsers(dest="step")
    add_provenance_arguments(steps.add_parser("record", help="write the results YAML"))
    args = parser.parse_args()
    rows, notes = measure(args.requests, smoke=args.smoke)
    table = {"title": "The answer stage's loop around the in-process local LLM against llama.cpp's own counters",
             "columns": ["measure", "value"], "rows": rows}
    print_benchmark(args, "llm_overhead", notes, [table])


if __name__ == "__main__":
    main()
