#!/usr/bin/env bash
# The slow half of `make test` with both labs at once: ansible-test integration (its targets one after another) runs
# beside the molecule lanes (tests/lab/run-molecule.sh, LLMOPS_LAB_JOBS lanes). Much of either is waiting (systemd
# starts, readiness polls, stall windows, a guest booting), so together they finish well before one after the other
# on the 2-core CI machine; `make integration` and `make molecule` still run each alone.
# The integration output goes to build/integration.log; a line per target is printed as it starts, the whole log
# when it fails. Exit status: non-zero when either failed.
# Env: LLMOPS_LAB_SERIAL=1 runs integration first, then molecule (output live, for debugging).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${HERE}/../.." && pwd)"
# shellcheck source=tests/lab/lib.sh
source "${REPO_ROOT}/tests/lab/lib.sh"
cd "${REPO_ROOT}" || exit 1

started=${SECONDS}
if [ "${LLMOPS_LAB_SERIAL:-0}" = 1 ]; then
    "${HERE}/ansible-test.sh" integration --local --python 3.11
    irc=$?
    tests/lab/run-molecule.sh
    mrc=$?
else
    mkdir -p build
    log="build/integration.log"
    : >"${log}"
    "${HERE}/ansible-test.sh" integration --local --python 3.11 >"${log}" 2>&1 &
    ipid=$!
    # Progress: each target as it starts (ansible-test prints "Running <target> integration test role|script").
    # --pid: tail (and so the pipeline) ends with ansible-test.
    tail -n +1 --pid="${ipid}" -F "${log}" 2>/dev/null | grep --line-buffered -E '^Running .* integration test (role|script)' \
        | while IFS= read -r line; do printf '[integration %s] %s\n' "$(date +%H:%M:%S)" "${line}"; done &
    tpid=$!
    trap 'kill "${ipid}" "${tpid}" 2>/dev/null; wait; exit 130' INT
    trap 'kill "${ipid}" "${tpid}" 2>/dev/null; wait; exit 143' TERM
    tests/lab/run-molecule.sh
    mrc=$?
    wait "${ipid}"
    irc=$?
    wait "${tpid}" 2>/dev/null
    if [ "${irc}" -ne 0 ]; then
        lab_log "---- ansible-test integration FAILED (rc ${irc}): ${log} ----"
        cat "${log}"
    else
        grep -E 'all cases passed|\] total: ' "${log}" | cut -c1-200 || true
    fi
fi
lab_log "integration: $([ "${irc}" -eq 0 ] && echo passed || echo "FAILED (rc ${irc})"); molecule: $([ "${mrc}" -eq 0 ] && echo passed || echo "FAILED (rc ${mrc})"); both in $((SECONDS - started)) s"
[ "${irc}" -eq 0 ] && [ "${mrc}" -eq 0 ]
