"""A rerank API on 127.0.0.1 (Cohere's protocol) that scores each passage by its position, for the shadow replay's
served check (tests/test_shadow.py, benchmarks/bench_shadow_served.py --smoke)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer


class ScoreByPosition(BaseHTTPRequestHandler):
    """Each request takes ``service_s`` and scores passage i by 1 / (i + 1)."""

    service_s = 0.0

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(self.service_s)
        payload = json.dumps({"results": [{"index": i, "relevance_score": 1.0 / (i + 1)}
                                          for i in range(len(body["documents"]))]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):  # keep the output clean
        pass


@contextmanager
def rerank_api(service_s: float = 0.0, one_at_a_time: bool = False) -> Iterator[str]:
    """The API's base URL for the block; ``one_at_a_time``: a single-threaded server, so requests queue."""
    handler = type("Handler", (ScoreByPosition,), {"service_s": service_s})
    server = (HTTPServer if one_at_a_time else ThreadingHTTPServer)(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
