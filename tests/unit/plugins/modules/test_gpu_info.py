# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Module-level tests of gpu_info through its real argument spec (AnsibleModule), plus one run as a subprocess."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from ansible.module_utils import basic

from ansible_collections.llmops.inference.plugins.modules import gpu_info
from module_harness import AnsibleExitJson, AnsibleFailJson, run


@pytest.fixture
def module_calls(module_warnings):
    """The warnings and the commands a module run produced."""
    return {'warnings': module_warnings, 'commands': []}


def run_module(args):
    return run(gpu_info.main, args)


def fake_nvidia_smi(monkeypatch, calls, responses, path='/usr/bin/nvidia-smi'):
    """Pretend root is the live host and nvidia-smi answers ``responses`` (query prefix -> list of (rc, out, err))."""
    monkeypatch.setattr(gpu_info, 'is_host_root', lambda root: True)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda self, name, *a, **kw: path)

    def run_command(self, args, **kwargs):
        calls['commands'].append(args)
        for prefix, answers in responses.items():
            if args[1].startswith(prefix):
                return answers.pop(0)
        raise AssertionError('unexpected command %r' % (args,))

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)


def commands_output(root, name):
    with open(os.path.join(root, '_commands', name)) as handle:
        return handle.read()


def test_seed_inventory(sysfs_roots, module_calls):
    kind, result = run_module({'root': sysfs_roots['seed_pve_8x_rtx6000']})
    assert kind is AnsibleExitJson
    assert result['changed'] is False
    assert result['count'] == 8
    assert result['iommu_enabled'] is True
    assert result['nvidia_smi_available'] is False
    assert result['by_numa_node'] == {'0': ['0000:01:00.0', '0000:21:00.0', '0000:41:00.0', '0000:61:00.0'],
                                      '1': ['0000:81:00.0', '0000:a1:00.0', '0000:c1:00.0', '0000:e1:00.0']}
    assert sorted(gpu['device_minor'] for gpu in result['gpus'] if gpu['driver'] == 'nvidia') == [0, 1, 2, 3]
    assert [gpu['driver'] for gpu in result['gpus']].count('vfio-pci') == 4
    assert module_calls['warnings'] == []
    assert sorted(result) == ['by_numa_node', 'changed', 'count', 'gpus', 'iommu_enabled', 'nvidia_smi_available']


def test_address_filter_accepts_nvidia_smi_spelling(sysfs_roots, module_calls):
    kind, result = run_module({'root': sysfs_roots['seed_pve_8x_rtx6000'],
                               'addresses': ['00000000:C1:00.0', '0000:21:00.0', '41:00.0']})
    assert kind is AnsibleExitJson
    assert [gpu['address'] for gpu in result['gpus']] == ['0000:21:00.0', '0000:41:00.0', '0000:c1:00.0']


def test_empty_address_list_means_all(sysfs_roots, module_calls):
    kind, result = run_module({'root': sysfs_roots['seed_pve_8x_rtx6000'], 'addresses': []})
    assert result['count'] == 8


def test_h200_real_warnings(sysfs_roots, module_calls):
    kind, result = run_module({'root': sysfs_roots['h200_real']})
    assert kind is AnsibleExitJson and result['count'] == 2
    assert [gpu['device_minor'] for gpu in result['gpus']] == [0, 1]
    assert len(module_calls['warnings']) == 2
    assert module_calls['commands'] == []  # root is not '/': nvidia-smi is never run


def test_vendor_ids_for_a_stand_in(sysfs_roots, module_calls):
    kind, result = run_module({'root': sysfs_roots['no_nvidia'], 'vendor_ids': ['8086'], 'addresses': ['00:03.0']})
    assert result['count'] == 1
    assert result['gpus'][0]['driver_override'] == 'vfio-pci'


def test_no_nvidia(sysfs_roots, module_calls):
    kind, result = run_module({'root': sysfs_roots['no_nvidia']})
    assert kind is AnsibleExitJson
    assert (result['count'], result['gpus'], result['by_numa_node']) == (0, [], {})


