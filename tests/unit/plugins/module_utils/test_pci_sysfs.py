# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.host import pci_sysfs
from ansible_collections.llmops.inference.plugins.module_utils.host.pci_sysfs import (
    PciAddressError,
    PciSysfs,
    build_inventory,
    is_audio_class,
    is_bridge_class,
    is_gpu_class,
    normalize_pci_address,
    normalize_vendor_id,
    parse_driver_override,
    parse_hex,
    parse_numa_node,
    parse_nvidia_gpu_information,
    pci_address_sort_key,
    pci_slot,
    split_pci_address,
)

H200_A = '0000:00:06.0'
H200_B = '0000:00:07.0'
SEED_NVIDIA = ['0000:01:00.0', '0000:21:00.0', '0000:41:00.0', '0000:61:00.0']
SEED_VFIO = ['0000:81:00.0', '0000:a1:00.0', '0000:c1:00.0', '0000:e1:00.0']


# --- address normalisation -------------------------------------------------------------------------------------

@pytest.mark.parametrize('value, expected', [
    ('0000:41:00.0', '0000:41:00.0'),
    ('00000000:41:00.0', '0000:41:00.0'),  # nvidia-smi pci.bus_id
    ('00000000:A1:00.0', '0000:a1:00.0'),  # nvidia-smi upper case
    ('0000:C1:1F.7', '0000:c1:1f.7'),
    ('41:00.1', '0000:41:00.1'),  # lspci without -D
    ('  0000:41:00.0\n', '0000:41:00.0'),
    ('0:41:00.0', '0000:41:00.0'),
    ('10000:00:00.0', '10000:00:00.0'),  # VMD domains have 5 digits in sysfs
])
def test_normalize_pci_address(value, expected):
    assert normalize_pci_address(value) == expected


@pytest.mark.parametrize('value', [
    '0000:41:00', '41:00', '0000:41:00.8', '0000:41:20.0', '0000:4g:00.0', '000000000:41:00.0', 'gpu0', '',
    '0000:041:00.0', '0000-41-00.0', None, 41,
])
def test_normalize_pci_address_rejects(value):
    with pytest.raises(PciAddressError) as exc:
        normalize_pci_address(value)
    message = str(exc.value)
    assert 'invalid PCI address' in message
    assert repr(value) in message


def test_address_errors_say_what_is_expected():
    with pytest.raises(PciAddressError, match=r'expected \[DOMAIN:\]BUS:DEVICE\.FUNCTION.*0000:41:00\.0'):
        normalize_pci_address('0000:41:00')
    with pytest.raises(PciAddressError, match='device number 0x20 is above 0x1f'):
        normalize_pci_address('0000:41:20.0')
    assert isinstance(PciAddressError('x'), ValueError)


def test_split_slot_and_sort_key():
    assert split_pci_address('0000:e1:00.1') == (0, 0xe1, 0, 1)
    assert pci_slot('00000000:41:00.1') == '0000:41:00'
    addresses = ['10000:00:00.0', '0000:c1:00.0', '0000:21:00.1', '0000:21:00.0', 'ffff:00:00.0']
    assert sorted(addresses, key=pci_address_sort_key) == [
        '0000:21:00.0', '0000:21:00.1', '0000:c1:00.0', 'ffff:00:00.0', '10000:00:00.0']


@pytest.mark.parametrize('value, expected', [('0x10de', '0x10de'), ('10DE', '0x10de'), ('0x8086', '0x8086'),
                                             (' 0X10DE ', '0x10de')])
def test_normalize_vendor_id(value, expected):
    assert normalize_vendor_id(value) == expected


@pytest.mark.parametrize('value', ['nvidia', '0x10de0', '10d', '', 'x10de'])
def test_normalize_vendor_id_rejects(value):
    with pytest.raises(ValueError, match='invalid PCI vendor id'):
        normalize_vendor_id(value)


# --- attribute parsers --------------------------------------------------------------------------------------

@pytest.mark.parametrize('text, expected', [('(null)\n', None), ('(null)', None), ('', None), ('\n', None),
                                            (None, None), ('vfio-pci\n', 'vfio-pci')])
def test_parse_driver_override(text, expected):
    assert parse_driver_override(text) == expected


