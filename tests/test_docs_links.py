"""Every relative link in README.md and docs/*.md reaches a file, and its #anchor a heading or an explicit anchor
there (GitHub's slugs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\((?!https?://|mailto:)([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found, counts = set(), {}
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        base = slug(heading)
        found.add(base if base not in counts else f"{base}-{counts[base]}")
        counts[base] = counts.get(base, 0) + 1
    return found | set(re.findall(r'<a id="([^"]+)"', text))


def links(page: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8")))


def test_slug_follows_github():
    assert slug("Run on your data: BEIR, TREC run, replay") == "run-on-your-data-beir-trec-run-replay"
    assert slug("`compare` and `--fail-on-reject`") == "compare-and---fail-on-reject"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_resolves(page: Path):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading or <a id> '{anchor}' in {file.name}")
    assert broken == []


def test_a_broken_anchor_is_caught(tmp_path: Path):
    page = tmp_path / "a.md"
    page.write_text("# Title\n\n[ok](#title) [bad](#nope)\n", encoding="utf-8")
    assert [target.partition("#")[2] for target in links(page) if target.partition("#")[2] not in anchors(page)] \
        == ["nope"]
