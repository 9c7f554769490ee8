#!/usr/bin/env bash
# Runs under `ansible-test integration --local vram_plan_info` and by hand from anywhere in a checkout.
set -eux
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../setup_collection_root/collection_root.sh
source "$here/../setup_collection_root/collection_root.sh"
root="${root:?}"  # set by collection_root.sh (shellcheck cannot see it)
ansible-playbook -i localhost, -c local "$here/playbook.yml" -e "llmops_test_root=$root" "$@"
