# llmops.inference — every target does its own set-up on a fresh machine (venv, pinned deps, lab images).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
REQS_ID := $(shell sha256sum requirements/dev.txt | cut -c1-12)
STAMP := $(VENV)/.installed-$(REQS_ID)
# The tool venv (600 MB, about 50 s to install even from pip's cache) is kept per requirements file and Python in the
# lab cache, and a fresh clone's .venv links to it; a checkout whose .venv is a directory of its own keeps that one.
LAB_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/llmops-inference
VENV_CACHE := $(LAB_CACHE)/tool-venv-$(REQS_ID)-py$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
INVENTORY ?= inventories/example
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/.collections
export PATH := $(CURDIR)/$(BIN):$(PATH)
# apt-get calls of the suites wait for a dpkg lock another suite holds (tests/tools/apt.conf).
export APT_CONFIG := $(CURDIR)/tests/tools/apt.conf

.PHONY: help venv plan plan-check plan-accept profile render-check compare sglang-release gateway-release parser-releases test checks quick-checks heavy-checks unit monitoring sanity lint changelog-lint docs-check parser integration molecule clean

help:
	@echo "make plan   - offline plan of the full deployment for $(INVENTORY) (no hosts contacted)"
	@echo "make plan MODEL=<profile> GPU=<hardware profile> TP=<n> CONTEXT=<tokens> SPEC=off|mtp|eagle3 KV_DTYPE=.. EXTRA='-e k=v'"
	@echo "            - what if: a plan of its own in build/plan-whatif/ (build/plan untouched)"
	@echo "make plan-check / plan-accept - the plan of $(INVENTORY) against its approved plan / approve it (docs/ci.md)"
	@echo "make test   - unit, lint, docs, sanity, SGLang parser, ansible-test integration, molecule lab"
	@echo "make parser SGLANG_PIN=x.y.z - the SGLang checks (parser, planner oracle, log texts, metrics) against another supported release"
	@echo "make parser-releases - make parser for every supported release besides the pin (not in make test: a lab venv each)"
	@echo "make sglang-release VERSION=x.y.z [FROM=a.b.c] - the report of moving SGLang from FROM (default: the pin) to VERSION (docs/releases/)"
	@echo "make gateway-release VERSION=x.y.z [FROM=a.b.c] - the same for the gateway (smg; profiles/sglang_gateway.yml): its venv, lock and report"
	@echo "make compare [MODEL=<profile>] [GPU=<hardware profile>] [GPUS=n] [ISL=] [OSL=] [RATE=req/s] [TTFT_P99=ms] [TPOT_P99=ms]"
	@echo "            - which layout serves this load: TP x replicas x MTP/EAGLE-3 x KV dtype, sized by the planner (docs/compare.md)"
	@echo "make profile REPO=org/name [REVISION=main] [ENDPOINT=url] [SRC=dir] [TP=n] [DEST=file|dir] [FORCE=1] [DIFF=1]"
	@echo "            - a model profile in profiles/models/ from the checkpoint's config.json (Hub, mirror or SRC);"
	@echo "              from any directory: make -C <collection> profile SRC=./ckpt (SRC, DEST relative to where you are);"
	@echo "              Hub endpoint: ENDPOINT, else the INVENTORY servers' hf_model_endpoint, else \$$HF_ENDPOINT;"
	@echo "              DIFF=1 shows the difference to an existing profile, FORCE=1 replaces it"

