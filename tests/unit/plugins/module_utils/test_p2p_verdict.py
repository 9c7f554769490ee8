# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Verdict logic of gpu_p2p_check from recorded outputs.

Real inputs: tests/fixtures/captured/nccl_p2p_{on,off}.log (torchrun probe) and tests/fixtures/p2p/h200x2/ (the
worker on 2x H200, driver 580.159.04, torch 2.11.0+cu130, NCCL 2.28.9: normal run and three injected faults).
Every test marked SYNTHESISED derives its input from those real documents or lines, changed as its comment says.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.gpu import p2p_verdict as v

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures')
H200 = os.path.join(FIXTURES, 'p2p', 'h200x2')
MODES = ('none', 'corrupt_copy', 'corrupt_allreduce', 'hang_nccl')


def captured_lines(name):
    with open(os.path.join(FIXTURES, 'captured', name)) as handle:
        return handle.read().splitlines()


def h200(mode):
    with open(os.path.join(H200, 'p2p_%s.json' % mode)) as handle:
        return json.load(handle)


def raw(mode, phase='p2p'):
    return copy.deepcopy(h200(mode)['raw'][phase])


def judge(doc_a, doc_b=None):
    a = v.summarize_phase(doc_a, 0, 'p2p')
    b = v.summarize_phase(doc_b, 0, 'no_p2p') if doc_b is not None else None
    return a, b, v.decide(a, b)


def fake_runner(docs):
    """run_phase stand-in answering (p2p_disable, skip_copy) calls from a list of (rc, doc-or-text, stderr)."""
    calls = []
    answers = list(docs)

    def run_phase(p2p_disable, skip_copy):
        calls.append((p2p_disable, skip_copy))
        rc, doc, err = answers.pop(0)
        return rc, doc if isinstance(doc, str) else json.dumps(doc), err
    return run_phase, calls


# ---- NCCL_DEBUG=INFO parsing: real captured logs ---------------------------------------------------------------

def test_parse_captured_p2p_on():
    info = v.parse_nccl_log(captured_lines('nccl_p2p_on.log'))
    assert info['nccl_version'] == '2.28.9+cuda13.0'
    assert info['cuda_driver_version'] == 13000
    assert info['transports'] == ['P2P/CUMEM']
    assert info['transport_families'] == ['P2P']
    assert info['edges'] == [{'src_rank': 0, 'dst_rank': 1, 'transport': 'P2P/CUMEM', 'channels': 24},
                             {'src_rank': 1, 'dst_rank': 0, 'transport': 'P2P/CUMEM', 'channels': 24}]
    assert info['init_complete'] == 2
    assert info['init_timings_s'] == {0: 0.68, 1: 0.33}
    assert info['env_set'] == {'NCCL_NVLS_ENABLE': '0'}
    assert info['warnings'] == [] and info['p2p_problems'] == []
    # torchrun's banner lines are not errors; the interleaved 'PROBE ... sum_ok=TruePROBE' line is not either
    assert info['errors'] == []
    assert info['evidence']['transport'] == [
        'vm:690:690 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM',
        'vm:689:689 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM']


def test_parse_captured_p2p_off():
    info = v.parse_nccl_log(captured_lines('nccl_p2p_off.log'))
    assert info['transports'] == ['SHM/direct/direct']
    assert info['transport_families'] == ['SHM']
    assert [e['channels'] for e in info['edges']] == [4, 4]
    assert info['env_set'] == {'NCCL_P2P_DISABLE': '1', 'NCCL_NVLS_ENABLE': '0'}
    assert info['evidence']['env'][0] == 'vm:753:753 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1'
    assert info['init_timings_s'] == {0: 0.89, 1: 0.42}
    assert info['init_complete'] == 2


@pytest.mark.parametrize('line, edge', [
    # real, NCCL 2.28.9
    ('vm:689:689 [0] NCCL INFO Channel 23/0 : 0[0] -> 1[1] via P2P/CUMEM', (0, 1, 'P2P/CUMEM')),
    ('vm:754:754 [1] NCCL INFO Channel 03 : 1[1] -> 0[0] via SHM/direct/direct', (1, 0, 'SHM/direct/direct')),
    # SYNTHESISED in the same shape: other transports and older NCCL's bus id in brackets
    ('h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read', (0, 1, 'P2P/CUMEM/read')),
    ('h:1:1 [2] NCCL INFO Channel 01/0 : 2[41000] -> 3[61000] via P2P/IPC', (2, 3, 'P2P/IPC')),
    ('h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/direct pointer', (0, 1, 'P2P/direct pointer')),
    ('h:1:1 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] [receive] via NET/Socket/0', (1, 0, 'NET/Socket/0')),
])
def test_transport_line_formats(line, edge):
    info = v.parse_nccl_log([line])
    assert (info['edges'][0]['src_rank'], info['edges'][0]['dst_rank'], info['edges'][0]['transport']) == edge


