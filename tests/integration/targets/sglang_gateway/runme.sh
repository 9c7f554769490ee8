#!/usr/bin/env bash
# The gateway lab on localhost (benchmarks/gateway_bench.py --check): the pinned smg installed from
# profiles/locks/smg-<pin>.txt with --require-hashes into a cached venv, run through the sglang_gateway role's own
# launcher (smg-launch, the key as a credential file), two real llama.cpp OpenAI servers of the benchmark lab on the
# CPU (tests/bench/setup-lab.sh: the tiny model). Cases readiness, auth, spread, latency, kill, no-leak, "then":
# the sglang_benchmark role's smoke tests and a sweep with SGLang's own client through the gateway
# (through_gateway.yml), and pd/pd-down: a second smg with pd_check.gateway_args()'s --pd-disaggregation argv in
# front of a prefill and a decode SGLang stand-in (tests/sglang/standin_server.py; about 10 s,
# docs/pd_disaggregation.md). The rolling swap runs once in CI, for real, through playbooks/rolling_swap.yml on systemd
# replicas (extensions/molecule/sglang_gateway); `gateway_bench.py` without --skip swap also swaps here, through
# the module llmops.inference.sglang_gateway_worker. Runs under
# `ansible-test integration --local sglang_gateway` and by hand.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../setup_collection_root/collection_root.sh
source "$here/../setup_collection_root/collection_root.sh"
root="${root:?}"
export ANSIBLE_CONFIG="${ANSIBLE_CONFIG:-$root/ansible.cfg}"
command -v ansible >/dev/null 2>&1 || export PATH="$root/.venv/bin:$PATH"
lab="$("${root}/tests/bench/setup-lab.sh")"
bench_python="$(sed -n 's/^BENCH_PYTHON=//p' <<<"${lab}")"
lab_python="$(sed -n 's/^LAB_PYTHON=//p' <<<"${lab}")"
tiny_model="$(sed -n 's/^TINY_MODEL=//p' <<<"${lab}")"
# The interpreter that runs ansible (the tool venv's), else python3: the bench itself needs only the standard library
# (under ansible-test, ansible and ansible-playbook on PATH are wrappers without a python beside them).
python="$(dirname "$(command -v ansible-playbook)")/python"
[ -x "${python}" ] || python="$(command -v python3)"
# The lock of the pin (version: of profiles/sglang_gateway.yml), or of SMG_VERSION, another release of its table:
# profiles/locks/ holds one lock per release, so no glob picks it.
lock="${root}/profiles/$("${python}" -c 'import sys, yaml
table = yaml.safe_load(open(sys.argv[1]))
print(table["releases"][sys.argv[2] or str(table["version"])]["lock"])' "${root}/profiles/sglang_gateway.yml" "${SMG_VERSION:-}")"
cache="${XDG_CACHE_HOME:-${HOME}/.cache}/llmops-inference"
venv="${cache}/smg-$(sha256sum "${lock}" | cut -c1-12)"
if [ ! -f "${venv}/.complete" ]; then
    rm -rf "${venv}"
    python3 -m venv "${venv}"
    "${venv}/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes -r "${lock}"
    touch "${venv}/.complete"
fi
state="$(mktemp -d "${TMPDIR:-/var/tmp}/sglang_gateway_it.XXXXXX")"
trap 'rm -rf "${state}"' EXIT
# The replicas' deployment for the roles run through the gateway (the seed profile with the tiny model's directory
# as the tokenizer and the lab SGLang venv as the client's; the key comes from the bench's key file).
cat >"${state}/lab.yml" <<YAML
lab_state: ${state}
llmops_model_profile: qwen3.5-122b-a10b
llmops_gpu_profile: rtx-pro-6000-blackwell-server
llmops_tp_size: 4
llmops_model_path: ${tiny_model}
llmops_served_model_name: tiny
llmops_host_sev_snp: true
llmops_sglang_venv: $(dirname "$(dirname "${bench_python}")")
llmops_api_key: "{{ lookup('ansible.builtin.file', lookup('ansible.builtin.env', 'GATEWAY_KEY_FILE')) }}"
YAML
printf '[sglang_servers]\nlocalhost ansible_connection=local ansible_python_interpreter=%s\n' "${python}" >"${state}/inventory"
then="ansible-playbook -i ${state}/inventory -e @${state}/lab.yml ${here}/through_gateway.yml >${state}/then.log 2>&1 \
|| { grep -v '^<localhost>' ${state}/then.log | tail -n 60; exit 1; }; grep -o 'smoke 6/6 and [^\"]*' ${state}/then.log"
"${python}" "${root}/benchmarks/gateway_bench.py" --smg-python "${venv}/bin/python" \
    --launcher "${root}/roles/sglang_gateway/files/usr/local/libexec/llmops/smg-launch" \
    --lab-python "${lab_python}" --model "${tiny_model}" --repo "${root}" --skip swap --then "${then}" --check
