# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/gpu/measure_startup_memory.py without a GPU: nvidia-smi parsing, the overhead arithmetic, the report, the
recorded H200 run (tests/fixtures/startup_memory/) and the orchestration against a stand-in torch and nvidia-smi."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest
import yaml

from collection_paths import ROOT

SCRIPT = os.path.join(ROOT, 'tests', 'gpu', 'measure_startup_memory.py')
FIXTURES = os.path.join(ROOT, 'tests', 'fixtures', 'startup_memory')

_spec = importlib.util.spec_from_file_location('measure_startup_memory', SCRIPT)
msm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(msm)

# Captured verbatim on the nvidia-h200 device, 2026-12-01 (tests/fixtures/startup_memory/h200x1.json).
H200_BEFORE = '0, NVIDIA H200, 00000000:00:06.0, GPU-c833cf55-0721-ad36-e48e-9309f1058ded, 580.159.04, 143771, 0, 143156\n'
H200_HELD_NCCL = ('0, NVIDIA H200, 00000000:00:06.0, GPU-c833cf55-0721-ad36-e48e-9309f1058ded, 580.159.04, 143771, '
                  '1304, 141853\n')
H200_APPS = '456, 00000000:00:06.0, 518\n'
H200_RESERVED = '0, 616\n'
# Captured on the nvidia-h200-x2 device (tests/fixtures/captured/host_facts_h200x2.json): --format=csv with units.
H200X2_WITH_HEADER = ('index, pci.bus_id, name, memory.total [MiB], compute_cap\n'
                      '0, 00000000:00:06.0, NVIDIA H200, 143771 MiB, 9.0\n'
                      '1, 00000000:00:07.0, NVIDIA H200, 143771 MiB, 9.0\n')


def load_fixture(name='h200x1.json'):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def test_parse_query_gpu_noheader_nounits():
    rows = msm.parse_smi_csv(H200_BEFORE, msm.SMI_FIELDS)
    assert rows == [{'index': 0, 'name': 'NVIDIA H200', 'pci.bus_id': '00000000:00:06.0',
                     'uuid': 'GPU-c833cf55-0721-ad36-e48e-9309f1058ded', 'driver_version': '580.159.04',
                     'memory.total': 143771, 'memory.used': 0, 'memory.free': 143156}]
    held = msm.parse_smi_csv(H200_HELD_NCCL, msm.SMI_FIELDS)[0]
    assert (held['memory.used'], held['memory.free']) == (1304, 141853)


def test_parse_header_units_apps_and_reserved():
    rows = msm.parse_smi_csv(H200X2_WITH_HEADER, ('index', 'pci.bus_id', 'name', 'memory.total', 'compute_cap'))
    assert [r['index'] for r in rows] == [0, 1]
    assert [r['memory.total'] for r in rows] == [143771, 143771]
    assert rows[1]['compute_cap'] == '9.0'
    assert msm.parse_smi_csv(H200_APPS, msm.APP_FIELDS) == [
        {'pid': 456, 'gpu_bus_id': '00000000:00:06.0', 'used_memory': 518}]
    assert msm.parse_smi_csv(H200_RESERVED, ('index', 'memory.reserved')) == [{'index': 0, 'memory.reserved': 616}]
    assert msm.parse_smi_csv('', msm.APP_FIELDS) == []  # no compute apps running


def test_parse_not_available_and_bad_lines():
    row = msm.parse_smi_csv('0, [N/A]\n', ('index', 'memory.reserved'))[0]
    assert row['memory.reserved'] is None
    with pytest.raises(ValueError, match='2 fields, 8 asked for'):
        msm.parse_smi_csv(H200_RESERVED, msm.SMI_FIELDS)


def test_overhead_arithmetic():
    # memory.total 143771 MiB; torch's free after the one-rank NCCL init on the real H200 (bytes)
    assert msm.overhead_gib(143771, 148742995968) == 1.874
    assert msm.overhead_gib(143771, 143771 * msm.MIB) == 0.0
    assert msm.profile_value(1.874) == 1.88
    assert msm.profile_value(1.87) == 1.87  # already a multiple of 0.01: not pushed up by float noise
    assert msm.profile_value(1.751) == 1.76
    assert msm.mib(149556690944) == 142628.4 and msm.gib(149556690944) == 139.286


