# One command each: every target creates .venv and installs what it needs on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
BENCH_STAMP := $(VENV)/.installed-bench
HOST ?= 127.0.0.1
PORT ?= 8765

.PHONY: run test bench lint typecheck lock clean

# The C sources too: an editable install compiles the kernels (setup.py) once, and only again when asked.
$(STAMP): pyproject.toml setup.py $(wildcard bots/kernel/*.[ch] bots/connect4_exact/*.[ch])
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $@

run: $(STAMP)
	$(BIN)/plyarena run --host $(HOST) --port $(PORT)

# The suite under coverage, every Python subprocess it starts included ([tool.coverage.run] in
# pyproject.toml); the report lists the files not fully covered, least covered first, then the total, and
# fails below the floor: [tool.coverage.report] fail_under, or COVERAGE_FLOOR when set (CI, which has
# Pascal Pons' Connect Four sets and so runs more of the benchmarks' code, sets a higher one).
# The engine's tests then run again without the compiled kernels (PLYARENA_NO_SPEEDUPS=1): the Python
# code is the reference and the fallback where no compiler is there, and must pass on its own.
COVERAGE_FLOOR ?=
PURE_PYTHON_TESTS := tests/test_kernel.py tests/test_search.py tests/test_expectimax.py tests/test_levels.py \
	tests/test_perfect.py tests/test_bots_pool.py tests/test_othello_endgame.py \
	tests/test_connect4_solver.py tests/test_connect4_plain_negamax.py tests/test_connect4_book.py
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	rm -f .coverage .coverage.*
	$(BIN)/coverage run -m pytest
	PLYARENA_NO_SPEEDUPS=1 $(BIN)/coverage run -m pytest $(PURE_PYTHON_TESTS)
	$(BIN)/coverage combine --quiet
	$(BIN)/coverage report $(if $(COVERAGE_FLOOR),--fail-under=$(COVERAGE_FLOOR))

bench: $(BENCH_STAMP)
	$(BIN)/plyarena bench engine

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# mypy on games/ and server/ ([tool.mypy] in pyproject.toml).
typecheck: $(STAMP)
	$(BIN)/mypy

# requirements.lock, the exact versions (with hashes) that the Docker image installs: pip-compile, in a
# throwaway virtualenv, resolves pyproject.toml's dependencies and the setuptools that builds the project,
# for Python 3.11 (the image's). Run it after changing the dependencies (tests/test_deploy.py fails until
# then); it keeps the versions already locked where they still fit: `make lock LOCK_FLAGS=--upgrade` takes
# the newest that pyproject.toml allows.
LOCK_FLAGS ?=
lock:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11) and "make lock needs Python 3.11")'
	set -e; tools=$$(mktemp -d); trap 'rm -rf "$$tools"' EXIT; \
	$(PYTHON) -m venv "$$tools"; \
	"$$tools/bin/python" -m pip install --quiet pip-tools==7.6.2; \
	CUSTOM_COMPILE_COMMAND='make lock' "$$tools/bin/pip-compile" --quiet --generate-hashes --allow-unsafe \
		--strip-extras --build-deps-for=editable --no-emit-index-url --no-emit-find-links $(LOCK_FLAGS) \
		--output-file=requirements.lock pyproject.toml

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis .coverage .coverage.*
