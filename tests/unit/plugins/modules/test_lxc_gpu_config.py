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


CPUSET_LINES = ['lxc.cgroup2.cpuset.cpus: 0-63,128-191', 'lxc.cgroup2.cpuset.mems: 0']


def read(path):
    with open(path) as handle:
        return handle.read()


def test_cpuset_auto_from_the_gpus_local_cpulist(sysfs_roots, conf, module_calls, tmp_path):
    state = str(tmp_path / 'state' / '101.json')
    kind, result = run_module(base(sysfs_roots, conf, numa_node=0, cpuset='auto', state_file=state))
    assert kind is AnsibleExitJson, result
    assert result['cpuset'] == {'source': 'auto', 'cpus': '0-63,128-191', 'mems': '0', 'reason': None, 'verified': False}
    assert result['lines'][-2:] == CPUSET_LINES and result['lines'][0] == 'dev1: /dev/nvidia0'
    # After the last line of the main section (no lxc.* GPU lines to take the place of), before the snapshot.
    assert 'lxc.apparmor.profile: unconfined\n%s\n\n[snap1]\n' % '\n'.join(CPUSET_LINES) in read(conf)
    kind, again = run_module(base(sysfs_roots, conf, numa_node=0, cpuset='auto', state_file=state))
    assert again['changed'] is False
    # Omitted: the module leaves the cpuset lines alone, even though the state file recorded them.
    kind, unmanaged = run_module(base(sysfs_roots, conf, numa_node=0, state_file=state))
    assert unmanaged['changed'] is False and unmanaged['cpuset']['source'] == 'unmanaged'
    assert unmanaged['lines'] == result['lines'][:-2]
    # Opted out: they go, the device lines stay.
    kind, off = run_module(base(sysfs_roots, conf, numa_node=0, cpuset='', state_file=state))
    assert off['changed'] is True and off['cpuset'] == {'source': 'none', 'cpus': None, 'mems': None, 'reason': None,
                                                        'verified': False}
    assert 'cpuset' not in read(conf) and off['lines'] == result['lines'][:-2]


def test_cpuset_explicit_list_replaces_auto(sysfs_roots, conf, module_calls):
    run_module(base(sysfs_roots, conf, addresses=['0000:21:00.0'], cpuset='auto'))
    kind, result = run_module(base(sysfs_roots, conf, addresses=['0000:21:00.0'], cpuset='0-31,128-159'))
    assert result['changed'] is True
    assert result['cpuset'] == {'source': 'explicit', 'cpus': '0-31,128-159', 'mems': None, 'reason': None,
                                'verified': False}
    text = read(conf)
    assert 'lxc.cgroup2.cpuset.cpus: 0-31,128-159\n' in text and 'cpuset.mems' not in text


@pytest.mark.parametrize('cpuset', ['0-31 64-95', '31-0', 'node0', '0-3\nlxc.apparmor.profile: unconfined'])
def test_cpuset_explicit_list_is_checked(sysfs_roots, conf, module_calls, cpuset):
    kind, result = run_module(base(sysfs_roots, conf, numa_node=0, cpuset=cpuset))
    assert kind is AnsibleFailJson
    assert result['msg'].startswith('cpuset: %r is not a CPU list' % cpuset)
    assert 'Nothing was changed' in result['msg'] and read(conf) == CONF


def test_cpuset_auto_with_unknown_numa_node_writes_none_and_warns(sysfs_roots, conf, module_calls):
    # The captured H200 VM: numa_node -1 on both GPUs (local_cpulist 0-31 is every CPU of the VM).
    with open(conf, 'w') as handle:
        handle.write(CONF.replace('hostname: sglang-ct\n', 'hostname: sglang-ct\nlxc.cgroup2.cpuset.cpus: 0-7\n'))
    kind, result = run_module(base(sysfs_roots, conf, root=sysfs_roots['h200_real'], addresses=['0000:00:06.0'],
                                   cpuset='auto', check_device_nodes=False))
    assert kind is AnsibleExitJson, result
    assert result['cpuset']['cpus'] is None and result['cpuset']['mems'] is None
    assert result['cpuset']['reason'].startswith('0000:00:06.0 has no NUMA node (numa_node -1')
    assert 'cpuset' not in read(conf)
    assert module_calls['warnings'] == ['cpuset auto: %s, so no lxc.cgroup2.cpuset lines are written for %s (the '
                                        'container may run on any CPU). Give cpuset as a CPU list to pin it anyway, or '
                                        'an empty string to opt out.' % (result['cpuset']['reason'], conf)]


