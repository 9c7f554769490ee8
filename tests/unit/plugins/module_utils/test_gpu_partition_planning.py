# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Planning of the vfio/nvidia split against the sysfs fixture trees (seed topology, shared group, e1000e VM)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.host import gpu_partition as gp
from ansible_collections.llmops.inference.plugins.module_utils.host.pci_sysfs import PciSysfs

SEED = '10de:2bb5'
NUMA0 = ['0000:01:00.0', '0000:21:00.0', '0000:41:00.0', '0000:61:00.0']
NUMA1 = ['0000:81:00.0', '0000:a1:00.0', '0000:c1:00.0', '0000:e1:00.0']


def topo(sysfs_roots, case):
    return gp.snapshot(PciSysfs(sysfs_roots[case]))


def plan_for(topology, devices, vendor=(SEED,), keep='nvidia', persisted=None, persistence='driverctl'):
    entries = gp.normalize_entries(devices, 'vfio-pci', keep)
    vendors = set(vendor) if vendor else None
    targets, notes = gp.resolve_targets(topology, entries, vendors)
    return gp.plan_partition(topology, targets, 'vfio-pci', keep, vendors, persisted, persistence), targets, notes


# ---- entries -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('devices, message', [
    ([{'address': '0000:81:00.0'}], "driver must be vfio-pci or nvidia, got None"),
    ([{'address': '0000:81:00.0', 'driver': 'vfio'}], "driver must be vfio-pci or nvidia, got 'vfio'"),
    ([{'address': '81:00', 'driver': 'vfio-pci'}], "invalid PCI address '81:00'"),
    ([{'address': '81:00.0', 'numa_node': 1, 'driver': 'vfio-pci'}], 'either address or selector'),
    ([{'driver': 'vfio-pci'}], 'needs an address or a selector'),
    ([{'numa_node': 'one', 'driver': 'vfio-pci'}], 'numa_node must be an integer'),
    ([{'numa_node': 1, 'count': 0, 'driver': 'vfio-pci'}], 'count must be >= 1'),
    ([{'vendor_device': 'nvidia', 'driver': 'vfio-pci'}], "invalid vendor_device 'nvidia'"),
    ([{'address': '81:00.0', 'driver': 'vfio-pci', 'state': 'present'}], 'unknown key(s) state'),
    (['0000:81:00.0'], 'expected a dict'),
])
def test_bad_entries(devices, message):
    with pytest.raises(gp.PartitionError) as exc:
        gp.normalize_entries(devices)
    assert message in str(exc.value)


def test_entry_spellings_are_normalised():
    entries = gp.normalize_entries([{'address': '00000000:81:00.0', 'driver': 'vfio-pci', 'name': 'vm gpus'},
                                    {'numa_node': '0', 'vendor_device': '0x10DE:0x2BB5', 'driver': 'nvidia'}])
    assert entries[0]['address'] == '0000:81:00.0' and entries[0]['label'] == 'entry 1 (vm gpus)'
    assert entries[1]['numa_node'] == 0 and entries[1]['vendor_device'] == '10de:2bb5' and entries[1]['count'] is None


# ---- seed topology: cards, selectors, minors ----------------------------------------------------------------------

def test_seed_cards_are_gpu_plus_audio(sysfs_roots):
    topology = topo(sysfs_roots, 'seed_pve_8x_rtx6000_presplit')
    cards = gp.cards(topology, {SEED})
    assert sorted(cards) == sorted(NUMA0 + NUMA1)
    assert cards['0000:81:00.0'] == ['0000:81:00.0', '0000:81:00.1']
    # Without vendor_device the default is "NVIDIA GPU-class functions": same cards, audio never a primary.
    assert gp.cards(topology) == cards
    assert gp.card_of(topology, '0000:41:00.1') == '0000:41:00.0'


