#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: systemd_device_policy_info
short_description: Find out whether systemd on the host enforces a unit's DevicePolicy= (unprivileged LXC does not)
version_added: 0.2.0
description:
  - systemd applies C(DevicePolicy=)/C(DeviceAllow=) with a cgroup BPF device program (cgroup v2) or the v1 devices
    controller. Where it cannot (in an unprivileged LXC container the kernel refuses the program in a user namespace;
    a read-only v1 devices controller), it ignores the policy with a debug message only, so a unit that says
    C(DevicePolicy=closed) restricts nothing there.
  - Runs a probe, a transient service under C(DevicePolicy=strict) (which allows no device at all) that opens
    C(/dev/null). Denied means the policy is enforced; opened means it is ignored. The unit is collected afterwards
    and killed after O(timeout) seconds.
  - Also reports what explains the answer, the container type (C(systemd-detect-virt --container)), whether the
    host runs in a user namespace (C(/proc/self/uid_map)) and the cgroup hierarchy.
  - Changes nothing on the host (the transient unit leaves no trace), so it also runs in check mode.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
options:
  timeout:
    description: Seconds the probe unit may run (C(RuntimeMaxSec=)).
    type: int
    default: 20
seealso:
  - name: systemd's BPF device control
    description: bpf_devices_supported() in src/core/bpf-devices.c, the checks after which DevicePolicy= is ignored
    link: https://github.com/systemd/systemd/blob/main/src/core/bpf-devices.c
  - name: lxc/lxc#4051
    description: BPF device programs cannot be loaded in a user namespace and systemd turns that into a non-fatal warning
    link: https://github.com/lxc/lxc/issues/4051
"""

EXAMPLES = r"""
- name: Does systemd enforce DevicePolicy= here?
  llmops.inference.systemd_device_policy_info:
  register: device_policy

- name: Say so
  ansible.builtin.debug:
    msg: "{{ device_policy.reason }}"
"""

RETURN = r"""
enforced:
  description: True when the probe's open of /dev/null was denied, false when it worked, null when the probe did not run.
  type: bool
  returned: always
container:
  description: C(systemd-detect-virt --container), V(none) outside a container.
  type: str
  returned: always
  sample: lxc
user_namespace:
  description: Whether the host runs in a user namespace (an unprivileged container); null when unreadable.
  type: bool
  returned: always
cgroup:
  description: V(unified), V(hybrid), V(legacy) or the file-system type at /sys/fs/cgroup.
  type: str
  returned: always
  sample: unified
reason:
  description: One sentence that explains the answer for the operator.
  type: str
  returned: always
probe:
  description: The probe's exit status and output.
  type: dict
  returned: always
  sample: {rc: 0, stdout: open, stderr: ""}
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.host import device_policy


def read_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def main():
    module = AnsibleModule(
        argument_spec=dict(timeout=dict(type='int', default=20)),
        supports_check_mode=True,
    )
    env = {'LC_ALL': 'C'}
    virt = module.get_bin_path('systemd-detect-virt')
    container = 'unknown'
    if virt:
        # rc 1 with "none" outside a container.
        _rc, out, _err = module.run_command([virt, '--container'], environ_update=env)
        container = out.strip() or 'unknown'
    userns = device_policy.user_namespace(read_text('/proc/self/uid_map'))
    stat = module.get_bin_path('stat')
    fs_type = ''
    if stat:
        _rc, out, _err = module.run_command([stat, '-f', '-c', '%T', '/sys/fs/cgroup'], environ_update=env)
        fs_type = out.strip()
    layout = device_policy.cgroup_layout(fs_type, os.path.isdir('/sys/fs/cgroup/unified'))

    systemd_run = module.get_bin_path('systemd-run')
    if systemd_run is None:
        probe = dict(rc=None, stdout='', stderr='systemd-run not found')
        enforced = None
    else:
        rc, out, err = module.run_command(
            device_policy.probe_argv(systemd_run, timeout_s=module.params['timeout']), environ_update=env)
        probe = dict(rc=rc, stdout=out.strip(), stderr=err.strip()[-2000:])
        enforced = device_policy.probe_verdict(rc, out)
    module.exit_json(changed=False, enforced=enforced, container=container, user_namespace=userns, cgroup=layout,
                     reason=device_policy.explain(enforced, container, userns, layout, probe['stderr']), probe=probe)


if __name__ == '__main__':
    main()
