# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_partition through its real argument spec, with the write sequence run against a copy of a fixture tree and
a fake kernel that reacts to the sysfs writes the way the PCI core does (unbind drops the driver link,
drivers_probe binds the override or the native driver, nvidia hands out the lowest free minor)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import threading
import time

import pytest

from ansible.module_utils import basic
from module_harness import AnsibleExitJson, AnsibleFailJson, run

from ansible_collections.llmops.inference.plugins.module_utils.host import gpu_partition as gp
from ansible_collections.llmops.inference.plugins.module_utils.host.pci_sysfs import PciSysfs
from ansible_collections.llmops.inference.plugins.module_utils.host.sysfs_bind import BindError, SysfsBinder, write_with_timeout
from ansible_collections.llmops.inference.plugins.modules import gpu_partition

SEED_SPLIT = [{'numa_node': 1, 'count': 4, 'driver': 'vfio-pci'}, {'numa_node': 0, 'driver': 'nvidia'}]
NATIVE = {'10de:2bb5': 'nvidia', '10de:22e8': 'snd_hda_intel', '8086:10d3': 'e1000e', '10de:2230': 'nvidia',
          '10de:1aef': 'snd_hda_intel'}


class FakeKernel(object):
    """Reacts to writes below a fixture root like the PCI core. ``hang`` = paths whose write never returns."""

    def __init__(self, root, hang=(), fail=()):
        self.root = root
        self.sysfs = PciSysfs(root)
        self.hang = set(hang)
        self.fail = set(fail)
        self.writes = []
        self.removed_ids = []

    def __call__(self, path, value, timeout):
        self.writes.append((os.path.relpath(path, self.root), value))
        name = os.path.basename(path)
        if path in self.hang or name in self.hang:
            return 'writing %r to %s did not return within %s s (fake hang)' % (value.strip(), path, timeout)
        if name in self.fail:
            return 'writing %r to %s failed: No such device (errno 19)' % (value.strip(), path)
        if name == 'driver_override':
            with open(path, 'w') as handle:
                handle.write((value.strip() or '(null)') + '\n')
        elif name == 'unbind':
            self.unbind(value.strip())
        elif name == 'drivers_probe':
            self.probe(value.strip())
        elif name == 'remove_id':
            self.removed_ids.append(value.strip())
        else:
            raise AssertionError('unexpected write to %s' % path)
        return None

    def _rel(self, *parts):
        return os.path.join(self.root, *parts)

    def unbind(self, address):
        driver = self.sysfs.driver(address)
        assert driver, 'unbind of unbound %s' % address
        os.remove(self.sysfs.device_path(address, 'driver'))
        os.remove(self._rel('sys/bus/pci/drivers', driver, address))
        info = self.sysfs.nvidia_gpu_information_path(address)
        if driver == 'nvidia' and os.path.exists(info):
            os.remove(info)
            os.rmdir(os.path.dirname(info))

    def probe(self, address):
        if self.sysfs.driver(address):
            return
        driver = self.sysfs.driver_override(address) or NATIVE.get(self.sysfs.function_summary(address)['pci_id'])
        driver_dir = self._rel('sys/bus/pci/drivers', driver)
        if not os.path.isdir(driver_dir):
            return  # driver not loaded: stays unbound
        device_dir = os.path.realpath(self.sysfs.device_path(address))
        os.symlink(os.path.relpath(driver_dir, device_dir), os.path.join(device_dir, 'driver'))
        os.symlink(os.path.relpath(device_dir, driver_dir), os.path.join(driver_dir, address))
        if driver == 'nvidia':
            used = set()
            gpus_dir = self._rel('proc/driver/nvidia/gpus')
            for other in os.listdir(gpus_dir) if os.path.isdir(gpus_dir) else []:
                parsed = self.sysfs.nvidia_gpu_information(other)
                if parsed:
                    used.add(parsed['device_minor'])
            minor = min(set(range(256)) - used)
            os.makedirs(os.path.join(gpus_dir, address))
            with open(os.path.join(gpus_dir, address, 'information'), 'w') as handle:
                handle.write('Model: \t\t NVIDIA RTX PRO 6000 Blackwell Server Edition\nBus Location: \t %s\n'
                             'Device Minor: \t %d\nGPU Excluded:\t No\n' % (address, minor))