@pytest.mark.parametrize('text, expected', [('-1\n', -1), ('0\n', 0), ('3', 3), ('x', None), (None, None)])
def test_parse_numa_node(text, expected):
    assert parse_numa_node(text) == expected


@pytest.mark.parametrize('text, expected', [('0x10de\n', 0x10de), ('0x030200', 0x030200), ('zz', None),
                                            (None, None)])
def test_parse_hex(text, expected):
    assert parse_hex(text) == expected


def test_class_predicates():
    assert is_gpu_class(0x030200) and is_gpu_class(0x030000)
    assert not is_gpu_class(0x038000) and not is_gpu_class(0x040300) and not is_gpu_class(None)
    assert is_audio_class(0x040300) and not is_audio_class(0x040100)
    for bridge in (0x060000, 0x060100, 0x060400, 0x068000):
        assert is_bridge_class(bridge)
    assert not is_bridge_class(0x020000) and not is_bridge_class(None)


# --- /proc/driver/nvidia/gpus/<addr>/information ----------------------------------------------------------------

def test_parse_information_captured(captured_h200):
    expected = [(H200_A, 0, 'GPU-80e13570-bcf1-2bda-d935-9bcfe797af99'),
                (H200_B, 1, 'GPU-62f937e0-c20a-17d6-44a0-9d5075236e84')]
    for address, minor, gpu_uuid in expected:
        info = parse_nvidia_gpu_information(
            captured_h200['files']['/proc/driver/nvidia/gpus/%s/information' % address])
        assert info['device_minor'] == minor
        assert info['uuid'] == gpu_uuid
        assert info['model'] == 'NVIDIA H200'
        assert info['bus_location'] == address
        assert info['gpu_excluded'] is False
        assert info['video_bios'] == '96.00.a5.00.1a'
        assert info['fields']['GPU Firmware'] == '580.159.04'


def test_parse_information_odd_values():
    info = parse_nvidia_gpu_information('Model: \t\t NVIDIA X\nBus Location: \t 00000000:41:00.0\n'
                                        'Device Minor: \t ?\nGPU Excluded:\t Yes\n')
    assert info['bus_location'] == '0000:41:00.0'
    assert info['device_minor'] is None
    assert info['gpu_excluded'] is True
    assert info['uuid'] is None
    info = parse_nvidia_gpu_information('Bus Location: \t garbage\nno colon here\n')
    assert info['bus_location'] is None
    empty = parse_nvidia_gpu_information('')
    assert empty['model'] is None and empty['device_minor'] is None and empty['gpu_excluded'] is None
    assert parse_nvidia_gpu_information(None)['fields'] == {}


# --- PciSysfs on the fixture roots --------------------------------------------------------------------------------

def test_generated_links_are_relative_and_real_like(sysfs_roots, captured_h200):
    root = sysfs_roots['h200_real']
    for address in (H200_A, H200_B):
        link = os.readlink(os.path.join(root, 'sys/bus/pci/devices', address))
        assert link == captured_h200['pci'][address]['sysfs_link']
        assert os.readlink(os.path.join(root, 'sys/bus/pci/devices', address, 'driver')) == \
            captured_h200['pci'][address]['driver_link']
    seed = sysfs_roots['seed_pve_8x_rtx6000']
    gpu_dir = os.path.join(seed, 'sys/devices/pci0000:40/0000:40:01.1/0000:41:00.0')
    assert os.readlink(os.path.join(gpu_dir, 'driver')) == '../../../../bus/pci/drivers/nvidia'
    assert os.readlink(os.path.join(gpu_dir, 'iommu_group')) == '../../../../kernel/iommu_groups/8'
    assert os.readlink(os.path.join(seed, 'sys/kernel/iommu_groups/8/devices/0000:41:00.1')) == \
        '../../../../devices/pci0000:40/0000:40:01.1/0000:41:00.1'
    for dirpath, dirnames, filenames in os.walk(seed):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                assert not os.readlink(path).startswith('/'), path
                assert os.path.realpath(path).startswith(os.path.realpath(seed)), path


