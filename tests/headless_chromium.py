"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON messages ended by
NUL on file descriptors 3 and 4), so a test can open a page, collect its console errors, uncaught exceptions and
failed loads, and read the rendered DOM, with no driver or websocket package."""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    return next((path for path in map(shutil.which, CHROMIUM_NAMES) if path), None)


def _above_4(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 5)
    os.close(fd)
    return moved


class Browser:
    """One headless Chromium process; ``open`` loads a URL in a fresh tab and returns what went wrong there."""

    def __init__(self, executable: str, profile: Path, timeout_s: float = 30.0):
        self.timeout_s = timeout_s
        # Above 4, so that dup2 onto 3 and 4 in the child always makes a new, inheritable descriptor.
        to_child, self._write, self._read, from_child = [_above_4(fd) for fd in (*os.pipe(), *os.pipe())]

        def pipes_at_3_and_4():  # Chromium reads commands from fd 3 and writes replies to fd 4
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        self.process = subprocess.Popen(
            [executable, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--no-default-browser-check", f"--user-data-dir={profile}", "about:blank"],
            close_fds=False, preexec_fn=pipes_at_3_and_4, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child)
        os.close(from_child)
        self._buffer, self._next_id, self._events = b"", 0, []

    def close(self) -> None:
        try:
            self._send("Browser.close")
        except (OSError, TimeoutError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._write)
        os.close(self._read)

    def _message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise OSError("chromium closed its DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def _send(self, method: str, params: dict | None = None, session: str | None = None) -> dict[str, Any]:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = self._message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._events.append(reply)

    def _wait_for(self, method: str, session: str) -> None:
        deadline = time.monotonic() + self.timeout_s
        while not any(e.get("method") == method and e.get("sessionId") == session for e in self._events):
            self._events.append(self._message(deadline))

    def open(self, url: str, expression: str) -> tuple[list[str], Any]:
        """Loads ``url``; returns the errors it logged (console errors and warnings, uncaught exceptions, failed
        loads) and the value of ``expression`` evaluated in the page once it has loaded."""
        target = self._send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self._send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self._send(f"{domain}.enable", session=session)
        self._events.clear()
        self._send("Page.navigate", {"url": url}, session)
        self._wait_for("Page.loadEventFired", session)
        value = self._send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
        errors = []
        for event in self._events:
            if event.get("sessionId") != session:
                continue
            params = event.get("params", {})
            if event.get("method") == "Runtime.consoleAPICalled" and params["type"] in ("error", "warning", "assert"):
                errors.append(" ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif event.get("method") == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                errors.append(details.get("exception", {}).get("description") or details["text"])
            elif event.get("method") == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                errors.append(f"{params['entry']['text']} ({params['entry'].get('url', '')})")
        if "exceptionDetails" in value:
            errors.append(f"evaluating the check: {value['exceptionDetails']}")
        self._send("Target.closeTarget", {"targetId": target})
        return errors, value.get("result", {}).get("value")