@pytest.mark.parametrize('args, message', [
    ({'addresses': ['0000:41:00']}, "invalid parameter: invalid PCI address '0000:41:00'"),
    ({'vendor_ids': ['nvidia']}, "invalid parameter: invalid PCI vendor id 'nvidia'"),
    ({'root': '/nonexistent/llmops-root'}, 'root /nonexistent/llmops-root is not a directory'),
    ({'run_nvidia_smi': 'maybe'}, 'run_nvidia_smi'),
    ({'bogus': 1}, 'Unsupported parameters'),
])
def test_bad_parameters_fail_cleanly(sysfs_roots, module_calls, args, message):
    params = {'root': sysfs_roots['seed_pve_8x_rtx6000']}
    params.update(args)
    kind, result = run_module(params)
    assert kind is AnsibleFailJson
    assert message in result['msg']


def test_nvidia_smi_joined_by_bus_id(sysfs_roots, module_calls, monkeypatch):
    root = sysfs_roots['seed_pve_8x_rtx6000']
    fake_nvidia_smi(monkeypatch, module_calls, {
        '--query-gpu=': [(0, commands_output(root, 'query-gpu.csv'), '')],
        '--query-compute-apps=': [(0, commands_output(root, 'query-compute-apps.csv'), '')],
    })
    kind, result = run_module({'root': root})
    assert result['nvidia_smi_available'] is True
    assert module_calls['warnings'] == []
    assert module_calls['commands'][0] == ['/usr/bin/nvidia-smi',
                                           '--query-gpu=index,pci.bus_id,uuid,name,memory.total,compute_cap',
                                           '--format=csv,noheader,nounits']
    gpu = result['gpus'][0]
    assert gpu['address'] == '0000:01:00.0' and gpu['device_minor'] == 2
    assert gpu['nvidia_smi'] == {'index': 0, 'name': 'NVIDIA RTX PRO 6000 Blackwell Server Edition', 'uuid': gpu['uuid'],
                                 'memory_total_mib': 97887, 'compute_cap': '12.0',
                                 'processes': [{'pid': 412230, 'process_name': 'sglang::scheduler_TP0',
                                                'used_memory_mib': 88630}]}
    assert result['gpus'][4]['nvidia_smi'] is None  # vfio-pci


def test_nvidia_smi_with_address_filter(sysfs_roots, module_calls, monkeypatch):
    root = sysfs_roots['seed_pve_8x_rtx6000']
    fake_nvidia_smi(monkeypatch, module_calls, {
        '--query-gpu=': [(0, commands_output(root, 'query-gpu.csv'), '')],
        '--query-compute-apps=': [(0, commands_output(root, 'query-compute-apps.csv'), '')],
    })
    kind, result = run_module({'root': root, 'addresses': ['0000:41:00.0']})
    assert result['count'] == 1 and result['gpus'][0]['nvidia_smi']['index'] == 2
    assert module_calls['warnings'] == []


def test_nvidia_smi_without_compute_cap(sysfs_roots, module_calls, monkeypatch):
    root = sysfs_roots['h200_real']
    fake_nvidia_smi(monkeypatch, module_calls, {
        '--query-gpu=': [(2, 'Field "compute_cap" is not a valid field to query.\n\n', ''),
                         (0, '0, 00000000:00:06.0, GPU-80e13570-bcf1-2bda-d935-9bcfe797af99, NVIDIA H200, 143771\n',
                          '')],
        '--query-compute-apps=': [(0, '', '')],
    })
    kind, result = run_module({'root': root})
    assert module_calls['commands'][1][1] == '--query-gpu=index,pci.bus_id,uuid,name,memory.total'
    assert result['nvidia_smi_available'] is True
    assert result['gpus'][0]['nvidia_smi']['compute_cap'] is None
    assert result['gpus'][0]['nvidia_smi']['processes'] == []
    assert '0000:00:07.0 is bound to nvidia but nvidia-smi does not list it' in module_calls['warnings']


