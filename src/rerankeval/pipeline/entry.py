"""How a stage script runs its library function: bad input is a message and exit code 2, never a traceback."""

from __future__ import annotations

import sys
from collections.abc import Callable

from ..core.errors import RerankevalError


def run_stage(name: str, run: Callable[[], None]) -> None:
    try:
        run()
    except RerankevalError as err:
        print(f"{name}: error: {err}", file=sys.stderr)
        sys.exit(2)