def test_cpuset_auto_with_an_unreadable_local_cpulist_or_a_bare_minor(fresh_root, conf, module_calls):
    root = fresh_root('seed_pve_8x_rtx6000')
    os.remove(os.path.realpath(os.path.join(root, 'sys/bus/pci/devices/0000:41:00.0/local_cpulist')))
    kind, result = run_module({'path': conf, 'root': root, 'proc_devices_path': PROC_DEVICES, 'numa_node': 0,
                               'minors': [6], 'cpuset': 'auto', 'check_device_nodes': False})
    assert kind is AnsibleExitJson, result
    assert result['cpuset']['reason'] == ('0000:41:00.0 has no readable local_cpulist; /dev/nvidia6 (given by minor) '
                                          'has no NUMA node (numa_node unreadable: the firmware reports no affinity)')
    assert 'cpuset' not in read(conf) and '0000:41:00.0 has no readable local_cpulist' in module_calls['warnings'][0]


def test_cpuset_raw_mode_and_state_absent(sysfs_roots, conf, module_calls):
    kind, result = run_module(base(sysfs_roots, conf, addresses=['0000:21:00.0'], mode='raw', cpuset='auto'))
    assert result['lines'][-2:] == CPUSET_LINES
    assert read(conf).split('\n[')[0].endswith('lxc.mount.entry: /dev/nvidia-uvm-tools dev/nvidia-uvm-tools none '
                                               'bind,optional,create=file\n' + '\n'.join(CPUSET_LINES) + '\n')
    kind, result = run_module(base(sysfs_roots, conf, state='absent', cpuset='auto'))
    assert result['changed'] is True and result['cpuset']['source'] == 'none' and read(conf) == CONF


def test_cpuset_verify_writes_the_planned_lines_when_the_host_agrees(sysfs_roots, conf, module_calls):
    # The plan's decision (the resolver's, from llmops_host_numa_cpus) written as given, after the host's GPUs'
    # local_cpulist and numa_node said the same; the lines are those of cpuset auto on the same host.
    kind, auto = run_module(base(sysfs_roots, conf, numa_node=0, cpuset='auto', _ansible_check_mode=True))
    kind, result = run_module(base(sysfs_roots, conf, numa_node=0, cpuset='0-63,128-191', cpuset_mems='0',
                                   cpuset_verify=True, cpuset_origin='llmops_host_numa_cpus of pve1'))
    assert kind is AnsibleExitJson, result
    assert result['cpuset'] == {'source': 'explicit', 'cpus': '0-63,128-191', 'mems': '0', 'reason': None,
                                'verified': True}
    assert result['lines'] == auto['lines'] and result['lines'][-2:] == CPUSET_LINES
    assert read(conf).count('lxc.cgroup2.cpuset.') == 2


@pytest.mark.parametrize('cpus, mems, found', [
    ('64-127,192-255', '1', 'are local to CPUs 0-63,128-191 on NUMA node(s) 0'),
    ('0-63', '0', 'are local to CPUs 0-63,128-191 on NUMA node(s) 0'),
    ('0-63,128-191', '1', 'are local to CPUs 0-63,128-191 on NUMA node(s) 0'),
])
def test_cpuset_verify_refuses_a_host_that_disagrees(sysfs_roots, conf, module_calls, cpus, mems, found):
    kind, result = run_module(base(sysfs_roots, conf, numa_node=0, cpuset=cpus, cpuset_mems=mems, cpuset_verify=True,
                                   cpuset_origin='llmops_host_numa_cpus of pve1'))
    assert kind is AnsibleFailJson
    assert result['msg'].startswith('cpuset_verify: llmops_host_numa_cpus of pve1 says CPUs %s, memory node(s) %s, '
                                    'but the GPUs 0000:21:00.0, 0000:61:00.0, 0000:01:00.0, 0000:41:00.0 below '
                                    % (cpus, mems))
    assert found in result['msg'] and 'Fix: correct llmops_host_numa_cpus of pve1' in result['msg']
    assert read(conf) == CONF


def test_cpuset_verify_refuses_gpus_without_affinity(sysfs_roots, conf, module_calls):
    kind, result = run_module(base(sysfs_roots, conf, root=sysfs_roots['h200_real'], addresses=['0000:00:06.0'],
                                   cpuset='0-31', cpuset_mems='0', cpuset_verify=True, check_device_nodes=False))
    assert kind is AnsibleFailJson and 'cannot confirm it: 0000:00:06.0 has no NUMA node' in result['msg']
    assert read(conf) == CONF


def test_cpuset_mems_and_verify_need_a_cpu_list(sysfs_roots, conf, module_calls):
    kind, result = run_module(base(sysfs_roots, conf, numa_node=0, cpuset='auto', cpuset_verify=True))
    assert kind is AnsibleFailJson and result['msg'].startswith('cpuset_mems and cpuset_verify go with a CPU list')
    kind, result = run_module(base(sysfs_roots, conf, numa_node=0, cpuset='0-3', cpuset_mems='node0'))
    assert kind is AnsibleFailJson and result['msg'].startswith("cpuset_mems: 'node0' is not a CPU list")
    assert read(conf) == CONF
