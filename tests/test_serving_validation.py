"""What `rerankeval serve` accepts on /v2/rerank, checked without Ray (tests/test_serving_ray.py posts the same
cases to the served app): each bad request gets its status and a message naming the field and the fix, never a
Python exception's name."""

import json
import re

import pytest

from rerankeval.core.errors import RerankevalError
from rerankeval.serving.config import ServeConfig
from rerankeval.serving.rerank_api import BadRerankRequest, parse_rerank_body, rerank_response

LIMITS = {"max_documents": 20, "max_document_chars": 2000, "max_request_bytes": 200_000}
"""Small limits, so the cases stay small; the Ray test serves with them too."""
OPTIONS = ServeConfig(**LIMITS)
PYTHON_NAMES = re.compile(r"Traceback|\b[A-Z]\w*(Error|Exception)\b|\bdict\b|\bstr\b|\bNone\b")


def ok(**fields):
    return {"query": "payment retry", "documents": ["a", "b"], **fields}


BAD_REQUESTS = [  # (case, body: bytes sent as they are, anything else as JSON; status; field named; message part)
    ("not JSON", b"query=payment", 400, "body", "body: is not JSON"),
    ("not UTF-8", b"\xff\xfe{}", 400, "body", "body: is not JSON"),
    ("an array", ["payment retry"], 422, "body", "expected a JSON object, got an array"),
    ("no query", {"documents": ["a"]}, 422, "query", "required field is missing"),
    ("a number as query", ok(query=5), 422, "query", "expected a string, got the number 5"),
    ("an empty query", ok(query=""), 422, "query", "is empty"),
    ("no documents", {"query": "q"}, 422, "documents", "required field is missing"),
    ("a string as documents", ok(documents="abc"), 422, "documents", "expected a list, got a string"),
    ("an object as documents", ok(documents={"x": 1, "y": 2}), 422, "documents", "expected a list, got an object"),
    ("no document", ok(documents=[]), 422, "documents", "is empty. Fix: send at least one document"),
    ("a number among documents", ok(documents=["a", "b", "c", 5]), 422, "documents[3]",
     'documents[3]: expected a string or an object with a string "text"'),
    ("an object without text", ok(documents=[{"title": "a"}]), 422, "documents[0]", 'with a string "text"'),
    ("a number as text", ok(documents=["a", {"text": 3}]), 422, "documents[1]", 'with a string "text"'),
    ("too many documents", ok(documents=["d"] * 21), 413, "documents",
     "send at most 20 documents per request; split the request or raise serving.serve.max_documents"),
    ("too long a document", ok(documents=["a", "x" * 2001]), 413, "documents[1]",
     "2001 characters are over the limit of 2000"),
    ("too long a query", ok(query="q" * 2001), 413, "query", "raise serving.serve.max_document_chars"),
    ("too large a body", ok(documents=["x" * 250_000]), 413, "body", "raise serving.serve.max_request_bytes"),
    ("a negative top_n", ok(top_n=-1), 422, "top_n", "expected an integer >= 1, got the number -1"),
    ("top_n 0", ok(top_n=0), 422, "top_n", "expected an integer >= 1, got the number 0"),
    ("a boolean top_n", ok(top_n=True), 422, "top_n", "got the boolean true"),
    ("a string top_n", ok(top_n="3"), 422, "top_n", "got a string"),
    ("a fractional top_n", ok(top_n=1.5), 422, "top_n", "got the number 1.5"),
    ("a string return_documents", ok(return_documents="yes"), 422, "return_documents", "expected true or false"),
    ("max_tokens_per_doc 0", ok(max_tokens_per_doc=0), 422, "max_tokens_per_doc", "expected an integer >= 1"),
    ("a number as model", ok(model=5), 422, "model", "expected a string"),
    ("an unknown key", ok(rank_fields=["text"]), 422, "rank_fields",
     "rank_fields: unknown field. Fix: remove it; /v2/rerank accepts model, query, documents, top_n"),
    ("JSON nested 100,000 deep", b"[" * 100_000 + b"]" * 100_000, 400, "body", "is JSON nested too deep"),
    ("a lone surrogate in a document", b'{"query": "q", "documents": ["ok", "bad \\ud800 half"]}', 422,
     "documents[1]", "holds a lone UTF-16 surrogate at character 4"),
    ("a lone surrogate in the query", b'{"query": "\\udfff", "documents": ["a"]}', 422, "query",
     "lone UTF-16 surrogate"),
]


def raw(body) -> bytes:
    return body if isinstance(body, bytes) else json.dumps(body).encode()


def assert_refusal(status: int, message: str, expected_status: int, field: str, part: str) -> None:
    assert status == expected_status, message
    assert message.startswith(f"{field}: ") and part in message and ". Fix: " in message, message
    assert not PYTHON_NAMES.search(message), message


@pytest.mark.parametrize("case, body, status, field, part", BAD_REQUESTS, ids=[case[0] for case in BAD_REQUESTS])
def test_a_bad_request_is_refused_naming_the_field_and_the_fix(case, body, status, field, part):
    with pytest.raises(BadRerankRequest) as refused:
        parse_rerank_body(raw(body), OPTIONS)
    assert isinstance(refused.value, RerankevalError) and refused.value.field == field
    assert_refusal(refused.value.status, str(refused.value), status, field, part)


def test_cohere_requests_are_accepted_and_answered_as_cohere_does():
    body = {"model": "ce", "query": "q", "documents": ["a", {"text": "b", "title": "t"}, "c"], "top_n": 10,
            "return_documents": True, "max_tokens_per_doc": 512}
    request = parse_rerank_body(raw(body), OPTIONS)
    assert (request.query, request.documents, request.top_n, request.return_documents) == ("q", ["a", "b", "c"], 3,
                                                                                            True)
    reply = rerank_response(request, [0.2, 0.9, 0.2], "7")
    assert reply["id"] == "7" and reply["results"] == [
        {"index": 1, "relevance_score": 0.9, "document": {"text": "b"}},
        {"index": 0, "relevance_score": 0.2, "document": {"text": "a"}},  # a tie goes to the earlier document
        {"index": 2, "relevance_score": 0.2, "document": {"text": "c"}}]
    short = parse_rerank_body(raw(ok(top_n=1, model=None)), OPTIONS)
    assert rerank_response(short, [0.1, 0.3], "8")["results"] == [{"index": 1, "relevance_score": 0.3}]
    assert parse_rerank_body(raw(ok()), OPTIONS).top_n == 2  # no top_n: every document


def test_the_limits_default_to_cohere_s():
    defaults = ServeConfig()
    assert (defaults.max_documents, defaults.max_document_chars) == (1000, 100_000)
    assert defaults.max_request_bytes >= defaults.max_documents * 1000  # 1000 documents of 1000 characters fit


def test_a_request_the_model_fails_on_fails_alone_in_its_batch():
    import numpy as np

    from rerankeval.serving.server import ScoringError, score_requests
    from rerankeval.systems.pair_scoring import PairBatch

    class Scorer:  # fails on one query, as a tokenizer fails on text it cannot read
        def score_batches(self, query, documents):
            if query == "poison":
                raise TypeError("tokenizer cannot read this")
            yield PairBatch(indices=np.arange(len(documents)), scores=np.ones(len(documents)))

    results = score_requests(Scorer(), [("a", ["x", "y"])] * 10 + [("poison", ["z"])] + [("b", ["x"])] * 9)
    assert [isinstance(found, ScoringError) for found in results] == [False] * 10 + [True] + [False] * 9
    assert results[10] == "TypeError: tokenizer cannot read this" and list(results[11]) == [1.0]
