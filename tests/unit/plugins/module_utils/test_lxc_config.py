# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rendering and merging of the NVIDIA device lines of a PVE container config."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.host import lxc_config as lc

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'proc_devices')

# A realistic PVE 8 container config: unrelated devN (an iGPU render node), a mount point, raw apparmor line, and a
# snapshot section that still holds the GPU lines of the day it was taken.
CT_CONF = """#SGLang Qwen3.5-122B-A10B TP4
arch: amd64
cores: 64
dev0: /dev/dri/renderD128,gid=104
features: nesting=1
hostname: sglang-ct
memory: 262144
mp0: /shared,mp=/shared
net0: name=eth0,bridge=vmbr0,hwaddr=BC:24:11:2A:4E:01,ip=dhcp,type=veth
ostype: debian
parent: before-driver-sync
rootfs: local-zfs:subvol-101-disk-0,size=200G
swap: 0
lxc.apparmor.profile: unconfined

[before-driver-sync]
arch: amd64
cores: 64
dev0: /dev/dri/renderD128,gid=104
dev1: /dev/nvidia0
hostname: sglang-ct
memory: 262144
ostype: debian
rootfs: local-zfs:subvol-101-disk-0,size=200G
snaptime: 1780000000
lxc.cgroup2.devices.allow: c 195:* rwm
"""


def read_fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_parse_proc_devices_captured_h200():
    devices = lc.parse_proc_devices(read_fixture('h200x2_captured.txt'))
    assert devices['char']['nvidia-uvm'] == 238
    assert devices['char']['nvidia'] == 195 and devices['char']['nvidiactl'] == 195
    assert devices['block']['virtblk'] == 254
    assert lc.nvidia_majors(devices) == [195, 238, 239, 240, 241, 242]


def test_parse_proc_devices_pve_seed_dynamic_major():
    devices = lc.parse_proc_devices(read_fixture('pve_seed.txt'))
    assert devices['char']['nvidia-uvm'] == 511
    assert 'nvidia-uvm' not in lc.parse_proc_devices('Character devices:\n195 nvidia\n')['char']


def test_device_nodes_and_dev_rendering():
    nodes = lc.device_nodes([2, 0, 3, 1, 2], uvm_major=511)
    assert [node['path'] for node in nodes] == ['/dev/nvidia2', '/dev/nvidia0', '/dev/nvidia3', '/dev/nvidia1',
                                                '/dev/nvidiactl', '/dev/nvidia-uvm', '/dev/nvidia-uvm-tools']
    assert lc.render_lines(nodes[:1] + nodes[-2:], 'dev', gid=44) == [
        ('dev', '/dev/nvidia2,gid=44'), ('dev', '/dev/nvidia-uvm,gid=44'), ('dev', '/dev/nvidia-uvm-tools,gid=44')]
    # devN needs no major, so an unloaded nvidia-uvm is no obstacle to rendering.
    assert lc.render_lines(lc.device_nodes([0], None), 'dev')[-1] == ('dev', '/dev/nvidia-uvm-tools')


def test_raw_rendering_uses_the_uvm_major_per_minor():
    pairs = lc.render_lines(lc.device_nodes([0, 1], uvm_major=238, include_uvm_tools=False), 'raw')
    assert ['%s: %s' % pair for pair in pairs] == [
        'lxc.cgroup2.devices.allow: c 195:0 rwm',
        'lxc.cgroup2.devices.allow: c 195:1 rwm',
        'lxc.cgroup2.devices.allow: c 195:255 rwm',
        'lxc.cgroup2.devices.allow: c 238:0 rwm',
        'lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file',
        'lxc.mount.entry: /dev/nvidia1 dev/nvidia1 none bind,optional,create=file',
        'lxc.mount.entry: /dev/nvidiactl dev/nvidiactl none bind,optional,create=file',
        'lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file']
    with pytest.raises(lc.LxcConfigError) as exc:
        lc.render_lines(lc.device_nodes([0], uvm_major=None), 'raw')
    assert 'nvidia-uvm is not in /proc/devices' in str(exc.value)
    with pytest.raises(lc.LxcConfigError):
        lc.device_nodes([254])


def test_merge_dev_entries_keeps_other_devices_and_snapshots():
    pairs = lc.render_lines(lc.device_nodes([0, 1, 2, 3], 511), 'dev')
    new, rendered = lc.merge(CT_CONF, pairs)
    assert rendered == ['dev1: /dev/nvidia0', 'dev2: /dev/nvidia1', 'dev3: /dev/nvidia2', 'dev4: /dev/nvidia3',
                        'dev5: /dev/nvidiactl', 'dev6: /dev/nvidia-uvm', 'dev7: /dev/nvidia-uvm-tools']
    main, rest = lc.split_sections(new)
    assert rest == CT_CONF[CT_CONF.index('[before-driver-sync]'):]
    main_text = ''.join(main)
    # Placed right after the existing dev0 line; everything else untouched and in order.
    assert 'dev0: /dev/dri/renderD128,gid=104\ndev1: /dev/nvidia0\n' in main_text
    assert main_text.replace('\n'.join(rendered) + '\n', '') == CT_CONF[:CT_CONF.index('[before-driver-sync]')]
    # Idempotent.
    again, dummy = lc.merge(new, pairs)
    assert again == new


