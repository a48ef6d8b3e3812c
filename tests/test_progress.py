"""Progress lines: rate and ETA at most every few seconds in stage logs, never in test logs."""

import io

from rerankeval.core.progress import EVERY_S_ENV, PROGRESS_ENV, Progress


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_line_every_interval_with_rate_and_eta(monkeypatch):
    monkeypatch.setenv(PROGRESS_ENV, "1")
    stream, clock = io.StringIO(), Clock()
    progress = Progress("encoding passages", 100, unit="passages", every_s=10, stream=stream, clock=clock)
    for _ in range(10):
        clock.now += 4
        progress.update(10)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 4  # at 12 s, 24 s, 36 s, and the last update at 40 s
    assert lines[0] == "encoding passages: 30/100 passages (30%), 2.50 passages/s, elapsed 00:12, ETA 00:28"
    assert lines[-1].startswith("encoding passages: 100/100 passages (100%)")


def test_short_work_prints_nothing(monkeypatch):
    monkeypatch.setenv(PROGRESS_ENV, "1")
    stream, clock = io.StringIO(), Clock()
    progress = Progress("scoring", 3, every_s=10, stream=stream, clock=clock)
    for _ in range(3):
        clock.now += 1
        progress.update()
    assert stream.getvalue() == ""


def test_progress_stays_out_of_test_logs(capfd, monkeypatch, tmp_path):
    """The test session sets RERANKEVAL_PROGRESS=0 (conftest.py): encoding prints no progress line even with an
    interval of zero, while the same call outside tests does."""
    from rerankeval.retrieval.dense import DenseRetriever

    monkeypatch.setenv("RERANKEVAL_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(EVERY_S_ENV, "0")

    def encode(texts):
        DenseRetriever(texts, model="e5-small", revision=None, max_length=None, batch_size=1)
        captured = capfd.readouterr()
        return captured.out + captured.err

    assert encode(["결제 오류", "비상 정지"]) == ""
    monkeypatch.setenv(PROGRESS_ENV, "1")  # as in a stage log
    assert "encoding passages: 2/2 passages (100%)" in encode(["요금제", "백업 보관"])
