# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.gpu.nvidia_smi import (
    GPU_QUERY_FIELDS,
    NvidiaSmiParseError,
    invalid_field,
    join_inventory,
    parse_compute_apps,
    parse_query_gpu,
    query_compute_apps_args,
    query_gpu_args,
)
from ansible_collections.llmops.inference.plugins.module_utils.host.pci_sysfs import PciSysfs, build_inventory

CAPTURED_GPU_QUERY = 'nvidia-smi --query-gpu=driver_version,name,memory.total,pci.bus_id,compute_cap,uuid,index ' \
                     '--format=csv,noheader,nounits'
CAPTURED_FIELDS = ('driver_version', 'name', 'memory.total', 'pci.bus_id', 'compute_cap', 'uuid', 'index')
CAPTURED_APPS = 'nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_bus_id --format=csv,noheader,nounits'


def _commands(root, name):
    with open(os.path.join(root, '_commands', name)) as handle:
        return handle.read()


def test_query_args():
    assert query_gpu_args() == ['--query-gpu=index,pci.bus_id,uuid,name,memory.total,compute_cap',
                                '--format=csv,noheader,nounits']
    assert query_compute_apps_args() == ['--query-compute-apps=pid,process_name,used_memory,gpu_bus_id',
                                         '--format=csv,noheader,nounits']


def test_parse_query_gpu_captured(captured_h200):
    rows = parse_query_gpu(captured_h200['commands'][CAPTURED_GPU_QUERY]['stdout'], CAPTURED_FIELDS)
    assert rows == [
        {'driver_version': '580.159.04', 'name': 'NVIDIA H200', 'memory.total': 143771, 'pci.bus_id': '0000:00:06.0',
         'compute_cap': '9.0', 'uuid': 'GPU-80e13570-bcf1-2bda-d935-9bcfe797af99', 'index': 0},
        {'driver_version': '580.159.04', 'name': 'NVIDIA H200', 'memory.total': 143771, 'pci.bus_id': '0000:00:07.0',
         'compute_cap': '9.0', 'uuid': 'GPU-62f937e0-c20a-17d6-44a0-9d5075236e84', 'index': 1},
    ]


def test_parse_query_gpu_with_header_and_units(sysfs_roots):
    text = _commands(sysfs_roots['h200_real'], 'query-gpu-header.csv')
    assert text.startswith('index, pci.bus_id')
    rows = parse_query_gpu(text, ('index', 'pci.bus_id', 'name', 'memory.total', 'compute_cap'))
    assert [(r['index'], r['pci.bus_id'], r['memory.total']) for r in rows] == [
        (0, '0000:00:06.0', 143771), (1, '0000:00:07.0', 143771)]


def test_parse_query_gpu_seed_default_fields(sysfs_roots):
    rows = parse_query_gpu(_commands(sysfs_roots['seed_pve_8x_rtx6000'], 'query-gpu.csv'))
    assert [r['pci.bus_id'] for r in rows] == ['0000:01:00.0', '0000:21:00.0', '0000:41:00.0', '0000:61:00.0']
    assert rows[0]['name'] == 'NVIDIA RTX PRO 6000 Blackwell Server Edition'
    assert rows[0]['memory.total'] == 97887 and rows[0]['compute_cap'] == '12.0'


def test_parse_query_gpu_placeholders_and_blank_lines():
    rows = parse_query_gpu('\n0, 00000000:41:00.0, [N/A], NVIDIA X, [N/A], [Not Supported]\n\n')
    assert rows == [{'index': 0, 'pci.bus_id': '0000:41:00.0', 'uuid': None, 'name': 'NVIDIA X', 'memory.total': None,
                     'compute_cap': None}]
    assert parse_query_gpu('') == []
    assert parse_query_gpu('0, 00000000:41:00.0, GPU-1, X, lots, 9.0')[0]['memory.total'] is None


@pytest.mark.parametrize('text, match', [
    ('0, 00000000:41:00.0, GPU-1, X, 1', 'expected 6 comma-separated values'),
    ('0, 00000000:41:00.0, GPU-1, NVIDIA, Inc, 1, 9.0', 'expected 6 comma-separated values'),
    ('0, bogus, GPU-1, X, 1, 9.0', "unparsable PCI bus id 'bogus'"),
    ('Failed to initialize NVML: Driver/library version mismatch', 'expected 6 comma-separated values'),
])
def test_parse_query_gpu_rejects(text, match):
    with pytest.raises(NvidiaSmiParseError, match=match):
        parse_query_gpu(text)


def test_parse_compute_apps(captured_h200, sysfs_roots):
    assert parse_compute_apps(captured_h200['commands'][CAPTURED_APPS]['stdout']) == []
    apps = parse_compute_apps(_commands(sysfs_roots['seed_pve_8x_rtx6000'], 'query-compute-apps.csv'))
    assert apps[0] == {'pid': 412230, 'process_name': 'sglang::scheduler_TP0', 'used_memory_mib': 88630,
                       'gpu_bus_id': '0000:01:00.0'}
    assert len(apps) == 4


def test_parse_compute_apps_odd_lines():
    text = ('pid, process_name, used_memory [MiB], gpu_bus_id\n'
            '17, /opt/my, odd, name, [N/A], 00000000:41:00.0\n'
            'No running processes found\n')
    assert parse_compute_apps(text) == [
        {'pid': 17, 'process_name': '/opt/my, odd, name', 'used_memory_mib': None, 'gpu_bus_id': '0000:41:00.0'}]