def test_seed_split_plan_by_numa_selector(sysfs_roots):
    topology = topo(sysfs_roots, 'seed_pve_8x_rtx6000_presplit')
    plan, targets, notes = plan_for(topology, [{'numa_node': 1, 'count': 4, 'driver': 'vfio-pci'},
                                               {'numa_node': 0, 'driver': 'nvidia'}])
    assert notes == []
    assert [item['address'] for item in plan] == NUMA0 + NUMA1
    assert [item['action'] for item in plan] == ['none'] * 4 + ['bind'] * 4
    moving = plan[4]
    assert moving['target'] == 'vfio-pci' and moving['iommu_group'] == 14 and moving['errors'] == []
    assert [(s['address'], s['driver'], s['want_driver'], s['unbind'], s['persist_want']) for s in moving['functions']] == [
        ('0000:81:00.0', 'nvidia', 'vfio-pci', True, 'vfio-pci'),
        ('0000:81:00.1', 'snd_hda_intel', 'vfio-pci', True, 'vfio-pci')]
    lines = gp.plan_lines(plan)
    assert lines[0] == '0000:01:00.0 [10de:2bb5] NUMA 0, IOMMU group 2: stays on nvidia, /dev/nvidia0 (+ .1 snd_hda_intel) [entry 2]'
    # /dev/nvidia4 is the card's node on the driver it leaves, not one it keeps.
    assert lines[4] == ('0000:81:00.0 [10de:2bb5] NUMA 1, IOMMU group 14: nvidia (/dev/nvidia4) -> vfio-pci '
                        '(+ .1 snd_hda_intel -> vfio-pci) [entry 1]')


def test_seed_after_split_is_a_no_op_plan_with_minors_out_of_slot_order(sysfs_roots):
    topology = topo(sysfs_roots, 'seed_pve_8x_rtx6000')
    persisted = dict((addr[:-1] + fn, 'vfio-pci') for addr in NUMA1 for fn in '01')
    plan, targets, notes = plan_for(topology, [{'numa_node': 1, 'count': 4, 'driver': 'vfio-pci'},
                                               {'numa_node': 0, 'driver': 'nvidia'}], persisted=persisted)
    assert [item['action'] for item in plan] == ['none'] * 8
    gpus = gp.final_map(topology, targets, 'vfio-pci', {SEED}, persisted)
    assert [(g['address'], g['driver'], g['device_node'], g['numa_node']) for g in gpus[:4]] == [
        ('0000:01:00.0', 'nvidia', '/dev/nvidia2', 0), ('0000:21:00.0', 'nvidia', '/dev/nvidia0', 0),
        ('0000:41:00.0', 'nvidia', '/dev/nvidia3', 0), ('0000:61:00.0', 'nvidia', '/dev/nvidia1', 0)]
    assert [(g['driver'], g['persisted'], g['device_minor']) for g in gpus[4:]] == [('vfio-pci', 'vfio-pci', None)] * 4


def test_seed_post_split_without_persistence_plans_persist_only(sysfs_roots):
    topology = topo(sysfs_roots, 'seed_pve_8x_rtx6000')
    plan, dummy, dummy = plan_for(topology, [{'numa_node': 1, 'driver': 'vfio-pci'}])
    assert [item['action'] for item in plan] == ['persist'] * 4
    plan, dummy, dummy = plan_for(topology, [{'numa_node': 1, 'driver': 'vfio-pci'}], persistence='none')
    assert [item['action'] for item in plan] == ['none'] * 4


def test_selector_prefers_cards_already_on_the_driver(sysfs_roots):
    topology = topo(sysfs_roots, 'seed_pve_8x_rtx6000')
    # Two vfio cards wanted out of eight: the split already has four on vfio, so two of those are chosen and the
    # nvidia cards of NUMA 0 are not touched (address order alone would pick 01 and 21).
    plan, targets, dummy = plan_for(topology, [{'count': 2, 'driver': 'vfio-pci'}])
    assert sorted(targets) == ['0000:81:00.0', '0000:a1:00.0']
    assert all(item['action'] in ('none', 'persist') for item in plan)


def test_address_entries_win_over_selectors_and_later_entries_win(sysfs_roots):
    topology = topo(sysfs_roots, 'seed_pve_8x_rtx6000_presplit')
    plan, targets, notes = plan_for(topology, [
        {'numa_node': 1, 'driver': 'vfio-pci'},
        {'address': '0000:c1:00.0', 'driver': 'vfio-pci'},
        {'address': '0000:c1:00.1', 'driver': 'nvidia', 'name': 'host override'},
    ])
    assert targets['0000:c1:00.0'] == {'driver': 'nvidia', 'source': 'entry 3 (host override)'}
    assert sorted(a for a, t in targets.items() if t['driver'] == 'vfio-pci') == ['0000:81:00.0', '0000:a1:00.0', '0000:e1:00.0']
    assert notes == ['entry 3 (host override): 0000:c1:00.1 is a companion function of 0000:c1:00.0; the whole card moves',
                     'entry 3 (host override) overrides entry 2 for 0000:c1:00.0 (vfio-pci -> nvidia)']


