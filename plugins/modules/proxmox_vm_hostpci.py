#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: proxmox_vm_hostpci
short_description: Hand PCI cards (the GPUs bound to vfio-pci) to a Proxmox VE VM with qm set --hostpciN
version_added: 0.1.0
description:
  - Reads the VM's configuration with C(qm config <vmid>) (pending changes applied, as qm prints it) and its state
    with C(qm status <vmid>), and runs one C(qm set <vmid> --hostpciN <address>,pcie=1 ...) with the entries that
    are missing.
  - Idempotent. A card the VM already passes through (in any slot, by its function or by its whole device) is left
    where it is, with C(pcie=1) added when missing and its other options kept. The VM's other C(hostpciN) entries
    are never touched. A planned slot that holds anything else (another device, a resource mapping) is refused, not
    replaced.
  - Refuses a VM whose machine is not q35 (C(pcie=1) needs it; Proxmox refuses the start otherwise), and a VM that
    is not stopped unless O(allow_running=true).
  - In check mode it changes nothing and returns the C(qm set) it would run; in diff mode it shows the VM's hostpci
    lines before and after.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.changes
attributes:
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
    details: A Proxmox VE node (the C(qm) command); the VM's config must live on this node.
options:
  vmid:
    description: The VM's id (100 to 999999999, as C(qm list) shows it).
    type: int
    required: true
  devices:
    description: The cards the VM gets, each in its own C(hostpciN) slot.
    type: list
    elements: dict
    required: true
    suboptions:
      slot:
        description: The N of C(hostpciN), 0 to 15.
        type: int
        required: true
      address:
        description: PCI address of the card's function (C(0000:81:00.0)); the card must be on vfio-pci.
        type: str
        required: true
  allow_running:
    description:
      - Write the entries although the VM runs. Proxmox cannot hot-plug a hostpci device, so they wait as pending
        changes in the VM config and take effect only when Proxmox next starts the VM (C(qm reboot <vmid>), or
        C(qm shutdown) then C(qm start)); a reboot inside the guest does not apply them.
    type: bool
    default: false
  qm_command:
    description: The qm command (a name on PATH or an absolute path).
    type: str
    default: qm
notes:
  - Proxmox binds a passed-through card to vfio-pci itself when the VM starts, taking it from whatever uses it; hand
    only cards that llmops.inference.gpu_partition put on vfio-pci (the gpu_partition role checks that).
seealso:
  - module: llmops.inference.gpu_partition
  - name: Proxmox VE PCI passthrough
    description: hostpci options and the q35 requirement of pcie=1.
    link: https://pve.proxmox.com/wiki/PCI_Passthrough
"""

EXAMPLES = r"""
- name: Give VM 200 the four cards of NUMA node 1 (seed host)
  llmops.inference.proxmox_vm_hostpci:
    vmid: 200
    devices:
      - {slot: 0, address: "0000:81:00.0"}
      - {slot: 1, address: "0000:a1:00.0"}
      - {slot: 2, address: "0000:c1:00.0"}
      - {slot: 3, address: "0000:e1:00.0"}

- name: Only say what would be set
  llmops.inference.proxmox_vm_hostpci:
    vmid: 200
    devices: [{slot: 0, address: "0000:81:00.0"}]
  check_mode: true
  register: vm200

- name: Show it
  ansible.builtin.debug:
    msg: "{{ vm200.commands }}"
"""

RETURN = r"""
commands:
  description: The qm set run (or, in check mode, that would run); empty when nothing changes.
  returned: always
  type: list
  elements: str
  sample: ["qm set 200 --hostpci0 0000:81:00.0,pcie=1 --hostpci1 0000:a1:00.0,pcie=1"]
status:
  description: The VM state qm status printed.
  returned: always
  type: str
  sample: stopped
pending:
  description: True when the entries were written to a running VM; they apply at its next start by Proxmox.
  returned: always
  type: bool
  sample: false
already:
  description: Cards the VM passed through before this run, with the slot that holds each.
  returned: always
  type: list
  elements: dict
  sample: [{slot: 0, address: "0000:81:00.0", at: hostpci0}]
hostpci:
  description: The VM's hostpci entries after the run (planned, in check mode).
  returned: always
  type: dict
  sample: {hostpci0: "0000:81:00.0,pcie=1"}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.host.pci_sysfs import PciAddressError, normalize_pci_address
from ansible_collections.llmops.inference.plugins.module_utils.host.proxmox_qm import (
    MAX_HOSTPCI,
    VMID_MAX,
    VMID_MIN,
    QmError,
    hostpci_entries,
    parse_config,
    parse_status,
    plan_vm,
    set_argv,
)


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            vmid=dict(type='int', required=True),
            devices=dict(type='list', elements='dict', required=True, options=dict(
                slot=dict(type='int', required=True),
                address=dict(type='str', required=True),
            )),
            allow_running=dict(type='bool', default=False),
            qm_command=dict(type='str', default='qm'),
        ),
        supports_check_mode=True,
    )