# Silent (make plan's console shows no recipe): it says what it installs. In a fresh clone requirements/dev.txt is
# newer than the cached venv's stamp, so the link is made and the stamp touched, once; later calls do nothing.
$(STAMP): requirements/dev.txt
	@if [ -d $(VENV) ] && [ ! -L $(VENV) ]; then \
	    test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); \
	    $(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements/dev.txt; \
	    rm -f $(VENV)/.installed-* && touch $@; \
	else \
	    mkdir -p $(LAB_CACHE) && exec 9>$(VENV_CACHE).lock && flock 9; \
	    if [ ! -e $(VENV_CACHE)/.installed-$(REQS_ID) ]; then \
	        echo "tool venv: installing requirements/dev.txt into $(VENV_CACHE)"; \
	        rm -rf $(VENV_CACHE) && $(PYTHON) -m venv $(VENV_CACHE); \
	        $(VENV_CACHE)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements/dev.txt; \
	        touch $(VENV_CACHE)/.installed-$(REQS_ID); \
	    fi; \
	    ln -sfn $(VENV_CACHE) $(VENV); \
	    touch $(VENV_CACHE)/.installed-$(REQS_ID); \
	fi

venv: $(STAMP)

# make plan [MODEL=..] [GPU=..] [TP=..] [CONTEXT=..] [SPEC=off|mtp|eagle3] [KV_DTYPE=..] [EXTRA='-e k=v'] [llmops_*=..]:
# any knob makes it a what-if in build/plan-whatif/<knobs>/ (tests/tools/plan_console.py; docs/plan.md). make
# exports its command-line variables to the recipe; PLAN_CLI_VARS names them, so the shell's environment is never
# read as a knob. The console gets a summary; the full Ansible log goes to build/plan.log.
# PLAN_BUILD moves build/plan and build/plan-whatif elsewhere (the tests of make plan use it).
PLAN_CLI_VARS := $(strip $(foreach v,$(.VARIABLES),$(if $(filter command line,$(origin $(v))),$(v))))
PLAN_BUILD ?= build
plan: venv
	@PLAN_CLI_VARS='$(PLAN_CLI_VARS)' $(BIN)/python tests/tools/plan_console.py --inventory '$(INVENTORY)' --build '$(PLAN_BUILD)'

# The bytes make plan renders for every inventory under inventories/, against tests/fixtures/render_reference.json
# (docs/ci.md, "Render reference"): a refactoring changes none; `render_reference.py update --reason ..` records a change.
render-check: venv
	@$(BIN)/python tests/tools/render_reference.py check

# make compare [MODEL= GPU= GPUS= ISL= OSL= RATE= TTFT_P99= TPOT_P99=]: every layout that fits, sized by the planner,
# estimated and ranked for that load (tests/tools/compare_console.py; docs/compare.md); none given: the INVENTORY's
# server. Writes build/compare/<knobs>/ (compare.md, pareto.svg, snippet.yml). Offline, no hosts.
compare: venv
	@$(BIN)/python tests/tools/compare_console.py --model "$(MODEL)" --gpu "$(GPU)" --gpus "$(GPUS)" --isl "$(ISL)" \
	    --osl "$(OSL)" --rate "$(RATE)" --ttft-p99 "$(TTFT_P99)" --tpot-p99 "$(TPOT_P99)" --inventory "$(INVENTORY)"

# make sglang-release VERSION=x.y.z [FROM=a.b.c]: the report of moving SGLang from FROM (default: the pin) to VERSION,
# from both releases' own code
# (docs/releases/sglang-<FROM>-to-<VERSION>.md; tests/tools/sglang-release.sh). Builds VERSION's lab venv (~11 GB) and
# its lock once; exit 1 while something the collection renders, reads or matches is missing from VERSION.
sglang-release: venv
	@test -n "$(VERSION)" || { echo "make sglang-release: give VERSION=x.y.z (a release on the package index)" >&2; exit 2; }
	@tests/tools/sglang-release.sh '$(VERSION)' $(if $(FROM),'$(FROM)')

# make gateway-release VERSION=x.y.z [FROM=a.b.c]: the report of moving the gateway (smg) from FROM (default: the pin of
# profiles/sglang_gateway.yml) to VERSION (docs/releases/smg-<FROM>-to-<VERSION>.md; tests/tools/gateway-release.sh).
gateway-release: venv
	@test -n "$(VERSION)" || { echo "make gateway-release: give VERSION=x.y.z (a release of smg on the package index)" >&2; exit 2; }
	@tests/tools/gateway-release.sh '$(VERSION)' $(if $(FROM),'$(FROM)')

# The plan gate (docs/ci.md): make plan compared with $(INVENTORY)/.plan-approved.json; plan-accept records it.
plan-check: venv
	@$(BIN)/python tests/tools/plan_gate.py check $(INVENTORY) $(PLAN_GATE_ARGS)

plan-accept: venv
	@$(BIN)/python tests/tools/plan_gate.py accept $(INVENTORY)

# The Hub client the hf_model role installs on hosts, from the same lock with hashes, for make profile.
HF_LOCK := $(firstword $(wildcard profiles/locks/hf-client-*.txt))
HF_CLIENT := $(LAB_CACHE)/hf-client-$(shell sha256sum $(HF_LOCK) | cut -c1-12)-py$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')

$(HF_CLIENT)/.installed: $(HF_LOCK)
	@echo "make profile: installing the Hub client of $(HF_LOCK) into $(HF_CLIENT)"
	@mkdir -p $(LAB_CACHE) && rm -rf $(HF_CLIENT) && $(PYTHON) -m venv $(HF_CLIENT)
	@$(HF_CLIENT)/bin/python -m pip install --quiet --disable-pip-version-check --require-hashes -r $(HF_LOCK)
	@touch $@

# make profile works from any directory (make -C <collection> profile ...): SRC and DEST are relative to the directory
# make was called from, the shell's $PWD (make -C leaves it alone; a program that starts make in another directory
# without a shell gives CALLER_DIR=<absolute dir>); INVENTORY is relative to the collection, as for make plan; its
# servers' hf_model_endpoint is the Hub endpoint when ENDPOINT is not given (then $HF_ENDPOINT, then huggingface.co).
# Only variables given on the command line count: PROFILE_CLI_VARS names them for the commands the playbook prints
# (they replay the operator's own command with FORCE=1, DIFF=1 or another DEST; plugins/plugin_utils/views/profile_hints.py).
PROFILE_VARS := REPO SRC REVISION ENDPOINT TP DEST FORCE DIFF INVENTORY CALLER_DIR
PROFILE_CLI_VARS := $(strip $(foreach v,$(PROFILE_VARS),$(if $(filter command line,$(origin $(v))),$(v))))
profile_arg = $(if $(filter $(1),$(PROFILE_CLI_VARS)),$($(1)))
PROFILE_CALLER := $(abspath $(or $(call profile_arg,CALLER_DIR),$(if $(filter /%,$(PWD)),$(PWD)),$(CURDIR)))
profile_path = $(abspath $(if $(filter /%,$(1)),$(1),$(PROFILE_CALLER)/$(1)))
profile: venv $(if $(call profile_arg,SRC),,$(HF_CLIENT)/.installed)
	@PROFILE_CLI_VARS='$(PROFILE_CLI_VARS)' $(BIN)/ansible-playbook playbooks/profile.yml \
	    $(if $(call profile_arg,INVENTORY),-i $(call profile_arg,INVENTORY)) \
	    -e profile_make_dir=$(CURDIR) -e profile_caller_dir=$(PROFILE_CALLER) \
	    $(if $(call profile_arg,REPO),-e profile_repo=$(call profile_arg,REPO)) \
	    $(if $(call profile_arg,SRC),-e profile_src=$(call profile_path,$(call profile_arg,SRC)),-e profile_hub_python=$(HF_CLIENT)/bin/python) \
	    $(if $(call profile_arg,REVISION),-e profile_revision=$(call profile_arg,REVISION)) \
	    $(if $(call profile_arg,ENDPOINT),-e profile_endpoint=$(call profile_arg,ENDPOINT)) \
	    $(if $(call profile_arg,TP),-e profile_tp_size=$(call profile_arg,TP)) \
	    $(if $(call profile_arg,DEST),-e profile_dest=$(call profile_path,$(call profile_arg,DEST))) \
	    $(if $(call profile_arg,FORCE)$(call profile_arg,DIFF),-e profile_force=true) \
	    $(if $(call profile_arg,DIFF),--check --diff)

# The P2P worker's end-to-end tests (CPU simulation on gloo, about 2-3 min here) run with the lab SGLang venv's python,
# which has torch; tests/bench/setup-bench-venv.sh builds it once under the lock that `parser` takes too, so in
# `make -j2 checks` one of them builds and the other waits (neither holds another lock meanwhile). With
# LLMOPS_REQUIRE_ALL=1 (the default here) a skipped test marked requires_lab fails (tests/unit/require_lab.py).
# P2PCHECK_TEST_PYTHON=<python with torch> skips the lab venv; LLMOPS_REQUIRE_ALL=0 allows the skips.
unit: venv
	p2p_python="$${P2PCHECK_TEST_PYTHON-$$(tests/bench/setup-bench-venv.sh | tail -n 1)}"; \
	P2PCHECK_TEST_PYTHON="$${p2p_python}" LLMOPS_REQUIRE_ALL="$${LLMOPS_REQUIRE_ALL:-1}" $(BIN)/pytest -q tests/unit

# The monitoring role's Prometheus files against the real promtool (Debian's prometheus package, installed here when
# missing): check config, check rules and the rule unit tests of tests/monitoring/rules_test.yml.
monitoring: venv
	command -v promtool >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }
	$(BIN)/pytest -q tests/monitoring