def test_nvidia_smi_driver_mismatch(sysfs_roots, module_calls, monkeypatch):
    fake_nvidia_smi(monkeypatch, module_calls, {
        '--query-gpu=': [(18, 'Failed to initialize NVML: Driver/library version mismatch\n'
                              'NVML library version: 580.95\n', '')],
    })
    kind, result = run_module({'root': sysfs_roots['h200_real']})
    assert kind is AnsibleExitJson
    assert result['nvidia_smi_available'] is False
    assert result['gpus'][0]['nvidia_smi'] is None
    assert ('nvidia-smi --query-gpu failed (rc=18): Failed to initialize NVML: Driver/library version mismatch'
            in module_calls['warnings'])


def test_nvidia_smi_unparsable_and_apps_failure(sysfs_roots, module_calls, monkeypatch):
    fake_nvidia_smi(monkeypatch, module_calls, {'--query-gpu=': [(0, 'garbage\n', '')]})
    kind, result = run_module({'root': sysfs_roots['h200_real']})
    assert result['nvidia_smi_available'] is False
    assert any(w.startswith('nvidia-smi --query-gpu output not understood') for w in module_calls['warnings'])

    module_calls['warnings'][:] = []
    root = sysfs_roots['seed_pve_8x_rtx6000']
    fake_nvidia_smi(monkeypatch, module_calls, {
        '--query-gpu=': [(0, commands_output(root, 'query-gpu.csv'), ''), (0, commands_output(root, 'query-gpu.csv'),
                                                                           '')],
        '--query-compute-apps=': [(9, '', 'boom\n'), (0, 'x, y\n', '')],
    })
    kind, result = run_module({'root': root})
    assert result['nvidia_smi_available'] is True
    assert result['gpus'][0]['nvidia_smi']['processes'] is None
    assert module_calls['warnings'] == ['nvidia-smi --query-compute-apps failed (rc=9): boom; processes are null']
    kind, result = run_module({'root': root})
    assert result['gpus'][0]['nvidia_smi']['processes'] is None
    assert module_calls['warnings'][-1].startswith('nvidia-smi --query-compute-apps output not understood')


def test_nvidia_smi_missing(sysfs_roots, module_calls, monkeypatch):
    fake_nvidia_smi(monkeypatch, module_calls, {}, path=None)
    kind, result = run_module({'root': sysfs_roots['h200_real']})
    assert result['nvidia_smi_available'] is False
    assert 'GPUs are bound to nvidia but nvidia-smi is not on PATH: nvidia_smi is null' in module_calls['warnings']
    module_calls['warnings'][:] = []
    kind, result = run_module({'root': sysfs_roots['no_nvidia']})
    assert module_calls['warnings'] == []


@pytest.mark.parametrize('args', [{'run_nvidia_smi': False}, {'vendor_ids': ['0x8086']}])
def test_nvidia_smi_not_run(sysfs_roots, module_calls, monkeypatch, args):
    fake_nvidia_smi(monkeypatch, module_calls, {})
    params = {'root': sysfs_roots['h200_real']}
    params.update(args)
    kind, result = run_module(params)
    assert kind is AnsibleExitJson and module_calls['commands'] == []
    assert result['nvidia_smi_available'] is False


def test_is_host_root(tmp_path):
    assert gpu_info.is_host_root('/')
    assert gpu_info.is_host_root('//')
    assert not gpu_info.is_host_root(str(tmp_path))


def test_module_file_as_subprocess_in_check_mode(sysfs_roots, tmp_path):
    """The way Ansible runs it: the module file, an args file, JSON on stdout (warnings included)."""
    args_file = tmp_path / 'args.json'
    args_file.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': {
        'root': sysfs_roots['h200_real'], '_ansible_check_mode': True}}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path for path in sys.path if path))
    proc = subprocess.run([sys.executable, gpu_info.__file__, str(args_file)], capture_output=True, text=True,
                          env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result['changed'] is False
    assert result['count'] == 2
    assert [gpu['uuid'] for gpu in result['gpus']] == ['GPU-80e13570-bcf1-2bda-d935-9bcfe797af99',
                                                       'GPU-62f937e0-c20a-17d6-44a0-9d5075236e84']
    assert len(result['warnings']) == 2
