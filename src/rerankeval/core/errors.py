"""One family of errors, so a stage can tell bad input (a message for the user) from a bug (a traceback).

``RerankevalError`` and its subclasses carry a message that names the file or setting, the problem and the fix;
stage entry points print it and exit non-zero without a traceback. Any other exception is a bug and propagates.
"""

from __future__ import annotations


class RerankevalError(Exception):
    """Bad input, bad configuration or an unusable environment; the message says what to fix."""


class ConfigError(RerankevalError, ValueError):
    """A configuration value is missing, unknown or of the wrong type."""


class ContractError(RerankevalError, ValueError):
    """An input file breaks a contract (hash mismatch, wrong schema, bad row, stale provenance)."""


class CollectionError(RerankevalError, ValueError):
    """Bad input in a collection file; the message names the file, the line and the fix."""


class ModelUnavailable(RerankevalError, RuntimeError):
    """A configured model cannot be found locally or downloaded."""


class InfrastructureError(RerankevalError, RuntimeError):
    """The pipeline's own machinery failed (a cache file, the disk): the stage must fail, not degrade a query."""


class UnwritableOutput(InfrastructureError, OSError):
    """An output file cannot be written (full disk, read-only folder); an OSError still, for callers that catch it."""


class ScoringFailure(Exception):
    """A system could not score one query (timeout, bad response, model error): that query is degraded.

    ``reason`` is the short machine-readable cause kept in the run (``timeout``, ``http_429``, ``bad_response``...).
    The time spent before the failure is recorded on it, so degraded queries still count in latency.
    """

    wall_s: float = 0.0
    compute_s: float = 0.0
    replayed_s: float = 0.0

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


TIMEOUT_REASONS = ("deadline", "timeout")
"""The failure reasons that are timeouts: the query's deadline passed (``DeadlineExceeded``), or an endpoint did not
answer in time (``core.http``)."""


def is_timeout(reason: str | None) -> bool:
    """Whether a recorded reason (``<reason>: <detail>``, as latency tables keep it) is a timeout."""
    return reason is not None and str(reason).split(":", 1)[0] in TIMEOUT_REASONS


class DeadlineExceeded(ScoringFailure):
    """A query's scoring took longer than its deadline (judged on compute time, cached or not)."""

    def __init__(self, detail: str):
        super().__init__("deadline", detail)
