"""Every `-S` override the README and docs/ show a user composes with conf/ (Hydra, as `dvc exp run` composes it) and
parses into the typed settings: a documented command that fails on its first step (a missing `+`, a renamed key) is
caught here, not by a user. Sweeps (`a,b,c` with `--queue`) are checked one value at a time; placeholders (`<your
BEIR folder>`, `NAME`) stay as they are, since composing reads no file."""

import re
import shlex
from pathlib import Path

import pytest

from rerankeval.pipeline.params import Params
from tests.test_candidate_sources import composed_with

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
GENERATED = {"results.md"}
"""Pages of measured provenance (generated from results/*.yaml): their commands are records, not instructions."""
SHELL_VARIABLE = re.compile(r'^([A-Z_]+)="([^"]*)"$', re.MULTILINE)
CODE = re.compile(r"```[a-z]*\n(.*?)```|`([^`]+)`", re.DOTALL)


def commands(text: str) -> list[str]:
    """The command lines of a page that pass `-S`: fenced lines (continuations joined, shell variables expanded)
    and inline code spans."""
    variables = dict(SHELL_VARIABLE.findall(text))
    found = []
    for fenced, inline in CODE.findall(text):
        lines = fenced.replace("\\\n", " ").splitlines() if fenced else [inline.replace("\n", " ")]
        for line in lines:
            line = re.sub(r"\$([A-Z_]+)", lambda match: variables.get(match[1], match[0]), line.split(" # ")[0])
            if "-S " in line and not SHELL_VARIABLE.match(line):
                found.append(line)
    return found


PLACEHOLDERS = [(re.compile(r"<[^>]+>"), "placeholder"), (re.compile(r"@systems\.NAME\b"), "@systems.bm25"),
                (re.compile(r"=my_reranker\b"), "=ce_minilm_ft")]
"""What a page writes for the user to fill in (or, ``my_reranker``, the system file it has the user write), and a
value that composes in its place."""


def overrides(command: str) -> list[list[str]]:
    """The command's overrides, one list per point of a sweep (`key=a,b,c`: a list per value); a page's ``-S ...``
    (any override) is none."""
    for placeholder, value in PLACEHOLDERS:
        command = placeholder.sub(value, command)
    words = shlex.split(command[command.index("-S "):], comments=False)
    given = [words[k + 1] for k, word in enumerate(words[:-1]) if word == "-S" and words[k + 1] != "..."]
    swept = [(k, value.split("=", 1)) for k, value in enumerate(given)
             if "=" in value and re.fullmatch(r"[^\[{]*,[^\]}]*", value.split("=", 1)[1])]
    if not swept:
        return [given]
    (k, (key, values)), = swept  # the docs sweep one key per command
    return [given[:k] + [f"{key}={value}"] + given[k + 1:] for value in values.split(",")]


DOCUMENTED = [(page.name, command) for page in PAGES if page.name not in GENERATED
              for command in commands(page.read_text(encoding="utf-8"))]


def test_the_pages_show_overrides_to_check():
    # the extraction sees the pages' commands: the README's recipes and the docs' sweeps are among them
    assert len(DOCUMENTED) >= 15
    names = {page for page, _ in DOCUMENTED}
    assert {"README.md", "serving.md", "data.md", "answers.md", "configurations.md"} <= names
    assert ["systems.ce_minilm_ft.max_length=128"] in overrides(
        ".venv/bin/dvc exp run --queue -S 'systems.ce_minilm_ft.max_length=128,256,512'")


@pytest.mark.parametrize("page, command", DOCUMENTED, ids=[f"{page}:{command[:60]}" for page, command in DOCUMENTED])
def test_each_documented_override_composes_and_parses(page, command):
    for point in overrides(command):
        params = Params.parse(composed_with(*point), "")
        params.compare.refuse_unknown(params.system_names)
