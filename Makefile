# The two commands of the README, and the pieces they are made of. Every target installs what it
# needs itself, so each works first on a fresh machine (Python 3.11+, Go for the real-engine tier).
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STACK ?= kind
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)
# The installer of the project's pinned dependencies: uv installs them from its cache in seconds,
# where pip took 80 s of every CI run (docs/benchmarks.md); pinned, itself installed by pip.
UV_VERSION := 0.13.9

.PHONY: plan test check lint types unit fast slow integration layers setup debs tools bench docs up down

plan: $(STAMP)                 ## offline plan of the default stack (kind): no cloud, no Pulumi CLI
	$(BIN)/ck8s-gpu plan --stack $(STACK) --out out/plan-$(STACK)

test: $(STAMP) debs tools      ## everything CI runs: lint, types and every tier, the integration tier beside the rest
	@bash scripts/all_tiers.sh $(MAKE) --no-print-directory lint types

check: lint types layers fast             ## the contributor's tier: lint, types, layers, the pure tests (CONTRIBUTING.md)

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(BIN)/uv pip install --quiet --python $(BIN)/python $(if $(PIP_FIND_LINKS),--find-links $(PIP_FIND_LINKS)) -e '.[test]'
	touch $@

setup: $(STAMP)

debs:                          ## cloud-init and shellcheck validate the rendered user-data
	@bash scripts/install-debs.sh

tools:                         ## real engine tier: Pulumi CLI, control plane, KWOK (cached by version)
	@bash scripts/tools.sh

lint: $(STAMP)
	$(BIN)/ruff check .

types: $(STAMP)
	$(BIN)/mypy   # components/, tools/*.py, scripts/*.py (pyproject.toml [tool.mypy] files)

# The pure and slow tiers run on every core (pytest-xdist: their tests share no process state, each
# works in its own tmp_path); the integration tier owns control planes, kubelets and ports: serial,
# and in `make test`/`make unit` beside the others (scripts/all_tiers.sh says why).
XDIST := -n $(shell nproc 2>/dev/null || echo 2)

unit: $(STAMP)                 ## every pytest tier (pure, slow, integration, node), integration beside the rest
	@bash scripts/all_tiers.sh

fast: $(STAMP)                 ## the pure tests: no tools, no bash node scenarios
	@bash scripts/pytest.sh -q $(XDIST) -m "not slow and not integration" tests/unit

slow: $(STAMP) debs            ## the node scripts in bash against the k8s-snap fake
	@bash scripts/pytest.sh -q $(XDIST) -m slow tests/unit

integration: $(STAMP) debs tools   ## real engine, control plane, kubelets (root for the node tier)
	@bash scripts/pytest.sh -q -m integration

layers: $(STAMP)               ## the layer contract (docs/architecture.md, Layers)
	$(BIN)/python scripts/layers.py

bench: $(STAMP)
	$(BIN)/python scripts/bench_plan.py --write docs/benchmarks.md && $(BIN)/python scripts/bench_stamp.py --write docs/benchmarks.md

docs: $(STAMP)
	$(BIN)/python -m components.addons.docs

up:                            ## the local-kubelet stack on this machine (root, Linux): docs/local-cluster.md
	@$(PY) scripts/local_up.py check up
	@$(MAKE) --no-print-directory setup debs tools
	$(BIN)/python scripts/local_up.py up

down:                          ## everything `make up` made, gone (standard library only: no venv needed)
	$(PY) scripts/local_up.py down
