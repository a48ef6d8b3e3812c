"""The built-in system kinds and executors: importing this module registers them.

Imported by the code that types, builds or reads the role of a system (``pipeline.system_configs``, the policies
sweep, the server, the comparison and the report), and by nothing else: a stage that builds no system runs no
kind's code, so editing a kind re-runs only the stages that use one. A lookup that misses before this module is
imported says to import it (``registry.BuiltinsRegistry``).
"""

from . import baselines  # noqa: F401  (fusion, bm25, dense, oracle, random, trec_run)
from .composite import blend, cascade, routed  # noqa: F401  (blend, cascade, routed)
from .learned import kinds  # noqa: F401  (cross_encoder, flag_reranker, bi_encoder)
from . import http_rerank, ray_executor  # noqa: F401  (http_rerank and the ray executor; imports neither library)
