"""Stages `calibrate` and `generate@<system>`: one generator, one prompt and one context budget for every system.

`calibrate` fits what the generator kind calibrates (the extractive abstention threshold) on the calibration split,
with contexts selected from the fused order by the same select rule; `generate@<system>` answers the evaluated
split's queries from that system's contexts. Answers are byte-identical across reruns; what took how long goes to a
separate timing table.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pyarrow as pa

from ..core.errors import ContractError
from ..core.hashing import sha256_file
from ..core.io import read_json, read_table, table_metadata, write_json, write_table
from ..data.snapshot import Snapshot
from ..rag.claims import count_supported, sentences
from ..rag.generators import GENERATORS, BuildContext, Example, build_generator, parse_generator_config
from ..rag.passages import Passages, load_passages
from ..rag.select import CONTEXT_SCHEMA
from ..retrieval.candidates import load_candidates
from ..retrieval.text import passage_text
from .params import load_params
from .select import contexts

ANSWERS_SCHEMA = pa.schema([
    ("query_id", pa.string()),
    ("answer", pa.string()),
    ("abstained", pa.bool_()),
    ("failed", pa.bool_()),
    ("reason", pa.string()),
    ("citations", pa.list_(pa.string())),
    ("evidence", pa.float64()),
    ("claims", pa.int32()),
    ("supported_claims", pa.int32()),
    ("prompt_tokens", pa.int32()),
    ("completion_tokens", pa.int32()),
    ("cost_usd", pa.float64()),
    ("prompt_sha256", pa.string()),
])
TIMING_SCHEMA = pa.schema([("query_id", pa.string()), ("generate_s", pa.float64()), ("cache_hit", pa.bool_()),
                           ("attempts", pa.int32())])


def corpus_texts(snapshot: Snapshot) -> list[str]:
    corpus = snapshot.table("corpus")
    return [passage_text(title, text)
            for title, text in zip(corpus.column("title").to_pylist(), corpus.column("text").to_pylist())]


def context_lists(table: pa.Table) -> dict[str, list[str]]:
    """query_id -> its context's doc ids in position order."""
    frame = table.select(["query_id", "position", "doc_id"]).to_pandas().sort_values(["query_id", "position"])
    return {query_id: list(group["doc_id"]) for query_id, group in frame.groupby("query_id", sort=True)}


def calibrate(params_path: str | Path, snapshot_dir: str | Path, candidates_path: str | Path,
              out_path: str | Path) -> None:
    params = load_params(params_path)
    rag = params.rag
    config = parse_generator_config(rag.generator)
    record = {"generator": config.kind, "split": rag.calibration_split, "select": rag.select.to_dict()}
    _, cls = GENERATORS.get(config.kind)
    if not cls.calibrated:
        write_json(out_path, {**record, "result": {}, "note": f"the {config.kind} generator needs no calibration"})
        print(f"calibrate: {config.kind} needs no calibration")
        return
    snapshot = Snapshot(snapshot_dir)
    queries = snapshot.table("queries").to_pandas()
    if snapshot.has_answers:
        gold = queries[(queries["split"] == rag.calibration_split) & queries["answerable"].notna()]
    else:
        gold = queries.iloc[:0].assign(answers=None, answerable=None)
    candidates = load_candidates(candidates_path, columns=["query_id", "doc_id", "parent_id", "fused_rank"],
                                 with_text=False)
    fused = candidates[candidates["query_id"].isin(set(gold["query_id"]))].rename(columns={"fused_rank": "rank"})
    passages = load_passages(snapshot, candidates_path)
    chosen = context_lists(contexts(fused, passages, rag.select))
    generator = build_generator(rag.generator, BuildContext(corpus_texts=corpus_texts(snapshot)))
    examples = [Example(row.text, [passages.text[d] for d in chosen.get(row.query_id, [])],
                        list(row.answers) if row.answers is not None else [], bool(row.answerable))
                for row in gold.sort_values("query_id").itertuples()]
    result = generator.calibrate(examples)
    write_json(out_path, {**record, "result": result})
    print(f"calibrate: {config.kind} on {len(examples)} {rag.calibration_split} queries: {result}")


def _answer_row(query_id: str, generated, doc_ids: Sequence[str], claims: int, supported: int) -> dict:
    return {"query_id": query_id, "answer": generated.answer, "abstained": generated.abstained,
            "failed": generated.failed, "reason": generated.reason,
            "citations": [doc_ids[i] for i in generated.citations], "evidence": generated.evidence,
            "claims": claims, "supported_claims": supported, "prompt_tokens": generated.prompt_tokens,
            "completion_tokens": generated.completion_tokens, "cost_usd": generated.cost_usd,
            "prompt_sha256": generated.prompt_sha256}


def generate(system: str, params_path: str | Path, snapshot_dir: str | Path, candidates_path: str | Path,
             context_path: str | Path, calibration_path: str | Path, answers_path: str | Path,
             timing_path: str | Path) -> None:
    params = load_params(params_path)
    rag = params.rag
    snapshot = Snapshot(snapshot_dir)
    context_meta = table_metadata(context_path)
    if context_meta.get("system") != system:
        raise ContractError(f"{context_path}: written for system {context_meta.get('system')!r}, not {system!r}. "
                            f"Fix: `dvc repro --force select@{system}`.")
    calibration = read_json(calibration_path)
    generator = build_generator(rag.generator, BuildContext(corpus_texts=corpus_texts(snapshot),
                                                            calibration=calibration.get("result", {})))
    passages: Passages = load_passages(snapshot, candidates_path)
    chosen = context_lists(read_table(context_path, CONTEXT_SCHEMA))
    judge = getattr(generator, "chat", None) if rag.claims.judge == "llm" else None
    rows, timing = [], []
    started = time.perf_counter()
    for query in snapshot.queries_of(params.dataset.eval_split).itertuples():
        doc_ids = chosen.get(query.query_id, [])
        texts = [passages.text[d] for d in doc_ids]
        began = time.perf_counter()
        generated = generator.generate(query.text, texts)
        # A cache hit replays the seconds the request originally took; otherwise what this call took.
        seconds = generated.seconds if generated.cache_hit else time.perf_counter() - began
        claims = [] if generated.abstained or generated.failed else sentences(generated.answer)
        cited = [texts[i] for i in generated.citations]
        supported = count_supported(claims, cited, rag.claims.support_threshold, judge)
        rows.append(_answer_row(query.query_id, generated, doc_ids, len(claims), supported))
        timing.append({"query_id": query.query_id, "generate_s": seconds,
                       "cache_hit": generated.cache_hit, "attempts": generated.attempts})
    answers = pa.Table.from_pylist(rows, schema=ANSWERS_SCHEMA)
    write_table(answers_path, answers, {"system": system, "generator": generator.describe(),
                                        "claims": rag.claims.to_dict(), "split": params.dataset.eval_split,
                                        "context_sha256": sha256_file(context_path)})
    write_table(timing_path, pa.Table.from_pylist(timing, schema=TIMING_SCHEMA), {"system": system})
    frame = pd.DataFrame(rows)
    print(f"generate[{system}]: {len(frame)} queries, {int(frame['abstained'].sum())} abstained, "
          f"{int(frame['failed'].sum())} failed, {sum(t['cache_hit'] for t in timing)} cached, "
          f"{time.perf_counter() - started:.2f}s")
