"""The built-in system kinds and executors: importing this module registers them.

Imported by the code that types or builds a system (``pipeline.system_configs``, the rerank and latency stages,
the policies sweep, the server), and by nothing else: the comparison and the report read a system's traits from
its run (``roles``), so editing a kind re-runs only the stages that build one. A lookup that misses before this module is
imported says to import it (``registry.BuiltinsRegistry``).
"""

from . import baselines  # noqa: F401  (fusion, bm25, dense, oracle, random, trec_run)
from .composite import blend, cascade, routed  # noqa: F401  (blend, cascade, routed)
from .learned import kinds  # noqa: F401  (cross_encoder, flag_reranker, bi_encoder)
from . import http_rerank, ray_executor  # noqa: F401  (http_rerank and the ray executor; imports neither library)
