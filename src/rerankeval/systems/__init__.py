"""Systems: what scores a query's candidates. ``base`` holds the seam and the registry; importing this package
registers the built-in kinds (reference systems and learned models; the heavy libraries load only when a learned
system is built)."""

from . import baselines  # noqa: F401  (registers fusion, bm25, dense, oracle, random, trec_run)
from .base import (FUSED_TAIL, FUSION_FALLBACK, RERANKED, SKIPPED, SYSTEM_KINDS, BuildContext, Query,
                   QueryCandidates, Scores, SplitCandidates, System, SystemConfig, SystemKind, build_system, kind_of,
                   parse_system_config, parse_systems, register_system)
from .learned import kinds  # noqa: F401  (registers cross_encoder, flag_reranker, bi_encoder)
from . import composite  # noqa: F401  (registers blend, routed, cascade)
from . import http_rerank, ray_executor  # noqa: F401  (registers http_rerank and the ray executor; imports neither)
from .pairs import PairScorerConfig, PairSystem, register_pair_scorer
from .pair_scoring import PairBatch, PairScorer

__all__ = ["FUSED_TAIL", "FUSION_FALLBACK", "RERANKED", "SKIPPED", "SYSTEM_KINDS", "BuildContext", "PairBatch",
           "PairScorer", "PairScorerConfig", "PairSystem", "Query", "QueryCandidates", "Scores", "SplitCandidates",
           "System", "SystemConfig", "SystemKind", "build_system", "kind_of", "parse_system_config", "parse_systems",
           "register_pair_scorer", "register_system"]