def test_parse_warn_and_p2p_problem_lines():
    # SYNTHESISED: NCCL WARN / INFO lines in NCCL's 'host:pid:tid [dev] file:line NCCL WARN msg' shape
    lines = ['vm:701:701 [0] transport/shm.cc:120 NCCL WARN Error: failed to extend /dev/shm/nccl-AbCd to 9637892 bytes',
             'vm:701:701 [0] NCCL INFO Could not enable P2P between dev 0(=60) and dev 1(=70)',
             '[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1234, unhandled system error']
    info = v.parse_nccl_log(lines)
    assert info['warnings'] == lines[:1]
    assert info['p2p_problems'] == lines[:2]
    assert info['errors'] == lines[2:]


# ---- real H200 x2 runs: re-judging the recorded worker output reproduces the recorded verdict -------------------

@pytest.mark.parametrize('mode, verdict', [('none', 'p2p_ok'), ('corrupt_copy', 'use_nccl_p2p_disable'),
                                           ('corrupt_allreduce', 'use_nccl_p2p_disable'),
                                           ('hang_nccl', 'use_nccl_p2p_disable')])
def test_h200_recorded_verdicts(mode, verdict):
    recorded = h200(mode)
    assert recorded['verdict'] == verdict
    _a, _b, decision = judge(raw(mode), recorded['raw'].get('no_p2p'))
    assert decision['verdict'] == verdict
    assert decision['nccl_p2p_disable'] is (verdict == 'use_nccl_p2p_disable')


def test_h200_normal_run_details():
    a, b, decision = judge(raw('none'))
    assert b is None
    assert a['ok'] and a['copy_ok'] and a['nccl_ok']
    assert a['transports'] == ['P2P/CUMEM'] and a['nccl_version'] == '2.28.9+cuda13.0'
    assert len(a['pairs']) == 12  # 2 ordered pairs x 3 sizes x 2 methods
    assert all(p['ok'] and p['peer_access'] for p in a['pairs'])
    big = [p for p in a['pairs'] if p['size_mib'] == 512 and p['method'] == 'memcpy']
    assert all(p['gbps'] > 300 for p in big)  # NVLink (NV18): 375-385 GB/s measured
    assert 0 < a['init_s'] < 5 and a['busbw_gbps'] > 200
    assert decision['recommended_env'] == {} and decision['recommended_sglang_args'] == []
    assert decision['notes'] == []
    assert 'over P2P/CUMEM' in decision['reason']
    assert any('via P2P/CUMEM' in line for line in decision['evidence'])
    assert any('Init timings' in line for line in decision['evidence'])


def test_h200_corrupt_copy_is_caught_per_pair():
    a, b, decision = judge(raw('corrupt_copy'), raw('corrupt_copy', 'no_p2p'))
    bad = [p for p in a['pairs'] if not p['ok']]
    assert sorted(set((p['src'], p['dst']) for p in bad)) == [(0, 1)]  # the hook corrupts 0->1 only
    assert len(bad) == 6 and all(p['fault_injected'] and p['mismatched_elements'] == 1 for p in bad)
    assert all(p['ok'] for p in a['pairs'] if (p['src'], p['dst']) == (1, 0))
    assert a['copy_ok'] is False and a['nccl_ok'] is True  # NCCL itself was fine: the copy test is the evidence
    assert b['ok'] and b['transports'] == ['SHM/direct/direct'] and b['p2p_disable_env'] == '1'
    assert decision['recommended_env'] == {'NCCL_P2P_DISABLE': '1'}
    assert decision['recommended_sglang_args'] == ['--disable-custom-all-reduce']
    assert 'GPU 0->1 512 MiB memcpy: CORRUPT in 3 of 3 copies' in ' '.join(decision['evidence'])
    assert '[no_p2p] vm:701:701 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1' in decision['evidence']
    assert 'and 3 more problem(s)' in decision['reason']