@pytest.fixture
def module_calls(monkeypatch, module_warnings):
    """Warnings (the harness's list) and every command the module tried: none may run against a fixture root."""
    calls = {'warnings': module_warnings, 'commands': []}

    def run_command(self, args, **kwargs):
        calls['commands'].append(args)
        raise AssertionError('no command may run against a fixture root: %r' % (args,))

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    return calls


def run_module(args, kernel=None, monkeypatch=None, check_mode=False, diff=False):
    if kernel is not None:
        monkeypatch.setattr(gpu_partition, 'WRITER', kernel)
    return run(gpu_partition.main, args, check_mode=check_mode, diff=diff)


def seed_args(root, devices=None, **extra):
    args = {'root': root, 'vendor_device': ['10de:2bb5'], 'devices': devices or SEED_SPLIT, 'persistence': 'driverctl',
            'timeout': 2}
    args.update(extra)
    return args


def by_address(result):
    return dict((gpu['address'], gpu) for gpu in result['gpus'])


# ---- the split on the seed topology ---------------------------------------------------------------------------

def test_check_mode_reports_the_plan_and_writes_nothing(fresh_root, module_calls, monkeypatch):
    root = fresh_root('seed_pve_8x_rtx6000_presplit')
    kernel = FakeKernel(root)
    kind, result = run_module(seed_args(root), kernel, monkeypatch, check_mode=True, diff=True)
    assert kind is AnsibleExitJson, result
    assert result['changed'] is True
    assert kernel.writes == []
    assert [item['action'] for item in result['plan']] == ['none'] * 4 + ['bind'] * 4
    assert result['plan_lines'][4].startswith('0000:81:00.0 [10de:2bb5] NUMA 1, IOMMU group 14: nvidia (/dev/nvidia4) '
                                              '-> vfio-pci')
    assert '0000:81:00.0 nvidia /dev/nvidia4\n' in result['diff']['before']
    # The diff shows the driver each function gets now and at the next boot (driverctl).
    assert '0000:81:00.0 vfio-pci override=vfio-pci boot=vfio-pci\n' in result['diff']['after']
    assert '0000:81:00.1 vfio-pci override=vfio-pci boot=vfio-pci\n' in result['diff']['after']
    assert '0000:01:00.0 nvidia /dev/nvidia0\n' in result['diff']['after']
    assert not os.path.exists(os.path.join(root, 'etc/driverctl.d'))


def test_check_mode_shows_a_persistence_only_change(fresh_root, module_calls, monkeypatch):
    # The seed after the split with nothing persisted: the drivers stay, the next boot's change is all there is.
    root = fresh_root('seed_pve_8x_rtx6000')
    kind, result = run_module(seed_args(root), FakeKernel(root), monkeypatch, check_mode=True, diff=True)
    assert kind is AnsibleExitJson, result
    assert result['changed'] is True
    assert [item['action'] for item in result['plan']][4:] == ['persist'] * 4
    assert result['plan_lines'][4] == ('0000:81:00.0 [10de:2bb5] NUMA 1, IOMMU group 14: on vfio-pci, boot-time '
                                       'driver (driverctl): none -> vfio-pci (+ .1 vfio-pci) [entry 1]')
    assert '0000:81:00.0 vfio-pci override=vfio-pci\n' in result['diff']['before']
    assert '0000:81:00.0 vfio-pci override=vfio-pci boot=vfio-pci\n' in result['diff']['after']
    assert result['diff']['before'] != result['diff']['after']


def test_unreadable_processes_are_refused_before_anything_changes(fresh_root, module_calls, monkeypatch):
    root = fresh_root('seed_pve_8x_rtx6000_presplit')
    kernel = FakeKernel(root)
    monkeypatch.setattr(gpu_partition, 'scan_open_handles', lambda root: ([], [4242, 4243]))
    for check_mode in (True, False):
        kind, result = run_module(seed_args(root), kernel, monkeypatch, check_mode=check_mode)
        assert kind is AnsibleFailJson, result
        assert 'open files of 2 process(es) cannot be read (PIDs 4242, 4243' in result['msg']
        assert result['unreadable_pids'] == [4242, 4243]
    assert kernel.writes == []


