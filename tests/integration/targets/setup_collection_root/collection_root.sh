# shellcheck shell=bash
# Sourced by the script targets (aliases: needs/target/setup_collection_root): sets $root to the collection root.
# ansible-test runs a copy of the targets and puts the collection on ANSIBLE_COLLECTIONS_PATH; a run by hand from a
# checkout finds it four levels up and resolves llmops.inference through the checkout's .collections link.
root=""
IFS=: read -r -a _llmops_paths <<< "${ANSIBLE_COLLECTIONS_PATH:-}"
for _llmops_path in "${_llmops_paths[@]}"; do
  if [ -f "${_llmops_path}/ansible_collections/llmops/inference/profiles/sglang.yml" ]; then
    root="${_llmops_path}/ansible_collections/llmops/inference"
    break
  fi
done
if [ -z "${root}" ]; then
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd)"
  export ANSIBLE_COLLECTIONS_PATH="${root}/.collections"
fi
unset _llmops_paths _llmops_path
