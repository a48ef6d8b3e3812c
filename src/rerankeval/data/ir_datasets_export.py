"""An ``ir_datasets`` dataset as a BEIR folder, so the pipeline reads it like any other collection.

``export(["test=beir/scifact/test", "train=beir/scifact/train"], out)`` writes ``corpus.jsonl``, ``queries.jsonl``
and ``qrels/<split>.tsv``. A bare id takes its last path component as the split. ir_datasets downloads on first
use (into ``~/.ir_datasets``); offline, only datasets already there or registered from local files can be read, and
a download that cannot connect is refused saying so.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
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


ALL_SOURCES_FAILED = "All download sources failed"
"""ir_datasets' RuntimeError when every mirror of a file failed; its second argument lists (mirror, error)."""


def _connection_failure(err: BaseException) -> OSError | None:
    """The requests ConnectionError that made a download fail (directly or on every mirror), or None."""
    from requests.exceptions import ConnectionError as NoConnection

    if isinstance(err, NoConnection):
        return err
    if isinstance(err, RuntimeError) and err.args[:1] == (ALL_SOURCES_FAILED,) and len(err.args) > 1:
        failures = [failure for _, failure in err.args[1]]
        offline = [failure for failure in failures if isinstance(failure, NoConnection)]
        # the other mirrors are local copies that are not there
        if offline and all(isinstance(failure, (NoConnection, FileNotFoundError)) for failure in failures):
            return offline[0]
    return None


@contextmanager
def _downloading(dataset_id: str) -> Iterator[None]:
    """Refuse a download that cannot connect, saying where ir_datasets keeps its files and what else to do."""
    # ir_datasets logs each failed mirror with the raw connection error; the error raised here says it once.
    logger = logging.getLogger("ir_datasets")
    logger.addFilter(_not_a_download_failure)
    try:
        yield
    except (OSError, RuntimeError) as err:  # requests' ConnectionError is an OSError
        failure = _connection_failure(err)
        if failure is None:
            raise
        from ir_datasets.util import home_path

        request = getattr(failure, "request", None)
        server = request.url if request is not None and request.url else "its server"
        raise CollectionError(
            f"{dataset_id}: cannot download the dataset's files (no connection to {server}). ir_datasets "
            f"downloads them on first use into its home folder {home_path()} (set by the environment variable "
            "IR_DATASETS_HOME) and reads copies already placed there without the network. Fix: run this command once "
            "where the network is reachable and copy that folder here (or point IR_DATASETS_HOME at a copy), or skip "
            "ir_datasets: set dataset.path to a BEIR folder of local files (corpus.jsonl, queries.jsonl, "
            "qrels/<split>.tsv) and check it with `rerankeval check-collection <folder>`.") from None
    finally:
        logger.removeFilter(_not_a_download_failure)


def _not_a_download_failure(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("Download failed:")


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
    with _downloading(splits[0][1]):
        docs = [{"_id": doc.doc_id, "title": getattr(doc, "title", "") or "", "text": doc.text}
                for doc in first.docs_iter()]
    queries: dict[str, dict] = {}
    counts = {"documents": len(docs)}
    for split, dataset in datasets.items():
        if not (dataset.has_queries() and dataset.has_qrels()):
            raise CollectionError(f"{dict(splits)[split]}: no queries or qrels; name a split-level id "
                                  "(e.g. beir/scifact/test, not beir/scifact).")
        with _downloading(dict(splits)[split]):
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