def test_a_live_run_as_non_root_is_refused_before_the_scan(fresh_root, module_calls, monkeypatch):
    root = fresh_root('seed_pve_8x_rtx6000_presplit')
    kernel = FakeKernel(root)
    scans = []
    monkeypatch.setattr(gpu_partition, 'scan_open_handles', lambda root: scans.append(root) or ([], []))
    monkeypatch.setattr(gpu_partition.os, 'geteuid', lambda: 1000)
    real_init = gpu_partition.Partitioner.__init__

    def live_init(self, module):
        real_init(self, module)
        self.live = True  # the fixture root stands in for / here; only the uid check is under test

    monkeypatch.setattr(gpu_partition.Partitioner, '__init__', live_init)
    kind, result = run_module(seed_args(root), kernel, monkeypatch, check_mode=True)
    assert kind is AnsibleFailJson, result
    assert result['msg'].startswith('gpu_partition must run as root (become: true): as uid 1000')
    assert scans == [] and kernel.writes == []


def test_split_binds_by_address_persists_and_reports_new_minors(fresh_root, module_calls, monkeypatch):
    root = fresh_root('seed_pve_8x_rtx6000_presplit')
    kernel = FakeKernel(root)
    kind, result = run_module(seed_args(root), kernel, monkeypatch, diff=True)
    assert kind is AnsibleExitJson, result
    assert result['changed'] is True
    gpus = by_address(result)
    for address in ('0000:81:00.0', '0000:a1:00.0', '0000:c1:00.0', '0000:e1:00.0'):
        assert gpus[address]['driver'] == 'vfio-pci' and gpus[address]['driver_override'] == 'vfio-pci'
        assert [fn['driver'] for fn in gpus[address]['functions']] == ['vfio-pci', 'vfio-pci']
        assert gpus[address]['persisted'] == 'vfio-pci' and gpus[address]['device_node'] is None
        for fn in ('0', '1'):
            with open(os.path.join(root, 'etc/driverctl.d/pci-' + address[:-1] + fn)) as handle:
                assert handle.read() == 'vfio-pci\n'
    assert [gpus[a]['device_node'] for a in ('0000:01:00.0', '0000:21:00.0', '0000:41:00.0', '0000:61:00.0')] == \
        ['/dev/nvidia0', '/dev/nvidia1', '/dev/nvidia2', '/dev/nvidia3']
    # Sequence per function: override, unbind, probe; the audio function first.
    assert kernel.writes[:3] == [
        ('sys/bus/pci/devices/0000:81:00.1/driver_override', 'vfio-pci\n'),
        ('sys/bus/pci/devices/0000:81:00.1/driver/unbind', '0000:81:00.1'),
        ('sys/bus/pci/drivers_probe', '0000:81:00.1')]
    assert len(kernel.writes) == 8 * 3
    assert [w['path'] for w in result['writes']][:3] == [os.path.join(root, p) for p, dummy in kernel.writes[:3]]
    assert module_calls['commands'] == []

    # Idempotent: a second run changes nothing and writes nothing.
    kernel2 = FakeKernel(root)
    kind, again = run_module(seed_args(root), kernel2, monkeypatch)
    assert kind is AnsibleExitJson and again['changed'] is False and kernel2.writes == []
    assert [item['action'] for item in again['plan']] == ['none'] * 8


