"""The registry of ``rerankeval`` subcommands: each is one function registered with ``subcommand``, in its own
module or in ``main``; its arguments are declared in the decorator and the function receives the parsed namespace.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

Argument = tuple[tuple[str, ...], dict]


@dataclass(frozen=True)
class Subcommand:
    name: str
    summary: str
    arguments: list[Argument] | Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


SUBCOMMANDS: list[Subcommand] = []


def argument(*flags: str, **options) -> Argument:
    return flags, options


def subcommand(name: str, summary: str, arguments: list[Argument] | Callable[[argparse.ArgumentParser], None]):
    """Register a subcommand; ``arguments`` is a list of ``argument``s or a function that adds them to a parser."""

    def register(run: Callable[[argparse.Namespace], int]):
        SUBCOMMANDS.append(Subcommand(name, summary, arguments, run))
        return run

    return register


def measure_name(text: str) -> str:
    """argparse type of a measure: its canonical name (``MRR@10`` -> ``RR@10``)."""
    from ..eval.measures import parse_measure

    try:
        return str(parse_measure(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