def test_h200_corrupt_allreduce():
    a, _b, decision = judge(raw('corrupt_allreduce'), raw('corrupt_allreduce', 'no_p2p'))
    assert a['copy_ok'] is True and a['nccl_ok'] is False
    assert a['problems'] == ['rank 0 (GPU 0): all-reduce result wrong in 1 of 67108864 elements, first at index '
                             '33554432 (expected 579.0, got 580.0) [fault injected by the test hook]']
    assert decision['verdict'] == 'use_nccl_p2p_disable'


def test_h200_hang_is_a_failure_with_the_stuck_stage():
    a, b, decision = judge(raw('hang_nccl'), raw('hang_nccl', 'no_p2p'))
    ranks = raw('hang_nccl')['nccl']['ranks']
    assert [r['timed_out'] for r in ranks] == [True, True]
    assert [r['ended'] for r in ranks] == ['terminated', 'terminated']
    assert a['problems'] == [
        'rank 0 (GPU 0) did not finish within the 20.0s NCCL limit: stuck in the all-reduce; it was terminated',
        'rank 1 (GPU 1) did not finish within the 20.0s NCCL limit: stuck in the injected hang (test hook); '
        'it was terminated']
    assert b['ok'] and decision['verdict'] == 'use_nccl_p2p_disable'


def test_h200_setup_errors_are_fatal_not_verdicts():
    docs = []
    with open(os.path.join(H200, 'setup_errors.jsonl')) as handle:
        for line in handle:
            if line.startswith('{'):
                docs.append(json.loads(line))
    assert [d['fatal'] for d in docs] == [
        'CUDA is not available to torch 2.11.0+cu130 (built for CUDA 13.0) under /opt/torch/.venv/bin/python3: '
        'torch.cuda.is_available() is False',
        'a P2P/NCCL check needs at least 2 GPUs; selected [0] of 2 visible',
        'GPU indices [5] do not exist: 2 CUDA device(s) visible (CUDA_VISIBLE_DEVICES=<unset>)']
    for doc in docs:
        run_phase, calls = fake_runner([(2, doc, '')])
        result = v.run_preflight(run_phase, {})
        assert result['fatal'] == doc['fatal'] and 'verdict' not in result
        assert calls == [(False, False)]


# ---- run_preflight orchestration --------------------------------------------------------------------------------

def test_preflight_clean_runs_phase_a_only():
    run_phase, calls = fake_runner([(0, raw('none'), '')])
    result = v.run_preflight(run_phase, {})
    assert calls == [(False, False)]
    assert result['verdict'] == 'p2p_ok'
    assert result['versions'] == {'torch': '2.11.0+cu130', 'torch_cuda': '13.0', 'nccl': '2.28.9+cuda13.0',
                                  'driver': '580.159.04', 'cuda_driver_api': 13000}
    assert result['transports'] == {'p2p': ['P2P/CUMEM']}
    assert result['peer_access'] == {'0->1': True, '1->0': True}
    assert [g['name'] for g in result['gpus']] == ['NVIDIA H200', 'NVIDIA H200']
    assert result['allreduce']['p2p']['ok'] is True


def test_preflight_bad_phase_a_runs_phase_b_without_copy():
    run_phase, calls = fake_runner([(0, raw('corrupt_copy'), ''), (0, raw('corrupt_copy', 'no_p2p'), '')])
    result = v.run_preflight(run_phase, {})
    assert calls == [(False, False), (True, True)]
    assert result['verdict'] == 'use_nccl_p2p_disable'
    assert result['transports'] == {'p2p': ['P2P/CUMEM'], 'no_p2p': ['SHM/direct/direct']}
    assert set(result['init_s']) == {'p2p', 'no_p2p'}


def test_preflight_without_phase_b_is_broken():
    run_phase, calls = fake_runner([(0, raw('corrupt_allreduce'), '')])
    result = v.run_preflight(run_phase, {'try_p2p_disable': False})
    assert calls == [(False, False)]
    assert result['verdict'] == 'nccl_broken'
    assert result['reason'].endswith('the NCCL_P2P_DISABLE=1 phase was not run')


