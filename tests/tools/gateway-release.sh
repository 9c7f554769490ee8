#!/usr/bin/env bash
# make gateway-release VERSION=x.y.z [FROM=a.b.c]: the report of moving the gateway (PyPI smg) from FROM (default:
# the pin, version: of profiles/sglang_gateway.yml) to VERSION, from both releases' own code (issue #29, point 5).
# Builds a venv of each release under ~/.cache/llmops-inference/smg-<version>-<key> (from its lock with
# --require-hashes when profiles/locks/smg-<version>.txt exists, else a fresh resolution of smg==<version> from the
# index, whose lock it then generates with tests/tools/sglang_lock.py), reads each release's facts with that venv's
# Python (tests/tools/gateway_facts.py: smg's own argparse parser, the --policy choices, the launcher functions; the
# command lines the table entry renders parsed by the new release's parser) and writes
# docs/releases/smg-<FROM>-to-<VERSION>.md, profiles/releases/smg-<FROM>-to-<VERSION>.json and the drafted table entry
# build/gateway-release/entry-<VERSION>.yml (tests/tools/gateway_release.py). Exit 1 while a flag the resolver renders
# is missing from VERSION or its parser refuses a rendered command line; the pin is never changed here.
set -euo pipefail
shopt -s inherit_errexit
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
# shellcheck source=tests/tools/release_args.sh
source "${here}/release_args.sh"
release_args gateway-release "${root}/profiles/sglang_gateway.yml" 1.12.0 "$@"
tool="${root}/.venv/bin/python"
out="${root}/build/gateway-release"
cache="${XDG_CACHE_HOME:-${HOME}/.cache}/llmops-inference"
mkdir -p "${out}" "${cache}" "${root}/docs/releases" "${root}/profiles/releases"
log() { echo "[gateway-release $(date +%H:%M:%S)] $*" >&2; }
# From the package index alone, as a gateway host installs: this machine's pip configuration adds local wheel folders.
PIP=(env -u PIP_FIND_LINKS -u PIP_CONSTRAINT -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null)
python_bin="${GATEWAY_RELEASE_PYTHON:-python3.11}"
command -v "${python_bin}" >/dev/null || python_bin=python3

# venv VERSION -> prints its python; builds it once (the lock's when there is one).
venv() {
    local v="$1" lock="${root}/profiles/locks/smg-$1.txt" dir
    if [ -f "${lock}" ]; then dir="${cache}/smg-${v}-$(sha256sum "${lock}" | cut -c1-12)"; else dir="${cache}/smg-${v}-index"; fi
    if [ ! -f "${dir}/.complete" ]; then
        rm -rf "${dir}"
        "${python_bin}" -m venv "${dir}"
        # Python 3.11's venv seeds setuptools, which smg does not require: the lock is the resolution alone.
        "${dir}/bin/python" -m pip uninstall --quiet --yes setuptools >&2 2>/dev/null || true
        if [ -f "${lock}" ]; then
            log "smg ${v}: installing ${lock#"${root}"/} (--require-hashes) into ${dir}"
            "${PIP[@]}" "${dir}/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes -r "${lock}" >&2
        else
            log "smg ${v}: a fresh resolution of smg==${v} from the index into ${dir}"
            "${PIP[@]}" "${dir}/bin/python" -m pip install --quiet --disable-pip-version-check "smg==${v}" >&2
        fi
        touch "${dir}/.complete"
    fi
    if [ ! -f "${lock}" ]; then
        log "generating ${lock#"${root}"/} from the venv's resolution"
        "${tool}" "${root}/tests/tools/sglang_lock.py" generate "${dir}/bin/python" "${lock}" \
            --locks 'the SGLang Model Gateway (smg) of the sglang_gateway role' \
            --source "a venv of pip install smg==${v} (Python $("${dir}/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])'))" \
            --installer 'the sglang_gateway role' >&2
    else
        "${tool}" "${root}/tests/tools/sglang_lock.py" check "${dir}/bin/python" "${lock}" >&2
    fi
    echo "${dir}/bin/python"
}

log "the venv of smg ${from}"
py_old="$(venv "${from}")"
log "the venv of smg ${version}"
py_new="$(venv "${version}")"
# The command lines the table renders (the entry of VERSION, else FROM's: what VERSION would inherit).
"${tool}" "${root}/tests/tools/gateway_release.py" argv "${version}" "${from}" --out "${out}/argv-${version}.json"
for pair in "${from}:${py_old}:" "${version}:${py_new}:--argv=${out}/argv-${version}.json"; do
    IFS=: read -r v py extra <<<"${pair}"
    log "facts of smg ${v}"
    "${py}" "${root}/tests/tools/gateway_facts.py" --out "${out}/facts-${v}.json" ${extra:+"${extra}"} \
        2>"${out}/facts-${v}.log" || { tail -n 40 "${out}/facts-${v}.log" >&2; exit 1; }
done
report="${root}/docs/releases/smg-${from}-to-${version}.md"
set +e
"${tool}" "${root}/tests/tools/gateway_release.py" report "${out}/facts-${from}.json" "${out}/facts-${version}.json" \
    --out "${report}" --draft "${out}/entry-${version}.yml" \
    --changes "${root}/profiles/releases/smg-${from}-to-${version}.json"
rc=$?
set -e
log "report: ${report#"${root}"/}"
exit "${rc}"
