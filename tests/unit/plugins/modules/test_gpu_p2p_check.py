# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_p2p_check through its real argument spec: option errors, check mode, the precise failure without torch (a real
worker run), and verdicts from the recorded 2x H200 worker output replayed through run_command."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import importlib.util
import json
import os
import sys

import pytest

from ansible.module_utils import basic

from ansible_collections.llmops.inference.plugins.modules import gpu_p2p_check
from ansible_collections.llmops.inference.plugins.module_utils.gpu.scripts import p2p_worker
from module_harness import AnsibleExitJson, AnsibleFailJson, run

H200 = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'p2p', 'h200x2')


def run_module(args, tmp_path, check_mode=False):
    return run(gpu_p2p_check.main, args, check_mode=check_mode, tmp_path=tmp_path)


def recorded_raw(mode, phase='p2p'):
    with open(os.path.join(H200, 'p2p_%s.json' % mode)) as handle:
        return json.load(handle)['raw'][phase]


@pytest.fixture
def replay(monkeypatch):
    """run_command answers phase A / phase B from recorded worker documents and records the argv it got."""
    calls = []

    def install(doc_a, doc_b=None):
        def run_command(self, argv, **kwargs):
            calls.append({'argv': argv, 'kwargs': kwargs, 'worker_exists': os.path.isfile(argv[4])})
            with open(argv[4]) as handle:
                calls[-1]['worker_source'] = handle.read()
            doc = doc_b if '--p2p-disable' in argv else doc_a
            return 0, json.dumps(doc), ''
        monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
        return calls
    return install


@pytest.mark.parametrize('args, message', [
    ({'gpus': [0]}, 'gpus selects one GPU (0); a P2P/NCCL check needs at least 2'),
    ({'gpus': [0, 0]}, 'gpus lists a GPU twice: [0, 0]'),
    ({'gpus': [-1, 1]}, 'gpus must be non-negative CUDA indices, got [-1, 1]'),
    ({'sizes_mib': []}, 'sizes_mib needs at least one positive size, got []'),
    ({'nccl_timeout': 0}, 'nccl_timeout must be positive, got 0'),
    ({'python_interpreter': '/nonexistent/bin/python'},
     'python_interpreter /nonexistent/bin/python is not an executable file'),
])
def test_option_errors(args, message, tmp_path):
    kind, result = run_module(args, tmp_path)
    assert kind is AnsibleFailJson
    assert result['msg'].endswith(message)
    assert result['commands'] == []


def test_invalid_fault_choice(tmp_path):
    kind, result = run_module({'fault_injection': 'flip_bits'}, tmp_path)
    assert kind is AnsibleFailJson
    assert 'fault_injection' in result['msg']


def test_check_mode_runs_nothing(tmp_path, monkeypatch):
    def no_run(*_args, **_kwargs):
        raise AssertionError('check mode must not run the worker')
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', no_run)
    kind, result = run_module({'gpus': [0, 1], 'python_interpreter': sys.executable}, tmp_path, check_mode=True)
    assert kind is AnsibleExitJson
    assert result['skipped_gpu_run'] is True and result['verdict'] is None and result['changed'] is False
    argv = result['would_run'][0]
    assert argv[0].endswith('timeout') and argv[1] == '--kill-after=15' and argv[2] == '630'
    assert argv[3] == sys.executable and argv[4].endswith('/p2p_worker.py')
    assert argv[5:] == ['--sizes-mib', '1,64,512', '--allreduce-mib', '256', '--copy-timeout', '300',
                        '--nccl-timeout', '60', '--startup-timeout', '120', '--fault', 'none', '--gpus', '0,1']
    assert not os.path.exists(argv[4])


@pytest.mark.skipif(importlib.util.find_spec('torch') is not None, reason='this interpreter has torch')
def test_without_torch_fails_precisely(tmp_path):
    # a real worker run under the test interpreter, which has no torch
    kind, result = run_module({'python_interpreter': sys.executable, 'sizes_mib': [1]}, tmp_path)
    assert kind is AnsibleFailJson
    assert result['msg'] == ("gpu_p2p_check could not run the GPU check: torch is not importable by %s: "
                             "ModuleNotFoundError: No module named 'torch'" % sys.executable)
    assert result['verdict'] is None and len(result['commands']) == 1


