#!/usr/bin/env bash
# Build (once per pin) the virtualenv that runs SGLang's own benchmark client, `python -m sglang.benchmark.serving`,
# in the GPU-less lab: the full SGLang install from the pin's hash lock (profiles/locks/sglang-<pin>-py<X.Y>.txt;
# `pip install --require-hashes --no-deps -r`, then `pip check`), exactly what the sglang_server role installs on a
# serving host (where the benchmark role runs the client from the server's venv). About 11 GB and 6+ min cold.
# Without a lock for this Python it resolves the pinned packages afresh (that venv cannot match a lock: generate one
# with tests/tools/sglang_lock.py). A fresh resolution was the default until a cold run on 2026-12-02 resolved
# anthropic 2.16.0, httpx 0.29.0 and uvicorn 0.55.0, released after the lock: the lab installs what hosts install.
# Lighter sets were measured and do not run the client (docs/sglang_benchmark.md, "Lab: the benchmark client venv"):
#   - a CPU-torch venv (--no-deps sglang + CPU torch 2.13): the client imports sglang.srt.configs, which imports
#     torchvision, and PyPI's torchvision links libtorch_cuda.so ("operator torchvision::nms does not exist");
#   - --no-deps sglang + CUDA torch 2.14.1 + torchvision + transformers + datasets + the obvious imports: the import
#     chain continues into sglang.srt.layers / sglang.kernels (apache-tvm-ffi, sglang-kernel, flashinfer, ...), i.e.
#     the whole runtime.
# Importing works without a GPU; only the server needs libcuda. The venv lives outside the checkout (fresh CI clones
# on this machine reuse it) and is rebuilt only when the version or this recipe changes.
#
# Usage: tests/bench/setup-bench-venv.sh [VERSION]      (default: the pin in profiles/sglang.yml)
# Prints the venv's python on stdout (last line). Env:
#   LLMOPS_SGLANG_VENV_ROOT  where venvs live (default ${XDG_CACHE_HOME:-~/.cache}/llmops-inference)
#   LLMOPS_SGLANG_PYTHON     interpreter for the venv (default python3; the pinned SGLang needs >= 3.11)
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VERSION="${1:-$(sed -n -E 's/^version:[[:space:]]*"?([0-9][0-9.]*)"?.*/\1/p' "${REPO_ROOT}/profiles/sglang.yml")}"
[ -n "${VERSION}" ] || { echo "setup-bench-venv: no version given and none found in profiles/sglang.yml" >&2; exit 1; }
PY="${LLMOPS_SGLANG_PYTHON:-python3}"

# The packages of profiles/sglang.yml (sglang and its kernel package at the pinned versions), with all their deps;
# another release (make sglang-release VERSION=..) is sglang==VERSION, whose own requirements pin its kernel.
PINNED="$(sed -n -E 's/^version:[[:space:]]*"?([0-9][0-9.]*)"?.*/\1/p' "${REPO_ROOT}/profiles/sglang.yml")"
PKGS=()
if [ "${VERSION}" = "${PINNED}" ]; then
    mapfile -t PKGS < <(sed -n -E '/^packages:/,/^[a-z]/ s/^[[:space:]]+([A-Za-z0-9_.-]+):[[:space:]]*"?([0-9][0-9.]*)"?.*/\1==\2/p' \
        "${REPO_ROOT}/profiles/sglang.yml")
fi
[ "${#PKGS[@]}" -gt 0 ] || PKGS=("sglang==${VERSION}")
PYVER="$("${PY}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
LOCK="${REPO_ROOT}/profiles/locks/sglang-${VERSION}-py${PYVER}.txt"
if [ -f "${LOCK}" ]; then
    # The lock is the whole resolution: pip installs exactly it, no resolver (pip 23's hash mode refuses a
    # dependency with extras such as nvidia-cudnn-frontend's nvidia-cutlass-dsl[cu13]); pip check proves it complete.
    DEPS=(--require-hashes --no-deps -r "${LOCK}")
    LOCK_ID="$(sha256sum "${LOCK}" | cut -c1-12)"
