# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""proxmox_vm_hostpci through its argument spec, against the lab's stand-in qm (extensions/molecule/lxc_gpu/files/qm.py,
a real program keeping VM configs in Proxmox's file format) in a temporary directory."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import sys

import pytest

from ansible.module_utils import basic

from module_harness import AnsibleExitJson, AnsibleFailJson, run

from ansible_collections.llmops.inference.plugins.modules import proxmox_vm_hostpci

from collection_paths import ROOT

LAB = os.path.join(ROOT, 'extensions', 'molecule', 'lxc_gpu', 'files')
# The stand-in is a plain script (qm.py, no interpreter line); the lab installs it as qm, the tests run it through a
# wrapper with this interpreter (the pve fixture sets QM).
QM = None
CARDS = [dict(slot=1, address='0000:81:00.0'), dict(slot=2, address='0000:a1:00.0')]


@pytest.fixture
def pve(tmp_path, monkeypatch):
    etc, state = tmp_path / 'etc', tmp_path / 'state'
    etc.mkdir()
    state.mkdir()
    for name in ('200.conf', '201.conf'):
        shutil.copy(os.path.join(LAB, name), str(etc / name))
    (state / '201.status').write_text('running\n')
    monkeypatch.setenv('QM_STUB_ETC', str(etc))
    monkeypatch.setenv('QM_STUB_STATE', str(state))
    monkeypatch.setenv('QM_STUB_LOG', str(tmp_path / 'log'))
    wrapper = tmp_path / 'qm'
    wrapper.write_text('#!/bin/sh\nexec %s %s "$@"\n' % (sys.executable, os.path.join(LAB, 'qm.py')))
    wrapper.chmod(0o755)
    monkeypatch.setitem(globals(), 'QM', str(wrapper))
    calls = []
    original = basic.AnsibleModule.run_command

    def recording(self, args, **kwargs):
        calls.append((list(args), dict(kwargs.get('environ_update') or {})))
        return original(self, args, **kwargs)

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', recording)
    return dict(etc=etc, calls=calls)


def conf(pve, vmid):
    return (pve['etc'] / ('%d.conf' % vmid)).read_text()


def args(vmid=200, devices=None, **extra):
    out = dict(vmid=vmid, devices=devices if devices is not None else CARDS, qm_command=QM)
    out.update(extra)
    return out


def test_check_mode_says_what_it_would_set_and_sets_nothing(pve):
    before = conf(pve, 200)
    kind, result = run(proxmox_vm_hostpci.main, args(), check_mode=True, diff=True)
    assert kind is AnsibleExitJson, result
    assert result['changed'] is True
    assert result['commands'] == ['qm set 200 --hostpci1 0000:81:00.0,pcie=1 --hostpci2 0000:a1:00.0,pcie=1']
    assert result['diff']['before'] == 'hostpci0: 0000:05:00.0,pcie=1\n'
    assert result['diff']['after'] == ('hostpci0: 0000:05:00.0,pcie=1\nhostpci1: 0000:81:00.0,pcie=1\n'
                                       'hostpci2: 0000:a1:00.0,pcie=1\n')
    assert conf(pve, 200) == before
    assert [c[0][1] for c in pve['calls']] == ['config', 'status']
    assert all(env.get('LC_ALL') == 'C' for dummy, env in pve['calls'])


def test_sets_once_then_nothing_and_keeps_the_other_entries(pve):
    kind, result = run(proxmox_vm_hostpci.main, args())
    assert kind is AnsibleExitJson and result['changed'] is True, result
    text = conf(pve, 200)
    assert 'hostpci0: 0000:05:00.0,pcie=1\nhostpci1: 0000:81:00.0,pcie=1\nhostpci2: 0000:a1:00.0,pcie=1\nmachine: q35\n' \
        in text
    kind, again = run(proxmox_vm_hostpci.main, args())
    assert kind is AnsibleExitJson and again['changed'] is False and again['commands'] == [], again
    assert [a['at'] for a in again['already']] == ['hostpci1', 'hostpci2']
    assert [c[0][1] for c in pve['calls']].count('set') == 1


def test_running_vm_is_refused_unless_allowed(pve):
    before = conf(pve, 201)
    kind, result = run(proxmox_vm_hostpci.main, args(201, [dict(slot=0, address='0000:41:00.0')]))
    assert kind is AnsibleFailJson
    assert result['msg'].startswith('VM 201: it is running: Proxmox cannot hot-plug hostpci devices')
    assert '`qm shutdown 201`' in result['msg'] and '`qm reboot 201`' in result['msg']
    assert conf(pve, 201) == before
    kind, result = run(proxmox_vm_hostpci.main, args(201, [dict(slot=0, address='0000:41:00.0')], allow_running=True))
    assert kind is AnsibleExitJson and result['pending'] is True, result
    assert conf(pve, 201).endswith('\n[PENDING]\nhostpci0: 0000:41:00.0,pcie=1\n')


def test_missing_vm_and_bad_arguments_are_refused(pve):
    kind, result = run(proxmox_vm_hostpci.main, args(299))
    assert kind is AnsibleFailJson
    assert "Configuration file 'nodes/lab/qemu-server/299.conf' does not exist" in result['msg']
    for bad, text in ((args(99), 'vmid must be between 100 and 999999999'),
                      (args(devices=[dict(slot=16, address='0000:81:00.0')]), 'hostpci slots are 0 to 15'),
                      (args(devices=[dict(slot=1, address='81:00')]), "invalid PCI address '81:00'")):
        kind, result = run(proxmox_vm_hostpci.main, bad)
        assert kind is AnsibleFailJson and text in result['msg'], result