@pytest.mark.parametrize('devices, message', [
    ([{'numa_node': 1, 'count': 5, 'driver': 'vfio-pci'}], 'asks for 5 card(s) but only 4 unclaimed one(s) match'),
    ([{'numa_node': 2, 'driver': 'vfio-pci'}], 'matches no card'),
    ([{'vendor_device': '10de:2bb1', 'driver': 'vfio-pci'}], 'matches no card'),
    ([{'address': '0000:81:00.0', 'driver': 'vfio-pci'}, {'numa_node': 1, 'count': 4, 'driver': 'vfio-pci'}],
     'only 3 unclaimed'),
    ([{'address': '0000:82:00.0', 'driver': 'vfio-pci'}], 'no PCI function 0000:82:00.0'),
    ([{'address': '0000:80:01.1', 'driver': 'vfio-pci'}], 'is a bridge'),
    ([{'address': '0000:80:00.0', 'driver': 'vfio-pci'}], '0000:80:00.0 is 1022:14a4 (class 0x060000, driver None), not 10de:2bb5'),
])
def test_unsatisfiable_entries(sysfs_roots, devices, message):
    topology = topo(sysfs_roots, 'seed_pve_8x_rtx6000_presplit')
    with pytest.raises(gp.PartitionError) as exc:
        plan_for(topology, devices)
    assert message in str(exc.value)


def test_vendor_device_guards_against_typos(sysfs_roots):
    topology = topo(sysfs_roots, 'no_nvidia')
    with pytest.raises(gp.PartitionError) as exc:
        plan_for(topology, [{'address': '0000:00:1f.2', 'driver': 'vfio-pci'}], vendor=('8086:10d3',), keep='e1000e')
    assert '0000:00:1f.2 is 8086:2922 (class 0x010601, driver ahci), not 8086:10d3; refusing' in str(exc.value)


# ---- IOMMU group completeness --------------------------------------------------------------------------------

def test_shared_group_with_foreign_nic_is_refused(sysfs_roots):
    topology = topo(sysfs_roots, 'shared_group')
    plan, dummy, dummy = plan_for(topology, [{'address': '0000:03:00.0', 'driver': 'vfio-pci'}], vendor=None)
    assert len(plan[0]['errors']) == 1
    error = plan[0]['errors'][0]
    # The two switch downstream ports in the group are bridges and do not count; the i40e NIC does.
    assert 'IOMMU group 14 of 0000:03:00.0 also holds 0000:04:00.0 [8086:1572, class 0x020000, driver i40e]' in error
    assert '0000:02:08.0' not in error and '0000:03:00.1' not in error
    assert gp.plan_lines(plan)[1].startswith('  REFUSED: IOMMU group 14')


def test_clean_group_next_to_it_is_accepted(sysfs_roots):
    topology = topo(sysfs_roots, 'shared_group')
    plan, dummy, dummy = plan_for(topology, [{'address': '0000:05:00.0', 'driver': 'vfio-pci'}], vendor=None)
    assert plan[0]['errors'] == [] and plan[0]['action'] == 'bind'


def test_group_members_that_move_together_are_not_foreign():
    # Two GPUs behind a switch without ACS (one group): moving both is fine, moving one leaves a host GPU behind.
    def fn(address, pci_id, cls, driver, group, bridge=False):
        return {'address': address, 'pci_id': pci_id, 'vendor_id': '0x' + pci_id[:4], 'class': cls,
                'is_gpu': cls.startswith('0x03'), 'is_bridge': bridge, 'driver': driver, 'driver_override': None,
                'slot': address[:-2], 'numa_node': 0, 'iommu_group': group, 'device_minor': None, 'netdevs': []}
    functions = dict((f['address'], f) for f in [
        fn('0000:02:00.0', '10b5:8747', '0x060400', 'pcieport', 7, bridge=True),
        fn('0000:03:00.0', SEED, '0x030200', 'nvidia', 7),
        fn('0000:04:00.0', SEED, '0x030200', 'nvidia', 7),
    ])
    topology = {'functions': functions, 'groups': {7: sorted(functions)}, 'iommu_enabled': True, 'drivers': []}
    plan, dummy, dummy = plan_for(topology, [{'address': '0000:03:00.0', 'driver': 'vfio-pci'}])
    assert 'also holds 0000:04:00.0 [10de:2bb5, class 0x030200, driver nvidia]' in plan[0]['errors'][0]
    plan, dummy, dummy = plan_for(topology, [{'address': '0000:03:00.0', 'driver': 'vfio-pci'},
                                             {'address': '0000:04:00.0', 'driver': 'vfio-pci'}])
    assert [item['errors'] for item in plan] == [[], []]