def test_reverse_returns_the_card_and_the_minor_is_reassigned(fresh_root, module_calls, monkeypatch):
    root = fresh_root('seed_pve_8x_rtx6000')
    # The seed's vfio cards are persisted with driverctl, as the role would have left them.
    os.makedirs(os.path.join(root, 'etc/driverctl.d'))
    for bus in ('81', 'a1', 'c1', 'e1'):
        for fn in '01':
            with open(os.path.join(root, 'etc/driverctl.d/pci-0000:%s:00.%s' % (bus, fn)), 'w') as handle:
                handle.write('vfio-pci\n')
    kernel = FakeKernel(root)
    kind, result = run_module(seed_args(root, [{'address': '0000:a1:00.0', 'driver': 'nvidia'}]), kernel, monkeypatch)
    assert kind is AnsibleExitJson, result
    gpu = by_address(result)['0000:a1:00.0']
    assert (gpu['driver'], gpu['driver_override'], gpu['persisted']) == ('nvidia', None, None)
    # NUMA 0 holds minors 0-3 (out of slot order), so the returned card gets the lowest free one: 4.
    assert gpu['device_node'] == '/dev/nvidia4'
    assert [fn['driver'] for fn in gpu['functions']] == ['nvidia', 'snd_hda_intel']
    assert not os.path.exists(os.path.join(root, 'etc/driverctl.d/pci-0000:a1:00.0'))
    assert os.path.exists(os.path.join(root, 'etc/driverctl.d/pci-0000:81:00.0'))
    # Proxmox's dynamic ID is dropped from vfio-pci first, so it cannot grab the card on the probe.
    assert kernel.removed_ids == ['10de 22e8', '10de 2bb5']
    assert kernel.writes[2:5] == [('sys/bus/pci/devices/0000:a1:00.0/driver_override', '\n'),
                                  ('sys/bus/pci/devices/0000:a1:00.0/driver/unbind', '0000:a1:00.0'),
                                  ('sys/bus/pci/drivers_probe', '0000:a1:00.0')]


def test_udev_persistence_and_switching_mechanism(fresh_root, module_calls, monkeypatch):
    root = fresh_root('no_nvidia')
    args = {'root': root, 'vendor_device': ['8086:10d3'], 'keep_driver': 'e1000e', 'persistence': 'udev',
            'devices': [{'address': '0000:00:03.0', 'driver': 'vfio-pci'}, {'address': '0000:00:02.0', 'driver': 'e1000e'}]}
    kind, result = run_module(args, FakeKernel(root), monkeypatch)
    assert kind is AnsibleExitJson, result
    assert result['changed'] is True and result['writes'] == []  # already bound: persistence only
    with open(os.path.join(root, gp.UDEV_RULES_FILE)) as handle:
        assert gp.parse_udev_rules(handle.read()) == {'0000:00:03.0': 'vfio-pci'}
    with open(os.path.join(root, gp.UDEV_MODULES_LOAD_FILE)) as handle:
        assert handle.read().splitlines()[-1] == 'vfio-pci'
    kind, again = run_module(args, FakeKernel(root), monkeypatch)
    assert again['changed'] is False

    # Switching to driverctl moves the entry and removes the udev files.
    kind, switched = run_module(dict(args, persistence='driverctl'), FakeKernel(root), monkeypatch)
    assert switched['changed'] is True
    assert os.path.exists(os.path.join(root, 'etc/driverctl.d/pci-0000:00:03.0'))
    assert not os.path.exists(os.path.join(root, gp.UDEV_RULES_FILE))
    assert not os.path.exists(os.path.join(root, gp.UDEV_MODULES_LOAD_FILE))


def test_auto_persistence_prefers_driverctl_when_installed(fresh_root, module_calls, monkeypatch):
    root = fresh_root('no_nvidia')
    args = {'root': root, 'vendor_device': ['8086:10d3'], 'keep_driver': 'e1000e', 'devices': []}
    kind, result = run_module(args, None, monkeypatch)
    assert result['persistence'] == 'udev' and result['changed'] is False and result['plan'] == []
    os.makedirs(os.path.join(root, 'usr/sbin'))
    open(os.path.join(root, 'usr/sbin/driverctl'), 'w').close()
    kind, result = run_module(args, None, monkeypatch)
    assert result['persistence'] == 'driverctl'
    assert [gpu['address'] for gpu in result['gpus']] == ['0000:00:02.0', '0000:00:03.0']


# ---- refusals ------------------------------------------------------------------------------------------------

def test_refuses_a_group_with_a_foreign_member(fresh_root, module_calls, monkeypatch):
    root = fresh_root('shared_group')
    kernel = FakeKernel(root)
    kind, result = run_module({'root': root, 'devices': [{'address': '0000:03:00.0', 'driver': 'vfio-pci'}]},
                              kernel, monkeypatch)
    assert kind is AnsibleFailJson
    assert result['msg'].startswith('refusing to change anything: 0000:03:00.0: IOMMU group 14 of 0000:03:00.0 also '
                                    'holds 0000:04:00.0 [8086:1572, class 0x020000, driver i40e]')
    assert kernel.writes == [] and result['changed'] is False


