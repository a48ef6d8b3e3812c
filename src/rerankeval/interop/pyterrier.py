"""A PyTerrier transformer that reranks with any configured rerankeval system (``pip install 'rerankeval[pyterrier]'``).

    import pyterrier as pt
    from rerankeval.interop.pyterrier import Reranker, candidates_source

    candidates = candidates_source()                      # the frozen candidates, as a PyTerrier source
    reranker = Reranker.from_params("ce_minilm_ft")       # systems.ce_minilm_ft of params.yaml
    pt.Experiment([candidates, candidates >> reranker], topics, qrels, ["ndcg_cut_10"])

The transformer builds the system as the rerank stage does (its kind, model, depth, pair-score cache) and reranks each
query's top ``depth`` results of its input through ``rerank.driver.rerank``, the stage's own driver; the results
below the depth keep their order under the reranked head. Its per-query latency table (``latency``) is kept after
every call. A system that fits a setting on another split (a blend with ``weight: fit``, and a routed system built on
one) takes the weight the pipeline fitted, as its run recorded it: a transformer has no fitting split. Before the
pipeline has run that system, building it is refused by name (``systems.NAME.weight: 'fit' needs the 'train' split's
candidates ...``): set a number, or run ``dvc repro rerank@NAME`` first.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyterrier as pt
import yaml

from ..core.errors import ConfigError, ContractError
from ..core.hashing import sha256_text
from ..core.io import table_metadata
from ..data.snapshot import Snapshot
from ..rerank.driver import RerankSettings, rerank, settings_of
from ..retrieval.candidates import load_candidates
from ..systems.base import Query
from ..systems.registry import BuildContext, build_system
from ..workspace.paths import PipelinePaths
from .frames import FIRST_STAGE, candidates_frame, untied_scores

INPUT_COLUMNS = ("qid", "query", "docno", "text")


class Reranker(pt.Transformer):
    """Reranks a ranked PyTerrier frame (``qid``, ``query``, ``docno``, ``text``; ``score`` or ``rank`` give its
    order) with the system ``name`` of ``systems`` (params.yaml's ``systems`` block)."""

    def __init__(self, name: str, systems: Mapping[str, Mapping[str, Any]], depth: int | None = None):
        context = BuildContext(systems=systems)  # types every system's settings, refusing bad ones by key
        if name not in context.systems:
            raise ConfigError(f"no system {name!r} under systems (configured: {', '.join(context.systems)})")
        self.name, self.config = name, context.systems[name]
        self.depth = depth or self.config.depth
        settings_of(self.config, None, f"systems.{name}")  # a frame has no validity labels: outdated: demote refused
        self.system = build_system(name, self.config, context)
        self.latency: pd.DataFrame | None = None

    @classmethod
    def from_params(cls, name: str, params: str | Path = "params.yaml", depth: int | None = None,
                    paths: PipelinePaths | None = None) -> Reranker:
        """``systems.<name>`` of ``params``, each ``weight: fit`` replaced by the weight the pipeline fitted
        (``with_fitted_weights``; ``paths``: the pipeline's, by default the project's in this folder)."""
        with open(params, encoding="utf-8") as handle:
            systems = (yaml.safe_load(handle) or {}).get("systems") or {}
        if any(isinstance(config, Mapping) and config.get("weight") == "fit" for config in systems.values()):
            systems = with_fitted_weights(systems, paths or PipelinePaths.load())  # dvc.yaml names the runs' folder
        return cls(name, systems, depth)

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        missing = [column for column in INPUT_COLUMNS if column not in frame.columns]
        if missing:
            raise ContractError(f"the frame to rerank has no column {', '.join(missing)}: a reranker reads qid, query, "
                                "docno and text (add text with pt.text.get_text)")
        if frame.empty:
            return frame.assign(score=pd.Series(dtype=float), rank=pd.Series(dtype=int))
        order = frame.assign(_row=np.arange(len(frame)))
        if "rank" in order.columns:
            order = order.sort_values(["qid", "rank"], kind="stable")
        else:
            order = order.sort_values(["qid", "score"], ascending=[True, False], kind="stable")
        candidates = pd.DataFrame({"query_id": order["qid"].astype(str), "doc_id": order["docno"].astype(str),
                                   "passage": order["text"].astype(str),
                                   "fused_rank": order.groupby("qid").cumcount().to_numpy() + 1})
        candidates["passage_sha256"] = [sha256_text(text) for text in candidates["passage"]]
        for column in FIRST_STAGE:  # what a blend or a routing rule reads, where the frame carries it
            if column in order.columns:
                candidates[column] = order[column].to_numpy()
        queries = {str(qid): Query(str(qid), str(text)) for qid, text in zip(order["qid"], order["query"])}
        run, self.latency = rerank(candidates, queries, self.system, RerankSettings(self.depth))
        run = run.assign(score=untied_scores(run, np.float32))  # as trec_eval will read them
        columns = [column for column in frame.columns if column not in ("score", "rank")]
        keyed = frame[columns].assign(_qid=frame["qid"].astype(str), _docno=frame["docno"].astype(str))
        out = keyed.merge(run[["query_id", "doc_id", "score", "rank"]], left_on=["_qid", "_docno"],
                          right_on=["query_id", "doc_id"], how="left")
        out["rank"] = out["rank"].astype(int) - 1  # PyTerrier's ranks start at 0
        return (out.sort_values(["_qid", "rank"], kind="stable").drop(columns=["_qid", "_docno", "query_id", "doc_id"])
                .reset_index(drop=True))


def with_fitted_weights(systems: Mapping[str, Any], paths: PipelinePaths) -> dict[str, Any]:
    """``systems`` with each ``weight: fit`` replaced by the weight the pipeline's run of that system recorded
    (``describe.weight``); a system whose run is absent keeps ``fit``, and building it is refused by name."""
    fitted = {}
    for name, config in systems.items():
        if isinstance(config, Mapping) and config.get("weight") == "fit" and paths.run(name).exists():
            weight = table_metadata(paths.run(name)).get("describe", {}).get("weight")
            if isinstance(weight, (int, float)) and not isinstance(weight, bool):
                fitted[name] = {**config, "weight": weight}
    return {**systems, **fitted}


def candidates_source(paths: PipelinePaths | None = None) -> pt.Transformer:
    """The frozen candidates (every split's queries, fused order, with their text) as a PyTerrier source: it returns
    the rows of the qids it is given."""
    paths = paths or PipelinePaths.load()
    queries = Snapshot(paths.snapshot).table("queries").to_pandas()
    frame = candidates_frame(load_candidates(paths.candidates), dict(zip(queries["query_id"], queries["text"])))
    return pt.Transformer.from_df(frame)
