#!/usr/bin/env bash
# playbooks/deploy-qwen122b.yml (and the generic playbooks/deploy.yml it wraps) before it touches a host:
# --syntax-check and --list-tasks (the benchmark play is tagged benchmark and --skip-tags benchmark drops it), the
# resolve play passing for the seed (it ends with the summary line of each host), the seed's profile as the default
# of deploy-qwen122b.yml, and a few inventory mistakes refused with their message before the first task that would
# connect to a host (the full table of bad inputs is the bad_inputs target's). `--tags always` runs exactly the
# resolution on the controller. The deployment itself is proved end to end in the lab (extensions/molecule/deploy).
# Runs under `ansible-test integration --local deploy_playbook` and by hand.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../setup_collection_root/collection_root.sh
source "$here/../setup_collection_root/collection_root.sh"
root="${root:?}"  # set by collection_root.sh (shellcheck cannot see it)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
play() { ansible-playbook "$root/playbooks/deploy-qwen122b.yml" -i "$root/inventories/example" "$@"; }

play --syntax-check >/dev/null
ansible-playbook "$root/playbooks/deploy.yml" -i "$root/inventories/example" --syntax-check >/dev/null
play --list-tasks >"$out/tasks.txt"
grep -q 'play #9 (sglang_servers): Benchmark the SGLang services.*TAGS: \[benchmark\]' "$out/tasks.txt"
grep -q 'play #3 (proxmox_hosts:sglang_servers): Check the hosts before anything changes (read-only)' "$out/tasks.txt"
play --list-tasks --skip-tags benchmark >"$out/tasks-nobench.txt"
if grep -q 'Run the benchmark sweep' "$out/tasks-nobench.txt"; then echo "--skip-tags benchmark kept the benchmark" >&2; exit 1; fi
grep -q 'Smoke-test chat, thinking, tool calls and streaming' "$out/tasks-nobench.txt"

# The seed validates (no host is contacted: every task of --tags always runs on the controller).
SGLANG_API_KEY=it-key play --tags always >"$out/ok.log" 2>&1 || { tail -n 40 "$out/ok.log"; exit 1; }
grep -q 'sglang-ct: Qwen/Qwen3.5-122B-A10B@main -> /shared/models/Qwen3.5-122B-A10B@main,' "$out/ok.log"
grep -q 'plan: FITS' "$out/ok.log"
tr -s ' \n' ' ' <"$out/ok.log" | grep -qF 'main of Qwen/Qwen3.5-122B-A10B is a branch or tag and not locked yet'
grep -q 'pve1: 8 GPU(s), vfio-pci 0000:81:00.0, 0000:a1:00.0, 0000:c1:00.0, 0000:e1:00.0' "$out/ok.log"
# It ends with the summary make plan prints (the last play, tag always; plugins/plugin_utils/views/deployment_summary.py).
tail -n 20 "$out/ok.log" | grep -q 'TASK \[Show the summary (as make plan prints it)\]'
tr -s ' \n' ' ' <"$out/ok.log" | grep -qF 'sglang-ct FITS (tight) qwen3.5-122b-a10b on 4 x RTX PRO 6000 Blackwell Server, TP4'
tr -s ' \n' ' ' <"$out/ok.log" | grep -qF 'KV tokens 684,739 | max running requests 21 (bound by mamba slots)'
# A lock next to the inventory (written by the first deploy's preflight) decides the commit and its directory.
cp -a "$root/inventories/example" "$out/locked-inventory"
printf 'schema: 1\nhosts:\n  sglang-ct: {repo_id: Qwen/Qwen3.5-122B-A10B, requested: main, commit: %s, locked: "2026-12-01T00:00:00Z"}\n' \
  0123456789abcdef0123456789abcdef01234567 >"$out/locked-inventory/llmops-lock.yml"
