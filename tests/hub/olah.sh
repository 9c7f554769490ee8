#!/usr/bin/env bash
# A local Hugging Face Hub stand-in for tests and benchmarks: olah 0.5.4 in offline mode on 127.0.0.1,
# serving the git repos under STATE_DIR/mirrors (made by tests/hub/make_model_repo.py). Never contacts
# huggingface.co (offline = true; without it olah checks every repo upstream).
#
# Usage: tests/hub/olah.sh start STATE_DIR [READY_REPO]   prints the endpoint URL (http://127.0.0.1:PORT)
#        tests/hub/olah.sh stop STATE_DIR                 stops the olah started for STATE_DIR (by its pid)
#        tests/hub/olah.sh venv                           only creates/updates olah's own venv
# Env:   OLAH_VENV  olah's venv (default: ${XDG_CACHE_HOME:-~/.cache}/llmops-inference/olah-0.5.4)
set -euo pipefail

OLAH_VERSION=0.5.4
OLAH_VENV="${OLAH_VENV:-${XDG_CACHE_HOME:-${HOME}/.cache}/llmops-inference/olah-${OLAH_VERSION}}"

log() { printf '[olah %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
    log "ERROR: $*"
    exit 1
}

ensure_venv() {
    # One builder at a time (make test runs suites side by side that each start a mirror on a fresh machine); the lock
    # is a subshell's, so the mirror started later does not inherit it.
    mkdir -p "$(dirname "${OLAH_VENV}")"
    (
        flock 8
        if [ -x "${OLAH_VENV}/bin/olah-cli" ] &&
            "${OLAH_VENV}/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('olah') != '${OLAH_VERSION}')"; then
            exit 0
        fi
        log "creating ${OLAH_VENV} (pip install olah==${OLAH_VERSION})"
        rm -rf "${OLAH_VENV}"
        # From a directory that surely exists (pip needs a working directory).
        cd "$(dirname "${OLAH_VENV}")" && python3 -m venv "${OLAH_VENV}" &&
            "${OLAH_VENV}/bin/python" -m pip install --quiet --disable-pip-version-check "olah==${OLAH_VERSION}" \
                2> >(grep -v '^WARNING: Location' >&2) >&2
    ) 8>"${OLAH_VENV}.lock"
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
    local state="$1" ready_repo="${2:-}" port url i code
    [ -d "${state}/mirrors" ] || die "${state}/mirrors does not exist (run make_model_repo.py first)"
    state="$(cd "${state}" && pwd)"
    mkdir -p "${state}/repos" "${state}/logs"
    ensure_venv
    port="$(free_port)"
    cat >"${state}/olah.toml" <<EOF
[basic]
host = "127.0.0.1"
port = ${port}
repos-path = "${state}/repos"
mirrors-path = ["${state}/mirrors"]
mirror-netloc = "127.0.0.1:${port}"
mirror-lfs-netloc = "127.0.0.1:${port}"

[accessibility]
offline = true
EOF
    # olah writes ./logs relative to its cwd unless told otherwise; keep everything in the state dir.
    (cd "${state}" && exec setsid "${OLAH_VENV}/bin/olah-cli" -c "${state}/olah.toml" --log-path "${state}/logs" \
        >"${state}/logs/stdout.log" 2>&1 </dev/null) &
    echo "$!" >"${state}/olah.pid"
    echo "${port}" >"${state}/olah.port"
    url="http://127.0.0.1:${port}"
    for i in $(seq 1 100); do
        if [ -n "${ready_repo}" ]; then
            code="$(curl -s -o /dev/null -w '%{http_code}' "${url}/api/models/${ready_repo}/revision/main" || true)"
            [ "${code}" = 200 ] && break
        else
            curl -s -o /dev/null "${url}/" && break
        fi
        kill -0 "$(cat "${state}/olah.pid")" 2>/dev/null || die "olah exited; see ${state}/logs/stdout.log"
        sleep 0.2
    done
    [ "${i}" -lt 100 ] || die "olah not ready after 20 s; see ${state}/logs"
    log "serving ${state}/mirrors at ${url} (pid $(cat "${state}/olah.pid"))"
    echo "${url}"
}

stop() {
    local state="$1" pid
    [ -f "${state}/olah.pid" ] || return 0
    pid="$(cat "${state}/olah.pid")"
    # setsid made olah its own process group leader: end that group only (olah may fork workers).
    if kill -0 "${pid}" 2>/dev/null; then
        kill -TERM -- "-${pid}" 2>/dev/null || kill -TERM "${pid}" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "${pid}" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL -- "-${pid}" 2>/dev/null || true
    fi
    rm -f "${state}/olah.pid"
    log "stopped olah (pid ${pid})"
}

case "${1:-}" in
    start) start "${2:?STATE_DIR}" "${3:-}" ;;
    stop) stop "${2:?STATE_DIR}" ;;
    venv) ensure_venv ;;
    *) die "usage: $0 start STATE_DIR [READY_REPO] | stop STATE_DIR | venv" ;;
esac
