#!/usr/bin/env bash
# Build the Debian 12 guest for the gpu_partition real-kernel test (tests/vm/run-test.sh): a debootstrap root with
# systemd, udev, openssh-server, driverctl and python3, Debian's 6.1 kernel unpacked into it, and a small busybox
# initramfs that only loads virtio_blk + ext4 and hands over to systemd (Debian's own initramfs probes every device
# under software emulation, which costs seconds on each boot). The root goes into an ext4 image with `mkfs.ext4 -d`
# (no loop mount).
#
# Output, cached outside the checkout and keyed by a hash of this recipe (the kernel package version included):
#   ${LLMOPS_VM_CACHE:-${XDG_CACHE_HOME:-~/.cache}/llmops-inference/vm}/<hash>/{rootfs.img,vmlinuz,initrd.img,id_ed25519}
# and <cache>/current -> <hash>. A second run with an unchanged recipe does nothing.
#
# Usage: tests/vm/build-guest.sh [--force]
# Env:   LLMOPS_VM_MIRROR  Debian mirror (default: the one this machine's apt uses)
#        LLMOPS_VM_CACHE   cache directory (see above)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${HERE}/../.." && pwd)"
# shellcheck source=tests/lab/lib.sh
source "${REPO_ROOT}/tests/lab/lib.sh"
export PATH="${PATH}:/usr/sbin:/sbin"

# Bump when something outside the recipe text below changes the image.
RECIPE_VERSION=5
SUITE=bookworm
# driverctl is the persistence mechanism under test; iproute2 brings an interface UP for the "in use" refusal.
# dbus: systemd-run (the DevicePolicy= probe of systemd_device_policy_info) needs the system bus, as on every real host.
# lxc: Debian's LXC, which starts a real container with the device, mount and cpuset lines lxc_gpu renders (lxc.yml).
GUEST_PACKAGES="systemd-sysv,udev,openssh-server,driverctl,python3,kmod,iproute2,dbus,lxc"
# Modules the initramfs loads to mount the root (with their dependencies, resolved by modprobe --show-depends).
INITRD_MODULES="virtio_pci virtio_blk crc32c_generic ext4"
IMAGE_SIZE=1G

CACHE="${LLMOPS_VM_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/llmops-inference/vm}"
MIRROR="${LLMOPS_VM_MIRROR:-$(lab_debian_mirror)}"

