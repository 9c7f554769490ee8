# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""lxc_gpu_config through its argument spec against the seed sysfs fixture and a fixture /proc/devices."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from module_harness import AnsibleExitJson, AnsibleFailJson, run

from ansible_collections.llmops.inference.plugins.modules import lxc_gpu_config

PROC_DEVICES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'proc_devices',
                            'pve_seed.txt')
CONF = 'arch: amd64\ncores: 64\ndev0: /dev/dri/renderD128,gid=104\nhostname: sglang-ct\nlxc.apparmor.profile: unconfined\n' \
       '\n[snap1]\narch: amd64\ndev1: /dev/nvidia5\n'


@pytest.fixture
def module_calls(module_warnings):
    return {'warnings': module_warnings}


def run_module(args):
    return run(lxc_gpu_config.main, args)


@pytest.fixture
def conf(tmp_path):
    path = tmp_path / 'lxc' / '101.conf'
    path.parent.mkdir()
    path.write_text(CONF)
    return str(path)


def base(sysfs_roots, conf, **extra):
    args = {'path': conf, 'root': sysfs_roots['seed_pve_8x_rtx6000'], 'proc_devices_path': PROC_DEVICES}
    args.update(extra)
    return args


def test_numa_node_resolves_minors_out_of_slot_order(sysfs_roots, conf, module_calls):
    kind, result = run_module(base(sysfs_roots, conf, numa_node=0, _ansible_diff=True))
    assert kind is AnsibleExitJson, result
    assert result['changed'] is True
    assert [(gpu['address'], gpu['minor']) for gpu in result['gpus']] == [
        ('0000:21:00.0', 0), ('0000:61:00.0', 1), ('0000:01:00.0', 2), ('0000:41:00.0', 3)]
    assert result['lines'] == ['dev1: /dev/nvidia0', 'dev2: /dev/nvidia1', 'dev3: /dev/nvidia2', 'dev4: /dev/nvidia3',
                               'dev5: /dev/nvidiactl', 'dev6: /dev/nvidia-uvm', 'dev7: /dev/nvidia-uvm-tools']
    assert result['uvm_major'] == 511 and result['host_nvidia_minors'] == [0, 1, 2, 3]
    with open(conf) as handle:
        text = handle.read()
    assert text == result['diff']['after']
    assert text.endswith('lxc.apparmor.profile: unconfined\n\n[snap1]\narch: amd64\ndev1: /dev/nvidia5\n')
    # The fixture tree has no /dev: PVE would refuse to start, and the module says so.
    assert len(result['missing_device_nodes']) == 7 and 'missing device nodes' in module_calls['warnings'][0]
    kind, again = run_module(base(sysfs_roots, conf, numa_node=0, device_nodes_root=sysfs_roots['seed_pve_8x_rtx6000']))
    assert again['changed'] is False


def test_raw_mode_with_state_file_and_check_mode(sysfs_roots, conf, module_calls, tmp_path):
    state = str(tmp_path / 'state' / '101.json')
    args = base(sysfs_roots, conf, addresses=['21:00.0', '0000:01:00.0'], mode='raw', state_file=state)
    kind, result = run_module(dict(args, _ansible_check_mode=True))
    assert result['changed'] is True and not os.path.exists(state)
    with open(conf) as handle:
        assert handle.read() == CONF
    kind, result = run_module(args)
    assert result['lines'][:4] == ['lxc.cgroup2.devices.allow: c 195:0 rwm', 'lxc.cgroup2.devices.allow: c 195:2 rwm',
                                   'lxc.cgroup2.devices.allow: c 195:255 rwm', 'lxc.cgroup2.devices.allow: c 511:0 rwm']
    with open(state) as handle:
        recorded = json.load(handle)
    assert ['lxc.cgroup2.devices.allow', 'c 511:1 rwm'] in recorded['lines']
    kind, result = run_module(args)
    assert result['changed'] is False
    kind, result = run_module(dict(args, state='absent'))
    assert result['changed'] is True and result['lines'] == []
    with open(conf) as handle:
        assert handle.read() == CONF


@pytest.mark.parametrize('extra, message', [
    ({'addresses': ['0000:81:00.0']}, '0000:81:00.0 is bound to vfio-pci, not nvidia'),
    ({'numa_node': 3}, 'no GPU on NUMA node 3 is bound to nvidia'),
    ({'addresses': ['0000:82:00.0']}, 'no PCI function 0000:82:00.0'),
    ({}, 'state=present needs addresses, numa_node or minors'),
])
def test_refusals(sysfs_roots, conf, module_calls, extra, message):
    kind, result = run_module(base(sysfs_roots, conf, **extra))
    assert kind is AnsibleFailJson and message in result['msg']


def test_missing_config_needs_create(sysfs_roots, tmp_path, module_calls):
    path = str(tmp_path / '102.conf')
    kind, result = run_module(base(sysfs_roots, path, minors=[4]))
    assert kind is AnsibleFailJson and 'does the container exist' in result['msg']
    kind, result = run_module(base(sysfs_roots, path, minors=[4], create=True, mode='raw',
                                   proc_devices_path=str(tmp_path / 'nope')))
    assert kind is AnsibleFailJson and 'nvidia-uvm is not in /proc/devices' in result['msg']
    kind, result = run_module(base(sysfs_roots, path, minors=[4], create=True))
    assert kind is AnsibleExitJson and result['lines'][0] == 'dev0: /dev/nvidia4'
    assert result['gpus'] == [{'address': None, 'minor': 4, 'device_node': '/dev/nvidia4', 'numa_node': None}]
