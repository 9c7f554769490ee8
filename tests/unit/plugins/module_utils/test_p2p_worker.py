# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""p2p_worker without a GPU: its stdlib parts, its precise failure without torch, and (when a Python with CPU torch
is named in P2PCHECK_TEST_PYTHON) the whole orchestration in its CPU simulation mode, faults and hangs included."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.gpu import p2p_verdict
from ansible_collections.llmops.inference.plugins.module_utils.gpu.scripts import p2p_worker

WORKER = p2p_worker.__file__
TORCH_PYTHON = os.environ.get('P2PCHECK_TEST_PYTHON')


def test_parse_int_list():
    assert p2p_worker.parse_int_list('0, 1,2') == [0, 1, 2]
    assert p2p_worker.parse_int_list('') == []


def test_read_driver_version(tmp_path):
    path = tmp_path / 'version'
    path.write_text('580.159.04\n')
    assert p2p_worker.read_driver_version(str(path)) == '580.159.04'
    assert p2p_worker.read_driver_version(str(tmp_path / 'missing')) is None


def test_parser_defaults():
    args = p2p_worker.build_parser().parse_args([])
    assert (args.role, args.sizes_mib, args.allreduce_mib, args.nccl_timeout, args.fault) == \
        ('phase', '1,64,512', 256, 60.0, 'none')


def test_child_env(monkeypatch):
    monkeypatch.setenv('NCCL_P2P_DISABLE', '1')
    monkeypatch.setenv('NCCL_DEBUG', 'WARN')
    monkeypatch.setenv('NCCL_NVLS_ENABLE', '1')  # a caller's explicit choice wins over the safe default
    monkeypatch.delenv('NVSHMEM_DISABLE_NVLS', raising=False)
    args = p2p_worker.build_parser().parse_args([])
    env = p2p_worker._child_env(args)  # pylint: disable=protected-access
    assert 'NCCL_P2P_DISABLE' not in env  # phase A really allows P2P
    assert env['NCCL_DEBUG'] == 'INFO'
    assert env['NCCL_NVLS_ENABLE'] == '1'
    assert env['NVSHMEM_DISABLE_NVLS'] == '1'
    args = p2p_worker.build_parser().parse_args(['--p2p-disable'])
    assert p2p_worker._child_env(args)['NCCL_P2P_DISABLE'] == '1'  # pylint: disable=protected-access


def test_module_utils_import_is_stdlib_only():
    # ansible-test sanity imports module_utils without torch; torch must only be imported by the children
    with open(WORKER) as handle:
        source = handle.read()
    top_level = [line for line in source.splitlines() if line.startswith(('import ', 'from '))]
    assert not [line for line in top_level if 'torch' in line]


def run_worker(python, *args, **env):
    full_env = dict(os.environ)
    full_env.update(env)
    proc = subprocess.run([python, WORKER] + list(args), capture_output=True, text=True, env=full_env, timeout=300,
                          check=False)
    return proc.returncode, p2p_verdict.parse_worker_stdout(proc.stdout), proc.stderr


@pytest.mark.skipif(importlib.util.find_spec('torch') is not None, reason='this interpreter has torch')
def test_without_torch_the_failure_is_precise():
    rc, doc, _err = run_worker(sys.executable, '--skip-copy')
    assert rc == 2
    assert doc['fatal'] == "torch is not importable by %s: ModuleNotFoundError: No module named 'torch'" % sys.executable
    assert doc['probe'] is None and 'nccl' not in doc


def needs_torch(test):
    """A run of the real worker under a Python with torch (make unit: the lab SGLang venv's); requires_lab: under
    LLMOPS_REQUIRE_ALL=1 or CI=true the skip is a failure (tests/unit/require_lab.py)."""
    skip = pytest.mark.skipif(not TORCH_PYTHON, reason='set P2PCHECK_TEST_PYTHON to a Python with (CPU) torch')
    return pytest.mark.requires_lab(skip(test))


SIM = {'P2PCHECK_SIMULATE': 'cpu'}
SMALL = ('--sizes-mib', '1', '--allreduce-mib', '1')


@needs_torch
def test_sim_clean_phase():
    rc, doc, _err = run_worker(TORCH_PYTHON, *SMALL, **SIM)
    assert rc == 0 and doc['simulated']
    summary = p2p_verdict.summarize_phase(doc, rc, 'p2p')
    assert summary['ok'], summary['problems']
    assert len(summary['pairs']) == 4


@needs_torch
def test_sim_corrupt_copy_caught():
    rc, doc, _err = run_worker(TORCH_PYTHON, '--fault', 'corrupt_copy', *SMALL, **SIM)
    summary = p2p_verdict.summarize_phase(doc, rc, 'p2p')
    assert summary['copy_ok'] is False and summary['nccl_ok'] is True
    got = [(p['src'], p['dst'], p['ok']) for p in summary['pairs']]
    assert got == [(0, 1, False), (0, 1, False), (1, 0, True), (1, 0, True)]


@needs_torch
def test_sim_hang_killed_within_deadline():
    rc, doc, _err = run_worker(TORCH_PYTHON, '--fault', 'hang_nccl', '--nccl-timeout', '5', *SMALL, **SIM)
    ranks = doc['nccl']['ranks']
    assert ranks[1]['last_stage'] == 'fault_hang'
    assert ranks[1]['ended'] in ('terminated', 'killed')
    summary = p2p_verdict.summarize_phase(doc, rc, 'p2p')
    assert not summary['nccl_ok']
    assert doc['nccl']['elapsed_s'] < 5 + p2p_worker.PEER_FAIL_GRACE_S + 2 * p2p_worker.STOP_GRACE_S + 60


@needs_torch
def test_sim_outer_sigterm_reports_partial_result(tmp_path):
    # the coreutils timeout path: SIGTERM to the worker mid-run -> children killed, partial JSON, rc 124. The signal
    # comes once the last rank says it is hanging (its stage file in the worker's temp dir), not after a guessed delay.
    proc = subprocess.Popen([TORCH_PYTHON, WORKER, '--fault', 'hang_nccl', '--nccl-timeout', '120'] + list(SMALL),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, TMPDIR=str(tmp_path), **SIM))
    try:
        deadline = time.monotonic() + 240
        stages = []
        while proc.poll() is None and time.monotonic() < deadline:
            stages = [p for p in tmp_path.glob('p2pcheck-*/rank1.stages') if 'fault_hang' in p.read_text()]
            if stages:
                break
            time.sleep(0.2)
        assert stages, 'rank 1 never reached its hang (rc %s)' % proc.poll()
        proc.terminate()
        out, _err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 124
    doc = json.loads(out.strip().splitlines()[-1])
    assert doc['terminated_by_signal'] == 15
    assert doc['probe']['simulated'] is True
    assert doc['copy']['ran'] is True and 'nccl' not in doc  # stopped inside the all-reduce step, before its report
    # the children went with it: the rank that hung in its sleep loop is no longer running
    time.sleep(1)
    assert not [pid for pid, cmdline in _cmdlines() if str(tmp_path) in cmdline]


def _cmdlines():
    """(pid, command line) of every process still running (a zombie has an empty one)."""
    for pid in os.listdir('/proc'):
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as handle:
                yield pid, handle.read().replace(b'\0', b' ').decode('utf-8', 'replace')
        except (IOError, OSError, ValueError):
            continue
