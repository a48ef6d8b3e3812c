"""Personal data kept out of what the run writes for people: reports, the site, the compare stage's JSON and the
stage logs show each match of a configured pattern as ``[redacted:<kind>]``, while the measures read the text as it
is (redaction happens where text is written for people, never where it is measured).

Built-in kinds (``privacy.redact``): ``email``; ``phone`` (an optional +country code, then groups of digits separated
by spaces, dots or hyphens, as 010-1234-5678, +82 10 1234 5678, +1 415-555-0142; bare runs of digits are left alone,
so ids and prices are not mistaken for numbers); ``kr_rrn`` (a Korean resident registration number, YYMMDD-GNNNNNN);
``card`` (13 to 19 digits, spaces or hyphens allowed, that pass the Luhn check). ``privacy.patterns`` adds regular
expressions of one's own (named ``custom``). The stage logs always redact the built-in kinds, and the own patterns.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from typing import Any, Literal, TextIO

from pydantic import Field, field_validator

from .config import StrictConfig

KINDS = ("email", "kr_rrn", "card", "phone")
"""In the order they are applied: a resident registration number or a card number is never half-read as a phone."""
PATTERNS = {
    "email": re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
    "kr_rrn": re.compile(r"(?<!\d)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])-?[1-8]\d{6}(?!\d)"),
    "card": re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"),
    "phone": re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?\(?\d{2,4}\)?[ .-]\d{3,4}[ .-]\d{4}(?![\w-])"),
}


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char) * (2 if position % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


class PrivacyConfig(StrictConfig):
    """``privacy``: what is redacted from the outputs people read."""

    redact: list[Literal["email", "phone", "kr_rrn", "card"]] = list(KINDS)
    patterns: list[str] = []
    """Further regular expressions, redacted as ``[redacted:custom]``."""
    tenant: str | None = Field(None, min_length=1)
    """The run's tenant: the caches (pair scores, embeddings, LLM replies) go to a folder of their own, named by the
    label's hash, so two tenants never share an entry. null: the shared folder."""

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as err:
                raise ValueError(f"{pattern!r} is not a regular expression ({err})") from None
        return patterns


def redactor(config: PrivacyConfig | None = None) -> Callable[[str], str]:
    """``text -> text`` with every match of the configured kinds (all built-in ones without a config) replaced."""
    config = config or PrivacyConfig()
    steps = [(kind, PATTERNS[kind]) for kind in KINDS if kind in config.redact]
    steps += [("custom", re.compile(pattern)) for pattern in config.patterns]

    def redact(text: str) -> str:
        for kind, pattern in steps:
            if kind == "card":
                text = pattern.sub(lambda m: "[redacted:card]" if _luhn(re.sub(r"\D", "", m.group()))
                                   else m.group(), text)
            else:
                text = pattern.sub(f"[redacted:{kind}]", text)
        return text

    return redact


def redact_values(value: Any, redact: Callable[[str], str]) -> Any:
    """Every string in a JSON-like value (keys included) redacted; the structure and other values as they are."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {redact(key) if isinstance(key, str) else key: redact_values(item, redact)
                for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_values(item, redact) for item in value]
    return value


class RedactingStream:
    """A text stream that redacts what is written to it line by line (a stage's stdout and stderr)."""

    def __init__(self, stream: TextIO, redact: Callable[[str], str]):
        self._stream, self.redact, self._pending = stream, redact, ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = re.split(r"(?<=[\n\r])", self._pending)
        if lines:
            self._stream.write(self.redact("".join(lines)))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(self.redact(self._pending))
            self._pending = ""
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def redact_logs(config: PrivacyConfig | None = None) -> None:
    """Route this process's stdout and stderr through redaction (the stage entry point): every built-in kind, and
    ``config``'s own patterns once it has read them. Called again, it replaces the redaction of the streams it
    routed. A log keeps every built-in kind redacted even where ``privacy.redact`` leaves one out of the reports."""
    redact = redactor(PrivacyConfig(patterns=config.patterns) if config is not None else None)
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, RedactingStream):
            stream.flush()
            stream.redact = redact
        else:
            setattr(sys, name, RedactingStream(stream, redact))