def test_both_phases_bad_is_broken_with_warn_evidence():
    # SYNTHESISED: phase B of the real corrupt_copy run, with rank 1 failing on /dev/shm as a too-small container
    # /dev/shm would make it (WARN line in NCCL's format, torch error line in ProcessGroupNCCL's)
    doc_b = raw('corrupt_copy', 'no_p2p')
    rank1 = doc_b['nccl']['ranks'][1]
    rank1.update({'rc': 1, 'result': None, 'last_stage': 'allreduce_start'})
    rank1['log'] += ['vm:702:702 [1] transport/shm.cc:120 NCCL WARN Error: failed to extend /dev/shm/nccl-Xy12 to '
                     '9637892 bytes',
                     '[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3690, '
                     'unhandled system error']
    run_phase, _calls = fake_runner([(0, raw('corrupt_copy'), ''), (0, doc_b, '')])
    result = v.run_preflight(run_phase, {})
    assert result['verdict'] == 'nccl_broken' and not result['nccl_p2p_disable']
    assert 'With NCCL_P2P_DISABLE=1: rank 1 (GPU 1) exited with rc=1 in the all-reduce' in result['reason']
    assert any('NCCL WARN Error: failed to extend /dev/shm' in e for e in result['evidence'])
    assert any(e.startswith('[no_p2p] [rank1]: torch.distributed.DistBackendError') for e in result['evidence'])
    assert len(result['evidence']) <= v.MAX_EVIDENCE


def test_worker_killed_by_outer_timeout():
    # SYNTHESISED: coreutils timeout killed the worker (rc 124) before it printed anything
    run_phase, calls = fake_runner([(124, '', 'Terminated'), (0, raw('hang_nccl', 'no_p2p'), '')])
    result = v.run_preflight(run_phase, {})
    assert calls == [(False, False), (True, True)]
    assert result['verdict'] == 'use_nccl_p2p_disable'
    assert 'killed by the outer timeout (rc=124)' in result['reason']
    assert 'worker stderr: Terminated' in result['reason']


def test_worker_terminated_by_signal_partial_document():
    # SYNTHESISED: the partial JSON the worker's SIGTERM handler prints (copy done, NCCL step never reported)
    doc = raw('none')
    doc.pop('nccl')
    doc['terminated_by_signal'] = 15
    a, _b, decision = judge(doc)
    assert not a['ok']
    assert a['problems'] == ['the worker was stopped by signal 15 (outer timeout) before it finished',
                             'the NCCL step did not run']
    assert decision['verdict'] == 'nccl_broken'


def test_init_hang_names_the_stage():
    # SYNTHESISED: both ranks of the real normal run stuck in ncclCommInitRankConfig (no result, killed)
    doc = raw('none')
    for rank in doc['nccl']['ranks']:
        rank.update({'rc': -9, 'timed_out': True, 'stopped': 'deadline', 'ended': 'killed', 'result': None,
                     'last_stage': 'init_start'})
        rank['log'] = [line for line in rank['log'] if 'Init COMPLETE' not in line and 'Channel' not in line]
    a, _b, _decision = judge(doc)
    assert a['problems'] == [
        'rank 0 (GPU 0) did not finish within the 60.0s NCCL limit: stuck in NCCL communicator init; it was killed',
        'rank 1 (GPU 1) did not finish within the 60.0s NCCL limit: stuck in NCCL communicator init; it was killed']
    assert a['transports'] == []


def test_peer_failure_and_slow_ranks():
    # SYNTHESISED: rank 0 crashed, rank 1 was stopped because of it; and a clean but too slow run
    doc = raw('none')
    doc['nccl']['ranks'][0].update({'rc': -6, 'result': None, 'last_stage': 'allreduce_start'})
    doc['nccl']['ranks'][1].update({'rc': -15, 'stopped': 'peer_failed', 'ended': 'terminated', 'result': None,
                                    'last_stage': 'allreduce_start'})
    a, _b, _d = judge(doc)
    assert a['problems'] == ['rank 0 (GPU 0) exited with rc=-6 in the all-reduce',
                             'rank 1 (GPU 1) was stopped in the all-reduce after a peer rank failed; it was terminated']
    slow = raw('none')
    slow['options']['nccl_timeout'] = 0.5
    a, _b, _d = judge(slow)
    assert a['problems'][0].startswith('rank 0 (GPU 0): NCCL init + all-reduce took 0.6s')
    assert a['problems'][0].endswith('over the 0.5s limit')


