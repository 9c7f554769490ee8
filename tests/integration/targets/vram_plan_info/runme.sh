#!/usr/bin/env bash
# Runs under `ansible-test integration --local vram_plan_info` and by hand from anywhere in a checkout.
set -eux
here="$(cd "$(dirname "$0")" && pwd)"
# ansible-test runs a copy of this directory and puts the collection on ANSIBLE_COLLECTIONS_PATH; a checkout run
# finds it four levels up and resolves llmops.inference through the checkout's .collections link.
root=""
IFS=: read -r -a paths <<< "${ANSIBLE_COLLECTIONS_PATH:-}"
for path in "${paths[@]}"; do
  if [ -f "$path/ansible_collections/llmops/inference/profiles/sglang.yml" ]; then
    root="$path/ansible_collections/llmops/inference"
    break
  fi
done
if [ -z "$root" ]; then
  root="$(cd "$here/../../../.." && pwd)"
  export ANSIBLE_COLLECTIONS_PATH="$root/.collections"
fi
ansible-playbook -i localhost, -c local "$here/playbook.yml" -e "llmops_test_root=$root" "$@"
