# Every target creates or refreshes .venv itself; re-running is cheap.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.rampart-installed

.PHONY: demo test lint typecheck pytest schema-check bench clean

# Building the venv takes a while on a fresh machine; say what is happening, one line
# per step, instead of running pip silently (pip itself stays quiet).
$(STAMP): pyproject.toml
	@if [ -d $(VENV) ]; then \
		echo "==> pyproject.toml changed, updating $(VENV)"; \
	else \
		echo "==> creating the virtual environment $(VENV) with $(PYTHON)"; \
	fi
	@$(PYTHON) -m venv $(VENV)
	@echo "==> upgrading pip in $(VENV)"
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "==> installing rampart (editable) and its dev tools (pytest, ruff, mypy, ...);" \
		"this takes a while on a fresh machine"
	@$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)
	@echo "==> $(VENV) is ready"

demo: $(STAMP)
	$(BIN)/python scripts/run_demo.py

lint: $(STAMP)
	$(BIN)/ruff check src tests scripts benchmarks examples
	$(BIN)/ruff format --check src tests scripts benchmarks examples

typecheck: $(STAMP)
	$(BIN)/mypy --strict src

schema-check: $(STAMP)
	$(BIN)/python scripts/generate_trace_schema.py --check
	$(BIN)/python scripts/check_trace_compatibility.py

# The suite runs in PYTEST_WORKERS xdist processes (work-stealing: the long pytester
# runs do not end up queued behind one worker). Its timing, contention and interrupt
# tests are written to hold on a loaded machine; PYTEST_WORKERS=0 runs it in one process.
PYTEST_WORKERS ?= 2

pytest: $(STAMP)
	bash scripts/ensure_redis_server.sh
	bash scripts/ensure_chromium.sh
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal

test: lint typecheck schema-check pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_codec.py
	$(BIN)/python benchmarks/bench_engine.py
	$(BIN)/python benchmarks/bench_trials.py
	$(BIN)/python benchmarks/bench_concurrency.py
	$(BIN)/python benchmarks/bench_llm.py
	$(BIN)/python benchmarks/bench_resilience.py
	$(BIN)/python benchmarks/bench_verdicts.py
	bash scripts/ensure_chromium.sh
	$(BIN)/python benchmarks/bench_html.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
