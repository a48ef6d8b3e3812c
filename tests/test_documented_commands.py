"""Every `rerankeval ...` command line the README and docs/ show in a code block parses as the command line it claims
to be: the subcommand exists, each option is one of its own, its values have the option's type and the required
options are there. A renamed flag or a dropped subcommand is caught here, not by a user pasting the page. (What a
command then does is each subcommand's own tests'.)"""

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from rerankeval.cli.main import build_parser

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
GENERATED = {"cli.md", "results.md"}
"""cli.md is each subcommand's usage synopsis (generated from the parser itself); results.md records commands."""
FENCED = re.compile(r"```[a-z]*\n(.*?)```", re.DOTALL)
PROGRAM = re.compile(r"^(?:[A-Z_]+=\S+\s+)*(?:\S*/)?rerankeval\s")
"""A line that runs rerankeval: optional environment assignments, the program (``.venv/bin/rerankeval``)."""


def documented() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        if page.name in GENERATED:
            continue
        for block in FENCED.findall(page.read_text(encoding="utf-8")):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.strip().removeprefix("$ ")
                if PROGRAM.match(line):
                    found.append((page.name, line))
    return found


COMMANDS = documented()


def test_the_pages_show_commands_of_several_subcommands():
    shown = {shlex.split(line, comments=True)[1] for _, line in COMMANDS if PROGRAM.match(line)}
    assert len(COMMANDS) >= 8 and len(shown) >= 5, shown  # the check below reads real pages


@pytest.mark.parametrize("page, line", COMMANDS, ids=[f"{page}:{line[:60]}" for page, line in COMMANDS])
def test_a_documented_command_parses(page, line):
    words = shlex.split(line, comments=True)
    words = words[next(k for k, word in enumerate(words) if word.endswith("rerankeval")) + 1:]
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
        try:
            build_parser().parse_args(words)
        except SystemExit as exit:
            assert exit.code == 0, f"{page}: `{line}` does not parse: {errors.getvalue().strip().splitlines()[-1]}"