def test_h200_real_accessors(sysfs_roots):
    sysfs = PciSysfs(sysfs_roots['h200_real'])
    assert sysfs.has_pci_bus()
    assert sysfs.list_functions() == [H200_A, H200_B]
    assert sysfs.has_function('00000000:00:06.0') and not sysfs.has_function('0000:00:08.0')
    assert sysfs.vendor_id(H200_A) == 0x10de and sysfs.device_id(H200_A) == 0x2335
    assert sysfs.pci_class(H200_A) == 0x030200
    assert sysfs.driver(H200_A) == 'nvidia'
    assert sysfs.driver_override(H200_A) is None  # "(null)" in sysfs
    assert sysfs.read_attr(H200_A, 'driver_override') == '(null)'
    assert sysfs.numa_node(H200_A) == -1
    assert sysfs.local_cpulist(H200_A) == '0-31'
    assert sysfs.iommu_group(H200_A) is None
    assert sysfs.iommu_groups() == [] and sysfs.iommu_enabled() is False
    assert sysfs.is_bridge(H200_A) is False
    assert sysfs.read_attr(H200_A, 'no_such_attribute') is None
    assert sysfs.nvidia_gpu_information(H200_B)['device_minor'] == 1
    assert sysfs.slot_functions(H200_A) == [H200_A]
    assert sysfs.device_path('00000000:00:06.0', 'driver_override') == os.path.join(
        sysfs_roots['h200_real'], 'sys/bus/pci/devices/0000:00:06.0/driver_override')
    assert sysfs.path('/sys/bus/pci/drivers_probe') == os.path.join(sysfs_roots['h200_real'],
                                                                    'sys/bus/pci/drivers_probe')


def test_seed_accessors(sysfs_roots):
    sysfs = PciSysfs(sysfs_roots['seed_pve_8x_rtx6000'])
    assert sysfs.driver('0000:81:00.0') == 'vfio-pci'
    assert sysfs.driver_override('0000:81:00.1') == 'vfio-pci'
    assert sysfs.driver('0000:01:00.1') == 'snd_hda_intel'
    assert sysfs.numa_node('0000:c1:00.0') == 1
    assert sysfs.local_cpulist('0000:01:00.0') == '0-63,128-191'
    assert sysfs.is_bridge('0000:40:01.1') is True  # root port: has pci_bus/
    assert sysfs.is_bridge('0000:40:01.0') is False  # host bridge: class 0x0600, no secondary bus
    group = sysfs.iommu_group('0000:41:00.0')
    assert sysfs.iommu_group('0000:41:00.1') == group
    assert sysfs.iommu_group_devices(group) == ['0000:41:00.0', '0000:41:00.1']
    assert sysfs.iommu_group_devices(9999) == []
    assert sysfs.iommu_enabled() is True
    assert sysfs.slot_functions('0000:41:00.1') == ['0000:41:00.0', '0000:41:00.1']
    assert sysfs.nvidia_gpu_information('0000:81:00.0') is None  # vfio: no procfs entry
    assert sysfs.function_summary('00000000:41:00.1') == {
        'address': '0000:41:00.1', 'vendor_id': '0x10de', 'device_id': '0x22e8', 'pci_id': '10de:22e8',
        'class': '0x040300', 'is_gpu': False, 'is_audio': True, 'is_bridge': False, 'driver': 'snd_hda_intel',
        'driver_override': None}


def test_bridge_detected_by_class_without_pci_bus_dir(fresh_root):
    root = fresh_root('seed_pve_8x_rtx6000')
    shutil.rmtree(os.path.join(root, 'sys/devices/pci0000:40/0000:40:01.1/pci_bus'))
    assert PciSysfs(root).is_bridge('0000:40:01.1') is True


def test_missing_tree_is_empty_not_an_error(tmp_path):
    sysfs = PciSysfs(str(tmp_path))
    assert sysfs.has_pci_bus() is False
    assert sysfs.list_functions() == []
    assert sysfs.iommu_groups() == []
    assert sysfs.driver('0000:41:00.0') is None
    assert sysfs.iommu_group('0000:41:00.0') is None


def test_list_functions_ignores_non_address_entries(fresh_root):
    root = fresh_root('h200_real')
    os.mkdir(os.path.join(root, 'sys/bus/pci/devices/not-an-address'))
    os.mkdir(os.path.join(root, 'sys/kernel/iommu_groups/not-a-number'))
    sysfs = PciSysfs(root)
    assert sysfs.list_functions() == [H200_A, H200_B]
    assert sysfs.iommu_groups() == []