@pytest.mark.parametrize('count, sizes', [(0, []), (1, [1]), (2, [1, 2]), (4, [1, 2, 4]), (6, [1, 2, 4, 6]),
                                          (8, [1, 2, 4, 8])])
def test_default_world_sizes(count, sizes):
    assert msm.default_world_sizes(count) == sizes


def _smi(index, total=143771, free=143156):
    return {'index': index, 'name': 'NVIDIA H200', 'pci.bus_id': '0000000%d:00:06.0' % index, 'uuid': None,
            'driver_version': '580.159.04', 'memory.total': total, 'memory.used': total - free - 615,
            'memory.free': free}


def _rank(rank, gpu, free_mib, context_mib=142628.4, **extra):
    out = {'rank': rank, 'gpu': gpu, 'free_bytes': int(free_mib * msm.MIB), 'total_bytes': 150109880320,
           'free_context_bytes': int(context_mib * msm.MIB), 'sum_ok': True, 'init_s': 0.4}
    out.update(extra)
    return out


def test_summarize_takes_the_worst_rank_and_refuses_partial_worlds():
    smi = [_smi(0), _smi(1)]
    contexts = {0: {'gpu': 0, 'free_bytes': int(142628.4 * msm.MIB), 'total_bytes': 150109880320},
                1: {'gpu': 1, 'error': 'RuntimeError: CUDA error'}}
    worlds = {1: [_rank(0, 0, 141852.4)],
              2: [_rank(0, 0, 141500.0), _rank(1, 1, 141400.0)],
              4: [_rank(0, 0, 141000.0), {'rank': 1, 'gpu': 1, 'error': 'no result (deadline 240s, rc=-15)'}]}
    summary = msm.summarize(smi, contexts, worlds, tp_size=2)
    assert summary['gpus'][0]['after_context']['overhead_gib'] == 1.116
    assert summary['gpus'][0]['context_cost_mib'] == 527.6
    assert summary['gpus'][1]['error'] == 'RuntimeError: CUDA error'
    two = summary['worlds']['2']
    assert two['ok'] and two['min_free_after_nccl']['gpu'] == 1
    assert two['startup_overhead_gib'] == msm.overhead_gib(143771, int(141400.0 * msm.MIB)) == 2.315
    assert two['max_nccl_cost_mib'] == pytest.approx(1228.4)
    assert summary['worlds']['4']['ok'] is False and 'startup_overhead_gib' not in summary['worlds']['4']
    planner = summary['planner']
    assert planner['startup_overhead_gib'] == {'1': 1.874, '2': 2.315, '4': None}
    assert planner['startup_overhead_gib_at_tp'] == 2.315 and planner['profile_startup_overhead_gib_at_tp'] == 2.32
    assert planner['free_memory_before_load_gib'] == {'1': 138.528, '2': 138.086}
    table = msm.markdown_table(summary)
    assert '| after NCCL init + all-reduce: FAILED (no result (deadline 240s, rc=-15)) | 4 | 1 | 1 |' in table
    assert '| 4 | NO | - | - | - | - |' in table
    assert '| after CUDA context: FAILED (RuntimeError: CUDA error) |' in table


def test_summarize_wrong_sum_is_not_ok_and_missing_tp_is_said():
    summary = msm.summarize([_smi(0)], {}, {1: [_rank(0, 0, 141852.4, sum_ok=False)]}, tp_size=4)
    assert summary['worlds']['1']['ok'] is False
    assert summary['planner']['startup_overhead_gib_at_tp'] is None
    assert summary['planner']['note'] == 'world size 4 (the TP size) was not measured'


