# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""qm config / qm status parsing and the qm set --hostpciN plan, on Proxmox's own test configs
(tests/fixtures/proxmox_qm/SOURCES.md). Expected values are read off those files by hand."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.host import proxmox_qm as qm

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'proxmox_qm')
SEED = ['0000:81:00.0', '0000:a1:00.0', '0000:c1:00.0', '0000:e1:00.0']


def config(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return qm.parse_config(handle.read())


def devices(addresses, slots=None):
    return [dict(slot=s, address=a) for s, a in zip(slots or range(len(addresses)), addresses)]


def test_config_file_with_hostpci():
    conf = config('q35-linux-hostpci.conf')
    assert conf['machine'] == 'q35'
    assert conf['hostpci4'] == 'd0:17.0,pcie=1,rombar=0'
    assert sorted(qm.hostpci_entries(conf)) == [0, 1, 2, 3, 4, 7]
    assert qm.is_q35(conf)
    entry = qm.hostpci_entries(conf)[4]
    assert entry['ids'] == [(0, 0xd0, 0x17, 0)] and entry['options'] == {'pcie': '1', 'rombar': '0'}


def test_only_the_current_section_counts():
    conf = config('sections.conf')
    assert 'bios' not in conf  # [PENDING] bios: ovmf (qm config shows it applied; the file's first section does not)
    assert conf['name'] == 'deb1223' and 'snaptime' not in conf
    locked = config('locked.conf')
    assert locked['lock'] == 'backup' and 'description' not in locked


def test_whole_device_ids_cover_every_function():
    entries = qm.hostpci_entries(config('q35-linux-hostpci-multifunction.conf'))
    assert qm.covers(entries[0], '0000:f0:43.0') and qm.covers(entries[0], '0000:f0:43.1')
    assert not qm.covers(entries[0], '1234:f0:43.0')
    assert qm.covers(entries[1], '1234:f0:43.3') and not qm.covers(entries[1], '0000:f0:43.0')
    one = qm.hostpci_entries(config('q35-linux-hostpci.conf'))[3]  # d0:15.1: that function only
    assert qm.covers(one, '0000:d0:15.1') and not qm.covers(one, '0000:d0:15.2')


def test_machine_types():
    assert not qm.is_q35(config('i440fx-win10-hostpci.conf'))  # machine: pc
    assert not qm.is_q35({})
    assert qm.is_q35({'machine': 'pc-q35-9.0+pve1'})
    assert qm.is_q35({'machine': 'type=q35,viommu=virtio'})
    assert qm.is_q35({'machine': 'q35,viommu=intel'})
    assert not qm.is_q35({'machine': 'pc-i440fx-8.1'})


def test_status_lines():
    assert qm.parse_status('status: running\n') == 'running'
    assert qm.parse_status('status: stopped\n') == 'stopped'
    with pytest.raises(qm.QmError):
        qm.parse_status("Configuration file 'nodes/pve1/qemu-server/200.conf' does not exist\n")


def test_not_the_config_format():
    with pytest.raises(qm.QmError, match='line 2'):
        qm.parse_config('cores: 2\nthis is not a config\n')


def test_fresh_vm_gets_one_qm_set_with_every_card():
    plan = qm.plan_vm(200, devices(SEED), {'machine': 'q35', 'cores': '8'})
    assert plan['errors'] == [] and plan['already'] == []
    assert qm.command_line(200, plan['set']) == (
        'qm set 200 --hostpci0 0000:81:00.0,pcie=1 --hostpci1 0000:a1:00.0,pcie=1 --hostpci2 0000:c1:00.0,pcie=1 '
        '--hostpci3 0000:e1:00.0,pcie=1')
    # The resolver's plan lines come from the same values.
    assert qm.wanted_settings(devices(SEED)) == plan['set']


def test_assigned_cards_need_nothing_and_other_entries_stay():
    conf = config('q35-linux-hostpci.conf')  # slots 0-4 and 7 hold other devices
    conf.update({'hostpci5': '0000:81:00.0,pcie=1', 'hostpci6': '81:00.0'})
    plan = qm.plan_vm(200, devices(['0000:81:00.0', '0000:a1:00.0'], [5, 8]), conf)
    assert plan['errors'] == []
    assert plan['set'] == {'hostpci8': '0000:a1:00.0,pcie=1'}
    assert plan['already'] == [dict(slot=5, address='0000:81:00.0', at='hostpci5')]
    assert plan['kept'] == ['hostpci0', 'hostpci1', 'hostpci2', 'hostpci3', 'hostpci4', 'hostpci5', 'hostpci6',
                            'hostpci7']
    assert qm.set_argv('/usr/sbin/qm', 200, {}) is None


def test_card_elsewhere_without_pcie_gets_pcie_and_keeps_its_options():
    conf = {'machine': 'q35', 'hostpci3': '0000:81:00,rombar=0,x-vga=1'}
    plan = qm.plan_vm(200, devices(['0000:81:00.0']), conf)
    assert plan['set'] == {'hostpci3': '0000:81:00,rombar=0,x-vga=1,pcie=1'}
    assert plan['already'][0]['at'] == 'hostpci3'


def test_taken_slot_is_refused_never_replaced():
    conf = config('q35-linux-hostpci-mapping.conf')
    plan = qm.plan_vm(200, devices(['0000:81:00.0'], [1]), conf)
    assert plan['set'] == {}
    assert len(plan['errors']) == 1
    assert "hostpci1 of VM 200 holds 'mapping=someGpu,mdev=some-model' (mapping someGpu)" in plan['errors'][0]
    assert '`qm set 200 --delete hostpci1`' in plan['errors'][0]
    plan = qm.plan_vm(200, devices(['0000:81:00.0'], [0]), config('q35-linux-hostpci.conf'))
    assert "holds '00:ff.1' (a device that is not one of its cards)" in plan['errors'][0]


def test_i440fx_vm_is_refused_with_the_fix():
    plan = qm.plan_vm(300, devices(['0000:81:00.0'], [1]), config('i440fx-win10-hostpci.conf'))
    assert plan['errors'] == ["VM 300 has machine 'pc', not q35: pcie=1 needs it (Proxmox refuses the start with "
                              '"q35 machine model is not enabled"); set `qm set 300 --machine q35` (the guest then '
                              'sees a new chipset) and run again']


def test_slots_sort_numerically_in_the_command():
    argv = qm.set_argv('qm', 200, {'hostpci10': 'x', 'hostpci2': 'y'})
    assert argv == ['qm', 'set', '200', '--hostpci2', 'y', '--hostpci10', 'x']
