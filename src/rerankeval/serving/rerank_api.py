"""What ``rerankeval serve`` accepts on ``POST /v2/rerank`` and what it answers: Cohere's v2 rerank JSON, checked
before a request reaches a replica's model (no Ray here, so it is tested on its own).

A body is a JSON object with ``query`` (a non-empty string), ``documents`` (a list of strings, or of objects with a
string ``text``, as Cohere's v1 accepted; other keys of such an object are not ranked on) and optionally ``model``
(any string: the served model answers whatever it is named), ``top_n`` (an integer >= 1; above the number of
documents it returns them all, as Cohere does), ``return_documents`` (true: each result carries
``{"document": {"text": ...}}``) and ``max_tokens_per_doc`` (an integer >= 1, accepted for Cohere's clients: the
served model truncates each pair at its own ``max_length``). Any other key is refused, naming it.

A refused request is a ``BadRerankRequest``: its ``status`` is 400 (a body that is not JSON), 413 (too many
documents, too long a document or query, too large a body) or 422 (any other field), and its message names the
field and the fix, as ``{"message": ...}`` in the reply.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import RerankevalError
from .config import ServeConfig

FIELDS = ("model", "query", "documents", "top_n", "return_documents", "max_tokens_per_doc")


class BadRerankRequest(RerankevalError, ValueError):
    """A request the server refuses; ``status`` is its HTTP status, the message names the field and the fix."""

    def __init__(self, status: int, field: str, problem: str, fix: str):
        super().__init__(f"{field}: {problem}. Fix: {fix}")
        self.status, self.field = status, field


@dataclass(frozen=True)
class RerankRequest:
    query: str
    documents: list[str]
    top_n: int
    """How many results to return: at most the number of documents."""
    return_documents: bool


def check_body_size(n_bytes: int, options: ServeConfig) -> None:
    if n_bytes > options.max_request_bytes:
        raise BadRerankRequest(413, "body", f"{n_bytes} bytes are over the limit of {options.max_request_bytes}",
                               "send fewer or shorter documents per request, or raise "
                               "serving.serve.max_request_bytes")


def parse_rerank_body(raw: bytes, options: ServeConfig) -> RerankRequest:
    """The request in ``raw`` (the HTTP body), or a ``BadRerankRequest``."""
    check_body_size(len(raw), options)
    try:
        body = json.loads(raw)
    except ValueError:  # malformed JSON or not UTF-8
        raise BadRerankRequest(400, "body", "is not JSON (malformed, or not UTF-8)",
                               'send a JSON object, e.g. {"query": "...", "documents": ["..."]}') from None
    except RecursionError:  # arrays or objects nested thousands deep
        raise BadRerankRequest(400, "body", "is JSON nested too deep to read",
                               'send {"query": "...", "documents": ["..."]}, a flat object') from None
    return parse_rerank_request(body, options)


def parse_rerank_request(body: Any, options: ServeConfig) -> RerankRequest:
    """The request in ``body`` (parsed JSON), or a ``BadRerankRequest`` naming the first field that is wrong."""
    if not isinstance(body, Mapping):
        raise BadRerankRequest(422, "body", f"expected a JSON object, got {_json_type(body)}",
                               'send {"query": "...", "documents": ["..."]}')
    unknown = [key for key in body if key not in FIELDS]
    if unknown:
        raise BadRerankRequest(422, unknown[0], "unknown field", f"remove it; /v2/rerank accepts {', '.join(FIELDS)}")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise BadRerankRequest(422, "model", f"expected a string, got {_json_type(model)}", "send the model's name")
    query = _text(body.get("query"), "query", options, "send the search query as a non-empty string")
    if not query.strip():
        raise BadRerankRequest(422, "query", "is empty", "send the search query as a non-empty string")
    documents = _documents(body.get("documents"), options)
    top_n = _positive_int(body.get("top_n"), "top_n", "send an integer >= 1, or leave it out to rank every document")
    _positive_int(body.get("max_tokens_per_doc"), "max_tokens_per_doc", "send an integer >= 1, or leave it out")
    return_documents = body.get("return_documents")
    if return_documents is not None and not isinstance(return_documents, bool):
        raise BadRerankRequest(422, "return_documents", f"expected true or false, got {_json_type(return_documents)}",
                               "send a JSON boolean (unquoted)")
    return RerankRequest(query, documents, min(top_n or len(documents), len(documents)), bool(return_documents))


def _documents(documents: Any, options: ServeConfig) -> list[str]:
    fix = 'send a list of strings, or of objects with a string "text"'
    if documents is None:
        raise BadRerankRequest(422, "documents", "required field is missing", fix)
    if not isinstance(documents, list):  # a string would be ranked character by character, an object by its keys
        raise BadRerankRequest(422, "documents", f"expected a list, got {_json_type(documents)}", fix)
    if not documents:
        raise BadRerankRequest(422, "documents", "is empty", "send at least one document")
    if len(documents) > options.max_documents:
        raise BadRerankRequest(413, "documents", f"{len(documents)} documents are over the limit of "
                                                 f"{options.max_documents}",
                               f"send at most {options.max_documents} documents per request; split the request or "
                               "raise serving.serve.max_documents")
    texts = []
    for index, document in enumerate(documents):
        text = document.get("text") if isinstance(document, Mapping) else document
        if not isinstance(text, str):
            raise BadRerankRequest(422, f"documents[{index}]", 'expected a string or an object with a string "text"',
                                   fix)
        texts.append(_text(text, f"documents[{index}]", options, fix))
    return texts


def _text(value: Any, field: str, options: ServeConfig, fix: str) -> str:
    if value is None:
        raise BadRerankRequest(422, field, "required field is missing", fix)
    if not isinstance(value, str):
        raise BadRerankRequest(422, field, f"expected a string, got {_json_type(value)}", fix)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:  # a lone surrogate (\\ud800) that JSON lets through: no tokenizer reads it
        raise BadRerankRequest(422, field, f"holds a lone UTF-16 surrogate at character {err.start}, not text",
                               "send valid Unicode (a surrogate only as half of a pair)") from None
    if len(value) > options.max_document_chars:
        raise BadRerankRequest(413, field, f"{len(value)} characters are over the limit of "
                                           f"{options.max_document_chars}",
                               "shorten it (the model reads only its first few hundred tokens) or raise "
                               "serving.serve.max_document_chars")
    return value


def _positive_int(value: Any, field: str, fix: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise BadRerankRequest(422, field, f"expected an integer >= 1, got {_json_type(value)}", fix)
    return value


def _json_type(value: Any) -> str:
    """The JSON name of ``value``'s type: what the client sent, in its own terms."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {json.dumps(value)}"
    if isinstance(value, (int, float)):
        return f"the number {json.dumps(value)}"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def rerank_response(request: RerankRequest, scores: Sequence[float], request_id: str) -> dict[str, Any]:
    """Cohere's v2 reply: the ``top_n`` best documents, best first (ties by index), with the text when asked for."""
    order = sorted(range(len(request.documents)), key=lambda i: (-scores[i], i))[:request.top_n]
    results = [{"index": i, "relevance_score": float(scores[i]),
                **({"document": {"text": request.documents[i]}} if request.return_documents else {})} for i in order]
    return {"id": request_id, "results": results, "meta": {"billed_units": {"search_units": 1}}}
