"""The ``ray`` executor: a system's uncached pairs scored by Ray Data ``map_batches`` over an actor pool.

Each actor rebuilds the system's scorer once (the model loads once per actor) and scores whole queries (work items)
with the same ``score_item`` as the local executor, so scores, deadlines and per-pair compute times are the same;
results stream back to the driver, which writes them to the pair-score cache. Ray is imported only when this executor
runs. ``ray.init()`` starts a local Ray on this machine, or joins the cluster named by ``RAY_ADDRESS``; on a cluster,
the model paths of the system config must exist on every node (a shared filesystem, or a hub id).

Settings (environment, since they describe the machine, not the system): ``RERANKEVAL_RAY_ACTORS`` (default: the
cluster's CPUs / ``RERANKEVAL_RAY_CPUS_PER_ACTOR``), ``RERANKEVAL_RAY_CPUS_PER_ACTOR`` (default 1: one torch thread
per actor, one actor per core) and ``RERANKEVAL_RAY_QUERIES_PER_CALL`` (default 4).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..core.errors import DeadlineExceeded, ScoringFailure
from .pair_scoring import PairBatch, PairScorer, ScorerRecipe, WorkItem, WorkResult, register_executor, score_item


def ensure_ray():
    """Ray, started (or joined, through ``RAY_ADDRESS``) once per process."""
    import ray

    if not ray.is_initialized():
        # log_to_driver off: the workers' model-loading chatter would fill the stage's log.
        # "local": a Ray of our own on this machine, never whatever cluster another user left running here.
        ray.init(address=os.environ.get("RAY_ADDRESS") or "local", include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
    return ray


def _setting(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


def encode_result(result: WorkResult) -> dict[str, Any]:
    """A work result as plain data (exceptions do not pickle with their reason across processes)."""
    failure = result.failure
    return {"query_id": result.query_id, "wall_s": result.wall_s, "batches": result.batches,
            "failure": None if failure is None else (isinstance(failure, DeadlineExceeded), failure.reason,
                                                     failure.detail)}


def decode_result(payload: dict[str, Any]) -> WorkResult:
    failure = payload["failure"]
    if failure is not None:
        deadline, reason, detail = failure
        failure = DeadlineExceeded(detail) if deadline else ScoringFailure(reason, detail)
    return WorkResult(payload["query_id"], payload["batches"], failure, payload["wall_s"])


class ScoringActor:
    """One Ray Data actor: builds the scorer once, then scores the work items of each batch it is handed."""

    def __init__(self, recipe: ScorerRecipe):
        self.scorer = recipe.build()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import pickle

        payloads = []
        for query_id, text, passages, budget in zip(batch["query_id"], batch["query_text"], batch["passages"],
                                                    batch["budget_s"]):
            item = WorkItem(str(query_id), str(text), [str(p) for p in passages],
                            None if np.isnan(budget) else float(budget))
            payloads.append(pickle.dumps(encode_result(score_item(self.scorer, item))))
        return {"query_id": batch["query_id"], "result": np.array(payloads, dtype=object)}


class RayExecutor:
    name = "ray"

    def __init__(self, recipe: ScorerRecipe):
        self.recipe = recipe

    def run(self, scorer: PairScorer, items: Sequence[WorkItem],
            on_batch: Callable[[WorkItem, PairBatch], None]) -> Iterator[WorkResult]:
        if not items:
            return
        import pickle

        ray = ensure_ray()
        cpus_per_actor = _setting("RERANKEVAL_RAY_CPUS_PER_ACTOR", 1)
        actors = _setting("RERANKEVAL_RAY_ACTORS", max(1, int(ray.cluster_resources().get("CPU", 1)) // cpus_per_actor))
        actors = min(actors, len(items))
        per_call = _setting("RERANKEVAL_RAY_QUERIES_PER_CALL", 4)
        rows = [{"query_id": item.query_id, "query_text": item.query_text, "passages": item.passages,
                 "budget_s": np.nan if item.budget_s is None else item.budget_s} for item in items]
        dataset = ray.data.from_items(rows, override_num_blocks=max(1, -(-len(rows) // per_call)))
        scored = dataset.map_batches(ScoringActor, fn_constructor_args=(self.recipe,), batch_size=per_call,
                                     batch_format="numpy", concurrency=actors, num_cpus=cpus_per_actor)
        by_id = {item.query_id: item for item in items}
        for row in scored.iter_rows():
            result = decode_result(pickle.loads(row["result"]))
            for batch in result.batches:
                on_batch(by_id[result.query_id], batch)
            yield result


register_executor("ray", RayExecutor)
