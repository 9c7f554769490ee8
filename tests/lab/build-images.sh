#!/usr/bin/env bash
# Build the molecule lab images: minimal Debian roots with systemd as PID 1, made with debootstrap and
# imported into podman (no registry, no Dockerfile). An image is rebuilt only when its recipe changes:
# the tag is a hash of the recipe, and localhost/llmops-lab-<distro>:latest points at the current one.
#
# Usage: tests/lab/build-images.sh [--force] [DISTRO...]
#   DISTRO: bookworm, trixie (default: $LLMOPS_LAB_DISTROS or "bookworm trixie")
# Env:   LLMOPS_LAB_MIRROR    Debian mirror (default: the one this machine's apt uses)
#        LLMOPS_LAB_WORKDIR   scratch space for the roots (default /var/tmp/llmops-lab)
#        LLMOPS_LAB_CACHE     .deb cache kept between builds (default /var/cache/llmops-lab)
#        LLMOPS_LAB_PARALLEL  1 (default) builds the distributions concurrently
set -euo pipefail
# shellcheck source=tests/lab/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Bump to force a rebuild of every image when something outside the recipe below changes.
RECIPE_VERSION=1
# What later roles commonly need on a target, beyond Ansible's own needs (python3, python3-apt, sudo); gcc, libc6-dev and
# python3-dev are what sglang_server installs for Triton, numactl what it installs for SGLang's NUMA binding (the lab
# scenarios run without network: present already).
LAB_PACKAGES="systemd,systemd-sysv,dbus,python3,python3-apt,python3-venv,sudo,iproute2,procps,kmod,ca-certificates,curl,gcc,libc6-dev,python3-dev,numactl"

WORKDIR="${LLMOPS_LAB_WORKDIR:-/var/tmp/llmops-lab}"
CACHE="${LLMOPS_LAB_CACHE:-/var/cache/llmops-lab}"
MIRROR="${LLMOPS_LAB_MIRROR:-$(lab_debian_mirror)}"

# Runs on the finished root (as files, nothing executes inside it). Part of the recipe hash.
customize_rootfs() {
    local root="$1"
    # Each container must boot with its own machine id (systemd writes one when the file is empty).
    : >"${root}/etc/machine-id"
    ln -sf /etc/machine-id "${root}/var/lib/dbus/machine-id"
    printf 'LANG=C.UTF-8\n' >"${root}/etc/default/locale"
    # No network in the lab: package lists and downloaded .debs are dead weight.
    rm -rf "${root}"/var/lib/apt/lists/* "${root}"/var/cache/apt/*.bin "${root}"/var/cache/apt/archives/*.deb
}

recipe_text() {
    local distro="$1"
    printf 'version=%s\ndistro=%s\nvariant=minbase\npackages=%s\n' "${RECIPE_VERSION}" "${distro}" "${LAB_PACKAGES}"
    declare -f customize_rootfs
}

recipe_hash() {
    recipe_text "$1" | sha256sum | cut -c1-12
}

umount_below() {
    local dir="$1" mnt
    # debootstrap mounts /proc and /sys inside the root and leaves them behind when it is killed.
    findmnt -rn -o TARGET | { grep -F "${dir}/" || true; } | sort -r | while read -r mnt; do
        umount -l "${mnt}" || true
    done
}

build_one() {
    local distro="$1" hash image root started
    case "${distro}" in
        bookworm | trixie) ;;
        *) lab_die "unknown distro '${distro}' (known: bookworm trixie)" ;;
    esac
    hash="$(recipe_hash "${distro}")"
    image="localhost/${LAB_PREFIX}-${distro}"
    if [ "${FORCE}" != 1 ] && podman image exists "${image}:${hash}"; then
        podman tag "${image}:${hash}" "${image}:latest"
        lab_log "${image}:${hash} is current (cached)"
        return 0
    fi
    started=${SECONDS}
    root="${WORKDIR}/${distro}.rootfs"
    umount_below "${root}"
    rm -rf --one-file-system "${root}"
    mkdir -p "${root}" "${CACHE}/debs/${distro}"
    lab_log "debootstrap ${distro} from ${MIRROR} (recipe ${hash})"
    if ! debootstrap --variant=minbase --include="${LAB_PACKAGES}" --cache-dir="${CACHE}/debs/${distro}" \
        --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
        "${distro}" "${root}" "${MIRROR}" >"${WORKDIR}/${distro}.log" 2>&1; then
        tail -n 30 "${WORKDIR}/${distro}.log" >&2
        umount_below "${root}"
        lab_die "debootstrap ${distro} failed (full log: ${WORKDIR}/${distro}.log)"
    fi
    lab_log "debootstrap ${distro} done in $((SECONDS - started)) s"
    customize_rootfs "${root}"
    tar --numeric-owner -C "${root}" -c . |
        podman import --quiet \
            --change 'CMD ["/sbin/init"]' \
            --change 'STOPSIGNAL SIGRTMIN+3' \
            --change "LABEL org.llmops.lab.recipe=${hash}" \
            --change "LABEL org.llmops.lab.distro=${distro}" \
            --message "llmops lab ${distro} recipe ${hash}" \
            - "${image}:${hash}" >/dev/null
    podman tag "${image}:${hash}" "${image}:latest"
    # Drop images of older recipes (an image still used by a container stays; that is fine).
    podman images --format '{{.Repository}}:{{.Tag}}' --filter "reference=${image}" |
        grep -v -E ":(latest|${hash})\$" | xargs -r podman rmi >/dev/null 2>&1 || true
    umount_below "${root}"
    rm -rf --one-file-system "${root}"
    lab_log "built ${image}:${hash} in $((SECONDS - started)) s"
}

FORCE=0
if [ "${1:-}" = "--force" ]; then
    FORCE=1
    shift
fi
# shellcheck disable=SC2206 # word splitting of the distro list is intended
DISTROS=(${@:-${LLMOPS_LAB_DISTROS:-${LAB_DEFAULT_DISTROS}}})

lab_ensure_host_packages podman runc debootstrap debian-archive-keyring
mkdir -p "${WORKDIR}" "${CACHE}"
# One build at a time per machine (two checkouts may share podman's image store).
exec 9>"${WORKDIR}/.build.lock"
flock 9

total_started=${SECONDS}
if [ "${LLMOPS_LAB_PARALLEL:-1}" = 1 ] && [ "${#DISTROS[@]}" -gt 1 ]; then
    pids=()
    for d in "${DISTROS[@]}"; do
        build_one "${d}" &
        pids+=("$!")
    done
    rc=0
    for p in "${pids[@]}"; do
        wait "${p}" || rc=1
    done
    [ "${rc}" -eq 0 ] || lab_die "image build failed"
else
    for d in "${DISTROS[@]}"; do
        build_one "${d}"
    done
fi
lab_log "images ready in $((SECONDS - total_started)) s: ${DISTROS[*]}"
