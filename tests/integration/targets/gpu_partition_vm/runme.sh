#!/usr/bin/env bash
# Real-kernel test of gpu_partition (tests/vm/run-test.sh): q35 + intel-iommu guest, two identical e1000e, bind one
# by address to vfio-pci, its twin stays; four refusals (the last as non-root); systemd_device_policy_info finds
# DevicePolicy= enforced; reboot; persistence; return. The guest image is cached outside the checkout
# (LLMOPS_VM_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/llmops-inference/vm), so ansible-test's throw-away copy and
# a fresh CI clone on the same machine reuse it.
set -eux
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../setup_collection_root/collection_root.sh
source "$here/../setup_collection_root/collection_root.sh"
root="${root:?collection_root.sh sets it}"
exec "$root/tests/vm/run-test.sh"
