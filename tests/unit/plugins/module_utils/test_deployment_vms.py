# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""llmops_host_vfio_vms resolved: slots, the plan's qm set line, and the refusals (the bad inputs of
tests/fixtures/bad_inputs.yml cover the messages end to end)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.problems import Problems
from ansible_collections.llmops.inference.plugins.plugin_utils.deployment.vms import resolve_vms

VFIO = ['0000:81:00.0', '0000:a1:00.0', '0000:c1:00.0', '0000:e1:00.0']


def resolve(raw, vfio=None, ctids=None):
    problems = Problems('pve1')
    return resolve_vms(raw, list(VFIO if vfio is None else vfio), ctids or {101: 'sglang-ct'}, problems), problems.lines()


def test_unset_hands_nothing():
    assert resolve(None) == ([], [])
    assert resolve([]) == ([], [])


def test_one_vm_takes_every_vfio_card_in_slots_0_to_3():
    vms, problems = resolve([{'vmid': 200}])
    assert problems == []
    assert vms == [dict(vmid=200, hostpci=[dict(slot=0, address='0000:81:00.0'), dict(slot=1, address='0000:a1:00.0'),
                                           dict(slot=2, address='0000:c1:00.0'), dict(slot=3, address='0000:e1:00.0')],
                        qm_set='qm set 200 --hostpci0 0000:81:00.0,pcie=1 --hostpci1 0000:a1:00.0,pcie=1 '
                               '--hostpci2 0000:c1:00.0,pcie=1 --hostpci3 0000:e1:00.0,pcie=1')]


def test_two_vms_with_their_own_slots():
    vms, problems = resolve([{'vmid': 200, 'addresses': ['0000:c1:00.0', '0000:81:00.0'], 'hostpci_slots': [4, 2]},
                             {'vmid': 201, 'addresses': ['0000:a1:00.0', '0000:e1:00.0']}])
    assert problems == []
    assert [vm['qm_set'] for vm in vms] == [
        'qm set 200 --hostpci2 0000:81:00.0,pcie=1 --hostpci4 0000:c1:00.0,pcie=1',
        'qm set 201 --hostpci0 0000:a1:00.0,pcie=1 --hostpci1 0000:e1:00.0,pcie=1']


def test_upper_bound_of_the_vmid():
    assert resolve([{'vmid': 999999999}])[1] == []
    assert 'must be a VM id Proxmox accepts' in resolve([{'vmid': 1000000000}])[1][0]
    assert 'must be a VM id Proxmox accepts' in resolve([{'vmid': True}])[1][0]


def test_a_vm_listed_twice():
    dummy, problems = resolve([{'vmid': 200, 'addresses': VFIO[:2]}, {'vmid': 200, 'addresses': VFIO[2:]}])
    assert problems == ['1. llmops_host_vfio_vms[1].vmid = 200: VM 200 is listed twice. '
                        'Fix: merge its addresses into one entry.']


def test_more_than_16_cards_for_one_vm():
    many = ['0000:%02x:00.0' % bus for bus in range(1, 18)]
    dummy, problems = resolve([{'vmid': 200}], vfio=many)
    assert problems == ['1. llmops_host_vfio_vms[0].addresses = 17: a VM has 16 hostpci slots (hostpci0..15), not 17. '
                        'Fix: split the cards over more VMs.']


def test_no_vfio_card_at_all():
    dummy, problems = resolve([{'vmid': 200}], vfio=[])
    assert len(problems) == 1 and 'VM 200 would get no card: this host binds none to vfio-pci' in problems[0]
