"""The report as a static site (``reports/site/``): the decision page, one page per system and a per-query explorer.
Offline (no CDN: one stylesheet beside the pages, the explorer's script and data inline; plots are the report's PNGs,
linked relative) and byte-identical across reruns (sorted keys, no timestamps)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...core.io import write_text
from .assets import CSS, STYLESHEET
from .data import SiteInputs, decision_rows, explorer_data, system_page
from .render import explorer_html, guardrails_html, index_html, page_name, system_html

__all__ = ["SiteInputs", "build_site"]


def _link(target: Path, site_dir: Path) -> str:
    return Path(os.path.relpath(target.resolve(), site_dir.resolve())).as_posix()


def build_site(inputs: SiteInputs, header: Mapping[str, Any], site_dir: Path, plots_dir: Path,
               documents: Sequence[Path], redact: Callable[[str], str] = str) -> list[Path]:
    """Writes the site into ``site_dir`` (emptied first, so a removed system leaves no page behind); ``header``:
    dataset, split and queries; ``documents``: the report's Markdown files every page's header links to. Returns the
    pages written; ``redact`` is applied to every page (``core.privacy``)."""
    if site_dir.exists():
        shutil.rmtree(site_dir)
    site_dir.mkdir(parents=True)
    plots_link = _link(plots_dir, site_dir)
    links = [(_link(path, site_dir), path.name) for path in documents]
    plots = sorted(path.name for path in plots_dir.glob("*.png")) if plots_dir.exists() else []
    pages = {"index.html": index_html(header, inputs.verdicts, decision_rows(inputs), inputs.systems, plots_link,
                                      plots, links, guardrails_html(inputs.compare, inputs.verdicts, inputs.access)),
             "explorer.html": explorer_html(explorer_data(inputs), header, links)}
    for system in inputs.systems:
        pages[page_name(system)] = system_html(system_page(inputs, system), header, links)
    for name, text in pages.items():
        write_text(site_dir / name, redact(text))
    write_text(site_dir / STYLESHEET, CSS.lstrip())
    return [site_dir / name for name in pages]
