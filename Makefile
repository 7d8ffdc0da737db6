# Every target creates or refreshes .venv itself; re-running is cheap.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.rampart-installed

.PHONY: demo test lint typecheck pytest schema-check bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

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

pytest: $(STAMP)
	bash scripts/ensure_redis_server.sh
	$(BIN)/python -m pytest -q

test: lint typecheck schema-check pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_codec.py
	$(BIN)/python benchmarks/bench_engine.py
	$(BIN)/python benchmarks/bench_trials.py
	$(BIN)/python benchmarks/bench_concurrency.py
	$(BIN)/python benchmarks/bench_llm.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