def test_p2p_ok_from_recorded_run(tmp_path, replay):
    calls = replay(recorded_raw('none'))
    kind, result = run_module({'environment': {'CUDA_VISIBLE_DEVICES': '0,1', 'NCCL_SOCKET_IFNAME': 'lo'}}, tmp_path)
    assert kind is AnsibleExitJson
    assert result['verdict'] == 'p2p_ok' and result['nccl_p2p_disable'] is False and not result['changed']
    assert result['transports'] == {'p2p': ['P2P/CUMEM']}
    assert result['versions']['nccl'] == '2.28.9+cuda13.0'
    assert result['phases']['p2p']['nccl']['edges'][0]['transport'] == 'P2P/CUMEM'
    assert result['phases']['p2p']['nccl']['init_timings_s'] == {'0': 0.42, '1': 0.41}
    assert 'log' not in result['phases']['p2p'] and 'raw' not in result and 'nccl_log' not in result
    assert len(calls) == 1
    assert calls[0]['worker_exists']
    assert calls[0]['worker_source'] == gpu_p2p_check.worker_source()
    assert 'def run_phase(args)' in calls[0]['worker_source']
    assert calls[0]['kwargs']['environ_update'] == {'CUDA_VISIBLE_DEVICES': '0,1', 'NCCL_SOCKET_IFNAME': 'lo'}
    assert calls[0]['kwargs']['expand_user_and_vars'] is False


def test_use_nccl_p2p_disable_from_recorded_fault(tmp_path, replay):
    calls = replay(recorded_raw('corrupt_copy'), recorded_raw('corrupt_copy', 'no_p2p'))
    kind, result = run_module({'fault_injection': 'corrupt_copy', 'return_nccl_log': True}, tmp_path)
    assert kind is AnsibleExitJson
    assert result['verdict'] == 'use_nccl_p2p_disable' and result['nccl_p2p_disable'] is True
    assert result['recommended_env'] == {'NCCL_P2P_DISABLE': '1'}
    assert result['recommended_sglang_args'] == ['--disable-custom-all-reduce']
    assert [c['argv'][-2:] for c in calls][1] == ['--p2p-disable', '--skip-copy']
    assert calls[0]['argv'][calls[0]['argv'].index('--fault') + 1] == 'corrupt_copy'
    assert any('via SHM/direct/direct' in line for line in result['nccl_log']['no_p2p'])
    assert len(result['commands']) == 2


def test_nccl_broken_fails_unless_told_not_to(tmp_path, replay):
    # SYNTHESISED phase B: the recorded one with rank 1 stuck in NCCL init and killed
    broken = copy.deepcopy(recorded_raw('corrupt_copy', 'no_p2p'))
    broken['nccl']['ranks'][1].update({'rc': -9, 'timed_out': True, 'ended': 'killed', 'result': None,
                                       'last_stage': 'init_start'})
    replay(recorded_raw('corrupt_copy'), broken)
    kind, result = run_module({}, tmp_path)
    assert kind is AnsibleFailJson
    assert result['msg'].startswith('gpu_p2p_check: NCCL is broken on these GPUs: with P2P allowed: GPU 0->1 1 MiB')
    assert 'rank 1 (GPU 1) did not finish within the 60.0s NCCL limit: stuck in NCCL communicator init' in result['msg']
    assert result['verdict'] == 'nccl_broken'
    kind, result = run_module({'fail_on_broken': False}, tmp_path)
    assert kind is AnsibleExitJson and result['verdict'] == 'nccl_broken'


def test_worker_source_is_the_module_utils_file():
    with open(p2p_worker.__file__) as handle:
        assert gpu_p2p_check.worker_source() == handle.read()


@pytest.mark.parametrize('from_task', [True, False])
def test_the_cpu_simulation_switch_is_refused_outside_tests(tmp_path, monkeypatch, replay, from_task):
    calls = replay(recorded_raw('none'))
    args = {'gpus': [0, 1], 'python_interpreter': sys.executable}
    if from_task:
        args['environment'] = {p2p_worker.SIMULATE_ENV: 'cpu'}
    else:
        monkeypatch.setenv(p2p_worker.SIMULATE_ENV, 'cpu')
    kind, result = run_module(args, tmp_path)
    assert kind is AnsibleFailJson and calls == []
    where = 'the task environment' if from_task else 'the module environment'
    assert ('%s is set in %s' % (p2p_worker.SIMULATE_ENV, where)) in result['msg']
    assert 'refused outside tests' in result['msg'] and 'simulation: true' in result['msg']


def test_simulation_true_is_marked(tmp_path, replay):
    calls = replay(recorded_raw('none'))
    kind, result = run_module({'gpus': [0, 1], 'python_interpreter': sys.executable, 'simulation': True}, tmp_path)
    assert kind is AnsibleExitJson and result['simulated'] is True
    assert calls[0]['kwargs']['environ_update'][p2p_worker.SIMULATE_ENV] == 'cpu'
