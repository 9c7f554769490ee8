# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The multi-node mode of the P2P/NCCL preflight: worker arguments, the verdict, the failure classification; with a
Python with (CPU) torch in P2PCHECK_TEST_PYTHON also two real gloo nodes on loopback and a node left alone.
The lab proof across two network namespaces is tests/integration/targets/tp_group_rendezvous."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import socket
import subprocess

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.sglang import logs as sglang_logs
from ansible_collections.llmops.inference.plugins.module_utils.gpu import p2p_verdict
from ansible_collections.llmops.inference.plugins.module_utils.gpu.scripts import p2p_worker

TORCH_PYTHON = os.environ.get('P2PCHECK_TEST_PYTHON')
OPTIONS = dict(nnodes=2, node_rank=1, dist_init_addr='10.10.0.1:20000', backend='gloo', allreduce_mib=1,
               nccl_timeout=30, startup_timeout=60)


def test_worker_args_carry_the_rendezvous():
    args = p2p_verdict.worker_args(OPTIONS, False, True)
    assert args[-8:] == ['--nnodes', '2', '--node-rank', '1', '--dist-init-addr', '10.10.0.1:20000', '--backend', 'gloo']
    assert '--nnodes' not in p2p_verdict.worker_args(dict(OPTIONS, nnodes=1), False, True)
    parsed = p2p_worker.build_parser().parse_args(args)
    assert (parsed.nnodes, parsed.node_rank, parsed.dist_init_addr, parsed.backend) == (2, 1, '10.10.0.1:20000', 'gloo')
    # The children get the same rendezvous.
    child = p2p_worker._self_argv(parsed, 'rank')  # pylint: disable=protected-access
    assert child[child.index('--dist-init-addr') + 1] == '10.10.0.1:20000' and 'gloo' in child


def _doc(ranks, backend='gloo'):
    return dict(schema=1, phase='p2p', options=dict(nccl_timeout=30), probe={'gpus': [0]}, copy={'ran': False},
                nccl=dict(world=2, gpus=[0], nnodes=2, node_rank=1, backend=backend, ranks=ranks))


def _rank(rank, **kw):
    out = dict(rank=rank, gpu=0, rc=0, timed_out=False, stopped=None, ended='exited', last_stage='done', log=[],
               result=dict(sum_ok=True, init_s=0.6, allreduce_s=0.01, algbw_gbps=0.3, busbw_gbps=0.3))
    out.update(kw)
    return out


def test_verdict_of_a_clean_run():
    out = p2p_verdict.run_nodes(lambda a, b: (0, json.dumps(_doc([_rank(1)])), ''), OPTIONS)
    assert out['verdict'] == 'nodes_ok' and out['nodes']['ranks'] == [1] and out['nodes']['world'] == 2
    assert out['reason'].startswith('node 1: global rank 1 of 2 joined the rendezvous at tcp://10.10.0.1:20000')


def test_verdict_of_a_node_that_never_met_the_others():
    lines = ['torch.distributed.DistNetworkError: The client socket has timed out after 30000ms while trying to '
             'connect to (10.10.0.1, 20000).']
    rank = _rank(1, rc=1, last_stage='init_start', result=None, log=lines)
    out = p2p_verdict.run_nodes(lambda a, b: (1, json.dumps(_doc([rank])), ''), OPTIONS)
    assert out['verdict'] == 'nodes_broken'
    assert 'failed in the rendezvous at --dist-init-addr' in out['reason'] and 'rank 1 (CPU, gloo) exited' in out['reason']
    diagnosis = sglang_logs.classify(p2p_verdict.rank_log_lines(out['raw']['nodes']))
    assert diagnosis['signature'] == 'dist_init_unreachable' and 'llmops_dist_init_port' in diagnosis['fix']


def test_an_nccl_run_must_log_init_complete():
    out = p2p_verdict.run_nodes(lambda a, b: (0, json.dumps(_doc([_rank(1)], backend='nccl')), ''),
                                dict(OPTIONS, backend='nccl'))
    assert out['verdict'] == 'nodes_broken' and 'Init COMPLETE' in out['reason']


def test_a_worker_that_printed_nothing_is_broken_not_fatal():
    out = p2p_verdict.run_nodes(lambda a, b: (124, '', 'Killed'), OPTIONS)
    assert out['verdict'] == 'nodes_broken' and 'killed by the outer timeout' in out['reason']


def needs_torch(test):
    """Real gloo ranks under a Python with torch (make unit: the lab SGLang venv's); requires_lab: under
    LLMOPS_REQUIRE_ALL=1 or CI=true the skip is a failure (tests/unit/require_lab.py)."""
    skip = pytest.mark.skipif(not TORCH_PYTHON, reason='set P2PCHECK_TEST_PYTHON to a Python with (CPU) torch')
    return pytest.mark.requires_lab(skip(test))


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _start(rank, port, timeout=60):
    argv = [TORCH_PYTHON, p2p_worker.__file__] + p2p_verdict.worker_args(
        dict(OPTIONS, node_rank=rank, dist_init_addr='127.0.0.1:%d' % port, nccl_timeout=timeout), False, True)
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@needs_torch
def test_two_gloo_nodes_on_loopback():
    port = _free_port()
    procs = [_start(rank, port) for rank in (0, 1)]
    outs = [p.communicate(timeout=300) for p in procs]
    for rank, (stdout, stderr) in enumerate(outs):
        out = p2p_verdict.run_nodes(lambda a, b, s=stdout, e=stderr: (0, s, e), dict(OPTIONS, node_rank=rank))
        assert out['verdict'] == 'nodes_ok', out['reason']


@needs_torch
def test_the_head_alone_times_out_at_the_rendezvous():
    proc = _start(0, _free_port(), timeout=6)
    stdout, stderr = proc.communicate(timeout=300)
    out = p2p_verdict.run_nodes(lambda a, b: (proc.returncode, stdout, stderr), dict(OPTIONS, node_rank=0))
    assert out['verdict'] == 'nodes_broken'
    assert sglang_logs.classify(p2p_verdict.rank_log_lines(out['raw']['nodes']))['signature'] == 'dist_init_timeout'
