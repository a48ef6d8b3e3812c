"""The ``retrieval`` block of params.yaml, typed: the candidate source (``retrieval.source``) and its settings.

``hybrid`` (the default) is BM25 and a dense encoder over the whole corpus, fused with RRF; ``run`` reads the team's
first stage as a TREC run, ``replay`` a replay file (``retrieval.sources``). The block is typed by its ``source``: each
source's config class is registered in ``SOURCES`` (the ``rerankeval.sources`` entry-point group: a package adds a
source by declaring the module that registers its config there) and names its implementation as a
``module:function`` string, imported only to freeze; each refuses unknown keys. ``depends_on`` is the file the
candidates are built from, so that dvc.yaml's freeze stage, which cannot have conditional deps, names it as one dep:
the snapshot's corpus for hybrid, the run or replay file otherwise.

Only settings live here (pydantic and ``core.config``), so reading params.yaml does not load the retrievers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from ..core.config import StrictConfig
from ..core.errors import ConfigError
from ..core.registry import Registry

AUTO = "auto"
"""The dense model chosen from the collection's script (``retrieval.language``)."""
EQUAL_SHARE = 0.5
"""The BM25 share of plain RRF: equal weights (``retrieval.fusion_fit``)."""


class FusionConfig(StrictConfig):
    """``retrieval.fusion``: the RRF weights of BM25 and dense."""

    weights: Literal["equal", "fit"] | dict[str, float] = "fit"
    """``equal`` (plain RRF), ``fit`` (see ``retrieval.fusion_fit``), or explicit weights ``{bm25: w, dense: w}``."""
    fit_split: str = "train"
    measure: str = "nDCG@10"
    grid: list[float] = Field(default_factory=lambda: [0.2, 0.25, 0.333, 0.5, 0.667, 0.75, 0.8])
    """BM25 shares tried; must hold 0.5 (equal weights, the default kept without evidence)."""
    confidence: float = Field(0.95, gt=0.0, lt=1.0)
    samples: int = Field(2000, ge=100)
    seed: int = 17

    @field_validator("grid")
    @classmethod
    def _shares(cls, grid: list[float]) -> list[float]:
        if EQUAL_SHARE not in grid or not all(0.0 < share < 1.0 for share in grid):
            raise ValueError("BM25 shares strictly between 0 and 1, including 0.5 (equal weights)")
        return sorted(set(grid))

    @field_validator("weights")
    @classmethod
    def _explicit(cls, weights):
        if isinstance(weights, dict) and (set(weights) != {"bm25", "dense"} or min(weights.values()) < 0
                                          or sum(weights.values()) <= 0):
            raise ValueError("explicit weights are {bm25: w, dense: w}, non-negative, not both 0")
        return weights


class Bm25Config(StrictConfig):
    k1: float = 1.2
    b: float = 0.75
    method: str = "lucene"


class DenseConfig(StrictConfig):
    model: str = AUTO
    """auto (see retrieval.language), e5-small, minilm, a local sentence-transformers directory or a hub id."""
    revision: str | None = None
    max_length: int | None = Field(None, ge=8)
    """Tokens read per text; null: the model's own limit (MiniLM 256; e5-small reads whole texts in 510-token
    windows)."""
    batch_size: int = Field(16, ge=1)
    """Texts per encoder call, embedding-cache commit and progress update (e5-small's throughput per core does
    not depend on it, benchmarks/bench_encoders.py; 16 keeps both cores busy and commits often)."""


class AccessConfig(StrictConfig):
    """``retrieval.access``: removing, before any system scores anything, the candidates the asking user may not see
    (``data.access``: documents' ``acl``, queries' ``user_groups``)."""

    filter: bool = True
    """Remove each query's candidates its user may not see (the removed ones go to the withheld file, which only a
    system configured with ``access_filter: false`` reads, to show what an unfiltered pipeline would do)."""
    queries_without_groups: Literal["public", "refuse"] = "public"
    """What a query without ``user_groups`` may see when documents carry acl: the public documents, or the freeze is
    refused naming the query."""


SOURCE_KEYS = ("source", "depends_on")
"""Where the candidates come from, not how they are ranked: left out of ``settings()`` (a hybrid freeze records the
same provenance, and writes the same bytes, as before sources existed)."""