# shellcheck is a sanity test of its own; ansible-test skips it silently when the program is missing.
sanity: venv
	command -v shellcheck >/dev/null || { apt-get update -qq && apt-get install -y -qq shellcheck >/dev/null; }
	tests/tools/ansible-test.sh sanity --venv --python 3.11

# INTEGRATION_TARGETS: targets or aliases (e.g. shippable/posix/group2/); empty runs them all. tests/tools/run-lab.sh
# runs group1 and group2 side by side.
INTEGRATION_TARGETS ?=
integration: venv
	tests/tools/ansible-test.sh integration --local --python 3.11 $(INTEGRATION_TARGETS)

lint: venv
	$(BIN)/ansible-lint --offline
	$(BIN)/yamllint --strict .

changelog-lint: venv
	$(BIN)/antsibull-changelog lint

# docs/reference.md is generated from the argument specs; a role whose defaults and spec disagree fails here too.
docs-check: venv
	$(BIN)/python tests/tools/role_docs.py --check

# The sglang_server flag rules against the pinned SGLang's own argument parser and source (builds the lab's one
# SGLang venv on first use; integration and molecule reuse it). SGLANG_PIN=x.y.z checks another supported release
# (one with a lock and an oracle reference) against its own venv: parser, planner oracle, log catalogue, metrics.
parser: venv
	tests/sglang/run-parser-tests.sh $(SGLANG_PIN)

