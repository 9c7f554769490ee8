#!/usr/bin/env bash
# The lab suites of `make test`, side by side by default: the two halves of `make integration` (ansible-test targets
# on the controller, split by their aliases shippable/posix/group1 and group2) and `make molecule` (podman systemd
# hosts, two lanes). The integration suite alone is mostly waiting (a cold run measured it at 44 % of the two cores,
# molecule at 75 %), so its halves and molecule share the machine; the figures of each layout are in README.md.
# Each suite's output goes to build/lab-run/<suite>.log and is printed whole when the suite ends; meanwhile a progress
# line every 60 s says what each one is running. Exits non-zero if any suite failed.
# Usage (from the collection root): tests/tools/run-lab.sh   (LLMOPS_LAB_PARALLEL=0: integration, then molecule)
set -u
out=build/lab-run
mkdir -p "${out}"
started=${SECONDS}
say() { printf '[lab-run %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

if [ "${LLMOPS_LAB_PARALLEL:-1}" = 0 ]; then
    make --no-print-directory integration || exit $?
    exec make --no-print-directory molecule
fi

suites=(integration-1 integration-2 molecule)
declare -A cmd pid rc took
cmd[integration-1]="make --no-print-directory integration INTEGRATION_TARGETS=shippable/posix/group1/"
cmd[integration-2]="make --no-print-directory integration INTEGRATION_TARGETS=shippable/posix/group2/"
cmd[molecule]="make --no-print-directory molecule"
for suite in "${suites[@]}"; do
    # shellcheck disable=SC2086 # a command line of words
    ${cmd[${suite}]} >"${out}/${suite}.log" 2>&1 &
    pid[${suite}]=$!
done
trap 'kill "${pid[@]}" 2>/dev/null; wait; exit 130' INT
trap 'kill "${pid[@]}" 2>/dev/null; wait; exit 143' TERM
say "${suites[*]} started side by side (output: ${out}/<suite>.log)"

# What each suite is doing now: ansible-test's last "Running <target>" line, the lab's last "[lab ...]" line.
now() {
    local suite line line_out=""
    for suite in "${suites[@]}"; do
        if [ -n "${rc[${suite}]:-}" ]; then
            line="done"
        elif [ "${suite}" = molecule ]; then
            line="$(grep -o '^\[lab [0-9:]*\] .*' "${out}/${suite}.log" 2>/dev/null | tail -n 1 | cut -c1-80)"
        else
            line="$(grep -o 'Running [a-z_0-9]* integration test' "${out}/${suite}.log" 2>/dev/null | tail -n 1)"
        fi
        line_out="${line_out}${line_out:+ | }${suite}: ${line:-starting}"
    done
    printf '%s' "${line_out}"
}

remaining=${#suites[@]}
while [ "${remaining}" -gt 0 ]; do
    for suite in "${suites[@]}"; do
        [ -n "${rc[${suite}]:-}" ] && continue
        if ! kill -0 "${pid[${suite}]}" 2>/dev/null; then
            wait "${pid[${suite}]}"
            rc[${suite}]=$?
            took[${suite}]=$((SECONDS - started))
            cat "${out}/${suite}.log"
            say "${suite}: $([ "${rc[${suite}]}" = 0 ] && echo passed || echo "FAILED (rc ${rc[${suite}]})") after ${took[${suite}]} s"
            remaining=$((remaining - 1))
        fi
    done
    [ "${remaining}" -gt 0 ] || break
    ended=0
    for _tick in $(seq 12); do
        sleep 5
        for suite in "${suites[@]}"; do
            if [ -z "${rc[${suite}]:-}" ] && ! kill -0 "${pid[${suite}]}" 2>/dev/null; then
                ended=1
            fi
        done
        [ "${ended}" = 0 ] || break
    done
    [ "${ended}" = 1 ] || say "$(now)"
done
summary="" failed=0
for suite in "${suites[@]}"; do
    summary="${summary}${summary:+, }${suite} ${took[${suite}]} s (rc ${rc[${suite}]})"
    [ "${rc[${suite}]}" = 0 ] || failed=1
done
say "lab: ${summary}; wall $((SECONDS - started)) s"
# The tail of a CI log is what gets read: the failed suites' names last.
for suite in "${suites[@]}"; do
    [ "${rc[${suite}]}" = 0 ] || say "FAILED: ${suite} (its whole output is above and in ${out}/${suite}.log)"
done
exit "${failed}"
