# okra developer entry points. Every target installs what it needs on first use:
# a virtualenv from the lock file, and the Go-built control plane (cached).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_WORKERS ?= auto

.PHONY: help venv assets lint test test-unit test-integration fmt lock clean

help:
	@echo "make test    lint, type-check and run every test (installs everything on first use)"
	@echo "make assets  build/cache kube-apiserver, kube-controller-manager, kubectl, etcd"
	@echo "make lint    ruff, mypy --strict, import layering"
	@echo "make lock    re-resolve requirements-dev.lock from pyproject.toml"

$(STAMP): pyproject.toml requirements-dev.lock
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "okra needs Python 3.11+")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

venv: $(STAMP)

assets:
	@hack/build-control-plane.sh

lint: $(STAMP)
	$(BIN)/ruff check src test examples
	$(BIN)/ruff format --check src test examples
	$(BIN)/mypy
	$(BIN)/lint-imports

fmt: $(STAMP)
	$(BIN)/ruff format src test examples
	$(BIN)/ruff check --fix src test examples

test: lint
	OKRA_ASSETS="$$(hack/build-control-plane.sh)" && export OKRA_ASSETS && \
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadscope

test-unit: $(STAMP)
	$(BIN)/pytest -m unit

lock:
	$(PYTHON) -m venv .venv-lock && .venv-lock/bin/pip install --quiet pip-tools
	.venv-lock/bin/pip-compile --quiet --extra dev --strip-extras -o requirements-dev.lock pyproject.toml
	rm -rf .venv-lock

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