# Runs on the finished root as files (nothing executes inside it). Part of the recipe hash.
customize_rootfs() {
    local root="$1" pubkey="$2"
    printf 'gpvm\n' >"${root}/etc/hostname"
    printf '127.0.0.1 localhost\n127.0.1.1 gpvm\n' >"${root}/etc/hosts"
    printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' >"${root}/etc/fstab"
    # A fixed machine id: no first-boot work (systemd-firstboot, presets) on the test boots.
    printf '6c6c6d6f70732d677075766d2d746573\n' >"${root}/etc/machine-id"
    # Root logs in with the generated key only. No PAM: pam_systemd would wait for logind, which needs dbus.
    install -d -m 0700 "${root}/root/.ssh"
    install -m 0600 "${pubkey}" "${root}/root/.ssh/authorized_keys"
    printf 'UseDNS no\nUsePAM no\nPermitRootLogin prohibit-password\n' >"${root}/etc/ssh/sshd_config.d/llmops-vm.conf"
    # Only the virtio NIC (SSH through QEMU's user network, which always hands out 10.0.2.15) gets an address, from
    # a oneshot unit (networkd costs seconds of boot under emulation); the e1000e under test stay down, so "an
    # interface that is UP" is something the test switches on deliberately.
    cat >"${root}/etc/systemd/system/llmops-vm-net.service" <<'UNIT'
[Unit]
Description=Address of the SSH NIC (QEMU user network)
BindsTo=sys-subsystem-net-devices-enp0s5.device
After=sys-subsystem-net-devices-enp0s5.device
Before=network.target
Wants=network.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/sbin/ip link set enp0s5 up
ExecStart=/sbin/ip addr add 10.0.2.15/24 dev enp0s5

[Install]
WantedBy=multi-user.target
UNIT
    ln -sf ../llmops-vm-net.service "${root}/etc/systemd/system/multi-user.target.wants/llmops-vm-net.service"
    # Nothing in a test VM needs these; each costs boot time under emulation (logind also needs dbus;
    # getty-static starts five VT gettys when dbus is missing).
    local unit
    for unit in systemd-networkd.service systemd-networkd.socket systemd-networkd-wait-online.service \
        apt-daily.timer apt-daily-upgrade.timer e2scrub_reap.service e2scrub_all.timer fstrim.timer \
        systemd-logind.service getty@tty1.service getty-static.service systemd-timesyncd.service \
        systemd-pstore.service man-db.timer dpkg-db-backup.timer systemd-tmpfiles-clean.timer systemd-binfmt.service \
        proc-sys-fs-binfmt_misc.automount sys-kernel-debug.mount sys-kernel-tracing.mount dev-hugepages.mount \
        dev-mqueue.mount sys-fs-fuse-connections.mount sys-kernel-config.mount systemd-sysusers.service \
        systemd-update-utmp.service systemd-random-seed.service systemd-journal-flush.service systemd-rfkill.socket \
        modprobe@loop.service modprobe@fuse.service modprobe@dm_mod.service modprobe@configfs.service \
        modprobe@drm.service modprobe@efi_pstore.service lxc.service lxc-net.service lxc-monitord.service \
        dnsmasq.service; do
        ln -sf /dev/null "${root}/etc/systemd/system/${unit}"
    done
    # udev would load these for q35's emulated chipset and the host CPU's features; none matters to the test, and
    # every module load is slow under emulation.
    printf 'blacklist %s\n' kvm kvm_amd kvm_intel ccp sr_mod cdrom ahci libahci libata sg iTCO_wdt iTCO_vendor_support \
        intel_pmc_bxt lpc_ich i2c_i801 i2c_smbus psmouse pcspkr parport_pc ppdev parport cfg80211 rfkill evdev \
        serio_raw button crct10dif_pclmul crc32_pclmul ghash_clmulni_intel sha512_ssse3 sha256_ssse3 sha1_ssse3 \
        aesni_intel binfmt_misc qemu_fw_cfg >"${root}/etc/modprobe.d/llmops-vm-blacklist.conf"
    # The root of the LXC container of lxc.yml: a static busybox and nothing else (the guest has no network for a
    # template); the device nodes and mounts under test are the only things in it besides what LXC sets up.
    install -d "${root}/var/lib/llmops-ct/rootfs/bin" "${root}/var/lib/llmops-ct/rootfs/dev" \
        "${root}/var/lib/llmops-ct/rootfs/proc" "${root}/var/lib/llmops-ct/rootfs/sys" "${root}/var/lib/llmops-ct/rootfs/tmp"
    install -m 0755 /bin/busybox "${root}/var/lib/llmops-ct/rootfs/bin/busybox"
    ln -sf busybox "${root}/var/lib/llmops-ct/rootfs/bin/sh"
    # Serial console login for debugging (console=ttyS0 on the kernel command line).
    ln -sf /lib/systemd/system/serial-getty@.service \
        "${root}/etc/systemd/system/getty.target.wants/serial-getty@ttyS0.service"
    rm -rf "${root}"/var/lib/apt/lists/* "${root}"/var/cache/apt/*.bin "${root}"/var/cache/apt/archives/*.deb
}

# /init of the initramfs: load the root's modules, mount it, hand over to systemd.
initrd_init() {
    cat <<'INIT'
#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /root
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sys /sys
/bin/busybox mount -t devtmpfs dev /dev
while read -r module; do /bin/busybox insmod "/modules/${module}" 2>/dev/null; done </modules/order
n=0
until [ -b /dev/vda ] || [ "$n" -ge 100 ]; do /bin/busybox sleep 0.1; n=$((n + 1)); done
/bin/busybox mount -t ext4 -o rw /dev/vda /root || { echo "initrd: cannot mount /dev/vda"; exec /bin/busybox sh; }
/bin/busybox umount /proc /sys
/bin/busybox mount --move /dev /root/dev
exec /bin/busybox switch_root /root /sbin/init
INIT
}

lab_ensure_host_packages debootstrap debian-archive-keyring e2fsprogs qemu-system-x86 qemu-utils openssh-client busybox-static \
    kmod cpio
# The guest kernel: the version linux-image-amd64 points at in this machine's package lists (Debian 12 host).
kernel_package() {
    apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -n 1
}
KERNEL_PKG="$(kernel_package)"
if [ -z "${KERNEL_PKG}" ]; then
    lab_as_root apt-get update -q >/dev/null
    KERNEL_PKG="$(kernel_package)"
fi
[ -n "${KERNEL_PKG}" ] || lab_die "no linux-image-amd64 in the package lists (apt-cache depends linux-image-amd64)"
KERNEL_DEB_VERSION="$(apt-cache policy "${KERNEL_PKG}" | sed -n 's/^ *Candidate: //p')"
KVER="${KERNEL_PKG#linux-image-}"

recipe_text() {
    printf 'version=%s\nsuite=%s\npackages=%s\nsize=%s\nkernel=%s=%s\ninitrd=%s\n' "${RECIPE_VERSION}" "${SUITE}" \
        "${GUEST_PACKAGES}" "${IMAGE_SIZE}" "${KERNEL_PKG}" "${KERNEL_DEB_VERSION}" "${INITRD_MODULES}"
    declare -f customize_rootfs initrd_init
}

umount_below() {
    local dir="$1" mnt
    findmnt -rn -o TARGET | { grep -F "${dir}/" || true; } | sort -r | while read -r mnt; do
        umount -l "${mnt}" || true
    done
}

FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

HASH="$(recipe_text | sha256sum | cut -c1-12)"
OUT="${CACHE}/${HASH}"
guest_ready() {
    [ -s "${OUT}/rootfs.img" ] && [ -s "${OUT}/vmlinuz" ] && [ -s "${OUT}/initrd.img" ] && [ -s "${OUT}/id_ed25519" ]
}
if [ "${FORCE}" != 1 ] && guest_ready; then
    ln -sfn "${HASH}" "${CACHE}/current"
    lab_log "guest ${HASH} is current (cached in ${OUT})"
    exit 0
fi

mkdir -p "${CACHE}/debs"
exec 9>"${CACHE}/.build.lock"
flock 9
# Someone else may have built it while this run waited for the lock.
if [ "${FORCE}" != 1 ] && guest_ready; then
    ln -sfn "${HASH}" "${CACHE}/current"
    lab_log "guest ${HASH} is current (built by a concurrent run)"
    exit 0
fi

started=${SECONDS}
WORK="${CACHE}/${HASH}.build"
ROOT="${WORK}/rootfs"
umount_below "${ROOT}"
rm -rf --one-file-system "${WORK}"
mkdir -p "${WORK}"
ssh-keygen -q -t ed25519 -N '' -C llmops-vm-test -f "${WORK}/id_ed25519"

lab_log "debootstrap ${SUITE} guest from ${MIRROR} (recipe ${HASH}, kernel ${KERNEL_PKG} ${KERNEL_DEB_VERSION})"
if ! debootstrap --variant=minbase --include="${GUEST_PACKAGES}" --cache-dir="${CACHE}/debs" \
    --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
    "${SUITE}" "${ROOT}" "${MIRROR}" >"${WORK}/debootstrap.log" 2>&1; then
    tail -n 30 "${WORK}/debootstrap.log" >&2
    umount_below "${ROOT}"
    lab_die "debootstrap failed (full log: ${WORK}/debootstrap.log)"
fi
umount_below "${ROOT}"
lab_log "debootstrap done in $((SECONDS - started)) s"

# The kernel package is unpacked, not installed: its postinst would build Debian's initramfs.
(cd "${CACHE}/debs" && { [ -s "${KERNEL_PKG}_${KERNEL_DEB_VERSION//:/%3a}_amd64.deb" ] || apt-get download -q "${KERNEL_PKG}=${KERNEL_DEB_VERSION}" 2>/dev/null; })
# --keep-directory-symlink: /lib is a symlink to usr/lib (merged /usr); plain dpkg-deb -x would replace it.
dpkg-deb --fsys-tarfile "${CACHE}/debs/${KERNEL_PKG}_${KERNEL_DEB_VERSION//:/%3a}_amd64.deb" |
    tar -x --keep-directory-symlink -C "${ROOT}"
depmod -b "${ROOT}" "${KVER}"
cp "${ROOT}/boot/vmlinuz-${KVER}" "${WORK}/vmlinuz"

customize_rootfs "${ROOT}" "${WORK}/id_ed25519.pub"

INITRD="${WORK}/initrd"
mkdir -p "${INITRD}/bin" "${INITRD}/modules"
cp /bin/busybox "${INITRD}/bin/busybox"
initrd_init >"${INITRD}/init"
chmod 0755 "${INITRD}/init"
# shellcheck disable=SC2086 # a list of module names
for module in ${INITRD_MODULES}; do
    modprobe --show-depends -d "${ROOT}" -S "${KVER}" "${module}"
done | awk '$1 == "insmod" && !seen[$2]++ {print $2}' | while read -r ko; do
    cp "${ko}" "${INITRD}/modules/"
    basename "${ko}" >>"${INITRD}/modules/order"
done
(cd "${INITRD}" && find . | cpio -o -H newc --quiet) >"${WORK}/initrd.img"
rm -rf "${INITRD}"

# bookworm's mke2fs defaults match the 6.1 kernel (no orphan_file).
mkfs.ext4 -q -F -L gpvm-root -E root_owner=0:0 -d "${ROOT}" "${WORK}/rootfs.img" "${IMAGE_SIZE}"
rm -rf --one-file-system "${ROOT}"
rm -rf "${OUT}"
mv "${WORK}" "${OUT}"
ln -sfn "${HASH}" "${CACHE}/current"
# Drop older recipes' images (a few hundred MB each).
find "${CACHE}" -mindepth 1 -maxdepth 1 -type d ! -name "${HASH}" ! -name debs -exec rm -rf {} +
lab_log "guest ${HASH} built in $((SECONDS - started)) s: $(du -sh "${OUT}" | cut -f1)"