def _lines(config):
    entries = hostpci_entries(config)
    return ''.join('hostpci%d: %s\n' % (n, entries[n]['value']) for n in sorted(entries))


class VmHostpci(object):
    def __init__(self, module):
        self.module = module
        self.vmid = module.params['vmid']
        self.result = dict(changed=False, commands=[], status=None, pending=False, already=[], hostpci={})

    def fail(self, msg, **extra):
        self.result.update(extra)
        self.module.fail_json(msg='VM %s: %s' % (self.vmid, msg), **self.result)

    def qm(self, *args):
        argv = [self.qm_path] + list(args)
        rc, out, err = self.module.run_command(argv, environ_update={'LANGUAGE': 'C', 'LC_ALL': 'C'})
        if rc != 0:
            self.fail('%s failed (rc=%d): %s' % (' '.join(argv), rc, (err or out).strip()), rc=rc, stdout=out,
                      stderr=err)
        return out

    def devices(self):
        if not VMID_MIN <= self.vmid <= VMID_MAX:
            self.fail('vmid must be between %d and %d (Proxmox refuses other ids)' % (VMID_MIN, VMID_MAX))
        out, slots = [], set()
        for device in self.module.params['devices']:
            if not 0 <= device['slot'] < MAX_HOSTPCI:
                self.fail('slot %s: hostpci slots are 0 to %d' % (device['slot'], MAX_HOSTPCI - 1))
            if device['slot'] in slots:
                self.fail('slot %s is given twice' % device['slot'])
            slots.add(device['slot'])
            try:
                out.append(dict(slot=device['slot'], address=normalize_pci_address(device['address'])))
            except PciAddressError as exc:
                self.fail(str(exc))
        return out

    def read(self):
        try:
            return parse_config(self.qm('config', str(self.vmid)))
        except QmError as exc:
            self.fail('qm config output not understood: %s' % exc)

    def main(self):
        devices = self.devices()
        command = self.module.params['qm_command']
        self.qm_path = command if '/' in command else self.module.get_bin_path(command, required=True)
        config = self.read()
        plan = plan_vm(self.vmid, devices, config)
        self.result['already'] = plan['already']
        if plan['errors']:
            self.fail('refusing to change the VM: %s. Nothing was changed.' % ' | '.join(plan['errors']))
        try:
            status = parse_status(self.qm('status', str(self.vmid)))
        except QmError as exc:
            self.fail(str(exc))
        self.result['status'] = status
        after = dict(config)
        after.update(plan['set'])
        self.result['hostpci'] = dict((k, v) for k, v in sorted(after.items()) if k.startswith('hostpci'))
        argv = set_argv(self.qm_path, self.vmid, plan['set'])
        if argv is None:
            return self.result
        self.result['commands'] = [' '.join(['qm'] + argv[1:])]
        if status != 'stopped' and not self.module.params['allow_running']:
            self.fail('it is %s: Proxmox cannot hot-plug hostpci devices, so `%s` would only queue pending changes '
                      'until its next start by Proxmox. Stop it first (`qm shutdown %s`), or set allow_running (the '
                      "gpu_partition role's gpu_partition_vm_allow_running: true) and restart it later with "
                      '`qm reboot %s` (a reboot inside the guest does not apply them). Nothing was changed.'
                      % (status, self.result['commands'][0], self.vmid, self.vmid))
        self.result.update(changed=True, pending=status != 'stopped')
        if self.module._diff:
            self.result['diff'] = dict(before=_lines(config), after=_lines(after),
                                       before_header='VM %s hostpci' % self.vmid,
                                       after_header='VM %s hostpci (%s)' % (
                                           self.vmid, 'planned' if self.module.check_mode else 'set'))
        if self.module.check_mode:
            return self.result
        rc, out, err = self.module.run_command(argv, environ_update={'LANGUAGE': 'C', 'LC_ALL': 'C'})
        if rc != 0:
            self.fail('%s failed (rc=%d): %s' % (self.result['commands'][0], rc, (err or out).strip()), rc=rc)
        again = self.read()
        left = plan_vm(self.vmid, devices, again)['set']
        if left:
            self.fail('after qm set, qm config still lacks %s' % ', '.join(sorted(left)))
        self.result['hostpci'] = dict((k, v) for k, v in sorted(again.items()) if k.startswith('hostpci'))
        return self.result


def main():
    module = build_module()
    module.exit_json(**VmHostpci(module).main())


if __name__ == '__main__':
    main()