def test_copy_timeout_names_the_pair_in_flight():
    # SYNTHESISED: the copy child hung on 0->1 512 MiB kernel and was killed
    doc = raw('none')
    doc['copy']['tests'] = doc['copy']['tests'][:5]
    doc['copy'].update({'timed_out': True, 'ended': 'killed', 'rc': -9,
                        'in_flight': {'src': 0, 'dst': 1, 'size_mib': 512, 'method': 'kernel'}})
    a, _b, _d = judge(doc)
    assert a['copy_ok'] is False
    assert a['problems'] == ['the copy test did not finish within 300.0s while copying GPU 0->1 512 MiB kernel; '
                             'the child was killed']


def test_notes_on_p2p_ok():
    # SYNTHESISED: the real normal run, but NCCL reports P2P disabled by its environment (nccl.conf) and logs SHM,
    # and CUDA peer access is off for 1->0
    doc = raw('none')
    for rank in doc['nccl']['ranks']:
        rank['log'] = [line.replace('via P2P/CUMEM', 'via SHM/direct/direct') for line in rank['log']]
        rank['log'].append('vm:622:622 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1')
    for test in doc['copy']['tests']:
        if test['src'] == 1:
            test['peer_access'] = False
    _a, _b, decision = judge(doc)
    assert decision['verdict'] == 'p2p_ok'
    assert decision['notes'] == [
        'NCCL used no P2P transport although P2P was allowed',
        'NCCL_P2P_DISABLE=1 reached NCCL anyway (nccl.conf?), so NCCL P2P was not exercised',
        'CUDA peer access is not available for 1->0: those copies went through host memory']


def test_no_init_complete_is_suspicious():
    # SYNTHESISED: sums right but no 'Init COMPLETE' line in any rank log
    doc = raw('none')
    for rank in doc['nccl']['ranks']:
        rank['log'] = [line for line in rank['log'] if 'Init COMPLETE' not in line]
    a, _b, _d = judge(doc)
    assert a['problems'] == ['no rank logged NCCL "Init COMPLETE" although the all-reduce returned']


# ---- helpers ----------------------------------------------------------------------------------------------------

def test_worker_args_and_outer_timeout():
    opts = {'gpus': [0, 1], 'sizes_mib': [1, 512], 'allreduce_mib': 64, 'copy_timeout': 100, 'nccl_timeout': 30,
            'startup_timeout': 60, 'fault_injection': 'hang_nccl'}
    assert v.worker_args(opts, False) == ['--sizes-mib', '1,512', '--allreduce-mib', '64', '--copy-timeout', '100',
                                          '--nccl-timeout', '30', '--startup-timeout', '60', '--fault', 'hang_nccl',
                                          '--gpus', '0,1']
    assert v.worker_args(opts, True, True)[-2:] == ['--p2p-disable', '--skip-copy']
    assert '--gpus' not in v.worker_args({}, False)
    # two startups (probe + ranks), the NCCL limit, the copy limit, 30 s of stop graces
    assert v.outer_timeout(opts) == 60 * 2 + 30 + 100 + 30
    assert v.outer_timeout(opts, skip_copy=True) == 60 * 2 + 30 + 30


def test_parse_worker_stdout_takes_the_json_line():
    assert v.parse_worker_stdout('noise\n{"phase": "p2p"}\n') == {'phase': 'p2p'}
    assert v.parse_worker_stdout('{"cut": ') is None
    assert v.parse_worker_stdout('') is None


def test_pairs_markdown_from_real_run():
    table = v.pairs_markdown(h200('corrupt_copy')['pairs']).splitlines()
    assert table[0] == '| pair | method | peer access | 1 MiB | 64 MiB | 512 MiB |'
    assert table[2] == '| 0->1 | kernel | yes | CORRUPT (5/5) | CORRUPT (5/5) | CORRUPT (3/3) |'
    assert table[5].startswith('| 1->0 | memcpy | yes | ')


@pytest.mark.parametrize('mode', MODES)
def test_recorded_fixture_is_consistent(mode):
    recorded = h200(mode)
    assert recorded['mode'] == mode
    assert recorded['raw']['p2p']['fault_injection'] == mode
    assert recorded['raw']['p2p']['simulated'] is False
    assert recorded['versions']['driver'] == '580.159.04'
