#!/usr/bin/env bash
# The benchmark lab's CPU pieces, built once and cached outside the checkout (fresh CI clones on this machine reuse
# them). No second venv: everything runs on the ONE lab SGLang venv of setup-bench-venv.sh (full sglang install: it
# already has torch, transformers, tokenizers, safetensors, numpy, pyyaml, tqdm), plus a small overlay directory
# (pip --target, ~40 MB) with the two packages SGLang does not bring: xllamacpp (llama.cpp's server, the CPU stand-in
# for SGLang) and gguf (writes the tiny model for it). The overlay goes on PYTHONPATH through the wrapper
# <overlay>/bin/python, so the SGLang venv stays exactly what the sglang_server role installs on a serving host.
# Then the tiny model (tests/bench/make_tiny_model.py), keyed by the builder script, the smoke prompts it is trained
# on (roles/sglang_benchmark/defaults/main.yml) and the venv recipe.
#
# Usage: tests/bench/setup-lab.sh   -> prints BENCH_PYTHON=..., LAB_PYTHON=... and TINY_MODEL=... (dir) on stdout
# Env: LLMOPS_SGLANG_VENV_ROOT (default ${XDG_CACHE_HOME:-~/.cache}/llmops-inference), and those of setup-bench-venv.sh
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ROOT="${LLMOPS_SGLANG_VENV_ROOT:-${XDG_CACHE_HOME:-${HOME}/.cache}/llmops-inference}"
log() { printf '[setup-lab %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# This machine's pip config names local index folders that may not exist: drop pip's warnings about them.
quiet() { "$@" 2> >(grep -v "^WARNING: Location 'file:" >&2); }

BENCH_PYTHON="$("${REPO_ROOT}/tests/bench/setup-bench-venv.sh" | tail -n 1)"
# Exact pins; both are self-contained wheels (gguf's numpy/pyyaml/tqdm come from the SGLang venv).
DEPS=(xllamacpp==2026.10.11549 gguf==0.19.0)
RECIPE="$(printf '%s\n' "${BENCH_PYTHON}" "${DEPS[@]}" | sha256sum | cut -c1-10)"
LAB="${ROOT}/bench-lab-${RECIPE}"

mkdir -p "${ROOT}"
exec 9>"${ROOT}/.bench-lab.lock"
flock 9
if [ ! -f "${LAB}/.complete" ]; then
    started=${SECONDS}
    log "building ${LAB} (overlay of ${BENCH_PYTHON})"
    rm -rf "${LAB}"
    mkdir -p "${LAB}/bin"
    quiet "${BENCH_PYTHON}" -m pip install --quiet --disable-pip-version-check --no-deps --target "${LAB}/site" "${DEPS[@]}"
    cat >"${LAB}/bin/python" <<EOF
#!/bin/sh
# The lab SGLang venv's python with the lab overlay (xllamacpp, gguf) on its path (tests/bench/setup-lab.sh).
PYTHONPATH="${LAB}/site\${PYTHONPATH:+:\${PYTHONPATH}}" exec "${BENCH_PYTHON}" "\$@"
EOF
    chmod 0755 "${LAB}/bin/python"
    "${LAB}/bin/python" -c 'import xllamacpp, gguf, torch, transformers, tokenizers, safetensors, yaml'
    touch "${LAB}/.complete"
    for old in "${ROOT}"/bench-lab-*; do
        [ "${old}" = "${LAB}" ] || rm -rf "${old}"
    done
    log "built the lab overlay in $((SECONDS - started)) s ($(du -sh "${LAB}" | cut -f1))"
fi
LAB_PYTHON="${LAB}/bin/python"

# The model depends on the builder, the prompts it learns and the library versions (fixed by the recipe).
KEY="$( { cat "${REPO_ROOT}/tests/bench/make_tiny_model.py"; echo "${RECIPE}";
          "${LAB_PYTHON}" -c 'import json, sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
print(json.dumps([d[k] for k in ("sglang_benchmark_smoke_chat_prompt", "sglang_benchmark_smoke_thinking_prompt",
                                 "sglang_benchmark_smoke_tool")], sort_keys=True))' "${REPO_ROOT}/roles/sglang_benchmark/defaults/main.yml"; } \
        | sha256sum | cut -c1-12)"
MODEL="${ROOT}/tiny-model-${KEY}"
if [ ! -f "${MODEL}/.complete" ]; then
    started=${SECONDS}
    log "training the tiny model into ${MODEL}"
    rm -rf "${MODEL}"
    "${LAB_PYTHON}" "${REPO_ROOT}/tests/bench/make_tiny_model.py" "${MODEL}"
    touch "${MODEL}/.complete"
    for old in "${ROOT}"/tiny-model-*; do
        [ "${old}" = "${MODEL}" ] || rm -rf "${old}"
    done
    log "built the tiny model in $((SECONDS - started)) s"
fi
echo "BENCH_PYTHON=${BENCH_PYTHON}"
echo "LAB_PYTHON=${LAB_PYTHON}"
echo "TINY_MODEL=${MODEL}"
