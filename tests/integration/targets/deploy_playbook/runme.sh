#!/usr/bin/env bash
# playbooks/deploy-qwen122b.yml before it touches a host: --syntax-check and --list-tasks (the benchmark play is tagged
# benchmark and --skip-tags benchmark drops it), the validate play passing for the seed (it ends with the plan line of
# each server), and each inventory mistake the play refuses with its message - every one before the first task that
# would connect to a host. `--tags always` runs exactly the validation (and the roles' argument specs): controller
# only. The deployment itself is proved end to end in the lab (extensions/molecule/deploy).
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
play --list-tasks >"$out/tasks.txt"
grep -q 'play #5 (sglang_servers): Benchmark the SGLang services.*TAGS: \[benchmark\]' "$out/tasks.txt"
play --list-tasks --skip-tags benchmark >"$out/tasks-nobench.txt"
if grep -q 'Run the benchmark sweep' "$out/tasks-nobench.txt"; then echo "--skip-tags benchmark kept the benchmark" >&2; exit 1; fi
grep -q 'Smoke-test chat, thinking, tool calls and streaming' "$out/tasks-nobench.txt"

# The seed validates (no host is contacted: every task of --tags always runs on the controller).
SGLANG_API_KEY=it-key play --tags always >"$out/ok.log" 2>&1 || { tail -n 40 "$out/ok.log"; exit 1; }
grep -q 'sglang-ct: Qwen/Qwen3.5-122B-A10B@main -> /shared/models/Qwen3.5-122B-A10B' "$out/ok.log"
grep -q 'plan: FITS' "$out/ok.log"
grep -q 'revision main of Qwen/Qwen3.5-122B-A10B is a branch' "$out/ok.log"
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
  if grep -q 'PLAY \[Split the GPUs' "$out/$case.log"; then
    echo "case $case: a play after the validation started" >&2
    exit 1
  fi
}
refuse forbidden 'would go to /data/models/Qwen3.5-122B-A10B' -e llmops_model_dir=/data/models
refuse tp 'TP 2 needs exactly 2 distinct GPU indices in llmops_gpu_indices' -e llmops_tp_size=2
refuse numa 'a NUMA node that stays on nvidia on that host' -e llmops_lxc_numa_node=1
refuse uuid "Elements value for option 'llmops_gpu_indices' is of type str" -e '{"llmops_gpu_indices": ["GPU-3f2a"]}'
refuse profile 'llmops_model_profile=nope / llmops_gpu_profile=rtx-pro-6000-blackwell-server: no such profile' -e llmops_model_profile=nope
refuse fit 'cannot load' -e llmops_tp_size=2 -e '{"llmops_gpu_indices": [0, 1]}'
LLMOPS_IT_KEY='' refuse nokey 'no API key. Export SGLANG_API_KEY on the controller'
echo "deploy_playbook: all cases passed"