def test_refuses_a_gpu_with_an_open_handle(fresh_root, module_calls, monkeypatch):
    root = fresh_root('seed_pve_8x_rtx6000_presplit')
    fd_dir = os.path.join(root, 'proc', '4242', 'fd')
    os.makedirs(fd_dir)
    with open(os.path.join(root, 'proc', '4242', 'comm'), 'w') as handle:
        handle.write('python3\n')
    os.symlink('/dev/nvidia6', os.path.join(fd_dir, '5'))  # c1:00.0 is minor 6 before the split
    kernel = FakeKernel(root)
    kind, result = run_module(seed_args(root), kernel, monkeypatch, check_mode=True)
    assert kind is AnsibleFailJson
    assert result['busy'] == ['0000:c1:00.0 (10de:2bb5, driver nvidia): pid 4242 (python3) has /dev/nvidia6 open']
    assert 'refusing to unbind functions that are in use' in result['msg']
    kind, result = run_module(seed_args(root), kernel, monkeypatch)
    assert kind is AnsibleFailJson and kernel.writes == []


def test_refuses_without_iommu_and_says_what_to_change(fresh_root, module_calls, monkeypatch):
    root = fresh_root('h200_real')
    os.makedirs(os.path.join(root, 'etc/default'))
    with open(os.path.join(root, 'etc/default/grub'), 'w') as handle:
        handle.write('GRUB_CMDLINE_LINUX_DEFAULT="quiet"\n')
    with open(os.path.join(root, 'proc/cpuinfo'), 'w') as handle:
        handle.write('processor\t: 0\nvendor_id\t: GenuineIntel\n')
    with open(os.path.join(root, 'proc/cmdline'), 'w') as handle:
        handle.write('BOOT_IMAGE=/vmlinuz ro quiet\n')
    args = {'root': root, 'devices': [{'address': '0000:00:06.0', 'driver': 'vfio-pci'}]}
    kernel = FakeKernel(root)
    kind, result = run_module(args, kernel, monkeypatch)
    assert kind is AnsibleFailJson
    assert result['msg'].startswith('IOMMU is not enabled (no groups under /sys/kernel/iommu_groups): enable VT-d')
    assert 'add intel_iommu=on iommu=pt' in result['msg'] and 'update-grub && reboot' in result['msg']
    # report (the default) changes nothing: no sysfs write, the boot loader config as it was, nothing persisted.
    assert kernel.writes == [] and result['changed'] is False and result['reboot_required'] is False
    with open(os.path.join(root, 'etc/default/grub')) as handle:
        assert handle.read() == 'GRUB_CMDLINE_LINUX_DEFAULT="quiet"\n'
    assert sorted(os.listdir(os.path.join(root, 'etc'))) == ['default']

    kind, result = run_module(dict(args, kernel_cmdline='apply'), FakeKernel(root), monkeypatch, diff=True)
    assert kind is AnsibleExitJson
    assert result['changed'] is True and result['reboot_required'] is True
    assert result['diff']['after'] == 'GRUB_CMDLINE_LINUX_DEFAULT="quiet intel_iommu=on iommu=pt"\n'
    with open(os.path.join(root, 'etc/default/grub')) as handle:
        assert handle.read() == result['diff']['after']
    assert any('reboot the host' in warning for warning in module_calls['warnings'])


def test_persistenced_is_stopped_around_the_binds_and_its_handles_do_not_count(fresh_root, monkeypatch):
    """nvidia-persistenced holds every /dev/nvidiaN open: its handles are not "in use", and the daemon is stopped
    before the first sysfs write and started after the last one."""
    root = fresh_root('seed_pve_8x_rtx6000_presplit')
    fd_dir = os.path.join(root, 'proc', '77', 'fd')
    os.makedirs(fd_dir)
    with open(os.path.join(root, 'proc', '77', 'comm'), 'w') as handle:
        handle.write('nvidia-persiste\n')  # comm is cut at 15 characters
    os.symlink('/dev/nvidia6', os.path.join(fd_dir, '5'))
    events = []
    kernel = FakeKernel(root)

    def writer(path, value, timeout):
        events.append('write')
        return kernel(path, value, timeout)

    def run_command(self, args, **kwargs):
        events.append(' '.join(args))
        return 0, '', ''

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(gpu_partition.Partitioner, 'persistenced_active', lambda self: True)
    kind, result = run_module(seed_args(root), writer, monkeypatch)
    assert kind is AnsibleExitJson, result
    assert result['busy'] == [] and result['persistenced_restarted'] is True
    assert events[0] == 'systemctl stop nvidia-persistenced.service'
    assert events[-1] == 'systemctl start nvidia-persistenced.service'
    assert events[1:-1] == ['write'] * 24


