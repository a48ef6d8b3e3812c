"""The reranker-language check on BEIR folders, with the bundled MiniLM's tokenizer (the tokenizer of the demo's
fine-tuned ``ce_minilm_ft``, which keeps its vocabulary): the unreadable share per slice, as the rerank stage records
it (``systems.learned.language``). Run by hand; nothing here is asserted. Passages: each sampled query's judged
documents, as every system sees them (title, space, text), at most --passages per slice.

    .venv/bin/python benchmarks/bench_language_check.py ../shared/datasets/korquad-a ../shared/datasets/scifact
    .venv/bin/python benchmarks/bench_language_check.py --smoke    # 10 demo queries: checks that it runs
    .venv/bin/python benchmarks/bench_language_check.py FOLDER... record --commit C --command ... --conditions ... \\
        --out results/benchmarks/language_check.yaml
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from rerankeval.data.beir import load_beir  # noqa: E402
from rerankeval.models.resolve import resolve_model  # noqa: E402
from rerankeval.report.results_data import add_provenance_arguments, write_benchmark  # noqa: E402
from rerankeval.retrieval.text import passage_text  # noqa: E402
from rerankeval.systems.base import Query  # noqa: E402
from rerankeval.systems.learned.language import LanguageCheckConfig, language_check, load_tokenizer  # noqa: E402


def sample(folder: str, split: str, n_queries: int, seed: int) -> tuple[dict[str, Query], pd.DataFrame]:
    collection = load_beir(folder, [split])
    queries = collection.queries.to_pandas()
    queries = queries[queries["split"] == split]
    picked = queries.iloc[np.sort(np.random.default_rng(seed).permutation(len(queries))[:n_queries])]
    views = {row.query_id: Query(row.query_id, row.text, {c: getattr(row, c) for c in collection.slice_columns})
             for row in picked.itertuples()}
    corpus = collection.corpus.to_pandas().set_index("doc_id")
    qrels = collection.qrels.to_pandas()
    judged = qrels[qrels["query_id"].isin(set(views))]
    texts = [passage_text(corpus.at[doc, "title"], corpus.at[doc, "text"]) for doc in judged["doc_id"]]
    candidates = pd.DataFrame({"query_id": judged["query_id"].to_numpy(), "fused_rank": 1, "passage": texts,
                               "passage_sha256": [hashlib.sha256(t.encode()).hexdigest() for t in texts]})
    return views, candidates


COLUMNS = ["collection", "slice", "queries", "passages", "characters", "unknown characters",
           "characters split into pieces", "share in queries", "share in passages", "share", "decided on", "readable"]


def rows(folder: str, found: dict) -> list[list]:
    """One row per slice of one collection's check, as the rerank stage records it."""
    return [[Path(folder).name, name, values["queries"], values["passages"], values["characters"],
             values["unknown_characters"], values["split_characters"], f"{values['query_share']:.4f}",
             f"{values['passage_share']:.4f}", f"{values['share']:.4f}", found["decided_on"],
             "yes" if values["readable"] else "no"]
            for name, values in found["slices"].items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="*")
    parser.add_argument("--split", default="test")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--passages", type=int, default=200)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--smoke", action="store_true", help="10 queries of the bundled demo")
    steps = parser.add_subparsers(dest="step")
    add_provenance_arguments(steps.add_parser("record", help="write the results YAML"))
    args = parser.parse_args()
    if args.smoke:
        args.folders, args.queries, args.passages = ["datasets/demo"], 10, 10
    if not args.folders:
        parser.error("give at least one BEIR folder (or --smoke)")
    tokenizer = load_tokenizer(str(resolve_model("minilm", None).directory), trust_remote_code=False)
    settings = LanguageCheckConfig(max_passages=args.passages)
    table: list[list] = []
    for folder in args.folders:
        views, candidates = sample(folder, args.split, args.queries, args.seed)
        found = language_check(tokenizer, settings, views, candidates, depth=1)
        print(json.dumps({"folder": folder, "split": args.split, **found}, indent=1))
        table += rows(folder, found)
    if args.step == "record":
        notes = [f"split {args.split}; at most {args.queries} queries (seed {args.seed}) and their judged documents, "
                 f"at most {args.passages} distinct passages per slice. A slice is unreadable when the share of its "
                 f"characters the tokenizer maps to unknown, byte or split pieces exceeds {settings.threshold}: a "
                 f"slice labelled by the queries' language on its queries' share, an unlabelled collection on "
                 f"queries and passages together (systems.learned.language)"]
        print(write_benchmark(args, "the reranker-language check with the bundled MiniLM tokenizer (ce_minilm_ft's)",
                              notes, [{"title": "Share of characters the MiniLM tokenizer cannot read, per collection "
                                                "and slice", "columns": COLUMNS, "rows": table}]))


if __name__ == "__main__":
    main()