@pytest.mark.parametrize('text, match', [
    ('17, python, 00000000:41:00.0', 'expected pid, process_name, used_memory, gpu_bus_id'),
    ('[N/A], python, 5, 00000000:41:00.0', 'unparsable pid'),
    ('17, python, 5, 41', 'unparsable PCI bus id'),
])
def test_parse_compute_apps_rejects(text, match):
    with pytest.raises(NvidiaSmiParseError, match=match):
        parse_compute_apps(text)


def test_invalid_field():
    assert invalid_field('Field "compute_cap" is not a valid field to query.\n') == 'compute_cap'
    assert invalid_field('Failed to initialize NVML: Driver/library version mismatch') is None
    assert invalid_field(None) is None


def test_join_h200_real_captured(sysfs_roots, captured_h200):
    inv = build_inventory(PciSysfs(sysfs_roots['h200_real']))
    rows = parse_query_gpu(captured_h200['commands'][CAPTURED_GPU_QUERY]['stdout'], CAPTURED_FIELDS)
    apps = parse_compute_apps(captured_h200['commands'][CAPTURED_APPS]['stdout'])
    assert join_inventory(inv['gpus'], rows, apps) == []
    assert inv['gpus'][0]['nvidia_smi'] == {'index': 0, 'name': 'NVIDIA H200',
                                            'uuid': 'GPU-80e13570-bcf1-2bda-d935-9bcfe797af99',
                                            'memory_total_mib': 143771, 'compute_cap': '9.0', 'processes': []}
    assert inv['gpus'][1]['nvidia_smi']['index'] == 1


def test_join_seed_index_differs_from_minor(sysfs_roots):
    root = sysfs_roots['seed_pve_8x_rtx6000']
    inv = build_inventory(PciSysfs(root))
    rows = parse_query_gpu(_commands(root, 'query-gpu.csv'))
    apps = parse_compute_apps(_commands(root, 'query-compute-apps.csv'))
    assert join_inventory(inv['gpus'], rows, apps) == []
    nvidia = [gpu for gpu in inv['gpus'] if gpu['driver'] == 'nvidia']
    assert [gpu['nvidia_smi']['index'] for gpu in nvidia] == [0, 1, 2, 3]
    assert [gpu['device_minor'] for gpu in nvidia] == [2, 0, 3, 1]
    assert all(gpu['nvidia_smi']['uuid'] == gpu['uuid'] for gpu in nvidia)
    assert nvidia[2]['nvidia_smi']['processes'] == [
        {'pid': 412232, 'process_name': 'sglang::scheduler_TP2', 'used_memory_mib': 88630}]
    assert all(gpu['nvidia_smi'] is None for gpu in inv['gpus'] if gpu['driver'] == 'vfio-pci')


def test_join_warnings(sysfs_roots):
    root = sysfs_roots['seed_pve_8x_rtx6000']
    inv = build_inventory(PciSysfs(root))
    rows = parse_query_gpu(_commands(root, 'query-gpu.csv'))
    rows[1]['uuid'] = 'GPU-other'
    rows.append({'index': 4, 'pci.bus_id': '0000:99:00.0', 'uuid': None, 'name': 'X', 'memory.total': 1,
                 'compute_cap': None})
    del rows[3]
    apps = [{'pid': 5, 'process_name': 'x', 'used_memory_mib': 1, 'gpu_bus_id': '0000:81:00.0'}]
    warnings = join_inventory(inv['gpus'], rows, apps)
    gpu21 = inv['gpus'][1]
    assert warnings == [
        '0000:21:00.0: nvidia-smi UUID GPU-other differs from procfs UUID %s' % gpu21['uuid'],
        'nvidia-smi reports GPU 0000:99:00.0 (index 4) that is not in the PCI inventory',
        'nvidia-smi reports process 5 on 0000:81:00.0, which is not a GPU in the inventory',
        '0000:61:00.0 is bound to nvidia but nvidia-smi does not list it',
    ]


def test_join_without_process_query_and_with_selection(sysfs_roots):
    root = sysfs_roots['seed_pve_8x_rtx6000']
    inv = build_inventory(PciSysfs(root), addresses=['0000:41:00.0'])
    rows = parse_query_gpu(_commands(root, 'query-gpu.csv'))
    assert join_inventory(inv['gpus'], rows, None, selected={'0000:41:00.0'}) == []
    assert inv['gpus'][0]['nvidia_smi']['processes'] is None
    # without the selection the other three GPUs would be reported as unknown
    inv = build_inventory(PciSysfs(root), addresses=['0000:41:00.0'])
    assert len(join_inventory(inv['gpus'], rows, [])) == 3


def test_join_fills_missing_uuid(fresh_root):
    root = fresh_root('h200_real')
    os.remove(os.path.join(root, 'proc/driver/nvidia/gpus/0000:00:06.0/information'))
    inv = build_inventory(PciSysfs(root))
    rows = parse_query_gpu('0, 00000000:00:06.0, GPU-abc, NVIDIA H200, 143771, 9.0\n'
                           '1, 00000000:00:07.0, GPU-62f937e0-c20a-17d6-44a0-9d5075236e84, NVIDIA H200, 143771, 9.0\n')
    assert join_inventory(inv['gpus'], rows, []) == []
    assert inv['gpus'][0]['uuid'] == 'GPU-abc'
    assert GPU_QUERY_FIELDS[1] == 'pci.bus_id'