def test_recorded_h200_run_is_consistent():
    report = load_fixture()
    meta = report['meta']
    assert meta['versions']['driver'] == '580.159.04' and meta['versions']['torch'] == '2.11.0+cu130'
    assert meta['versions']['nccl'] == '2.28.9' and meta['versions']['torch_cuda'] == '13.0'
    for key, value in msm.FORCED_ENV.items():
        assert meta['env'][key] == value
    assert meta['env']['NCCL_CUMEM_ENABLE'] == '0'
    assert report['all_ok'] and meta['world_sizes'] == [1]
    # the parsed rows are what the raw nvidia-smi output says
    assert msm.parse_smi_csv(report['smi_raw']['before']['stdout'], msm.SMI_FIELDS) == report['smi_before']
    assert report['smi_before'] == msm.parse_smi_csv(H200_BEFORE, msm.SMI_FIELDS)
    assert report['steps'][0]['smi_held_raw'][1] == H200_APPS  # the context process: 518 MiB for nvidia-smi
    assert report['steps'][1]['smi_held_raw'] == [H200_HELD_NCCL, '469, 00000000:00:06.0, 1294\n']
    assert report['smi_after'][0]['memory.used'] == 0  # left as found
    # re-deriving the summary and the table from the raw child results gives what the run wrote
    contexts = dict((int(k), v) for k, v in report['raw']['contexts'].items())
    worlds = dict((int(k), v) for k, v in report['raw']['worlds'].items())
    rebuilt = msm.build_report(meta, report['smi_before'], contexts, worlds, meta['tp_size'])
    assert rebuilt['summary'] == report['summary']
    assert rebuilt['table_md'] == report['table_md']
    world = report['summary']['worlds']['1']
    assert world['startup_overhead_gib'] == 1.874 and world['max_nccl_cost_mib'] == 776.0
    assert report['summary']['gpus'][0]['after_context']['mib'] == 142628.4
    assert any('Init COMPLETE' in line for line in report['raw']['worlds']['1'][0]['log_tail'])


def test_cumem_run_differs_only_in_nccl_cost():
    default, cumem = load_fixture(), load_fixture('h200x1_nccl_cumem1.json')
    assert cumem['meta']['env']['NCCL_CUMEM_ENABLE'] == '1'
    assert cumem['summary']['worlds']['1']['max_nccl_cost_mib'] == 650.0
    assert cumem['summary']['gpus'][0]['after_context'] == default['summary']['gpus'][0]['after_context']


def test_h200_profile_carries_the_measured_figure():
    report = load_fixture()
    with open(os.path.join(ROOT, 'profiles', 'hardware', 'h200.yml')) as handle:
        profile = yaml.safe_load(handle)
    assert profile['memory_total_mib'] == report['smi_before'][0]['memory.total']
    assert profile['startup_overhead_gib'] == report['summary']['planner']['profile_startup_overhead_gib']['1']


def test_child_env_forces_multicast_off_and_keeps_caller_settings():
    env = msm.child_env({'NCCL_NVLS_ENABLE': '1', 'NCCL_CUMEM_ENABLE': '1', 'PATH': '/bin'})
    assert env['NCCL_NVLS_ENABLE'] == '0' and env['TORCH_SYMM_MEM_DISABLE_MULTICAST'] == '1'
    assert env['NVSHMEM_DISABLE_NVLS'] == '1'
    assert env['NCCL_CUMEM_ENABLE'] == '1'  # the caller's choice stands; SGLang's default only where unset
    assert msm.child_env({})['NCCL_CUMEM_ENABLE'] == '0'
    assert env['PATH'] == '/bin'


# --- orchestration against stand-ins (no GPU): fresh processes, rendezvous variables, deadlines -------------------

FAKE_SMI = """#!/bin/sh
case "$1" in
  --query-gpu=index,memory.reserved) printf '0, 616\\n1, 616\\n';;
  --query-gpu=*) printf '0, NVIDIA H200, 00000000:00:06.0, GPU-a, 580.159.04, 143771, 0, 143156\\n'
                 printf '1, NVIDIA H200, 00000000:00:07.0, GPU-b, 580.159.04, 143771, 0, 143156\\n';;
esac
"""

