"""What `make demo`'s install costs on a fresh machine: a new venv given the core install (``-e '.[models]'``
under requirements.lock, the Makefile's command), with pip's byte-compilation of every installed module (pip's
default: one module after the other), without it (``--no-compile``), and without it followed by the same
compilation of the venv's site-packages by ``compileall`` with one worker per core (the Makefile's
COMPILE_SITE_PACKAGES), then what the stages import, in two fresh processes one after the other. Without any
compilation the first process compiles what it imports; the second compiles it again where PYTHONDONTWRITEBYTECODE
is set (nothing is written back), as every stage and test would. Run by hand with nothing else running; nothing here
is asserted. Packages come from pip's cache or the machine's registry mirror, so download time is that of a local
disk.

    .venv/bin/python benchmarks/bench_install.py
    .venv/bin/python benchmarks/bench_install.py record --commit C --command ... --conditions ... \\
        --out results/benchmarks/install_epyc.yaml
    .venv/bin/python benchmarks/bench_install.py --smoke    # one small package, both ways: checks that it runs
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory

from rerankeval.report.results_data import add_provenance_arguments, print_benchmark

ROOT = Path(__file__).resolve().parents[1]
CORE = ["-e", ".[models]"]
SMOKE = ["--no-deps", "pyyaml"]
FIRST_IMPORT = "import torch, transformers, sentence_transformers, dvc.repo, hydra, pandas, pyarrow, scipy, matplotlib"
"""What the demo's stages import between them (the first stage to import a module compiles it, once)."""


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


COMPILATION = {"pip": "pip's default (compile every module, one after the other)", "none": "--no-compile",
               "parallel": "--no-compile, then compileall with one worker per core (the Makefile's)"}


def compile_site_packages_code() -> str:
    """The Python code of the Makefile's COMPILE_SITE_PACKAGES (its ``-c`` argument)."""
    found = re.search(r"^COMPILE_SITE_PACKAGES = -c '(.+)'$", (ROOT / "Makefile").read_text(), re.M)
    if found is None:
        sys.exit("the Makefile has no `COMPILE_SITE_PACKAGES = -c '...'` line")
    return found.group(1)


def install_row(folder: Path, compilation: str, packages: list[str], smoke: bool) -> list:
    venv = folder / compilation
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)  # as the Makefile does
    flags = [] if compilation == "pip" else ["--no-compile"]
    install = timed([python, "-m", "pip", "install", "--quiet", *flags, "-c", "requirements.lock", *packages])
    if compilation == "parallel":
        install += timed([python, "-c", compile_site_packages_code()])
    first, second = (timed([python, "-c", "import yaml" if smoke else FIRST_IMPORT]) for _ in range(2))
    return [COMPILATION[compilation], round(install, 1), round(first, 1), round(second, 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="one small package, both ways: checks that it runs")
    steps = parser.add_subparsers(dest="step")
    add_provenance_arguments(steps.add_parser("record", help="write the results YAML"))
    args = parser.parse_args()
    packages = SMOKE if args.smoke else CORE
    with TemporaryDirectory() as folder:
        rows = [install_row(Path(folder), compilation, packages, args.smoke) for compilation in COMPILATION]
    written = "not written back" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "written back"
    table = {"title": f"A fresh venv: pip install {' '.join(packages)} (seconds), then what the stages import, in "
                      f"two processes (PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!s}: "
                      f"bytecode compiled at import is {written})",
             "columns": ["install", "pip install", "first process's imports", "second process's imports"],
             "rows": rows}
    print_benchmark(args, "the demo's install: pip's byte-compilation on and off", [], [table])


if __name__ == "__main__":
    main()
