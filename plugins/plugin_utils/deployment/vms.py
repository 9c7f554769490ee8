# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Resolve the VM side of a Proxmox host's split: which VM gets which vfio-pci card in which hostpci slot.

PRIVATE to the collection. ``resolve_vms(raw, vfio_addresses, ctids, problems)`` checks llmops_host_vfio_vms and
returns the ``vfio_vms`` list of the ``proxmox_host`` object (docs/deployment_resolver.md): per VM its vmid, the
cards with their slots (``hostpci``: [{slot, address}], what the gpu_partition role hands to the module
llmops.inference.proxmox_vm_hostpci) and ``qm_set``, the command make plan prints for a VM that has none of them
yet (proxmox_qm.command_line, the module's own format). Whether a slot is free on the VM can only be read on the
host; the module refuses a taken one there, before any change.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmops.inference.plugins.module_utils.common.choosing import nearest
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.problems import NOVALUE
from ansible_collections.llmops.inference.plugins.module_utils.host.proxmox_qm import (
    MAX_HOSTPCI,
    VMID_MAX,
    VMID_MIN,
    command_line,
    wanted_settings,
)

_KEYS = ('vmid', 'addresses', 'hostpci_slots')
_PCI = re.compile(r'^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$')
_NAME = 'llmops_host_vfio_vms'


def _int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _vmid(where, vm, ctids, seen, problems):
    vmid = vm.get('vmid')
    if not _int(vmid) or not VMID_MIN <= vmid <= VMID_MAX:
        problems.add('%s.vmid' % where, vmid, 'must be a VM id Proxmox accepts (a whole number from %d to %d)'
                     % (VMID_MIN, VMID_MAX), 'use the VMID of the VM as `qm list` on the host shows it')
        return None
    if vmid in seen:
        problems.add('%s.vmid' % where, vmid, 'VM %s is listed twice' % vmid, 'merge its addresses into one entry')
        return None
    if vmid in ctids:
        problems.add('%s.vmid' % where, vmid, 'is the VMID of the container %s (Proxmox ids are shared by VMs and '
                     'containers)' % ctids[vmid], 'use the id of the VM that takes the vfio-pci cards')
        return None
    seen.add(vmid)
    return vmid


def _addresses(where, vm, vfio_addresses, single, problems):
    if 'addresses' not in vm or vm['addresses'] is None:
        if single:
            return list(vfio_addresses)
        problems.add('%s.addresses' % where, NOVALUE, 'with more than one VM each must list its cards',
                     'give each VM addresses: [..] from the vfio-pci cards %s' % ', '.join(vfio_addresses))
        return None
    addresses = vm['addresses']
    if not isinstance(addresses, list) or not addresses:
        problems.add('%s.addresses' % where, addresses, 'must be a non-empty list of PCI addresses',
                     'e.g. ["0000:81:00.0"], or leave it out (one VM takes every vfio-pci card)')
        return None
    out = []
    for index, address in enumerate(addresses):
        at = '%s.addresses[%d]' % (where, index)
        if not isinstance(address, str) or not _PCI.match(address):
            problems.add(at, address, 'must be a full lower-case PCI address with domain', 'e.g. 0000:81:00.0')
        elif address not in vfio_addresses:
            problems.add(at, address, 'is not a card this host binds to vfio-pci (those are: %s)'
                         % (', '.join(vfio_addresses) or 'none'), 'give the VM one of those, or move its NUMA node '
                         'to llmops_host_vfio_numa_nodes')
        elif address in out:
            problems.add(at, address, 'listed twice for this VM', 'remove the duplicate')
        else:
            out.append(address)
    return out


def _slots(where, vm, count, problems):
    slots = vm.get('hostpci_slots')
    if slots is None:
        slots = list(range(count))
        if count > MAX_HOSTPCI:
            problems.add('%s.addresses' % where, count, 'a VM has %d hostpci slots (hostpci0..%d), not %d'
                         % (MAX_HOSTPCI, MAX_HOSTPCI - 1, count), 'split the cards over more VMs')
            return None
        return slots
    if not isinstance(slots, list) or any(not _int(s) or not 0 <= s < MAX_HOSTPCI for s in slots) \
            or len(set(slots)) != len(slots) or len(slots) != count:
        problems.add('%s.hostpci_slots' % where, slots, 'must be %d different slot numbers from 0 to %d, one per '
                     'card in the order of addresses' % (count, MAX_HOSTPCI - 1),
                     'list free hostpci slots of the VM (`qm config <vmid> | grep hostpci` shows the taken ones), '
                     'or leave it out for 0..%d' % (count - 1))
        return None
    return slots


def resolve_vms(raw, vfio_addresses, ctids, problems):
    """[{vmid, hostpci: [{slot, address}], qm_set}] of llmops_host_vfio_vms; [] when it is unset or empty."""
    vms, seen, owner = [], set(), {}
    entries = raw or []
    for index, vm in enumerate(entries):
        where = '%s[%d]' % (_NAME, index)
        if not isinstance(vm, dict):
            problems.add(where, vm, 'must be a mapping {vmid, addresses, hostpci_slots}', 'e.g. {vmid: 200}')
            continue
        for key in sorted(set(vm) - set(_KEYS)):
            close = nearest(key, _KEYS)
            problems.add('%s.%s' % (where, key), vm[key], 'unknown key (%s)' % ', '.join(_KEYS),
                         'rename it to %s' % close if close else 'remove it')
        vmid = _vmid(where, vm, ctids, seen, problems)
        addresses = _addresses(where, vm, vfio_addresses, len(entries) == 1, problems)
        if vmid is None or addresses is None:
            continue
        for address in addresses:
            if address in owner:
                at = '%s.addresses[%d]' % (where, vm['addresses'].index(address)) if vm.get('addresses') else where
                problems.add(at, address, 'is given to VM %s as well: a card goes to one VM' % owner[address],
                             'keep it in one entry of %s' % _NAME)
            owner.setdefault(address, vmid)
        if not addresses:
            if not vfio_addresses:
                problems.add(where, vm, 'VM %s would get no card: this host binds none to vfio-pci' % vmid,
                             'list a NUMA node with cards in llmops_host_vfio_numa_nodes, or remove the entry')
            continue
        slots = _slots(where, vm, len(addresses), problems)
        if slots is None:
            continue
        hostpci = [dict(slot=s, address=a) for s, a in zip(slots, addresses)]
        vms.append(dict(vmid=vmid, hostpci=hostpci, qm_set=command_line(vmid, wanted_settings(hostpci))))
    left = [a for a in vfio_addresses if a not in owner]
    if entries and len(vms) == len(entries) and left:  # only once every entry is valid: no echo of a refusal
        problems.add(_NAME, entries, 'every card bound to vfio-pci goes to one VM, and %s go(es) to none'
                     % ', '.join(left), 'add them to the addresses of a VM, or keep their NUMA node on nvidia')
    return vms