SGLANG_API_KEY=it-key ansible-playbook "$root/playbooks/deploy-qwen122b.yml" -i "$out/locked-inventory" --tags always >"$out/locked.log" 2>&1 || { tail -n 40 "$out/locked.log"; exit 1; }
grep -q 'sglang-ct: Qwen/Qwen3.5-122B-A10B@0123456789abcdef0123456789abcdef01234567 -> /shared/models/Qwen3.5-122B-A10B@0123456789ab,' "$out/locked.log"
if grep -q 'not locked yet' "$out/locked.log"; then echo "the lock was not read" >&2; exit 1; fi
# deploy-qwen122b.yml defaults the profile; an inventory without one is served the seed's model.
cp -a "$root/inventories/example" "$out/noprofile-inventory"
sed -i '/^llmops_model_profile:/d' "$out/noprofile-inventory/group_vars/sglang_servers.yml"
SGLANG_API_KEY=it-key ansible-playbook "$root/playbooks/deploy-qwen122b.yml" -i "$out/noprofile-inventory" --tags always \
  >"$out/default.log" 2>&1 || { tail -n 40 "$out/default.log"; exit 1; }
grep -q 'sglang-ct: Qwen/Qwen3.5-122B-A10B@main' "$out/default.log"
# The generic playbook has no default: it names what is missing and the profiles there are.
if SGLANG_API_KEY=it-key ansible-playbook "$root/playbooks/deploy.yml" -i "$out/noprofile-inventory" --tags always \
    >"$out/noprofile.log" 2>&1; then echo "deploy.yml passed without a model profile" >&2; exit 1; fi
tr -s ' \n' ' ' <"$out/noprofile.log" | grep -qF 'llmops_model_profile: is required for a host of sglang_servers'
if grep -q 'it-key' "$out/ok.log"; then echo "the API key is in the output" >&2; exit 1; fi

# refuse CASE EXPECTED [ARGS...]: the run fails in the validate play (no later play starts) with EXPECTED in its output.
refuse() {
  local case="$1" expected="$2"
  shift 2
  if SGLANG_API_KEY="${LLMOPS_IT_KEY-it-key}" play --tags always "$@" >"$out/$case.log" 2>&1; then
    echo "case $case: the validation passed" >&2
    exit 1
  fi
  if ! tr -s ' \n' ' ' <"$out/$case.log" | grep -qF "$expected"; then
    tail -n 40 "$out/$case.log" >&2
    echo "case $case: no '$expected' in the output" >&2
    exit 1
  fi
  if grep -q 'PLAY \[Check the hosts' "$out/$case.log"; then
    echo "case $case: a play after the validation started" >&2
    exit 1
  fi
}
# The full table of refusals runs through deploy.yml in the bad_inputs target; through the wrapper, three of them.
refuse forbidden "llmops_model_dir = '/data/models': the model would go to /data/models/Qwen3.5-122B-A10B@main" -e llmops_model_dir=/data/models
refuse fit 'cannot load' -e llmops_tp_size=2 -e '{"llmops_gpu_indices": [0, 1]}'
LLMOPS_IT_KEY='' refuse nokey 'llmops_api_key: no API key: SGLANG_API_KEY is not set on the controller'
# The read-only preflight of a Proxmox host, run for real on this machine (connection local, no NVIDIA GPU here):
# the inventory's GPUs are not this host's, so the run stops in the preflight, before gpu_partition changes anything.
if SGLANG_API_KEY=it-key play --limit pve1 --tags preflight -e ansible_connection=local \
    -e "ansible_python_interpreter=$(command -v python3)" >"$out/preflight.log" 2>&1; then
  echo "the Proxmox preflight passed on a host without these GPUs" >&2
  exit 1
fi
tr -s ' \n' ' ' <"$out/preflight.log" | grep -qF 'pve1: llmops_host_gpus does not match the host: 0000:01:00.0 is not a GPU of the host'
if grep -q 'PLAY \[Split the GPUs' "$out/preflight.log" && grep -q 'TASK \[llmops.inference.gpu_partition' "$out/preflight.log"; then
  echo "gpu_partition ran after a failed preflight" >&2
  exit 1
fi
echo "deploy_playbook: all cases passed"
