# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables are used by the scripts that source this file
# Shared helpers for the molecule test lab scripts (sourced, not executed).

LAB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${LAB_DIR}/../.." && pwd)"
# The lab's podman settings (runc, ulimits below the hard limit) must win over any inherited ones.
export CONTAINERS_CONF="${LAB_DIR}/containers.conf"
# Instances and images of the lab carry this prefix; cleanup only ever touches names with it.
LAB_PREFIX="llmops-lab"
# Distributions the lab builds and tests by default (both come from the Debian mirror; see docs/testlab.md).
LAB_DEFAULT_DISTROS="bookworm trixie"

lab_log() {
    printf '[lab %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2
}

lab_die() {
    lab_log "ERROR: $*"
    exit 1
}

lab_as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo -- "$@"
    else
        lab_die "need root (or sudo) for: $*"
    fi
}

# Install the host packages the lab needs, only those that are missing (a fresh CI clone has none).
lab_ensure_host_packages() {
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "${pkg}" 2>/dev/null | grep -q 'ok installed' || missing+=("${pkg}")
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    lab_log "installing host packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # A fresh machine may have no package lists: update only when the first attempt fails.
    if ! lab_as_root apt-get install -y -q "${missing[@]}" >/dev/null; then
        lab_as_root apt-get update -q >/dev/null
        lab_as_root apt-get install -y -q "${missing[@]}" >/dev/null
    fi
}

# The Debian mirror this machine's apt uses (deb822 URIs: or one-line "deb URL"), else deb.debian.org.
lab_debian_mirror() {
    local url
    url="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
        sed -n -E 's@^(URIs:[[:space:]]*|deb[[:space:]]+(\[[^]]*\][[:space:]]+)?)(https?://[^[:space:]]*/debian)/?([[:space:]].*)?$@\3@p' |
        grep -v -- '-security' | head -n 1 || true)"
    printf '%s\n' "${url:-http://deb.debian.org/debian}"
}