def test_merge_replaces_old_gpu_lines_of_both_styles_in_place():
    old = ('arch: amd64\ndev0: /dev/nvidia7\nhostname: ct\nlxc.cgroup2.devices.allow: c 195:* rwm\n'
           'lxc.cgroup2.devices.allow: c 238:* rwm\nlxc.cgroup2.devices.allow: c 10:200 rwm\n'
           'lxc.mount.entry: /dev/nvidia7 dev/nvidia7 none bind,optional,create=file\n'
           'lxc.mount.entry: /dev/net dev/net none bind,create=dir\n')
    majors = lc.nvidia_majors(lc.parse_proc_devices(read_fixture('h200x2_captured.txt')))
    pairs = lc.render_lines(lc.device_nodes([0, 1], 238), 'dev')
    new, rendered = lc.merge(old, pairs, majors)
    assert new == ('arch: amd64\ndev0: /dev/nvidia0\ndev1: /dev/nvidia1\ndev2: /dev/nvidiactl\ndev3: /dev/nvidia-uvm\n'
                   'dev4: /dev/nvidia-uvm-tools\nhostname: ct\nlxc.cgroup2.devices.allow: c 10:200 rwm\n'
                   'lxc.mount.entry: /dev/net dev/net none bind,create=dir\n')
    # Back to raw: the dev entries go, the raw block goes to the end of the main section (where PVE keeps lxc.* keys).
    raw = lc.render_lines(lc.device_nodes([0], 238, include_uvm_tools=False), 'raw')
    back, dummy = lc.merge(new, raw, majors)
    assert back.startswith('arch: amd64\nhostname: ct\nlxc.cgroup2.devices.allow: c 10:200 rwm\n'
                           'lxc.mount.entry: /dev/net dev/net none bind,create=dir\nlxc.cgroup2.devices.allow: c 195:0 rwm\n')
    assert lc.merge(back, raw, majors)[0] == back


def test_raw_lines_at_the_end_become_dev_entries_next_to_other_dev_entries():
    old = 'arch: amd64\ndev0: /dev/dri/renderD128\nswap: 0\nlxc.cgroup2.devices.allow: c 195:* rwm\n'
    new, dummy = lc.merge(old, [('dev', '/dev/nvidia0')])
    assert new == 'arch: amd64\ndev0: /dev/dri/renderD128\ndev1: /dev/nvidia0\nswap: 0\n'


def test_stale_uvm_major_is_removed_through_the_recorded_lines():
    # Rendered when nvidia-uvm had major 238; after a reboot it has 511 and 238 belongs to nobody we know.
    first, dummy = lc.merge('arch: amd64\n', lc.render_lines(lc.device_nodes([0], 238, include_uvm_tools=False), 'raw'))
    previous = set(lc.render_lines(lc.device_nodes([0], 238, include_uvm_tools=False), 'raw'))
    new_pairs = lc.render_lines(lc.device_nodes([0], 511, include_uvm_tools=False), 'raw')
    without_state, dummy = lc.merge(first, new_pairs, majors=[195, 511])
    assert 'c 238:0 rwm' in without_state
    with_state, dummy = lc.merge(first, new_pairs, majors=[195, 511], previous=previous)
    assert 'c 238:0' not in with_state and 'c 511:0 rwm' in with_state


def test_absent_removes_everything_nvidia_only_from_main_section():
    new, rendered = lc.merge(CT_CONF.replace('swap: 0\n', 'swap: 0\ndev1: /dev/nvidia0,gid=44\n'), [])
    assert rendered == []
    assert new == CT_CONF


def test_first_run_positions():
    assert lc.merge('arch: amd64\nlxc.apparmor.profile: unconfined\n', [('dev', '/dev/nvidia0')])[0] == \
        'arch: amd64\ndev0: /dev/nvidia0\nlxc.apparmor.profile: unconfined\n'
    assert lc.merge('arch: amd64\n\n[snap]\narch: amd64\n', [('lxc.mount.entry', '/dev/nvidia0 dev/nvidia0 none bind')])[0] == \
        'arch: amd64\nlxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind\n\n[snap]\narch: amd64\n'
    assert lc.merge('', [('dev', '/dev/nvidia0')])[0] == 'dev0: /dev/nvidia0\n'
    assert lc.merge('arch: amd64', [('dev', '/dev/nvidia0')])[0] == 'arch: amd64\ndev0: /dev/nvidia0\n'