def test_iommu_group_link_with_non_numeric_target(fresh_root):
    root = fresh_root('h200_real')
    os.symlink('../../../kernel/iommu_groups/weird', os.path.join(root, 'sys/devices/pci0000:00', H200_A,
                                                                  'iommu_group'))
    assert PciSysfs(root).iommu_group(H200_A) is None


# --- build_inventory ---------------------------------------------------------------------------------------------

def test_inventory_h200_real(sysfs_roots):
    inv = build_inventory(PciSysfs(sysfs_roots['h200_real']))
    assert inv['count'] == 2
    assert [gpu['address'] for gpu in inv['gpus']] == [H200_A, H200_B]
    assert inv['by_numa_node'] == {'-1': [H200_A, H200_B]}
    assert inv['iommu_enabled'] is False
    first, second = inv['gpus']
    assert first['pci_id'] == second['pci_id'] == '10de:2335'  # identical GPUs ...
    assert (first['device_minor'], second['device_minor']) == (0, 1)  # ... told apart
    assert first['uuid'] != second['uuid']
    assert first['device_node'] == '/dev/nvidia0'
    assert first['model'] == 'NVIDIA H200'
    assert first['subsystem_vendor_id'] == '0x10de' and first['subsystem_device_id'] == '0x18bf'
    assert first['slot'] == '0000:00:06'
    assert first['iommu_group'] is None and first['iommu_group_members'] == []
    assert first['companion_functions'] == []
    assert first['nvidia_smi'] is None
    assert 'is_bridge' not in first
    assert len(inv['warnings']) == 2
    assert 'numa_node is -1' in inv['warnings'][0] and H200_A in inv['warnings'][0]
    assert 'no IOMMU groups' in inv['warnings'][1]


def test_inventory_seed(sysfs_roots, sysfs_generator):
    inv = build_inventory(PciSysfs(sysfs_roots['seed_pve_8x_rtx6000']))
    assert inv['count'] == 8
    assert inv['warnings'] == []
    assert inv['by_numa_node'] == {'0': SEED_NVIDIA, '1': SEED_VFIO}
    by_address = dict((gpu['address'], gpu) for gpu in inv['gpus'])
    assert len(set(gpu['pci_id'] for gpu in inv['gpus'])) == 1
    minors = dict((address, by_address[address]['device_minor']) for address in SEED_NVIDIA)
    assert minors == {'0000:01:00.0': 2, '0000:21:00.0': 0, '0000:41:00.0': 3, '0000:61:00.0': 1}
    assert sorted(minors.values()) == [0, 1, 2, 3] and list(minors.values()) != [0, 1, 2, 3]
    for address in SEED_NVIDIA:
        gpu = by_address[address]
        assert gpu['driver'] == 'nvidia' and gpu['driver_override'] is None
        assert gpu['device_node'] == '/dev/nvidia%d' % gpu['device_minor']
        assert gpu['uuid'].startswith('GPU-')
        assert [m['driver'] for m in gpu['iommu_group_members']] == ['nvidia', 'snd_hda_intel']
    for address in SEED_VFIO:
        gpu = by_address[address]
        assert gpu['driver'] == gpu['driver_override'] == 'vfio-pci'
        assert gpu['device_minor'] is None and gpu['uuid'] is None and gpu['device_node'] is None
        assert gpu['numa_node'] == 1 and gpu['local_cpulist'] == '64-127,192-255'
    gpu = by_address['0000:41:00.0']
    assert gpu['is_gpu'] is True and gpu['is_audio'] is False and gpu['class'] == '0x030200'
    audio = gpu['iommu_group_members'][1]
    assert audio['address'] == '0000:41:00.1' and audio['is_audio'] is True and audio['pci_id'] == '10de:22e8'
    assert audio['is_bridge'] is False
    assert gpu['companion_functions'] == [audio]
    assert len(set(g['iommu_group'] for g in inv['gpus'])) == 8
    # audio functions are companions, never entries
    assert not any(g['is_audio'] for g in inv['gpus'])


