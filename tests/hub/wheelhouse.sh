#!/usr/bin/env bash
# Wheels of the hf_model role's pinned client (roles/hf_model/defaults/main.yml: hf_model_pip_packages) for offline
# installs: tests and the molecule lab install from this directory with --no-index, as an air-gapped site would.
# Built once per pin set and Python versions, then reused. Prints the directory.
#
# Usage: tests/hub/wheelhouse.sh [PYTHON_VERSION...]   e.g. 3.11 3.13 (default: the version of python3)
# Env:   LLMOPS_WHEEL_CACHE  parent directory (default: ${XDG_CACHE_HOME:-~/.cache}/llmops-inference)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
versions=("$@")
[ "${#versions[@]}" -gt 0 ] || versions=("$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')")
pins="$(python3 - "${root}/roles/hf_model/defaults/main.yml" <<'PY'
import re, sys
block = open(sys.argv[1]).read().split('hf_model_pip_packages:', 1)[1]
print(' '.join(re.findall(r'^  - (\S+==\S+)$', block, re.M)))
PY
)"
key="$(printf '%s %s %s' "${pins}" "${versions[*]}" "$(uname -m)" | sha256sum | cut -c1-12)"
dir="${LLMOPS_WHEEL_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/llmops-inference}/hf-wheels-${key}"
# Lab scenarios run in parallel lanes (tests/lab/run-molecule.sh): one builds, the others wait for it.
mkdir -p "$(dirname "${dir}")"
exec 9>"${dir}.lock"
flock 9
if [ ! -f "${dir}/.complete" ]; then
    printf '[wheelhouse] building %s for Python %s\n' "${dir}" "${versions[*]}" >&2
    rm -rf "${dir}"
    arch="$(uname -m)"
    for v in "${versions[@]}"; do
        # shellcheck disable=SC2086 # one requirement per word
        python3 -m pip download --quiet --disable-pip-version-check --only-binary=:all: -d "${dir}" \
            --python-version "${v}" --implementation cp \
            --platform "manylinux_2_17_${arch}" --platform "manylinux2014_${arch}" --platform "manylinux_2_28_${arch}" \
            ${pins} 2> >(grep -v '^WARNING: Location' >&2)
    done
    touch "${dir}/.complete"
fi
echo "${dir}"