def test_no_iommu_group_is_an_error(sysfs_roots):
    topology = topo(sysfs_roots, 'h200_real')
    plan, dummy, dummy = plan_for(topology, [{'address': '0000:00:06.0', 'driver': 'vfio-pci'}], vendor=None)
    assert plan[0]['errors'] == ['0000:00:06.0 has no IOMMU group (IOMMU off?): it cannot be passed through']


# ---- back to the host ----------------------------------------------------------------------------------------

def test_return_to_host_clears_vfio_override_and_persistence(sysfs_roots):
    topology = topo(sysfs_roots, 'seed_pve_8x_rtx6000')
    persisted = {'0000:81:00.0': 'vfio-pci', '0000:81:00.1': 'vfio-pci'}
    plan, dummy, dummy = plan_for(topology, [{'address': '0000:81:00.0', 'driver': 'nvidia'}], persisted=persisted)
    steps = plan[0]['functions']
    assert plan[0]['action'] == 'bind' and plan[0]['errors'] == []
    assert [(s['want_override'], s['want_driver'], s['unbind'], s['persist_want']) for s in steps] == [
        (None, 'nvidia', True, None), (None, None, True, None)]


def test_host_target_on_a_foreign_driver_is_refused(sysfs_roots):
    topology = topo(sysfs_roots, 'no_nvidia')
    plan, dummy, dummy = plan_for(topology, [{'address': '0000:00:02.0', 'driver': 'nvidia'}], vendor=('8086:10d3',))
    assert plan[0]['errors'] == ['0000:00:02.0 is bound to e1000e, not nvidia: refusing to unbind it '
                                 '(blacklist e1000e or unbind it first)']


def test_e1000e_pair_in_the_vm(sysfs_roots):
    topology = topo(sysfs_roots, 'no_nvidia')
    devices = [{'address': '0000:00:03.0', 'driver': 'vfio-pci'}, {'address': '0000:00:02.0', 'driver': 'e1000e'}]
    plan, dummy, dummy = plan_for(topology, devices, vendor=('8086:10d3',), keep='e1000e',
                                  persisted={'0000:00:03.0': 'vfio-pci'})
    assert [(item['address'], item['action']) for item in plan] == [('0000:00:02.0', 'none'), ('0000:00:03.0', 'none')]
    reverse = [{'address': '0000:00:03.0', 'driver': 'e1000e'}]
    plan, dummy, dummy = plan_for(topology, reverse, vendor=('8086:10d3',), keep='e1000e')
    assert plan[0]['action'] == 'bind' and plan[0]['functions'][0]['want_driver'] == 'e1000e'


# ---- busy checks -----------------------------------------------------------------------------------------------

def _moving_plan(sysfs_roots, case='seed_pve_8x_rtx6000_presplit', address='0000:41:00.0'):
    topology = topo(sysfs_roots, case)
    plan, dummy, dummy = plan_for(topology, [{'address': address, 'driver': 'vfio-pci'}])
    return topology, plan


def test_busy_open_handle_on_the_gpu_node(sysfs_roots):
    topology, plan = _moving_plan(sysfs_roots)
    handles = [(4242, 'python3', '/dev/nvidia2'), (4242, 'python3', '/dev/nvidiactl'), (7, 'sshd', '/dev/null'),
               (99, 'nvidia-persiste', '/dev/nvidia2'), (5, 'python3', '/dev/nvidia0')]
    assert gp.busy_reasons(plan, topology, handles) == [
        '0000:41:00.0 (10de:2bb5, driver nvidia): pid 4242 (python3) has /dev/nvidia2 open']


def test_busy_compute_app_and_sysfs_handle(sysfs_roots):
    topology, plan = _moving_plan(sysfs_roots)
    apps = [{'pid': 412232, 'process_name': 'sglang::scheduler_TP2', 'gpu_bus_id': '0000:41:00.0'},
            {'pid': 412230, 'process_name': 'sglang::scheduler_TP0', 'gpu_bus_id': '0000:01:00.0'}]
    sysfs_dir = topology['functions']['0000:41:00.1']['sysfs_path']
    assert sysfs_dir == '/sys/devices/pci0000:40/0000:40:01.1/0000:41:00.1'
    handles = [(10, 'lspci', sysfs_dir + '/config')]
    assert gp.busy_reasons(plan, topology, handles, apps) == [
        '0000:41:00.0 (10de:2bb5, driver nvidia): nvidia-smi lists compute process pid 412232 (sglang::scheduler_TP2)',
        '0000:41:00.1 (10de:22e8, driver snd_hda_intel): pid 10 (lspci) has %s/config open' % sysfs_dir]


