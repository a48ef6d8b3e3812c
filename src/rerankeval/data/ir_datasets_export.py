"""An ``ir_datasets`` dataset as a BEIR folder, so the pipeline reads it like any other collection.

``export(["test=beir/scifact/test", "train=beir/scifact/train"], out)`` writes ``corpus.jsonl``, ``queries.jsonl``
and ``qrels/<split>.tsv``. A bare id takes its last path component as the split. ir_datasets downloads on first
use (into ``~/.ir_datasets``); offline, only datasets already there or registered from local files can be read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..core.errors import CollectionError
from ..core.io import atomic_write_text


def _split_and_id(spec: str) -> tuple[str, str]:
    split, sep, dataset_id = spec.partition("=")
    return (split, dataset_id) if sep else (spec.rstrip("/").rsplit("/", 1)[-1], spec)


def _load(dataset_id: str):
    import ir_datasets

    try:
        return ir_datasets.load(dataset_id)
    except KeyError:
        raise CollectionError(f"ir_datasets has no dataset {dataset_id!r}. Fix: check the id on "
                              "https://ir-datasets.com (e.g. beir/scifact/test).") from None


def _jsonl(records: Iterable[dict]) -> str:
    return "".join(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n" for record in records)


def export(specs: Sequence[str], out_dir: str | Path) -> dict[str, int]:
    """Write the datasets named by ``specs`` (``[split=]id``) as one BEIR folder; returns row counts."""
    out_dir = Path(out_dir)
    splits = [_split_and_id(spec) for spec in specs]
    datasets = {split: _load(dataset_id) for split, dataset_id in splits}
    first = datasets[splits[0][0]]
    if not first.has_docs():
        raise CollectionError(f"{splits[0][1]}: the dataset has no documents; name a dataset id that has them.")
    docs = [{"_id": doc.doc_id, "title": getattr(doc, "title", "") or "", "text": doc.text}
            for doc in first.docs_iter()]
    queries: dict[str, dict] = {}
    counts = {"documents": len(docs)}
    for split, dataset in datasets.items():
        if not (dataset.has_queries() and dataset.has_qrels()):
            raise CollectionError(f"{dict(splits)[split]}: no queries or qrels; name a split-level id "
                                  "(e.g. beir/scifact/test, not beir/scifact).")
        for query in dataset.queries_iter():
            queries.setdefault(query.query_id, {"_id": query.query_id, "text": query.text})
        qrels = [(qrel.query_id, qrel.doc_id, qrel.relevance) for qrel in dataset.qrels_iter()]
        atomic_write_text(out_dir / "qrels" / f"{split}.tsv", lambda handle, rows=qrels: handle.write(
            "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{r}\n" for q, d, r in rows)))
        counts[f"qrels_{split}"] = len(qrels)
    atomic_write_text(out_dir / "corpus.jsonl", lambda handle: handle.write(_jsonl(docs)))
    atomic_write_text(out_dir / "queries.jsonl", lambda handle: handle.write(_jsonl(queries.values())))
    counts["queries"] = len(queries)
    return counts
