"""Cross-encoder throughput on SciFact test pairs (run by hand; nothing here is asserted).

(a) rerankeval's length-grouped scorer (LearnedSystem, fresh cache, one call per query) against a plain
    sentence-transformers ``CrossEncoder.predict`` (Identity activation, one call per query), same batch size and
    max_length: pairs/s, speed ratio, max |score difference|.
(b) pairs/s and tokens/s of our scorer at several max_lengths.
(c) measured float32 matmul FLOP/s on this machine and the fraction the scorer achieves. FLOPs of one pair of n
    real tokens (padding excluded) through an encoder of L layers, width h, feed-forward width f:
        L * (2n * (4h^2 + 2hf) + 4n^2 h)
    (Q, K, V and output projections plus the two feed-forward matrices at 2 FLOPs per multiply-add, plus QK^T and
    attention-times-V); embeddings, layer norms, softmax and the one-logit head are left out (< 1%).

Timings are the best of --repeats interleaved runs, which filters out other processes on a shared machine; the load
average before and after is printed with them. The measured figures are kept in results/benchmarks.yaml.

    .venv/bin/python benchmarks/bench_cross_encoder.py --pairs 2000 --lengths 128,256,512
    .venv/bin/python benchmarks/bench_cross_encoder.py --smoke    # a few demo pairs: checks that it runs
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from rerankeval.data.beir import load_beir  # noqa: E402
from rerankeval.models.environment import describe_environment  # noqa: E402
from rerankeval.models.resolve import resolve_model  # noqa: E402
from rerankeval.retrieval.lexical import Bm25Retriever  # noqa: E402
from rerankeval.retrieval.text import passage_text  # noqa: E402
from rerankeval.systems.base import Query, QueryCandidates  # noqa: E402
from rerankeval.systems.pairs import PairSystem  # noqa: E402
from rerankeval.systems.registry import BuildContext, build_system  # noqa: E402
from rerankeval.systems.cache import ScoreCache  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
FINE_TUNED = REPO_ROOT / "data" / "models" / "ce-minilm-ft"
SMOKE = {"data": str(REPO_ROOT / "datasets" / "demo"), "pairs": 16, "depth": 8, "max_length": 64, "lengths": "64",
         "repeats": 1, "matmul_size": 256}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="/work/shared/datasets/scifact", help="BEIR folder with qrels/test.tsv")
    parser.add_argument("--model", help=f"cross-encoder directory (default: {FINE_TUNED} if it exists, else the "
                                         "MiniLM backbone with a fresh, untrained head)")
    parser.add_argument("--pairs", type=int, default=2000, help="about this many (query, passage) pairs")
    parser.add_argument("--depth", type=int, default=100, help="BM25 candidates per test query")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=256, help="max_length of comparison (a)")
    parser.add_argument("--lengths", default="128,256,512", help="max_lengths of table (b); empty: skip it")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--matmul-size", type=int, default=2048, help="side of the square matmul of (c)")
    parser.add_argument("--smoke", action="store_true", help="a few pairs of the bundled demo, one repeat: checks "
                                                             "that the script runs (its figures mean nothing)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    return args


def test_pairs(folder: str, depth: int, pairs: int) -> list[tuple[str, list[str]]]:
    """(query text, its BM25 top-``depth`` passages) for the first test queries, about ``pairs`` pairs in all."""
    collection = load_beir(folder, ["test"])
    corpus = collection.corpus.to_pandas()
    passages = [passage_text(title, text) for title, text in zip(corpus["title"], corpus["text"])]
    queries = collection.queries.to_pandas().head(max(1, pairs // depth))
    scores = Bm25Retriever(passages, k1=1.2, b=0.75, method="lucene").scores(queries["text"].tolist())
    top = np.argsort(-scores, axis=1, kind="stable")[:, :depth]
    return [(text, [passages[index] for index in row]) for text, row in zip(queries["text"], top)]


def benchmark_model(requested: str | None, scratch: Path) -> tuple[Path, str]:
    if requested:
        return Path(requested), "as given"
    if (FINE_TUNED / "model.safetensors").exists():
        return FINE_TUNED, "fine-tuned by the train stage"
    from sentence_transformers import CrossEncoder

    directory = scratch / "minilm-fresh-head"
    backbone = resolve_model("minilm", None).directory
    CrossEncoder(str(backbone), num_labels=1).save_pretrained(str(directory))
    # The head check is bypassed on purpose: the random head is saved into the checkpoint, so the check passes.
    return directory, "MiniLM backbone + UNTRAINED random head (head check bypassed by saving it; speed only)"


def timed(run) -> tuple[float, object]:
    started = time.perf_counter()
    result = run()
    return time.perf_counter() - started, result


def best_of(repeats: int, run) -> tuple[float, object]:
    runs = [timed(run) for _ in range(repeats)]
    return min(seconds for seconds, _ in runs), runs[-1][1]


def scorer_run(system: PairSystem, groups, scratch: Path):
    """Score every group with an empty cache, as a first rerun would."""
    def run():
        system.cache = ScoreCache(tempfile.mkdtemp(dir=scratch), system.cache.parts)
        results = [system.score(QueryCandidates(Query(f"q{i}", text), pd.DataFrame({"passage": passages})))
                   for i, (text, passages) in enumerate(groups)]
        return np.concatenate([scored.values for scored in results])
    return run


def flops_per_pair(config, tokens: np.ndarray) -> np.ndarray:
    h, f, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    return layers * (2 * tokens * (4 * h * h + 2 * h * f) + 4 * tokens.astype(np.float64) ** 2 * h)


def matmul_flops_per_s(threads: int, size: int, repeats: int = 20) -> float:
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(size, size), torch.randn(size, size)
    seconds, _ = best_of(repeats, lambda: a @ b)
    return 2 * size**3 / seconds


def main() -> None:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ce-") as scratch:
        run_benchmark(args, Path(scratch))


def run_benchmark(args: argparse.Namespace, scratch: Path) -> None:
    import torch
    from sentence_transformers import CrossEncoder

    groups = test_pairs(args.data, args.depth, args.pairs)
    n_pairs = sum(len(passages) for _, passages in groups)
    model_dir, provenance = benchmark_model(args.model, scratch)
    environment = describe_environment()
    print(f"model: {model_dir} ({provenance})")
    print(f"data: {args.data}, {len(groups)} test queries x BM25 top-{args.depth} = {n_pairs} pairs")
    print(f"machine: {environment['cpu_model']}, {os.cpu_count()} CPUs, torch {environment['torch']} with "
          f"{environment['torch_threads']} threads; times are the best of {args.repeats}")
    print(f"load average before: {' '.join(f'{value:.2f}' for value in os.getloadavg())}\n")

    def system(max_length: int) -> PairSystem:
        config = {"kind": "cross_encoder", "model": str(model_dir), "depth": args.depth, "max_length": max_length,
                  "batch_size": args.batch_size, "cache_dir": str(scratch / "cache")}
        return build_system(f"bench_{max_length}", config, BuildContext(qrels=pd.DataFrame()))

    ours = system(args.max_length)
    plain = CrossEncoder(str(model_dir), max_length=args.max_length, activation_fn=torch.nn.Identity())

    def plain_run():
        return np.concatenate([plain.predict([(text, passage) for passage in passages], batch_size=args.batch_size)
                               for text, passages in groups])

    ours_run = scorer_run(ours, groups, scratch)
    ours_s = plain_s = np.inf
    for _ in range(args.repeats):  # interleaved, so both see the same machine load
        seconds, ours_scores = timed(ours_run)
        ours_s = min(ours_s, seconds)
        seconds, plain_scores = timed(plain_run)
        plain_s = min(plain_s, seconds)
    print(f"(a) batch {args.batch_size}, max_length {args.max_length}")
    print(f"    {'scorer':<44}{'pairs/s':>10}")
    print(f"    {'CrossEncoder.predict (one call per query)':<44}{n_pairs / plain_s:>10.1f}")
    print(f"    {'rerankeval length-grouped (fresh cache)':<44}{n_pairs / ours_s:>10.1f}")
    print(f"    speed ratio {plain_s / ours_s:.2f}x; max |score difference| "
          f"{np.max(np.abs(ours_scores - plain_scores)):.2e}\n")

    peak = matmul_flops_per_s(torch.get_num_threads(), args.matmul_size)
    config = ours.scorer.scorer.model.config
    lengths = [int(value) for value in args.lengths.split(",") if value]
    if lengths:
        print(f"(b) {'max_length':>10}{'pairs/s':>10}{'tokens/s':>11}{'mean n':>8}{'cut':>7}{'GFLOP/pair':>12}"
              f"{'GFLOP/s':>9}{'of (c)':>8}")
    for max_length in lengths:
        length_system = system(max_length)
        seconds, _ = best_of(args.repeats, scorer_run(length_system, groups, scratch))
        encoded = [length_system.scorer.scorer.encode(text, passages) for text, passages in groups]
        tokens = np.concatenate([e.lengths for e in encoded])
        cut = np.concatenate([e.truncated for e in encoded]).mean()
        flops = flops_per_pair(config, tokens)
        print(f"    {max_length:>10}{n_pairs / seconds:>10.1f}{tokens.sum() / seconds:>11.0f}{tokens.mean():>8.0f}"
              f"{cut:>7.0%}{flops.mean() / 1e9:>12.2f}{flops.sum() / seconds / 1e9:>9.1f}"
              f"{flops.sum() / seconds / peak:>8.0%}")
    size = args.matmul_size
    print(f"\n(c) float32 matmul {size}x{size}, {torch.get_num_threads()} threads: {peak / 1e9:.1f} GFLOP/s measured")
    print(f"    FLOPs/pair = L*(2n*(4h^2+2hf) + 4n^2*h) with L={config.num_hidden_layers}, h={config.hidden_size}, "
          f"f={config.intermediate_size}, n = real (unpadded) tokens of the pair")
    print(f"load average after: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")


if __name__ == "__main__":
    main()
