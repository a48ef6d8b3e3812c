"""A fake OpenAI-compatible chat server on 127.0.0.1 for tests: scripted failures, recorded requests.

Each request takes the next behaviour from ``script`` (then ``ok``): ``ok`` (a reply from ``responder``), ``429``
(with Retry-After: 0), ``500``, ``echo_key_500`` (a 500 whose body echoes the Authorization header, as a careless
proxy might), ``400``, ``hang`` (answers after ``hang_s``, past the client's timeout), ``malformed`` (200 with a body
that is not JSON), ``no_choices`` (200 with an empty choices list). A wrong or missing key gets 401. A responder may
return ``{"text": ..., "top_logprobs": [(token, logprob), ...]}``: the first token's alternatives, sent when the
request asks for logprobs.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def send_json(handler: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict | None = None) -> None:
    """A JSON reply from a fake server's handler; a client that gave up (its timeout) is no error."""
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


class FakeOpenAI:
    def __init__(self, key: str | None = None, responder=None, hang_s: float = 1.0):
        self.key = key
        self.script: list[str] = []
        self.requests: list[dict] = []
        self.responder = responder or (lambda messages: "The answer [1].")
        self.hang_s = hang_s
        self.served_model: str | None = None
        """The model name the replies report (None: the one asked for), as a server serving another snapshot would."""
        self.fingerprint: str | None = None
        """The replies' ``system_fingerprint`` (None: not sent)."""
        self.pages: dict[str, dict] = {}
        """What a GET of each path answers (``/v1/models``, ``/version``, ``/props``); any other path is a 404."""
        self.gets: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                fake.gets.append(self.path)
                if self.path in fake.pages:
                    return self._send(200, fake.pages[self.path])
                return self._send(404, {"error": {"message": "not found"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                behaviour = fake.script.pop(0) if fake.script else "ok"
                auth = self.headers.get("Authorization", "")
                if fake.key is not None and auth != f"Bearer {fake.key}":
                    return self._send(401, {"error": {"message": "invalid key"}})
                if behaviour == "hang":
                    time.sleep(fake.hang_s)
                    behaviour = "ok"
                if behaviour == "429":
                    return self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
                if behaviour == "500":
                    return self._send(500, {"error": {"message": "boom"}})
                if behaviour == "echo_key_500":
                    return self._send(500, {"error": {"message": f"upstream rejected {auth}"}})
                if behaviour == "400":
                    return self._send(400, {"error": {"message": "bad request"}})
                if behaviour == "malformed":
                    return self._send_raw(200, b"{this is not json")
                if behaviour == "no_choices":
                    return self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                            "choices": []})
                text = fake.responder(body["messages"])
                alternatives, usage, finish = None, {"prompt_tokens": 100, "completion_tokens": 10}, "stop"
                if isinstance(text, dict):  # {"text": ..., "top_logprobs": [(token, logprob), ...], "usage": ...,
                    # "finish_reason": ...}
                    usage, finish = {**usage, **text.get("usage", {})}, text.get("finish_reason", finish)
                    text, alternatives = text["text"], text.get("top_logprobs")
                choice = {"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": text}}
                if alternatives and body.get("logprobs"):  # given only when asked, as OpenAI-style servers do
                    choice["logprobs"] = {"content": [{"token": alternatives[0][0], "logprob": alternatives[0][1],
                                                       "top_logprobs": [{"token": token, "logprob": logprob}
                                                                        for token, logprob in alternatives]}]}
                return self._send(200, {
                    "id": "cmpl-1", "object": "chat.completion", "created": 0, "model": fake.served_model or
                    body["model"], "choices": [choice],
                    "usage": {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]},
                    **({"system_fingerprint": fake.fingerprint} if fake.fingerprint else {})})

            def _send(self, status, payload, headers=None):
                send_json(self, status, json.dumps(payload).encode(), headers)

            def _send_raw(self, status, data, headers=None):
                send_json(self, status, data, headers)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> "FakeOpenAI":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
