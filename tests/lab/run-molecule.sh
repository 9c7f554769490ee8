#!/usr/bin/env bash
# The test lab's single entry point (what `make test` calls): installs the host packages the lab needs,
# builds the lab images when their recipe changed, and runs `molecule test` for each scenario from the
# collection root. Lab containers are removed before and after the run, also after a failure or Ctrl-C.
#
# Usage: tests/lab/run-molecule.sh [SCENARIO...]   (default: every extensions/molecule/*/molecule.yml)
# Env:   LLMOPS_VENV           virtualenv with molecule & ansible (default: <repo>/.venv, else PATH)
#        LLMOPS_LAB_DISTROS    images to build (default: "bookworm trixie"; the scenarios use both)
#        MOLECULE_EXTRA_ARGS   extra arguments for `molecule test`, e.g. "--destroy never"
#        LLMOPS_LAB_KEEP       1 keeps the lab containers at the end (with "--destroy never", to debug)
set -euo pipefail
# shellcheck source=tests/lab/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

VENV="${LLMOPS_VENV:-${REPO_ROOT}/.venv}"
if [ -x "${VENV}/bin/molecule" ]; then
    export PATH="${VENV}/bin:${PATH}"
fi
command -v molecule >/dev/null 2>&1 ||
    lab_die "molecule not found: create ${VENV} from requirements/dev.txt or set LLMOPS_VENV"

if [ "$#" -gt 0 ]; then
    SCENARIOS=("$@")
else
    SCENARIOS=()
    for f in extensions/molecule/*/molecule.yml; do
        SCENARIOS+=("$(basename "$(dirname "${f}")")")
    done
fi
for s in "${SCENARIOS[@]}"; do
    [ -f "extensions/molecule/${s}/molecule.yml" ] || lab_die "no scenario extensions/molecule/${s}"
done

# Instance names of a scenario (its molecule.yml platforms).
platform_names() {
    python3 - "$1" <<'PY'
import sys
import yaml

with open("extensions/molecule/%s/molecule.yml" % sys.argv[1]) as handle:
    for platform in (yaml.safe_load(handle) or {}).get("platforms") or []:
        print(platform["name"])
PY
}

# Instances of the scenario this run is testing right now (and holds the lock of); nothing else is removed,
# so scenarios that someone else runs on the same machine are left alone.
CURRENT_INSTANCES=""
remove_current_containers() {
    local name
    for name in ${CURRENT_INSTANCES}; do
        if podman container exists "${name}" 2>/dev/null; then
            lab_log "removing container ${name}"
            podman rm -f -t 5 "${name}" >/dev/null || true
        fi
    done
}

WORKDIR="${LLMOPS_LAB_WORKDIR:-/var/tmp/llmops-lab}"
mkdir -p "${WORKDIR}"

total_started=${SECONDS}
if [ "${LLMOPS_LAB_KEEP:-0}" != 1 ]; then
    trap 'remove_current_containers' EXIT
fi
trap 'exit 130' INT
trap 'exit 143' TERM

"${LAB_DIR}/build-images.sh"
images_s=$((SECONDS - total_started))

declare -A RESULT
rc=0
for s in "${SCENARIOS[@]}"; do
    # Two runs of one scenario would destroy each other's instances: the second one waits. Other scenarios
    # have other instance names and may run at the same time.
    exec 8>"${WORKDIR}/.run-${s}.lock"
    if ! flock -n 8; then
        lab_log "another run of scenario ${s} holds ${WORKDIR}/.run-${s}.lock; waiting"
        flock 8
    fi
    started=${SECONDS}
    CURRENT_INSTANCES="$(platform_names "${s}")"
    # Left over from an aborted run: an existing container would make molecule's create fail or reuse it.
    remove_current_containers
    lab_log "molecule test -s ${s}"
    # shellcheck disable=SC2086 # MOLECULE_EXTRA_ARGS is a word list
    if molecule test -s "${s}" ${MOLECULE_EXTRA_ARGS:-}; then
        RESULT[${s}]="passed in $((SECONDS - started)) s"
    else
        RESULT[${s}]="FAILED after $((SECONDS - started)) s"
        rc=1
    fi
    if [ "${LLMOPS_LAB_KEEP:-0}" != 1 ]; then
        remove_current_containers
    fi
    CURRENT_INSTANCES=""
    exec 8>&-
    lab_log "scenario ${s}: ${RESULT[${s}]}"
done

lab_log "---- lab summary ----"
lab_log "images: ${images_s} s"
for s in "${SCENARIOS[@]}"; do
    lab_log "scenario ${s}: ${RESULT[${s}]}"
done
lab_log "total: $((SECONDS - total_started)) s"
exit "${rc}"
