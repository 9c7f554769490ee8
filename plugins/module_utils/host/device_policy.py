# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Whether systemd on a host enforces a unit's DevicePolicy=, and why not: pure functions, no Ansible.

systemd applies DevicePolicy=/DeviceAllow= through a BPF_PROG_TYPE_CGROUP_DEVICE program on cgroup v2 (through the
v1 devices controller on a legacy/hybrid hierarchy). bpf_devices_supported() in src/core/bpf-devices.c checks for
root, the unified hierarchy and that the kernel loads such a program; if any fails, the policy is silently not
applied (a debug message only). In an unprivileged LXC container the user namespace makes the kernel refuse the
program ("Those BPF errors are normal as the user namespace prevents loading of eBPF program", lxc/lxc#4051); a
read-only v1 devices controller (podman on a hybrid host) ignores the policy the same way. So the truth comes from a
behaviour probe: a transient unit under DevicePolicy=strict (no device allowed at all) opens /dev/null.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# The probe prints one of these words: what the open of /dev/null under DevicePolicy=strict did.
# true, not ":": a failed redirection of a special built-in ends a POSIX shell (dash) before it can say "denied".
PROBE_SCRIPT = 'if true >/dev/null 2>/dev/null; then echo open; else echo denied; fi'


def probe_argv(systemd_run='systemd-run', shell='/bin/sh', timeout_s=20):
    """argv of the probe: a transient service, collected afterwards, killed after timeout_s."""
    return [systemd_run, '--quiet', '--wait', '--pipe', '--collect',
            '--property=DevicePolicy=strict', '--property=RuntimeMaxSec=%d' % timeout_s,
            shell, '-c', PROBE_SCRIPT]


def probe_verdict(rc, stdout):
    """True: the policy was applied (open denied); False: not applied (open worked); None: the probe did not run."""
    words = (stdout or '').split()
    last = words[-1] if words else ''
    if rc == 0 and last == 'open':
        return False
    if rc == 0 and last == 'denied':
        return True
    return None


def user_namespace(uid_map_text):
    """True when /proc/self/uid_map is not the identity map of all 2^32 ids (a user namespace: unprivileged LXC)."""
    lines = [line.split() for line in (uid_map_text or '').splitlines() if line.strip()]
    if not lines:
        return None
    return lines != [['0', '0', '4294967295']]


def cgroup_layout(fs_type, has_unified_subdir):
    """'unified' (cgroup2 at /sys/fs/cgroup), 'hybrid' (v1 controllers and cgroup2 at /sys/fs/cgroup/unified),
    'legacy' (v1 only), or the file-system type as found."""
    if fs_type in ('cgroup2', 'cgroup2fs'):
        return 'unified'
    if fs_type == 'tmpfs':
        return 'hybrid' if has_unified_subdir else 'legacy'
    return fs_type or 'unknown'


def explain(enforced, container, userns, layout, probe_error=''):
    """One sentence for the operator: what was found and what it means for the unit."""
    where = 'container %s' % container if container and container != 'none' else 'no container'
    facts = '%s, %s, cgroup hierarchy %s' % (
        where, 'user namespace (unprivileged)' if userns else 'no user namespace' if userns is False else
        'user namespace unknown', layout)
    if enforced is True:
        return ('%s: systemd applied DevicePolicy=strict (the probe could not open /dev/null), so the unit\'s '
                'DevicePolicy=/DeviceAllow= restrict its devices' % facts)
    if enforced is None:
        hint = ''
        if 'connect to bus' in (probe_error or ''):
            # systemd-run talks to the manager over the D-Bus system bus; the private socket does not carry it.
            hint = ' (systemd-run needs the D-Bus system bus: install and start dbus)'
        return '%s: the probe did not run%s, so nothing is known about DevicePolicy= here: %s' % (
            facts, hint, (probe_error or 'no output').strip()[-300:])
    if userns:
        why = ('the kernel refuses cgroup BPF device programs inside a user namespace and systemd then ignores '
               'DevicePolicy= (bpf_devices_supported() in systemd\'s src/core/bpf-devices.c; lxc/lxc#4051)')
    elif layout in ('hybrid', 'legacy'):
        why = ('systemd cannot write the cgroup v1 devices controller here (read-only or not delegated) and then '
               'ignores DevicePolicy=')
    else:
        why = 'systemd could not load or attach its BPF device program and then ignores DevicePolicy='
    return ('%s: DevicePolicy=strict did not stop the probe from opening /dev/null: %s. Device access is limited '
            'only by what the container was given (the LXC lxc.cgroup2.devices.allow and mount entries that '
            'llmops.inference.lxc_gpu writes on the Proxmox host)' % (facts, why))
