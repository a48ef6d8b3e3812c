"""Progress lines for long stages: done/total, rate and ETA, printed at most every few seconds to stderr.

Stage logs (a terminal, or DVC's captured output) get one newline-terminated line per interval, not a redrawn bar,
so a log file stays readable. ``RERANKEVAL_PROGRESS=0`` silences it (the test suite sets it: tests/conftest.py);
``RERANKEVAL_PROGRESS_EVERY_S`` sets the interval (default 10 s).
(tqdm redraws one line with carriage returns, which a captured log keeps as one unreadable line: hence these few
lines of our own.)
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TextIO

PROGRESS_ENV = "RERANKEVAL_PROGRESS"
EVERY_S_ENV = "RERANKEVAL_PROGRESS_EVERY_S"
DEFAULT_EVERY_S = 10.0


def progress_enabled() -> bool:
    return os.environ.get(PROGRESS_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


class Progress:
    """``update(n)`` after each unit of work; a line is printed when ``every_s`` has passed since the last one."""

    def __init__(self, label: str, total: int, *, unit: str = "it", every_s: float | None = None,
                 stream: TextIO | None = None, clock: Callable[[], float] = time.perf_counter):
        if every_s is None:
            every_s = float(os.environ.get(EVERY_S_ENV) or DEFAULT_EVERY_S)
        self.label, self.total, self.unit, self.every_s = label, total, unit, every_s
        self.done = 0
        self._stream = stream
        self._clock = clock
        self._enabled = progress_enabled() and total > 0
        self._started = self._last = clock()

    def update(self, n: int = 1, note: str = "") -> None:
        """``n`` more units done; ``note`` (e.g. the current loss) is appended to the line if one is printed."""
        self.done += n
        if not self._enabled:
            return
        now = self._clock()
        if now - self._last >= self.every_s or (self.done >= self.total and now - self._started >= self.every_s):
            self._last = now
            self._write(self.line(now - self._started) + (f", {note}" if note else ""))

    def line(self, elapsed_s: float) -> str:
        rate = self.done / elapsed_s if elapsed_s > 0 else 0.0
        eta = _clock_time((self.total - self.done) / rate) if rate > 0 else "?"
        return (f"{self.label}: {self.done}/{self.total} {self.unit} ({100 * self.done / self.total:.0f}%), "
                f"{rate:.2f} {self.unit}/s, elapsed {_clock_time(elapsed_s)}, ETA {eta}")

    def _write(self, line: str) -> None:
        stream = self._stream or sys.stderr
        stream.write(line + "\n")
        stream.flush()


def _clock_time(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"