def test_busy_vfio_group_held_by_a_vm(sysfs_roots):
    topology = topo(sysfs_roots, 'seed_pve_8x_rtx6000')
    plan, dummy, dummy = plan_for(topology, [{'address': '0000:81:00.0', 'driver': 'nvidia'}])
    handles = [(3001, 'kvm', '/dev/vfio/14'), (3001, 'kvm', '/dev/vfio/vfio')]
    assert gp.busy_reasons(plan, topology, handles) == [
        '0000:81:00.0 (10de:2bb5, driver vfio-pci): pid 3001 (kvm) has /dev/vfio/14 open',
        '0000:81:00.1 (10de:22e8, driver vfio-pci): pid 3001 (kvm) has /dev/vfio/14 open']


def test_busy_netdev_up_and_nothing_for_cards_that_stay(sysfs_roots, fresh_root):
    root = fresh_root('no_nvidia')
    sysfs = PciSysfs(root)
    net = sysfs.device_path('0000:00:02.0', 'net', 'enp0s2')
    os.makedirs(net)
    with open(os.path.join(net, 'flags'), 'w') as handle:
        handle.write('0x1003\n')
    topology = gp.snapshot(sysfs)
    assert topology['functions']['0000:00:02.0']['netdevs'] == [{'name': 'enp0s2', 'up': True, 'operstate': None}]
    devices = [{'address': '0000:00:02.0', 'driver': 'vfio-pci'}]
    plan, dummy, dummy = plan_for(topology, devices, vendor=('8086:10d3',), keep='e1000e')
    assert gp.busy_reasons(plan, topology, []) == [
        '0000:00:02.0 (8086:10d3, driver e1000e): network interface enp0s2 is UP (ip link set enp0s2 down first)']
    plan, dummy, dummy = plan_for(topology, [{'address': '0000:00:02.0', 'driver': 'e1000e'}], vendor=('8086:10d3',),
                                  keep='e1000e')
    assert gp.busy_reasons(plan, topology, []) == []


def test_scan_open_handles_reads_a_proc_tree(tmp_path):
    fd_dir = tmp_path / 'proc' / '4242' / 'fd'
    fd_dir.mkdir(parents=True)
    (tmp_path / 'proc' / '4242' / 'comm').write_text('python3\n')
    os.symlink('/dev/nvidia2', str(fd_dir / '3'))
    os.symlink('socket:[1234]', str(fd_dir / '4'))
    (tmp_path / 'proc' / 'self').mkdir()
    (tmp_path / 'proc' / '77').mkdir()
    (tmp_path / 'proc' / '77' / 'comm').write_text('nvidia-persiste\n')
    handles, unreadable = gp.scan_open_handles(str(tmp_path))
    assert sorted(handles) == [(4242, 'python3', '/dev/nvidia2'), (4242, 'python3', 'socket:[1234]')]
    assert unreadable == []
    assert gp.persistenced_pids(str(tmp_path)) == [77]


def test_scan_open_handles_names_the_processes_it_cannot_read(tmp_path, monkeypatch):
    for pid in ('10', '11', '12'):
        (tmp_path / 'proc' / pid / 'fd').mkdir(parents=True)
    real_listdir = os.listdir

    def listdir(path):
        # What a non-root caller gets for another user's process (EACCES), and a process that exits meanwhile.
        if path.endswith('/11/fd'):
            raise OSError(errno.EACCES, 'Permission denied', path)
        if path.endswith('/12/fd'):
            raise OSError(errno.ENOENT, 'No such file or directory', path)
        return real_listdir(path)

    monkeypatch.setattr(gp.os, 'listdir', listdir)
    assert gp.scan_open_handles(str(tmp_path)) == ([], [11])


# ---- persistence -----------------------------------------------------------------------------------------------

