"""docs/cli.md and docs/configuration.md are generated from the code: a changed option or setting that is not
re-rendered fails here."""

from __future__ import annotations

from pathlib import Path

from rerankeval.cli.reference import (CLI_PAGE, CONFIG_PAGE, cli_reference, config_reference, expected_pages, main,
                                     schemas_reference)

ROOT = Path(__file__).resolve().parents[1]


def test_committed_reference_pages_are_what_the_generator_writes():
    stale = [str(path.relative_to(ROOT)) for path, text in expected_pages(ROOT).items()
             if not path.exists() or path.read_text(encoding="utf-8") != text]
    assert stale == [], "run `python -m rerankeval.cli.reference` and commit what it rewrites"


def test_every_subcommand_option_and_settings_field_is_on_its_page():
    cli, config = cli_reference(), config_reference()
    assert "## evaluate" in cli and "`--fail-on-reject`" in cli and "`-m`, `--metric` MEASURE" in cli
    assert "### compare.release" in config and "| `explorer_candidates` | int | `30` |" in config
    assert "### kind: cross_encoder" in config and "retrieval (source: replay)" in config
    schemas = schemas_reference()
    assert "`rerankeval.rerank.assemble.RUN_SCHEMA`" in schemas and "| `passage_sha256` | string |" in schemas


def test_check_reports_a_stale_page_and_writing_fixes_it(tmp_path: Path, capsys):
    (tmp_path / "docs").mkdir()
    (tmp_path / CLI_PAGE).write_text("stale\n", encoding="utf-8")
    assert main(["--root", str(tmp_path), "--check"]) == 1
    assert "docs/cli.md: differs from the code" in capsys.readouterr().err
    assert main(["--root", str(tmp_path)]) == 0
    assert main(["--root", str(tmp_path), "--check"]) == 0
    assert (tmp_path / CONFIG_PAGE).read_text(encoding="utf-8") == config_reference()