def test_bind_failure_is_reported_with_the_partial_map(fresh_root, module_calls, monkeypatch):
    root = fresh_root('seed_pve_8x_rtx6000_presplit')
    kernel = FakeKernel(root, hang={os.path.join(root, 'sys/bus/pci/devices/0000:81:00.0/driver/unbind')})
    kind, result = run_module(seed_args(root), kernel, monkeypatch)
    assert kind is AnsibleFailJson
    assert result['msg'].startswith('binding failed: writing \'0000:81:00.0\' to ')
    assert 'did not return within' in result['msg']
    gpus = by_address(result)
    # The audio function moved before the GPU hung; nothing after it was touched.
    assert [fn['driver'] for fn in gpus['0000:81:00.0']['functions']] == ['nvidia', 'vfio-pci']
    assert gpus['0000:a1:00.0']['driver'] == 'nvidia' and result['changed'] is True


def test_invalid_desired_state_fails_before_anything(fresh_root, module_calls, monkeypatch):
    root = fresh_root('seed_pve_8x_rtx6000_presplit')
    kind, result = run_module(seed_args(root, [{'numa_node': 1, 'count': 6, 'driver': 'vfio-pci'}]), None, monkeypatch)
    assert kind is AnsibleFailJson
    assert 'asks for 6 card(s) but only 4' in result['msg'] and len(result['gpus']) == 8
    kind, result = run_module(seed_args(root, vendor_device=['10de']), None, monkeypatch)
    assert kind is AnsibleFailJson and "invalid vendor_device '10de'" in result['msg']


# ---- the binder on its own --------------------------------------------------------------------------------

def test_binder_waits_for_the_driver_link(fresh_root):
    root = fresh_root('no_nvidia')
    kernel = FakeKernel(root)
    binder = SysfsBinder(PciSysfs(root), timeout=1, write=kernel)
    assert binder.bind('0000:00:02.0', 'vfio-pci') == 'vfio-pci'
    assert binder.bind('00:02.0', None, expect=lambda name: name == 'e1000e') == 'e1000e'
    # vfio-pci unloaded: the probe binds nothing and the wait times out with the state it saw.
    os.rename(os.path.join(root, 'sys/bus/pci/drivers/vfio-pci'), os.path.join(root, 'sys/bus/pci/drivers/vfio-gone'))
    binder = SysfsBinder(PciSysfs(root), timeout=0.3, write=kernel, poll_interval=0.05)
    with pytest.raises(BindError) as exc:
        binder.bind('0000:00:02.0', 'vfio-pci')
    assert str(exc.value) == '0000:00:02.0: not bound to vfio-pci within 0.3 s (driver is none)'


def test_write_with_timeout_real_file_and_error(tmp_path):
    target = tmp_path / 'driver_override'
    target.write_text('(null)\n')
    assert write_with_timeout(str(target), 'vfio-pci\n', 5) is None
    assert target.read_text() == 'vfio-pci\n'
    error = write_with_timeout(str(tmp_path / 'missing' / 'unbind'), '0000:00:02.0', 5)
    assert error.startswith("writing '0000:00:02.0' to ") and 'No such file or directory (errno 2)' in error


def test_write_with_timeout_gives_up_on_a_write_that_blocks(tmp_path):
    # Opening a FIFO for writing blocks until a reader comes: a stand-in for an unbind stuck in the kernel.
    fifo = str(tmp_path / 'unbind')
    os.mkfifo(fifo)
    started = time.time()
    error = write_with_timeout(fifo, '0000:41:00.0', 0.5)
    elapsed = time.time() - started
    assert 0.5 <= elapsed < 5
    assert 'did not return within 0.5 s' in error and 'is stuck in the kernel' in error
    # Release the detached child so it does not outlive the test.
    reader = threading.Thread(target=lambda: open(fifo).read())
    reader.start()
    reader.join(5)