FAKE_TORCH = '''
import os, time, types
__version__ = '0.0+standin'
version = types.SimpleNamespace(cuda='13.0')
float32 = 'float32'
USED = [527 << 20]
TOTAL = 150109880320


class Tensor(object):
    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return Tensor(self.value == other)

    def item(self):
        return self.value


def full(shape, value, dtype=None, device=None):
    return Tensor(value)


def all(tensor):
    return tensor


def device(kind, index):
    return (kind, index)


def _mem_get_info(index):
    return TOTAL - USED[0], TOTAL


cuda = types.SimpleNamespace(
    set_device=lambda index: None, mem_get_info=_mem_get_info, synchronize=lambda dev=None: None,
    empty_cache=lambda: None, memory_reserved=lambda dev=None: 0,
    get_device_properties=lambda index: types.SimpleNamespace(name='NVIDIA H200', major=9, minor=0,
                                                              multi_processor_count=132),
    nccl=types.SimpleNamespace(version=lambda: (2, 28, 9)))


def _init(backend, **kwargs):
    assert os.environ['NCCL_NVLS_ENABLE'] == '0' and os.environ['MASTER_ADDR'] == '127.0.0.1'
    assert int(os.environ['RANK']) == kwargs['rank'] and int(os.environ['WORLD_SIZE']) == kwargs['world_size']
    USED[0] += (1 << 30) * kwargs['world_size']  # a stand-in NCCL cost: 1 GiB per rank in the world
    if os.environ.get('STANDIN_HANG_RANK') == os.environ['RANK'] and kwargs['world_size'] > 1:
        time.sleep(600)


def _all_reduce(tensor):
    world = int(os.environ['WORLD_SIZE'])
    tensor.value = world * (world + 1) // 2


distributed = types.SimpleNamespace(init_process_group=_init, all_reduce=_all_reduce,
                                    destroy_process_group=lambda: None)
'''


@pytest.fixture
def standins(tmp_path):
    bindir, pydir = tmp_path / 'bin', tmp_path / 'py' / 'torch'
    bindir.mkdir()
    pydir.mkdir(parents=True)
    smi = bindir / 'nvidia-smi'
    smi.write_text(FAKE_SMI)
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    (pydir / '__init__.py').write_text(textwrap.dedent(FAKE_TORCH))
    env = dict(os.environ, PATH='%s:%s' % (bindir, os.environ.get('PATH', '')), PYTHONPATH=str(tmp_path / 'py'))
    env.pop('OUT', None)
    return tmp_path, env


def _run(tmp_path, env, *args):
    out = tmp_path / 'out'
    proc = subprocess.run([sys.executable, SCRIPT, '--out', str(out), '--hold-timeout', '2'] + list(args),
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    with open(str(out / 'startup_memory.json')) as handle:
        return proc, json.load(handle)


def test_orchestration_with_standins(standins):
    tmp_path, env = standins
    proc, report = _run(tmp_path, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report['meta']['world_sizes'] == [1, 2] and report['meta']['tp_size'] == 2
    assert report['smi_reserved_mib'] == {'0': 616, '1': 616}
    worlds = report['summary']['worlds']
    assert [r['gpu'] for r in worlds['2']['ranks']] == [0, 1]
    assert worlds['1']['max_nccl_cost_mib'] == 1024.0 and worlds['2']['max_nccl_cost_mib'] == 2048.0
    assert report['summary']['planner']['startup_overhead_gib_at_tp'] == report['summary']['worlds']['2'][
        'startup_overhead_gib']
    assert (tmp_path / 'out' / 'startup_memory.md').exists()
    assert '| world size (= TP) |' in proc.stdout and 'ALL STEPS RAN' in proc.stdout


def test_a_hanging_rank_is_stopped_at_the_deadline(standins):
    tmp_path, env = standins
    env['STANDIN_HANG_RANK'] = '1'
    proc, report = _run(tmp_path, env, '--startup-timeout', '1', '--nccl-timeout', '1')
    assert proc.returncode == 1
    step = report['steps'][-1]
    assert step['name'] == 'world2' and step['timed_out']
    assert [c['ended'] for c in step['children']] == ['exited', 'terminated']
    assert report['summary']['worlds']['2']['ok'] is False
    assert report['summary']['worlds']['1']['ok'] is True
    assert 'NOT ALL STEPS RAN' in proc.stdout