class SourceConfig(StrictConfig):
    """What every candidate source has: its name, the file it is built from (a DVC dep) and the depth frozen."""

    retrievers: ClassVar[tuple[str, ...]] = ()
    """The first-stage retrievers that rank the whole corpus (their own top lists, their score columns)."""
    input_key: ClassVar[str | None] = None
    """The setting naming the file the candidates come from, which ``depends_on`` must name too."""
    implementation: ClassVar[str] = ""
    """``module:function`` of ``freeze(snapshot, config) -> FrozenSet``: relative to ``rerankeval.retrieval`` when it
    starts with a dot (``.sources.hybrid:freeze_hybrid``), a full module path for a plugin's source."""

    depends_on: str | None = None
    """The file the freeze stage depends on (dvc.yaml ``${retrieval.depends_on}``); null outside DVC."""
    top_n: int = Field(100, ge=1)
    """Candidates frozen per query (before the access filter removes what the user may not see)."""
    access: AccessConfig = AccessConfig()

    @model_validator(mode="after")
    def _watch_the_input(self) -> "SourceConfig":
        path = getattr(self, self.input_key) if self.input_key else None
        if path is not None and self.depends_on is not None and Path(self.depends_on) != Path(path):
            raise ValueError(f"depends_on is {self.depends_on!r}, but the candidates come from {self.input_key} "
                             f"{path!r}, so DVC would not re-run freeze when that file changes. Fix: set "
                             f"depends_on: {path} (conf/retrieval/{self.source}.yaml sets it to "
                             f"${{.{self.input_key}}})")
        return self

    def settings(self) -> dict[str, Any]:
        """The settings that decide the candidates, as the freeze stage records them."""
        return {key: value for key, value in self.to_dict().items() if key not in SOURCE_KEYS}


class HybridConfig(SourceConfig):
    """``retrieval.source: hybrid``: BM25 and dense over the whole corpus, each one's top list fused with RRF."""

    retrievers: ClassVar[tuple[str, ...]] = ("bm25", "dense")
    implementation: ClassVar[str] = ".sources.hybrid:freeze_hybrid"

    source: Literal["hybrid"] = "hybrid"
    fusion_depth: int = Field(100, ge=1)
    rrf_k: int = Field(60, ge=0)
    bm25: Bm25Config = Bm25Config()
    dense: DenseConfig = DenseConfig()
    fusion: FusionConfig = FusionConfig()


class RunConfig(SourceConfig):
    """``retrieval.source: run``: the team's first stage as a TREC run file; the texts from the snapshot's corpus."""

    input_key: ClassVar[str | None] = "run"
    implementation: ClassVar[str] = ".sources.run:freeze_run"

    source: Literal["run"]
    run: str
    """The TREC run file (``query_id Q0 doc_id rank score tag``); each query's top ``top_n`` in trec_eval's order."""


class ReplayConfig(SourceConfig):
    """``retrieval.source: replay``: a replay file (JSONL, one line per query, each candidate with its own text)."""

    input_key: ClassVar[str | None] = "path"
    implementation: ClassVar[str] = ".sources.replay:freeze_replay"

    source: Literal["replay"]
    path: str
    """The replay file (``retrieval.sources.replay``); ``rerankeval export-candidates`` writes one."""


SOURCES: Registry[type[SourceConfig]] = Registry("candidate source", "rerankeval.sources")
"""Each ``retrieval.source`` and its settings' class (which names its implementation)."""
for _name, _config in (("hybrid", HybridConfig), ("run", RunConfig), ("replay", ReplayConfig)):
    SOURCES.add(_name, _config)


def _typed_source(value: Any) -> Any:
    """The block typed by its ``source`` (a block without one is hybrid: params.yaml from before sources), each
    problem named by its key under ``retrieval``."""
    if not isinstance(value, dict):
        return value
    source = value.get("source", "hybrid")
    if not isinstance(source, str) or source not in SOURCES:
        raise ValueError(f"source {source!r} is not a candidate source; known: {SOURCES.known()}. Fix: "
                         "`-S retrieval=<one of them>` (conf/retrieval/), or install a package that registers it "
                         "under the 'rerankeval.sources' entry-point group")
    try:
        return SOURCES.get(source).parse(value, "retrieval")
    except ConfigError as err:
        raise ValueError(f"the settings of source {source!r} (conf/retrieval/{source}.yaml):\n  "
                         + str(err).split("\n", 1)[1].lstrip()) from None


RetrievalConfig = Annotated[SourceConfig, BeforeValidator(_typed_source)]
"""The ``retrieval`` block of params.yaml (the freeze stage): the settings of one source, discriminated by
``source``; an instance of HybridConfig, RunConfig or ReplayConfig."""