# make parser for every supported release besides the pin (each with its oracle reference; docs/upgrade.md): their
# lab venvs (about 11 GB and 3.5 min each, once) are why this is not part of make test.
SUPPORTED_RELEASES = $(filter-out $(shell sed -n -E 's/^version:[[:space:]]*"?([0-9][0-9.]*)"?.*/\1/p' profiles/sglang.yml),$(patsubst tests/fixtures/oracle/reference-%.json,%,$(wildcard tests/fixtures/oracle/reference-*.json)))
parser-releases: venv
	@for v in $(SUPPORTED_RELEASES); do echo "== make parser SGLANG_PIN=$$v"; tests/sglang/run-parser-tests.sh $$v || exit 1; done

molecule: venv
	tests/lab/run-molecule.sh

# The checks that need no lab, two at a time (each is mostly one process on one core): each target's output is
# printed whole when it ends. quick-checks is the part that fails a typo in under a minute.
quick-checks: venv
	$(MAKE) --no-print-directory -j2 --output-sync=target changelog-lint docs-check lint

heavy-checks: venv
	$(MAKE) --no-print-directory -j2 --output-sync=target unit monitoring sanity parser render-check

checks: venv
	$(MAKE) --no-print-directory -j2 --output-sync=target changelog-lint docs-check lint unit monitoring sanity parser render-check

# Cheap checks first so a typo fails in seconds, then the heavy checks, then the lab: the two integration groups and
# molecule side by side (tests/tools/run-lab.sh, measured there; LLMOPS_LAB_PARALLEL=0 runs them one after the other).
# Running the heavy checks beside the lab as well was measured and is slower: a cold make test took 37:59 that way
# (molecule 2163 s instead of 1293 s, unit 1121 s instead of 276 s; docs/measurements.md).
test: quick-checks
	$(MAKE) --no-print-directory heavy-checks
	tests/tools/run-lab.sh
	@echo "make test: all suites passed"

clean:
	rm -rf build tests/output