def test_udev_rules_round_trip():
    text = gp.render_udev_rules({'0000:a1:00.0': 'vfio-pci', '0000:81:00.1': 'vfio-pci'})
    lines = text.splitlines()
    assert lines[2] == 'ACTION=="add", SUBSYSTEM=="pci", KERNEL=="0000:81:00.1", ATTR{driver_override}="vfio-pci"'
    assert lines[3].startswith('ACTION=="add", SUBSYSTEM=="pci", KERNEL=="0000:a1:00.0"')
    assert gp.parse_udev_rules(text) == {'0000:a1:00.0': 'vfio-pci', '0000:81:00.1': 'vfio-pci'}
    assert gp.render_udev_rules({}) == ''


def test_read_persisted(tmp_path):
    (tmp_path / 'etc' / 'driverctl.d').mkdir(parents=True)
    (tmp_path / 'etc' / 'driverctl.d' / 'pci-0000:00:03.0').write_text('vfio-pci\n')
    (tmp_path / 'etc' / 'driverctl.d' / 'usb-1-1').write_text('usbhid\n')
    (tmp_path / 'etc' / 'udev' / 'rules.d').mkdir(parents=True)
    (tmp_path / gp.UDEV_RULES_FILE).write_text(gp.render_udev_rules({'0000:81:00.0': 'vfio-pci'}))
    assert gp.read_persisted(str(tmp_path)) == {'driverctl': {'0000:00:03.0': 'vfio-pci'},
                                                'udev': {'0000:81:00.0': 'vfio-pci'}}
    assert gp.driverctl_file('00:03.0') == 'etc/driverctl.d/pci-0000:00:03.0'


# ---- IOMMU / kernel command line -----------------------------------------------------------------------------------

def test_iommu_remediation_intel_grub():
    grub = 'GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet"\nGRUB_CMDLINE_LINUX=""\n'
    remedy = gp.iommu_remediation('GenuineIntel', 'BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet', grub, None)
    assert remedy['params'] == ['intel_iommu=on', 'iommu=pt']
    assert remedy['commands'] == ['update-grub', 'reboot']
    assert 'in /etc/default/grub (GRUB_CMDLINE_LINUX_DEFAULT) add intel_iommu=on iommu=pt' in remedy['message']
    assert gp.edit_grub_default(grub, remedy['params']) == (
        'GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet intel_iommu=on iommu=pt"\nGRUB_CMDLINE_LINUX=""\n')


def test_iommu_remediation_amd_systemd_boot_removes_off():
    remedy = gp.iommu_remediation('AuthenticAMD', 'initrd=\\EFI\\proxmox\\initrd.img root=ZFS=rpool/ROOT/pve-1 amd_iommu=off',
                                  None, 'root=ZFS=rpool/ROOT/pve-1 boot=zfs amd_iommu=off\n')
    assert remedy['params'] == ['iommu=pt'] and remedy['remove'] == ['amd_iommu=off']
    assert remedy['commands'] == ['proxmox-boot-tool refresh', 'reboot']
    assert 'AMD-Vi' in remedy['message'] and '/etc/kernel/cmdline' in remedy['message']
    assert gp.edit_kernel_cmdline('root=ZFS=rpool/ROOT/pve-1 boot=zfs amd_iommu=off\n', ['iommu=pt'], ['amd_iommu=off']) == \
        'root=ZFS=rpool/ROOT/pve-1 boot=zfs iommu=pt\n'


def test_cmdline_edits_are_idempotent_and_replace_values():
    once = gp.edit_grub_default("GRUB_CMDLINE_LINUX_DEFAULT='quiet iommu=soft'\n", ['iommu=pt'])
    assert once == "GRUB_CMDLINE_LINUX_DEFAULT='quiet iommu=pt'\n"
    assert gp.edit_grub_default(once, ['iommu=pt']) == once
    assert gp.edit_grub_default('GRUB_TIMEOUT=5', ['intel_iommu=on']) == 'GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX_DEFAULT="intel_iommu=on"\n'


def test_acs_override_warning():
    assert gp.acs_override_warning('quiet pcie_acs_override=downstream,multifunction').startswith('pcie_acs_override=')
    assert gp.acs_override_warning('quiet intel_iommu=on') is None


def test_driver_map_text(sysfs_roots):
    text = gp.driver_map_text(topo(sysfs_roots, 'seed_pve_8x_rtx6000'), {SEED})
    assert text.splitlines()[:2] == ['0000:01:00.0 nvidia /dev/nvidia2', '0000:01:00.1 snd_hda_intel']
    assert '0000:81:00.0 vfio-pci override=vfio-pci' in text
