# hardboiled developer commands. `make help` lists them.

PYTHON ?= python3
VENV   := .venv
LOCK_HEADER_1 := \# The versions make install puts in .venv: what the suite and the benchmarks were last run with.
LOCK_HEADER_2 := \# make lock writes the newest versions pyproject.toml allows here (then make install takes them);
LOCK_HEADER_3 := \# measure again (bench/compile_time.py) before committing a change to this file.
BIN    := $(VENV)/bin

.PHONY: help install lock man test test-fast lint fixtures sweep-fixtures app-fixtures operation-fixtures goldens terms scanner bench sweep app apps clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

install: ## Create .venv and install hardboiled with its test tools
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	@# Every package hardboiled and its tests import at its version in constraints.txt (pip, and the setuptools
	@# that builds the editable install, are not pinned): a new release changes nothing until make lock takes it.
	$(BIN)/pip install --quiet -e ".[dev]" -c constraints.txt
	@# Bytecode now: an editable install run with PYTHONDONTWRITEBYTECODE would recompile every module each time.
	$(BIN)/python -m compileall -q hardboiled > /dev/null
	@# And the code of the dataclasses' methods, which every command otherwise compiles as it starts (support/dataclass_code.py).
	$(BIN)/python -c 'from hardboiled.support import dataclass_code; dataclass_code.build()'
	@# The manual page where man finds it beside .venv/bin: man hardboiled, with .venv/bin on PATH.
	install -D -m 644 docs/hardboiled.1 $(VENV)/share/man/man1/hardboiled.1

lock: ## Record in constraints.txt the newest dependencies pyproject.toml allows (then make install takes them)
	@# In an environment of its own: packages installed into .venv by hand, or no longer required, are not recorded.
	rm -rf .lock-venv constraints.txt.new
	$(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet --upgrade pip
	.lock-venv/bin/pip install --quiet -e ".[dev]"
	( echo "$(LOCK_HEADER_1)"; echo "$(LOCK_HEADER_2)"; echo "$(LOCK_HEADER_3)"; \
	  .lock-venv/bin/pip freeze --exclude-editable ) > constraints.txt.new
	mv constraints.txt.new constraints.txt
	rm -rf .lock-venv

man: ## Regenerate docs/hardboiled.1 from the command line's help (a test checks it is current)
	$(BIN)/python -m hardboiled.cli.manpage > docs/hardboiled.1

test: ## Run the whole test suite on every core, and name the 20 slowest tests (fails if no test ran)
	$(BIN)/python -m pytest -n auto --dist worksteal --durations=20

test-fast: ## The tests that call no compiler, Halide or browser, on every core (under 2 minutes)
	$(BIN)/python -m pytest -n auto --dist worksteal -m "not slow" --durations=20

lint: ## Style (ruff), types (mypy) and the one-way imports between stages (lint-imports)
	$(BIN)/ruff check hardboiled tests bench tools apps examples
	$(BIN)/mypy
	$(BIN)/lint-imports

fixtures: ## Regenerate tests/fixtures/halide and tests/fixtures/windows with the halide package
	$(BIN)/python tools/gen_fixtures.py
	$(BIN)/python tools/gen_window_fixtures.py

sweep-fixtures: ## Regenerate the schedule sweep in tests/fixtures/sweep with the halide package
	$(BIN)/python tools/gen_sweep.py

app-fixtures: ## Regenerate tests/fixtures/apps (the applications at test size) with the halide package
	$(BIN)/python apps/run.py --fixtures

operation-fixtures: ## Regenerate tests/fixtures/operations (every operation of the table through Halide's JIT, and as CUDA stages)
	rm -rf tests/fixtures/operations
	$(BIN)/python tools/operation_cases.py tests/fixtures/operations/host
	$(BIN)/python tools/operation_cases.py tests/fixtures/operations/cuda --target x86-64-linux-cuda-cuda_capability_80

app: ## One application end to end (APP=conv1d; SIZE=paper for the paper's size): dump, tensorize, verify, build
	$(BIN)/python apps/run.py $(APP) --size $(or $(SIZE),test) $(if $(filter paper,$(SIZE)),--no-verify,)

apps: ## Every application at both sizes, and docs/applications.md
	$(BIN)/python bench/apps.py

sweep: ## Compile every sweep variant (verify, run or build) and write docs/coverage.md
	$(BIN)/python bench/sweep.py

goldens: ## Regenerate tests/goldens (expected outputs of every fixture) after an intended change
	$(BIN)/python -m tests.goldens

terms: ## Regenerate rules/definition.egg from the term schema (hardboiled/select/terms.py)
	$(BIN)/python -m hardboiled.select.terms

scanner: ## Regenerate grammars/halide_ir.scanner.json (the fast reader's terminals) after editing the grammar
	$(BIN)/python -m hardboiled.frontend.grammar

bench: ## Run the benchmarks under bench/ and print their figures
	$(BIN)/python bench/parse_speed.py
	$(BIN)/python bench/select_speed.py
	$(BIN)/python bench/verify_speed.py
	$(BIN)/python bench/codegen_speed.py
	$(BIN)/python bench/batch_speed.py

clean: ## Remove the virtual environment and caches
	rm -rf $(VENV) .lock-venv constraints.txt.new .pytest_cache .hypothesis .mypy_cache .ruff_cache .import_linter_cache .grimp_cache build dist *.egg-info bench/results
