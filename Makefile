# Two commands for a fresh machine with Python 3.11: `make demo` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
SERVE_INSTALLED := $(VENV)/.installed-serve
# Offline by default: models come from installed packages or local paths, never from a hub at run time.
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export DVC_NO_ANALYTICS := 1
export TOKENIZERS_PARALLELISM := false
export TRANSFORMERS_VERBOSITY := error

.PHONY: demo test test-all bench repro clean-runs

# setup.py and the C sources: the editable install compiles the metric engine's kernels.
$(INSTALLED): pyproject.toml requirements.lock setup.py $(wildcard src/rerankeval/eval/_*.[ch])
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[models,test,llm]'
	touch $@

# Ray (serving, load tests, the ray executor) is an extra: the default demo does not use it, the tests do.
$(SERVE_INSTALLED): $(INSTALLED)
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[serve]'
	touch $@

demo: $(INSTALLED)
	PATH="$(CURDIR)/$(BIN):$$PATH" dvc repro
	@echo "Report: reports/report.md  Metrics: reports/metrics.json  Plots: reports/plots/"

repro: demo

# The fast suite (under 5 minutes on 2 cores); `make test-all` adds the end-to-end DVC pipeline test (marked slow).
test: $(SERVE_INSTALLED)
	$(BIN)/python -m pytest -m "not slow"

test-all: test
	$(BIN)/python -m pytest -m slow

bench: $(INSTALLED)
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[bench]'
	@echo "Run the scripts in benchmarks/ with $(BIN)/python (see each script's --help)."
