"""The house style as a check: pyflakes' checks (an unused import or variable is dead code, an undefined name a
crash waiting for its branch, a repeated dict key a silent overwrite) and lines of at most 120 columns, over the
package, the tests and the benchmarks, by ruff under pyproject.toml's [tool.ruff]."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ruff(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *arguments], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_ruff_is_installed_with_the_tests():
    found = ruff("--version")
    assert found.returncode == 0, f"ruff is not installed: `make test` installs it with .[test] ({found.stderr})"


def test_the_code_passes_pyflakes_and_the_line_length():
    found = ruff("check", "--no-cache", "--output-format", "concise", "src", "tests", "benchmarks")
    assert found.returncode == 0, f"fix what ruff reports (pyproject.toml [tool.ruff]):\n{found.stdout}{found.stderr}"


def test_the_check_fails_on_what_it_checks(tmp_path):
    """The configuration reads the rules it states: an unused import and a 121-column line each fail it."""
    module = tmp_path / "sample.py"
    module.write_text("import os\n" + "x = '" + "a" * 115 + "'\n")
    found = ruff("check", "--no-cache", "--output-format", "concise", "--config", str(ROOT / "pyproject.toml"),
                 str(module))
    assert found.returncode == 1
    assert "F401" in found.stdout and "E501" in found.stdout