def test_inventory_shared_group_reports_every_member(sysfs_roots):
    inv = build_inventory(PciSysfs(sysfs_roots['shared_group']))
    assert inv['count'] == 2 and inv['warnings'] == []
    shared = inv['gpus'][0]
    assert shared['address'] == '0000:03:00.0' and shared['class'] == '0x030000' and shared['is_gpu']
    members = dict((m['address'], m) for m in shared['iommu_group_members'])
    assert sorted(members) == ['0000:02:08.0', '0000:02:10.0', '0000:03:00.0', '0000:03:00.1', '0000:04:00.0']
    assert members['0000:02:08.0']['is_bridge'] is True and members['0000:02:08.0']['driver'] == 'pcieport'
    assert members['0000:04:00.0'] == {
        'address': '0000:04:00.0', 'vendor_id': '0x8086', 'device_id': '0x1572', 'pci_id': '8086:1572',
        'class': '0x020000', 'is_gpu': False, 'is_audio': False, 'is_bridge': False, 'driver': 'i40e',
        'driver_override': None}
    assert members['0000:03:00.1']['is_audio'] is True
    clean = inv['gpus'][1]
    assert [m['address'] for m in clean['iommu_group_members']] == ['0000:05:00.0', '0000:05:00.1']
    # bridges of vendor 0x8086 are never entries, the NIC is one
    nics = build_inventory(PciSysfs(sysfs_roots['shared_group']), ['0x8086'])
    assert [gpu['address'] for gpu in nics['gpus']] == ['0000:04:00.0']


def test_inventory_no_nvidia(sysfs_roots):
    inv = build_inventory(PciSysfs(sysfs_roots['no_nvidia']))
    assert inv == {'gpus': [], 'count': 0, 'by_numa_node': {}, 'iommu_enabled': True, 'warnings': []}


def test_inventory_other_vendor_stand_in(sysfs_roots):
    inv = build_inventory(PciSysfs(sysfs_roots['no_nvidia']), ['0x8086'])
    # host bridge 00:00.0 and ISA bridge 00:1f.0 are bridges and skipped; bochs VGA is vendor 0x1234
    assert [gpu['address'] for gpu in inv['gpus']] == ['0000:00:02.0', '0000:00:03.0', '0000:00:1f.2',
                                                       '0000:00:1f.3']
    e1000e = [gpu for gpu in inv['gpus'] if gpu['pci_id'] == '8086:10d3']
    assert [(g['address'], g['driver'], g['driver_override'], g['iommu_group']) for g in e1000e] == [
        ('0000:00:02.0', 'e1000e', None, 2), ('0000:00:03.0', 'vfio-pci', 'vfio-pci', 3)]
    smbus = inv['gpus'][3]
    assert [m['address'] for m in smbus['iommu_group_members']] == ['0000:00:1f.0', '0000:00:1f.2', '0000:00:1f.3']
    assert [m['address'] for m in smbus['companion_functions']] == ['0000:00:1f.0', '0000:00:1f.2']
    assert 'numa_node is -1' in inv['warnings'][0]


def test_inventory_address_filter(sysfs_roots):
    sysfs = PciSysfs(sysfs_roots['seed_pve_8x_rtx6000'])
    wanted = [normalize_pci_address(a) for a in ('00000000:41:00.0', '0000:E1:00.0', '0000:41:00.1', '0000:40:01.1',
                                                 '0000:99:00.0')]
    inv = build_inventory(sysfs, addresses=wanted)
    assert [gpu['address'] for gpu in inv['gpus']] == ['0000:41:00.0', '0000:e1:00.0']
    assert inv['count'] == 2
    assert inv['by_numa_node'] == {'0': ['0000:41:00.0'], '1': ['0000:e1:00.0']}
    assert inv['warnings'] == [
        '0000:40:01.1 exists but its vendor is not one of 0x10de',
        '0000:41:00.1 is a companion function of 0000:41:00.0: it is listed in that entry\'s companion_functions',
        '0000:99:00.0: no such PCI function below %s' % sysfs.path('sys/bus/pci/devices'),
    ]
    bridge = build_inventory(PciSysfs(sysfs_roots['shared_group']), ['0x10b5'], ['0000:02:08.0'])
    assert bridge['count'] == 0 and bridge['warnings'] == ['0000:02:08.0 is a bridge, not inventoried']


def test_inventory_missing_pci_tree(tmp_path):
    inv = build_inventory(PciSysfs(str(tmp_path)))
    assert inv['count'] == 0 and inv['iommu_enabled'] is False
    assert inv['warnings'] == ['%s does not exist: no PCI sysfs below root %s'
                               % (os.path.join(str(tmp_path), 'sys/bus/pci/devices'), tmp_path)]


