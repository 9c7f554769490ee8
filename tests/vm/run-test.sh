#!/usr/bin/env bash
# Real-kernel test of gpu_partition: boots the Debian 12 guest of build-guest.sh under QEMU (software emulation:
# TCG, q35 + intel-iommu with interrupt remapping) with two identical e1000e NICs on the root bus (the stand-in for
# two identical GPUs: nvidia cannot bind emulated devices) and a third e1000e that shares its IOMMU group with a
# pci-testdev behind a PCIe-to-PCI bridge (the "foreign member" case). Ansible reaches the guest over SSH on
# 127.0.0.1 (QEMU user networking, hostfwd):
#   1. tests/vm/split.yml: bind one NIC by address to vfio-pci while its twin stays on e1000e, idempotence, the
#      refusals (open handle on /dev/vfio/<group>, an interface that is UP, a foreign group member, a non-root run),
#      and the DevicePolicy= probe of systemd_device_policy_info (enforced on a real kernel with unified cgroups);
#      then, in the same boot, tests/vm/lxc.yml: a real LXC container (Debian's lxc) started with the device, mount
#      and cpuset lines lxc_gpu_config renders, on device nodes at the NVIDIA majors;
#   2. the guest powers off and boots again from the same disk (a qcow2 overlay over the cached image);
#   3. tests/vm/after-reboot.yml: the split persisted (driverctl), a role run changes nothing, the card goes back.
#
# Usage: tests/vm/run-test.sh            (exit 0 = all passed; timings at the end)
# Env:   LLMOPS_VM_KEEP=1     leave the VM running afterwards (prints how to reach it)
#        LLMOPS_VM_SMP        guest CPUs (default 2)     LLMOPS_VM_MEM  guest MiB (default 768)
#        LLMOPS_VM_CACHE      guest image cache (default ${XDG_CACHE_HOME:-~/.cache}/llmops-inference/vm)
#        LLMOPS_VM_BOOT_TIMEOUT  seconds to wait for SSH after a boot (default 600)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${HERE}/../.." && pwd)"
# shellcheck source=tests/lab/lib.sh
source "${REPO_ROOT}/tests/lab/lib.sh"
cd "${REPO_ROOT}"

VENV="${LLMOPS_VENV:-${REPO_ROOT}/.venv}"
[ -x "${VENV}/bin/ansible-playbook" ] && export PATH="${VENV}/bin:${PATH}"
CACHE="${LLMOPS_VM_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/llmops-inference/vm}"
export LLMOPS_VM_CACHE="${CACHE}"
SMP="${LLMOPS_VM_SMP:-2}"
MEM="${LLMOPS_VM_MEM:-768}"
BOOT_TIMEOUT="${LLMOPS_VM_BOOT_TIMEOUT:-600}"

started=${SECONDS}
"${HERE}/build-guest.sh"
build_s=$((SECONDS - started))
GUEST="$(readlink -f "${CACHE}/current")"

