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
#        LLMOPS_LAB_JOBS       scenarios run at the same time (default 2): the longest first, each lane in turn takes
#                              the next; every scenario's output goes to build/lab/<scenario>.log and is printed when
#                              it ends. 1 runs them one after the other with the output live.
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

# Lab containers of any scenario that no run holds (its lock is free) are leftovers of a run that was killed (a
# session that ended, CI cancelled): systemd goes on inside them, and on the host network their services keep
# restarting on ports a new run may pick. They go before anything starts; a scenario that another run is testing
# right now (its lock taken) is left alone.
for f in extensions/molecule/*/molecule.yml; do
    s="$(basename "$(dirname "${f}")")"
    exec 8>"${WORKDIR}/.run-${s}.lock"
    if flock -n 8; then
        for name in $(platform_names "${s}"); do
            if podman container exists "${name}" 2>/dev/null; then
                lab_log "removing the leftover container ${name} (scenario ${s}, no run holds it)"
                podman rm -f -t 5 "${name}" >/dev/null || true
            fi
        done
    fi
    exec 8>&-
done

LOGS="${REPO_ROOT}/build/lab"
mkdir -p "${LOGS}"
JOBS="${LLMOPS_LAB_JOBS:-2}"

# One scenario, start to end: its lock, its leftovers removed, molecule test, the result in ${LOGS}/<s>.result.
run_scenario() {
    local s="$1" started
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
    # And its molecule state: molecule keeps a scenario's ephemeral directory (inventory, the lab's lock file and
    # deployment records) under ~/.ansible/tmp/molecule.<checksum of the checkout's directory name>.<scenario> and
    # prunes it only after a run that ends well, so a killed or failed run's state met the next run of a checkout with
    # the same name (a cold run found a stale lock entry naming a commit the new mirror does not have, and a stale
    # measured memory in place of the profile's). Holding the scenario's lock, no other run of it uses these.
    rm -rf "${HOME}/.ansible/tmp/molecule."*".${s}"
    lab_log "molecule test -s ${s}"
    # shellcheck disable=SC2086 # MOLECULE_EXTRA_ARGS is a word list
    if molecule test -s "${s}" ${MOLECULE_EXTRA_ARGS:-}; then
        echo "passed in $((SECONDS - started)) s" >"${LOGS}/${s}.result"
    else
        echo "FAILED after $((SECONDS - started)) s" >"${LOGS}/${s}.result"
    fi
    if [ "${LLMOPS_LAB_KEEP:-0}" != 1 ]; then
        remove_current_containers
    fi
    CURRENT_INSTANCES=""
    exec 8>&-
    lab_log "scenario ${s}: $(cat "${LOGS}/${s}.result")"
}

for s in "${SCENARIOS[@]}"; do
    rm -f "${LOGS}/${s}.result" "${LOGS}/${s}.log"
done
if [ "${JOBS}" -le 1 ] || [ "${#SCENARIOS[@]}" -le 1 ]; then
    for s in "${SCENARIOS[@]}"; do
        run_scenario "${s}"
    done
else
    # Longest first (times of the last runs, docs/testlab.md), so the lanes end close together.
    ORDER=()
    for s in deploy sglang_server sglang_gateway hf_model modules lxc_gpu "${SCENARIOS[@]}"; do
        [[ " ${SCENARIOS[*]} " == *" ${s} "* ]] && [[ " ${ORDER[*]:-} " != *" ${s} "* ]] && ORDER+=("${s}")
    done
    printf '%s\n' "${ORDER[@]}" >"${LOGS}/.queue"
    lane() {
        local s
        # A lane is a subshell: its own instances are removed when it ends, also on a signal.
        if [ "${LLMOPS_LAB_KEEP:-0}" != 1 ]; then
            trap 'remove_current_containers' EXIT
        fi
        trap 'exit 143' TERM
        # Its own open file of the queue lock: flock excludes open files, and an inherited one is shared.
        exec 7>"${LOGS}/.queue.lock"
        while true; do
            flock 7
            s="$(head -n 1 "${LOGS}/.queue")"
            sed -i '1d' "${LOGS}/.queue"
            flock -u 7
            [ -n "${s}" ] || return 0
            run_scenario "${s}" >"${LOGS}/${s}.log" 2>&1
            cat "${LOGS}/${s}.log"
        done
    }
    lab_log "${#ORDER[@]} scenarios in ${JOBS} lanes: ${ORDER[*]} (each one's output follows when it ends; also in ${LOGS})"
    LANES=()
    for _ in $(seq "${JOBS}"); do
        lane &
        LANES+=("$!")
    done
    trap 'kill "${LANES[@]}" 2>/dev/null; wait; exit 130' INT
    trap 'kill "${LANES[@]}" 2>/dev/null; wait; exit 143' TERM
    wait "${LANES[@]}" || true
fi

declare -A RESULT
rc=0
for s in "${SCENARIOS[@]}"; do
    RESULT[${s}]="$(cat "${LOGS}/${s}.result" 2>/dev/null || echo "did not run")"
    [[ "${RESULT[${s}]}" == passed* ]] || rc=1
done

# A CI log is often read from its tail: each failed scenario's failing tasks (and the last lines of its log) just before
# the summary, so the cause is there without scrolling back through the lanes' interleaved output.
for s in "${SCENARIOS[@]}"; do
    [[ "${RESULT[${s}]}" == passed* ]] && continue
    [ -f "${LOGS}/${s}.log" ] || continue
    lab_log "---- ${s}: what failed (whole log: ${LOGS}/${s}.log) ----"
    # Molecule's output has colour codes; the excerpt is for reading, so they go.
    sed -e 's/\x1b\[[0-9;]*m//g' "${LOGS}/${s}.log" |
        grep -E -A 14 'fatal: |FAILED! |ERROR|Traceback|failed: \[' | tail -n 40 || true
    lab_log "---- ${s}: last lines ----"
    sed -e 's/\x1b\[[0-9;]*m//g' "${LOGS}/${s}.log" | tail -n 15
done
lab_log "---- lab summary ----"
lab_log "images: ${images_s} s"
for s in "${SCENARIOS[@]}"; do
    lab_log "scenario ${s}: ${RESULT[${s}]}"
done
lab_log "total: $((SECONDS - total_started)) s"
exit "${rc}"