def test_parse_line_forms():
    assert lc.parse_line('lxc.cgroup2.devices.allow = c 195:* rwm') == ('lxc.cgroup2.devices.allow', 'c 195:* rwm')
    assert lc.parse_line('dev12: /dev/nvidia3,gid=44 ') == ('dev12', '/dev/nvidia3,gid=44')
    assert lc.parse_line('#dev0: /dev/nvidia0') is None
    assert lc.parse_line('[snapshot]') is None
    assert lc.is_managed('lxc.cgroup2.devices.allow', 'c 195:* rwm')
    assert not lc.is_managed('lxc.cgroup2.devices.allow', 'c *:* rwm')
    assert not lc.is_managed('dev0', '/dev/dri/renderD128')


def test_cpuset_lines_are_managed_only_when_asked():
    assert lc.render_cpuset('0-63,128-191', '0') == [('lxc.cgroup2.cpuset.cpus', '0-63,128-191'),
                                                     ('lxc.cgroup2.cpuset.mems', '0')]
    assert lc.render_cpuset('0-7', None) == [('lxc.cgroup2.cpuset.cpus', '0-7')]
    assert lc.render_cpuset(None, None) == []
    with pytest.raises(lc.LxcConfigError):
        lc.render_cpuset('0-3\nlxc.apparmor.profile: unconfined')
    assert lc.is_managed('lxc.cgroup2.cpuset.cpus', '0-7', manage_cpuset=True)
    assert not lc.is_managed('lxc.cgroup2.cpuset.cpus', '0-7')
    # A line recorded by the last run is still left alone while the cpuset is not managed.
    assert not lc.is_managed('lxc.cgroup2.cpuset.mems', '0', previous={('lxc.cgroup2.cpuset.mems', '0')})
    assert not lc.is_managed('lxc.cgroup2.cpuset.cpu_exclusive', '1', manage_cpuset=True)


def test_merge_dev_entries_and_cpuset_lines():
    old = CT_CONF.replace('lxc.apparmor.profile: unconfined\n',
                          'lxc.apparmor.profile: unconfined\nlxc.cgroup2.cpuset.cpus: 0-7\n'
                          'lxc.cgroup2.devices.allow: c 195:* rwm\n')
    pairs = lc.render_lines(lc.device_nodes([0, 1], 511), 'dev') + lc.render_cpuset('0-63,128-191', '0')
    new, rendered = lc.merge(old, pairs, manage_cpuset=True)
    assert rendered[-2:] == ['lxc.cgroup2.cpuset.cpus: 0-63,128-191', 'lxc.cgroup2.cpuset.mems: 0']
    main = ''.join(lc.split_sections(new)[0])
    # devN after dev0; the cpuset where the old cpuset line was; the old raw line gone; the snapshot untouched.
    assert 'dev0: /dev/dri/renderD128,gid=104\ndev1: /dev/nvidia0\n' in main
    assert main.endswith('lxc.apparmor.profile: unconfined\nlxc.cgroup2.cpuset.cpus: 0-63,128-191\n'
                         'lxc.cgroup2.cpuset.mems: 0\n\n')
    assert 'c 195:* rwm' not in main and lc.split_sections(new)[1] == lc.split_sections(CT_CONF)[1]
    assert lc.merge(new, pairs, manage_cpuset=True)[0] == new
    assert lc.managed_lines(new, manage_cpuset=True)[-2:] == rendered[-2:]
    # Unmanaged: the cpuset lines stay; opted out: they go.
    devices = lc.render_lines(lc.device_nodes([0, 1], 511), 'dev')
    assert lc.merge(new, devices)[0] == new
    off, dummy = lc.merge(new, devices, manage_cpuset=True)
    assert off == new.replace('lxc.cgroup2.cpuset.cpus: 0-63,128-191\nlxc.cgroup2.cpuset.mems: 0\n', '')


def test_raw_lines_and_cpuset_are_one_block():
    pairs = lc.render_lines(lc.device_nodes([0], 238, include_uvm_tools=False), 'raw') + lc.render_cpuset('0-31', '0')
    new, rendered = lc.merge('arch: amd64\nlxc.cgroup2.cpuset.mems: 1\nswap: 0\n', pairs, manage_cpuset=True)
    assert new == 'arch: amd64\n' + ''.join(line + '\n' for line in rendered) + 'swap: 0\n'
    assert rendered[-2:] == ['lxc.cgroup2.cpuset.cpus: 0-31', 'lxc.cgroup2.cpuset.mems: 0']
