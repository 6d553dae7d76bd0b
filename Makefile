# make demo: run the pipeline on the bundled offline default.  make test: the whole test suite.
# Both set up everything they need first (Debian packages, .venv), idempotently and quietly.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
DEPS   := $(VENV)/.deps-installed

.PHONY: demo test setup system benchmarks clean

demo: setup
	$(PY) -m pipeline.synthesize run.name=demo limit=8

test: setup
	$(PY) -X faulthandler -m pytest -q  # a native crash, even at exit, prints every thread's stack

setup: system $(DEPS)

system:
	@bash scripts/install_system.sh

$(PY):
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 needed, found " + sys.version' 
	@$(PYTHON) -m venv $(VENV)

$(DEPS): pyproject.toml | $(PY)
	@echo "installing Python packages into $(VENV) (log: $(VENV)/pip.log)"
	@$(PY) -m pip install -q -U pip > $(VENV)/pip.log 2>&1 || (cat $(VENV)/pip.log; exit 1)
	@$(PY) -m pip install -q -e ".[dev,eval,train]" >> $(VENV)/pip.log 2>&1 || (tail -50 $(VENV)/pip.log; exit 1)
	@touch $@

benchmarks: setup
	for b in client_overhead tool_overhead render search filter_throughput packing rollout_throughput report; do \
	  $(PY) -m benchmarks.$$b || exit 1; done

clean:
	rm -rf $(VENV) runs .pytest_cache
