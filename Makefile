# Every target sets itself up: a fresh clone needs only Python 3.10+ and a package index.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: dev test soak bench lint typecheck clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(BENCH_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	touch $(BENCH_STAMP)

dev: $(STAMP)
	$(BIN)/lockgate dev

test: $(STAMP)
	$(BIN)/python -m pytest -q

soak: $(STAMP)
	$(BIN)/python -m pytest -q -m soak -p no:cacheprovider

bench: $(BENCH_STAMP)
	@for script in bench/[!_]*.py; do $(BIN)/python $$script || exit 1; done

lint: $(STAMP)
	$(BIN)/ruff check lockgate tests bench examples
	$(BIN)/ruff format --check lockgate tests bench examples

typecheck: $(STAMP)
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .lockgate .pytest_cache .mypy_cache .ruff_cache .hypothesis