def _device_dir(root, address):
    return os.path.realpath(os.path.join(root, 'sys/bus/pci/devices', address))


def test_inventory_missing_numa_and_cpulist(fresh_root):
    root = fresh_root('seed_pve_8x_rtx6000')
    os.remove(os.path.join(_device_dir(root, '0000:41:00.0'), 'numa_node'))
    os.remove(os.path.join(_device_dir(root, '0000:41:00.0'), 'local_cpulist'))
    inv = build_inventory(PciSysfs(root), addresses=['0000:41:00.0'])
    gpu = inv['gpus'][0]
    assert gpu['numa_node'] == -1 and gpu['local_cpulist'] is None
    assert inv['by_numa_node'] == {'-1': ['0000:41:00.0']}
    assert inv['warnings'] == [
        '0000:41:00.0: numa_node attribute missing or unreadable; reporting -1',
        '0000:41:00.0: local_cpulist attribute missing or unreadable',
        'numa_node is -1 (unknown: the firmware reports no NUMA affinity, typical of VMs and NPS1 hosts) for '
        '0000:41:00.0',
    ]


def test_inventory_nvidia_without_information_file(fresh_root):
    root = fresh_root('h200_real')
    shutil.rmtree(os.path.join(root, 'proc/driver/nvidia/gpus', H200_B))
    inv = build_inventory(PciSysfs(root))
    second = inv['gpus'][1]
    assert second['device_minor'] is None and second['uuid'] is None and second['model'] is None
    suffix = 'missing: device_minor, uuid and model unknown'
    assert any(w.startswith('%s is bound to nvidia but' % H200_B) and w.endswith(suffix) for w in inv['warnings'])


def test_inventory_information_file_oddities(fresh_root):
    root = fresh_root('h200_real')
    path = os.path.join(root, 'proc/driver/nvidia/gpus', H200_A, 'information')
    with open(path, 'w') as handle:
        handle.write('Model: \t\t NVIDIA H200\nBus Location: \t 0000:00:07.0\nDevice Minor: \t ?\n')
    inv = build_inventory(PciSysfs(root))
    first = inv['gpus'][0]
    assert first['device_minor'] is None and first['device_node'] is None
    assert '%s: no parsable "Device Minor:" in %s' % (H200_A, path) in inv['warnings']
    assert '%s: %s reports Bus Location 0000:00:07.0' % (H200_A, path) in inv['warnings']


def test_inventory_group_link_not_listed(fresh_root):
    root = fresh_root('seed_pve_8x_rtx6000')
    group = PciSysfs(root).iommu_group('0000:41:00.0')
    os.remove(os.path.join(root, 'sys/kernel/iommu_groups/%d/devices/0000:41:00.0' % group))
    inv = build_inventory(PciSysfs(root), addresses=['0000:41:00.0'])
    assert [m['address'] for m in inv['gpus'][0]['iommu_group_members']] == ['0000:41:00.1']
    assert inv['warnings'] == ['0000:41:00.0 links to IOMMU group %d, but %s does not list it' % (
        group, os.path.join(root, 'sys/kernel/iommu_groups', str(group), 'devices'))]


def test_inventory_skips_nvswitch_bridges(fresh_root, sysfs_generator):
    root = fresh_root('h200_real')
    tree = sysfs_generator.Tree.__new__(sysfs_generator.Tree)
    tree.root, tree.devices, tree.groups = root, {}, {}
    tree.function('sys/devices/pci0000:00', '0000:00:08.0',
                  sysfs_generator.attrs_for(0x10de, 0x22a3, 0x068000, 0x10de, 0x1796, -1, '0-31', 'ffffffff'))
    inv = build_inventory(PciSysfs(root))
    assert [gpu['address'] for gpu in inv['gpus']] == [H200_A, H200_B]


def test_module_utils_is_stdlib_only():
    with open(pci_sysfs.__file__) as handle:
        source = handle.read()
    imports = [line for line in source.splitlines() if line.startswith(('import ', 'from '))]
    assert imports == ['from __future__ import absolute_import, division, print_function', 'import os', 'import re']
