# llmops.inference — every target does its own set-up on a fresh machine (venv, pinned deps, lab images).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell sha256sum requirements/dev.txt | cut -c1-12)
INVENTORY ?= inventories/example
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/.collections
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: help venv plan test unit sanity lint changelog-lint integration molecule clean

help:
	@echo "make plan   - offline plan of the full deployment for $(INVENTORY) (no hosts contacted)"
	@echo "make test   - unit tests, ansible-test sanity + integration, ansible-lint, changelog lint, molecule lab"

$(STAMP): requirements/dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements/dev.txt
	rm -f $(VENV)/.installed-* && touch $@

venv: $(STAMP)

plan: venv
	$(BIN)/ansible-playbook playbooks/plan.yml -i $(INVENTORY)

unit: venv
	$(BIN)/pytest -q tests/unit

sanity: venv
	tests/tools/ansible-test.sh sanity --venv --python 3.11

integration: venv
	tests/tools/ansible-test.sh integration --local --python 3.11

lint: venv
	$(BIN)/ansible-lint --offline
	$(BIN)/yamllint --strict .

changelog-lint: venv
	$(BIN)/antsibull-changelog lint

molecule: venv
	tests/lab/run-molecule.sh

# Cheap checks first so a typo fails in seconds, the slow lab last.
test: unit changelog-lint lint sanity integration molecule
	@echo "make test: all suites passed"

clean:
	rm -rf build tests/output
