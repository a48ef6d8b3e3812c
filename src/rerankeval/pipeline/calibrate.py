"""Stage `calibrate`: fit what the generator kind calibrates (the extractive abstention threshold) on the calibration
split, with contexts selected from the fused order by the same select rule the systems' contexts follow."""

from __future__ import annotations

from ..core.io import write_json
from ..data.access import AccessLabels
from ..data.snapshot import Snapshot
from ..rag.generators import GENERATORS, BuildContext, Example, build_generator, parse_generator_config
from ..rag.passages import corpus_texts, load_passages
from ..rag.select import context_lists, context_table
from ..retrieval.candidates import load_candidates
from ..workspace.paths import PipelinePaths
from .params import Params


def run(params: Params, paths: PipelinePaths) -> None:
    rag = params.rag
    config = parse_generator_config(rag.generator)
    record = {"generator": config.kind, "split": rag.calibration_split, "select": rag.select.to_dict()}
    _, cls = GENERATORS.get(config.kind)
    if not cls.calibrated:
        write_json(paths.calibration, {**record, "result": {},
                                       "note": f"the {config.kind} generator needs no calibration"})
        print(f"calibrate: {config.kind} needs no calibration")
        return
    snapshot = Snapshot(paths.snapshot)
    queries = snapshot.table("queries").to_pandas()
    if snapshot.has_answers:
        gold = queries[(queries["split"] == rag.calibration_split) & queries["answerable"].notna()]
    else:
        gold = queries.iloc[:0].assign(answers=None, answerable=None)
    candidates = load_candidates(paths.candidates, columns=["query_id", "doc_id", "parent_id", "fused_rank"],
                                 with_text=False)
    fused = candidates[candidates["query_id"].isin(set(gold["query_id"]))].rename(columns={"fused_rank": "rank"})
    passages = load_passages(snapshot, paths.candidates)
    labels = AccessLabels.of_candidates(snapshot, paths.candidates, params.retrieval.access.queries_without_groups)
    may_see = labels.may_see_one if labels.restricts and params.retrieval.access.filter else None
    chosen = context_lists(context_table(fused, passages, rag.select, may_see=may_see))
    examples = [Example(row.text, [passages.text[d] for d in chosen.get(row.query_id, [])],
                        list(row.answers) if row.answers is not None else [], bool(row.answerable))
                for row in gold.sort_values("query_id").itertuples()]
    with build_generator(rag.generator, BuildContext(corpus_texts=corpus_texts(snapshot))) as generator:
        result = generator.calibrate(examples)
    write_json(paths.calibration, {**record, "result": result})
    print(f"calibrate: {config.kind} on {len(examples)} {rag.calibration_split} queries: {result}")
