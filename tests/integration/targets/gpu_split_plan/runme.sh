#!/usr/bin/env bash
# playbooks/plan_gpu_split.yml end to end (the offline GPU split plan and container GPU lines of `make plan`): the
# example inventory plans the seed split and renders container 101's devN lines; a group shared with a foreign NIC
# fails the plan with the refusal; the gpu_partition role planned against a fixture root writes nothing.
# Runs under `ansible-test integration --local gpu_split_plan` and by hand.
set -eux
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../setup_collection_root/collection_root.sh
source "$here/../setup_collection_root/collection_root.sh"
root="${root:?collection_root.sh sets it}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# The seed host before the split: NUMA 1 goes to vfio-pci (with the audio functions), NUMA 0 stays on nvidia.
ansible-playbook "$root/playbooks/plan_gpu_split.yml" -i "$root/inventories/example" -e "llmops_plan_output_dir=$out/seed"
plan="$out/seed/pve1/gpu_partition.txt"
test "$(grep -c ': nvidia (/dev/nvidia[4-7]) -> vfio-pci (+ .1 snd_hda_intel -> vfio-pci)' "$plan")" -eq 4
test "$(grep -c 'NUMA 0, .*: stays on nvidia, /dev/nvidia[0-3] ' "$plan")" -eq 4
grep -q '^0000:81:00.0 \[10de:2bb5\] NUMA 1, IOMMU group 14: nvidia (/dev/nvidia4) -> vfio-pci' "$plan"
# The VM side: VM 200 of the inventory gets the four vfio-pci cards, in one qm set (the last line).
test "$(tail -n 1 "$plan")" = "qm set 200 --hostpci0 0000:81:00.0,pcie=1 --hostpci1 0000:a1:00.0,pcie=1 \
--hostpci2 0000:c1:00.0,pcie=1 --hostpci3 0000:e1:00.0,pcie=1"
diff -u - <(grep -v '^#' "$out/seed/sglang-ct/lxc_gpu.conf") <<'CONF'
dev0: /dev/nvidia0
dev1: /dev/nvidia1
dev2: /dev/nvidia2
dev3: /dev/nvidia3
dev4: /dev/nvidiactl
dev5: /dev/nvidia-uvm
dev6: /dev/nvidia-uvm-tools
lxc.cgroup2.cpuset.cpus: 0-63,128-191
lxc.cgroup2.cpuset.mems: 0
CONF
# Nothing below the fixture root was written by the plan (no driverctl state, no override).
test ! -e "$out/seed.sysfs/pve1/seed_pve_8x_rtx6000_presplit/etc"
grep -q '(null)' "$out/seed.sysfs/pve1/seed_pve_8x_rtx6000_presplit/sys/bus/pci/devices/0000:81:00.0/driver_override"

# After the split (minors 2, 0, 3, 1 on NUMA 0) in raw mode: the lines follow the driver's minors and the fixture's
# dynamic nvidia-uvm major.
ansible-playbook "$root/playbooks/plan_gpu_split.yml" -i "$root/inventories/example" -e "llmops_plan_output_dir=$out/post" \
  -e llmops_plan_sysfs_fixture=seed_pve_8x_rtx6000 -e lxc_gpu_config_mode=raw
test "$(grep -c 'NUMA 1, .*: on vfio-pci, boot-time driver (driverctl): none -> vfio-pci (+ .1 vfio-pci)' \
  "$out/post/pve1/gpu_partition.txt")" -eq 4
grep -q '^# /etc/pve/lxc/101.conf on pve1: GPU lines (nvidia-uvm major 511)$' "$out/post/sglang-ct/lxc_gpu.conf"
test "$(grep -c '^lxc.cgroup2.devices.allow: c 195:[0-3] rwm$' "$out/post/sglang-ct/lxc_gpu.conf")" -eq 4
grep -q '^lxc.cgroup2.devices.allow: c 511:0 rwm$' "$out/post/sglang-ct/lxc_gpu.conf"

# A group shared with an i40e NIC (PCIe switch without ACS): the plan fails and says why.
if ansible-playbook "$root/playbooks/plan_gpu_split.yml" -i "$root/inventories/example" \
    -e "llmops_plan_output_dir=$out/shared" -e llmops_plan_sysfs_fixture=shared_group \
    -e '{"llmops_host_vfio_numa_nodes": [], "llmops_host_nvidia_numa_nodes": [],
         "gpu_partition_host_devices": [{"address": "0000:03:00.0", "driver": "vfio-pci"}]}' >"$out/shared.log" 2>&1; then
  cat "$out/shared.log"
  echo "the plan accepted a group shared with a foreign device" >&2
  exit 1
fi
grep -q 'IOMMU group 14 of 0000:03:00.0 also holds 0000:04:00.0 \[8086:1572' "$out/shared.log"

# The cpuset is decided from the inventory (llmops_host_numa_cpus); a sysfs tree whose GPUs are local to other CPUs
# fails the plan with both lists, as lxc_gpu_cpuset_verify fails the deploy.
if ansible-playbook "$root/playbooks/plan_gpu_split.yml" -i "$root/inventories/example" -e "llmops_plan_output_dir=$out/swap" \
    -e '{"llmops_host_numa_cpus": {"0": "64-127,192-255", "1": "0-63,128-191"}}' >"$out/swap.log" 2>&1; then
  cat "$out/swap.log"
  echo "the plan accepted a NUMA CPU list the sysfs tree contradicts" >&2
  exit 1
fi
tr -s ' \n' ' ' <"$out/swap.log" | grep -qF 'llmops_host_numa_cpus of pve1 (node 0: 64-127,192-255) says CPUs 64-127,192-255, memory node(s) 0, but the GPUs 0000:01:00.0, 0000:21:00.0, 0000:41:00.0, 0000:61:00.0 below'
tr -s ' \n' ' ' <"$out/swap.log" | grep -qF 'are local to CPUs 0-63,128-191 on NUMA node(s) 0'
test ! -e "$out/swap/sglang-ct/lxc_gpu.conf"