else
    echo "setup-bench-venv: no lock ${LOCK}; resolving ${PKGS[*]} afresh" >&2
    DEPS=("${PKGS[@]}")
    LOCK_ID=none
fi
# Requirements of the release's own wheel installed at another version (install_overrides of its release-table entry,
# e.g. a pre-release that only a vendor index serves): pip cannot override a requirement, so without a lock the wheel
# goes in with --no-deps and its requirements are resolved with the override (tests/tools/sglang_install.py); with or
# without a lock, pip check then accepts exactly the line each override makes.
TOOL_PY="${REPO_ROOT}/.venv/bin/python"
[ -x "${TOOL_PY}" ] || TOOL_PY=python3
OVERRIDES="$("${TOOL_PY}" "${REPO_ROOT}/tests/tools/sglang_install.py" overrides "${VERSION}" | tr '\n' ' ')"
RECIPE="$(printf '%s\n' "${VERSION}" "${PY}" "${PKGS[@]}" "lock ${LOCK_ID}" "overrides ${OVERRIDES}" \
    | sha256sum | cut -c1-10)"
ROOT="${LLMOPS_SGLANG_VENV_ROOT:-${XDG_CACHE_HOME:-${HOME}/.cache}/llmops-inference}"
VENV="${ROOT}/sglang-bench-${VERSION}-${RECIPE}"

# This machine's pip config names local index folders that may not exist: drop pip's warnings about them.
quiet() { "$@" 2> >(grep -v "^WARNING: Location 'file:" >&2); }

mkdir -p "${ROOT}"
exec 9>"${ROOT}/.sglang-bench-${VERSION}.lock"
flock 9
if [ -f "${VENV}/.complete" ]; then
    echo "setup-bench-venv: ${VENV} is current (cached)" >&2
    echo "${VENV}/bin/python"
    exit 0
fi
started=${SECONDS}
rm -rf "${VENV}"
"${PY}" -m venv "${VENV}"
# From the package index alone, as a serving host installs: this machine's pip configuration adds local wheels and a
# constraint file (find-links /opt/wheels holds torch 2.13.0+cpu, which satisfies a release's torch==2.13.0 and breaks
# torchvision: "operator torchvision::nms does not exist", measured with 0.5.18).
PIP=(env -u PIP_FIND_LINKS -u PIP_CONSTRAINT -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null
     "${VENV}/bin/python" -m pip install --quiet --disable-pip-version-check)
if [ -n "${OVERRIDES// /}" ] && [ "${LOCK_ID}" = none ]; then
    echo "setup-bench-venv: sglang ${VERSION} installs ${OVERRIDES}at another version than it requires (install_overrides)" >&2
    quiet "${PIP[@]}" --no-deps "${PKGS[@]}"
    mapfile -t REQS < <("${TOOL_PY}" "${REPO_ROOT}/tests/tools/sglang_install.py" requirements "${VERSION}" "${VENV}/bin/python")
    quiet "${PIP[@]}" "${REQS[@]}"
else
    quiet "${PIP[@]}" "${DEPS[@]}"
fi
"${TOOL_PY}" "${REPO_ROOT}/tests/tools/sglang_install.py" check "${VERSION}" "${VENV}/bin/python" >&2
# Proof the real client loads and parses its arguments before the venv counts as built.
# (sglang.benchmark.serving; releases before it moved there have sglang.bench_serving.)
"${VENV}/bin/python" -m sglang.benchmark.serving --help >/dev/null 2>&1 \
    || "${VENV}/bin/python" -m sglang.bench_serving --help >/dev/null
rm -f "${ROOT}"/sglang-bench-"${VERSION}"-*/.complete 2>/dev/null || true
touch "${VENV}/.complete"
for old in "${ROOT}"/sglang-bench-"${VERSION}"-*; do
    [ "${old}" = "${VENV}" ] || rm -rf "${old}"
done
echo "setup-bench-venv: built ${VENV} in $((SECONDS - started)) s ($(du -sh "${VENV}" | cut -f1))" >&2
echo "${VENV}/bin/python"