RUN="$(mktemp -d "${TMPDIR:-/tmp}/llmops-vm-test.XXXXXX")"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
SERIAL="${RUN}/serial.log"
QEMU_PID=""
SSH=(ssh -q -i "${GUEST}/id_ed25519" -p "${PORT}" -o BatchMode=yes -o StrictHostKeyChecking=no
    -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5 root@127.0.0.1)

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
    if [ -n "${QEMU_PID}" ] && kill -0 "${QEMU_PID}" 2>/dev/null; then
        if [ "${LLMOPS_VM_KEEP:-0}" = 1 ]; then
            lab_log "VM left running (pid ${QEMU_PID}): ssh -i ${GUEST}/id_ed25519 -p ${PORT} root@127.0.0.1"
            return
        fi
        kill "${QEMU_PID}" 2>/dev/null || true
        wait "${QEMU_PID}" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The cached image stays pristine: the guest writes into an overlay that lives as long as this run (and so survives
# the power cycle).
qemu-img create -q -f qcow2 -F raw -b "${GUEST}/rootfs.img" "${RUN}/disk.qcow2"

# intel-iommu must come before the PCI devices it translates for.
start_vm() {
    qemu-system-x86_64 \
        -machine q35 -accel tcg -cpu max -m "${MEM}" -smp "${SMP}" \
        -device intel-iommu,intremap=on,caching-mode=on \
        -display none -vga none -monitor none -serial "file:${SERIAL}" -no-reboot \
        -kernel "${GUEST}/vmlinuz" -initrd "${GUEST}/initrd.img" \
        -append "console=ttyS0 quiet intel_iommu=on iommu=pt mitigations=off" \
        -drive "file=${RUN}/disk.qcow2,if=none,id=root,format=qcow2,cache=unsafe" \
        -device virtio-blk-pci,drive=root,addr=0x6 \
        -netdev "user,id=ssh,hostfwd=tcp:127.0.0.1:${PORT}-:22" -device virtio-net-pci,netdev=ssh,addr=0x5 \
        -device e1000e,addr=0x2,romfile=,mac=52:54:00:00:00:02 \
        -device e1000e,addr=0x3,romfile=,mac=52:54:00:00:00:03 \
        -device pcie-pci-bridge,id=pcibr,addr=0x4 \
        -device e1000e,bus=pcibr,addr=0x1,romfile=,mac=52:54:00:00:01:01 \
        -device pci-testdev,bus=pcibr,addr=0x2 \
        >>"${RUN}/qemu.log" 2>&1 &
    QEMU_PID=$!
    lab_log "QEMU pid ${QEMU_PID}, SSH on 127.0.0.1:${PORT}, serial console in ${SERIAL}"
}

wait_for_ssh() {
    local since=${SECONDS}
    until "${SSH[@]}" true 2>/dev/null; do
        if ! kill -0 "${QEMU_PID}" 2>/dev/null; then
            cat "${RUN}/qemu.log" >&2
            tail -n 40 "${SERIAL}" >&2
            lab_die "QEMU exited before the guest was reachable"
        fi
        if [ $((SECONDS - since)) -gt "${BOOT_TIMEOUT}" ]; then
            tail -n 40 "${SERIAL}" >&2
            lab_die "no SSH after ${BOOT_TIMEOUT} s"
        fi
        sleep 1
    done
}

cat >"${RUN}/inventory.yml" <<EOF
all:
  hosts:
    gpvm:
      ansible_host: 127.0.0.1
      ansible_port: ${PORT}
      ansible_user: root
      ansible_ssh_private_key_file: ${GUEST}/id_ed25519
      # No -C (compression costs the emulated CPU more than it saves on loopback); one master connection.
      ansible_ssh_args: -o ControlMaster=auto -o ControlPersist=600s -o ControlPath=${RUN}/ssh-%C
      ansible_ssh_common_args: -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=20
      ansible_python_interpreter: /usr/bin/python3
EOF

playbook() {
    # --limit: an inventory that does not parse must fail the run, not match no host and pass.
    ansible-playbook -i "${RUN}/inventory.yml" --limit gpvm "${HERE}/$1" -e "vm_state_dir=${RUN}"
}

rc=0
boot_started=${SECONDS}
start_vm
wait_for_ssh
boot_s=$((SECONDS - boot_started))
lab_log "guest reachable after ${boot_s} s"

split_started=${SECONDS}
playbook split.yml || rc=$?
# The playbook's last task writes the state file: without it the playbook did not run to the end.
[ "${rc}" -ne 0 ] || [ -s "${RUN}/before-reboot.json" ] || rc=1
split_s=$((SECONDS - split_started))

# In the same boot: the real LXC container (no extra boot; its seconds are reported on their own).
lxc_s=0
if [ "${rc}" -eq 0 ]; then
    lxc_started=${SECONDS}
    playbook lxc.yml || rc=$?
    [ "${rc}" -ne 0 ] || [ -s "${RUN}/lxc.json" ] || rc=1
    lxc_s=$((SECONDS - lxc_started))
fi

reboot_s=0
after_s=0
if [ "${rc}" -eq 0 ]; then
    reboot_started=${SECONDS}
    # A clean shutdown (-no-reboot: QEMU exits when the guest powers off), then a cold boot from the same disk.
    "${SSH[@]}" systemctl poweroff 2>/dev/null || true
    for _ in $(seq 1 "${BOOT_TIMEOUT}"); do
        kill -0 "${QEMU_PID}" 2>/dev/null || break
        sleep 1
    done
    if kill -0 "${QEMU_PID}" 2>/dev/null; then
        tail -n 40 "${SERIAL}" >&2
        lab_die "the guest did not power off within ${BOOT_TIMEOUT} s"
    fi
    wait "${QEMU_PID}" 2>/dev/null || true
    printf '\n---- power cycle ----\n' >>"${SERIAL}"
    start_vm
    wait_for_ssh
    reboot_s=$((SECONDS - reboot_started))
    lab_log "guest reachable again ${reboot_s} s after the power-off"
    after_started=${SECONDS}
    playbook after-reboot.yml || rc=$?
    [ "${rc}" -ne 0 ] || [ -s "${RUN}/after-reboot.json" ] || rc=1
    after_s=$((SECONDS - after_started))
fi

lab_log "---- gpu_partition VM test ----"
lab_log "guest image: ${build_s} s (cached when the recipe is unchanged)"
lab_log "first boot to SSH: ${boot_s} s"
lab_log "split.yml (split, idempotence, refusals): ${split_s} s"
lab_log "lxc.yml (a real LXC container with lxc_gpu's lines): ${lxc_s} s"
lab_log "power-off + second boot to SSH: ${reboot_s} s"
lab_log "after-reboot.yml (persisted, idempotent, give back): ${after_s} s"
for state in before-reboot lxc after-reboot; do
    [ -f "${RUN}/${state}.json" ] && lab_log "${state} steps: $(cat "${RUN}/${state}.json")"
done
lab_log "total: $((SECONDS - started)) s; load: $(cut -d' ' -f1-3 /proc/loadavg); result: $([ "${rc}" -eq 0 ] && echo PASSED || echo FAILED)"
if [ "${rc}" -ne 0 ]; then
    tail -n 30 "${SERIAL}" >&2 || true
else
    [ "${LLMOPS_VM_KEEP:-0}" = 1 ] || rm -rf "${RUN}"
fi
exit "${rc}"
