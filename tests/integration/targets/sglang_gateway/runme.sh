#!/usr/bin/env bash
# The gateway lab on localhost (benchmarks/gateway_bench.py --check): the pinned smg installed from
# profiles/locks/smg-<pin>.txt with --require-hashes into a cached venv, run through the sglang_gateway role's own
# launcher (smg-launch, the key as a credential file), two real llama.cpp OpenAI servers of the benchmark lab on the
# CPU (tests/bench/setup-lab.sh: the tiny model), and the module llmops.inference.sglang_gateway_worker for every drain
# and register of the rolling swap. Prints the latency and swap table. Runs under
# `ansible-test integration --local sglang_gateway` and by hand.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../setup_collection_root/collection_root.sh
source "$here/../setup_collection_root/collection_root.sh"
root="${root:?}"
command -v ansible >/dev/null 2>&1 || export PATH="$root/.venv/bin:$PATH"
lab="$("${root}/tests/bench/setup-lab.sh")"
lab_python="$(sed -n 's/^LAB_PYTHON=//p' <<<"${lab}")"
tiny_model="$(sed -n 's/^TINY_MODEL=//p' <<<"${lab}")"
lock="$(ls "${root}"/profiles/locks/smg-*.txt | head -n 1)"
cache="${XDG_CACHE_HOME:-${HOME}/.cache}/llmops-inference"
venv="${cache}/smg-$(sha256sum "${lock}" | cut -c1-12)"
if [ ! -f "${venv}/.complete" ]; then
    rm -rf "${venv}"
    python3 -m venv "${venv}"
    "${venv}/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes -r "${lock}"
    touch "${venv}/.complete"
fi
python="$(dirname "$(command -v ansible)")/python"
exec "${python}" "${root}/benchmarks/gateway_bench.py" --smg-python "${venv}/bin/python" \
    --launcher "${root}/roles/sglang_gateway/files/usr/local/libexec/llmops/smg-launch" \
    --lab-python "${lab_python}" --model "${tiny_model}" --repo "${root}" --check
