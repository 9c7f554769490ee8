#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_p2p_check
short_description: Prove GPU peer-to-peer copies and NCCL all-reduce correct before a multi-GPU server starts
version_added: 0.1.0
description:
  - Answers "is peer-to-peer (P2P) between the serving GPUs correct, and does NCCL initialise and all-reduce
    correctly within O(nccl_timeout) seconds?" with real GPU work, because C(nvidia-smi topo -p2p r) saying C(OK)
    proves nothing about data integrity (for example P2P DMA silently corrupted under SEV-SNP with the IOMMU on).
  - "Phase A, P2P allowed: for every ordered pair of the selected GPUs, random data of each size in O(sizes_mib) is
    copied device-to-device twice per repetition style: a contiguous copy (C(cudaMemcpy) on the copy engines, a peer
    copy when CUDA peer access is on) and a strided copy (a kernel on the source GPU storing into peer memory, the
    path NCCL's P2P transport uses). Every copy lands in a poisoned buffer and is compared bit-exactly by checksums
    computed on each side; bandwidth is measured. Then one process per GPU runs a C(torch.distributed) NCCL
    all-reduce of O(allreduce_mib) MiB with C(NCCL_DEBUG=INFO), and the sum is checked exactly."
  - "Phase B, only when phase A corrupted, failed or hung: the NCCL all-reduce again with C(NCCL_P2P_DISABLE=1)."
  - "Verdict: V(p2p_ok) (phase A clean), V(use_nccl_p2p_disable) (phase A bad, phase B clean), V(nccl_broken)
    (both bad). The NCCL transport seen (for example C(P2P/CUMEM), C(P2P/IPC), C(SHM/direct/direct)), init time,
    all-reduce bandwidth and the log lines that show why are returned."
  - The GPU code runs in a helper script (shipped as module_utils C(p2p_worker.py), written to the module's temp
    directory) under O(python_interpreter), the Python that has torch, normally the SGLang virtualenv. Every GPU
    step runs in a child process with its own deadline and is stopped with SIGTERM, then SIGKILL; the whole
    worker additionally runs under coreutils C(timeout --kill-after). A killed process's CUDA context is freed by
    the driver, so the GPUs are left as found. Nothing changes GPU clocks, persistence mode, compute mode or
    resets a GPU.
  - "The worker sets C(NCCL_NVLS_ENABLE=0), C(TORCH_SYMM_MEM_DISABLE_MULTICAST=1) and C(NVSHMEM_DISABLE_NVLS=1)
    unless O(environment) or the host environment sets them: NVLink multicast (NVLS) only exists on NVSwitch
    systems and is not what this check asks about."
  - "Multi-node mode (O(nnodes) above 1, for a TP group across hosts): run the task on every node of the group at
    the same time (C(async) with C(poll: 0), then C(async_status): the nodes must not wait for each other's fork).
    No copy test; this node's GPUs are the global ranks O(node_rank) x k .. O(node_rank) x k + k - 1 of one
    all-reduce over all O(nnodes) x k ranks, which rendezvous at C(tcp://)O(dist_init_addr) (torch's TCPStore on
    global rank 0, the head) exactly as SGLang's C(--dist-init-addr) does, with O(environment) as the server gets it
    (C(NCCL_SOCKET_IFNAME), C(GLOO_SOCKET_IFNAME), C(NCCL_IB_DISABLE)). Verdict V(nodes_ok) or V(nodes_broken); a
    broken run is also classified with the collection's failure catalogue (RV(diagnosis): rendezvous timeout, head
    unreachable, port in use, interface not found)."
  - "O(backend=gloo) runs the multi-node all-reduce on CPU tensors with gloo (one rank per node, or one per O(gpus)
    entry): the CPU groups SGLang creates over C(GLOO_SOCKET_IFNAME), and a rendezvous proof where there are no
    GPUs. It is a real run, not the O(simulation) test hook."
  - Run it before the server starts (or while it is stopped). It needs about 3 x the largest O(sizes_mib) plus
    4 x O(allreduce_mib) of free memory per GPU, and a busy GPU skews the bandwidth.
  - Setup problems (no torch, no CUDA, fewer than 2 GPUs, unknown GPU index, not enough free GPU memory) fail the
    task with a precise message; they are not verdicts.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: partial
    details:
      - The check is read-only but runs GPU work for tens of seconds, so check mode validates the options and the
        interpreter and returns the worker command lines in RV(would_run) without touching a GPU.
      - To get a real verdict during a C(--check) run, set C(check_mode=false) on the task.
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
    details: Linux with NVIDIA GPUs, Python with a CUDA build of torch, and coreutils C(timeout).
options:
  gpus:
    description:
      - CUDA device indices to check, as the worker's Python sees them (after C(CUDA_VISIBLE_DEVICES), which may be
        set in O(environment)). Use the indices the server will use.
      - Empty means every visible GPU. At least 2 are needed, except in multi-node mode (1 per node is enough).
    type: list
    elements: int
    default: []
  python_interpreter:
    description:
      - Python with a CUDA build of torch (C(torch.distributed) with NCCL) that runs the GPU worker, for example
        C(/opt/sglang/venv/bin/python).
      - Defaults to the Python that runs this module.
    type: path
  sizes_mib:
    description:
      - Sizes of the per-pair device-to-device copies, in MiB. Keep one of a few hundred MiB, because small copies
        can pass where large DMA transfers corrupt.
    type: list
    elements: int
    default: [1, 64, 512]
  allreduce_mib:
    description: Size of the float32 tensor each rank all-reduces, in MiB.
    type: int
    default: 256
  nccl_timeout:
    description:
      - Seconds that NCCL communicator init plus the all-reduce may take on every rank. A rank still running after
        this (plus a 10 s grace for the stop) is killed and the phase fails; a rank that finishes but took longer
        also fails the phase.
    type: int
    default: 60
  copy_timeout:
    description: Seconds for all per-pair copy tests together, after the GPUs are initialised.
    type: int
    default: 300
  startup_timeout:
    description: Seconds a child process may take to import torch and create its CUDA context.
    type: int
    default: 120
  try_p2p_disable:
    description:
      - Run phase B (NCCL with C(NCCL_P2P_DISABLE=1)) when phase A is not clean. Without it a bad phase A gives
        V(nccl_broken).
    type: bool
    default: true
  fail_on_broken:
    description: Fail the task when the verdict is V(nccl_broken) or V(nodes_broken). The other verdicts never fail.
    type: bool
    default: true
  environment:
    description:
      - Extra environment for the worker, for example C(CUDA_VISIBLE_DEVICES) or C(NCCL_SOCKET_IFNAME), as the
        server will get it. C(NCCL_DEBUG) is always set to C(INFO) and C(NCCL_P2P_DISABLE) is controlled per phase.
    type: dict
    default: {}
  nnodes:
    description:
      - Nodes of the multi-node all-reduce (the TP group's C(--nnodes)); above 1 selects multi-node mode.
    type: int
    default: 1
  node_rank:
    description: This node's rank in the group (C(--node-rank)); required in multi-node mode.
    type: int
  dist_init_addr:
    description:
      - C(HOST:PORT) of the rendezvous on the head (C(--dist-init-addr), C([v6]:PORT) for IPv6); required in
        multi-node mode. The port must be free on the head while the check runs (the server is stopped).
    type: str
  backend:
    description:
      - V(nccl) all-reduces on the GPUs; V(gloo) on CPU tensors (multi-node mode only).
    type: str
    choices: [nccl, gloo]
    default: nccl
  return_nccl_log:
    description: Also return every captured NCCL_DEBUG=INFO line per phase in RV(nccl_log) (hundreds of lines).
    type: bool
    default: false
  simulation:
    description:
      - TEST ONLY. Runs every step of the worker on CPU tensors with the gloo backend (two fake GPUs), so the
        orchestration, the deadlines and the fault injection run without a GPU. The verdict is not a real one.
      - Outside tests the worker's switch for this (the environment variable C(P2PCHECK_SIMULATE)) is refused,
        whether it comes from O(environment) or from the environment of the module itself, so a stray variable can
        never fake a verdict.
    type: bool
    default: false
  fault_injection:
    description:
      - TEST ONLY. Injects a fault into phase A to prove that the check catches it; never use it for a real verdict.
      - V(corrupt_copy) flips one byte in every copy from the first to the second selected GPU.
      - V(corrupt_allreduce) changes one element of rank 0's all-reduce result.
      - V(hang_nccl) makes the last rank sleep after NCCL init, so the others hang in the all-reduce until the
        deadline kills them.
      - Phase B never gets a fault, so each fault must end as V(use_nccl_p2p_disable).
    type: str
    choices: [none, corrupt_copy, corrupt_allreduce, hang_nccl]
    default: none
notes:
  - SGLang's custom all-reduce uses CUDA IPC peer access and ignores C(NCCL_P2P_DISABLE); with the verdict
    V(use_nccl_p2p_disable) also pass RV(recommended_sglang_args) (C(--disable-custom-all-reduce)).
  - With P2P disabled NCCL uses shared memory, so C(/dev/shm) must be large enough in a container.
seealso:
  - name: NCCL environment variables
    description: NCCL_P2P_DISABLE, NCCL_P2P_LEVEL, NCCL_DEBUG.
    link: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
"""

EXAMPLES = r"""
- name: Check P2P and NCCL on the serving GPUs before SGLang starts
  llmops.inference.gpu_p2p_check:
    gpus: [0, 1, 2, 3]
    python_interpreter: /opt/sglang/venv/bin/python
  register: p2p

- name: Start SGLang with NCCL P2P off when the check says so
  ansible.builtin.debug:
    msg: "NCCL_P2P_DISABLE={{ '1' if p2p.nccl_p2p_disable else 'unset' }} extra args {{ p2p.recommended_sglang_args }}"

- name: Prove the check catches corruption (test only)
  llmops.inference.gpu_p2p_check:
    python_interpreter: /opt/sglang/venv/bin/python
    fault_injection: corrupt_copy
  register: p2p_fault
  failed_when: p2p_fault.verdict != 'use_nccl_p2p_disable'
"""

RETURN = r"""
verdict:
  description: V(p2p_ok), V(use_nccl_p2p_disable) or V(nccl_broken); in multi-node mode V(nodes_ok) or
    V(nodes_broken); null in check mode.
  returned: always
  type: str
  sample: p2p_ok
reason:
  description: One paragraph saying why, with the failing pairs, ranks, transports and timings.
  returned: when the GPU run happened
  type: str
  sample: "with P2P allowed, copies were bit-exact on all 2 ordered GPU pairs (1/64/512 MiB) and NCCL initialised and
    all-reduced correctly over P2P/CUMEM (init 0.73s, first all-reduce 0.17s, busbw 285.9 GB/s)"
nccl_p2p_disable:
  description: True when the server must run with C(NCCL_P2P_DISABLE=1) (verdict V(use_nccl_p2p_disable)).
  returned: always
  type: bool
  sample: false
recommended_env:
  description: Environment to add to the server's, C(NCCL_P2P_DISABLE=1) or empty.
  returned: when the GPU run happened
  type: dict
  sample: {}
recommended_sglang_args:
  description: Extra SGLang arguments, C([--disable-custom-all-reduce]) with V(use_nccl_p2p_disable), else empty.
  returned: when the GPU run happened
  type: list
  elements: str
  sample: []
notes:
  description: Caveats of a V(p2p_ok) verdict (NCCL chose no P2P transport, no CUDA peer access on a pair).
  returned: when the GPU run happened
  type: list
  elements: str
  sample: []
evidence:
  description: Problem summaries and NCCL_DEBUG=INFO lines (transport, C(NCCL_P2P_DISABLE set by environment),
    init timings, C(NCCL WARN), errors), each prefixed with its phase.
  returned: when the GPU run happened
  type: list
  elements: str
  sample: ["[p2p] vm:622:622 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM"]
pairs:
  description: Phase A copy results, one per ordered pair, size and method (V(memcpy) or V(kernel)).
  returned: when the GPU run happened
  type: list
  elements: dict
  sample: [{"src": 0, "dst": 1, "size_mib": 512, "method": "memcpy", "peer_access": true, "ok": true,
            "gbps": 385.05, "reps": 3, "bad_reps": 0}]
transports:
  description: NCCL transports seen per phase (V(p2p), V(no_p2p)).
  returned: when the GPU run happened
  type: dict
  sample: {"p2p": ["P2P/CUMEM"]}
init_s:
  description: Slowest rank's NCCL communicator init, seconds, per phase.
  returned: when the GPU run happened
  type: dict
  sample: {"p2p": 0.727}
allreduce:
  description: Per phase C(ok), first all-reduce C(seconds), C(algbw_gbps), C(busbw_gbps) and NCCL's own
    C(nccl_init_total_s).
  returned: when the GPU run happened
  type: dict
  sample: {"p2p": {"ok": true, "seconds": 0.169, "algbw_gbps": 285.95, "busbw_gbps": 285.95, "nccl_init_total_s": 0.42}}
gpus:
  description: The checked devices as torch sees them (index, name, memory, capability, PCI ids, UUID).
  returned: when the GPU run happened
  type: list
  elements: dict
peer_access:
  description: C(torch.cuda.can_device_access_peer) per ordered pair, keyed C(src->dst).
  returned: when the GPU run happened
  type: dict
  sample: {"0->1": true, "1->0": true}
versions:
  description: torch, its CUDA, NCCL, the loaded kernel driver and the CUDA driver API version NCCL reported.
  returned: when the GPU run happened
  type: dict
  sample: {"torch": "2.11.0+cu130", "torch_cuda": "13.0", "nccl": "2.28.9+cuda13.0", "driver": "580.159.04",
           "cuda_driver_api": 13000}
phases:
  description: Per-phase summary (ok, copy_ok, nccl_ok, problems, transports, timings, parsed NCCL facts).
  returned: when the GPU run happened
  type: dict
nodes:
  description: Multi-node mode - nnodes, node_rank, world (all ranks), ranks (this node's global ranks),
    dist_init_addr, backend.
  returned: in multi-node mode, when the run happened
  type: dict
  sample: {"nnodes": 2, "node_rank": 1, "world": 2, "ranks": [1], "dist_init_addr": "10.10.0.1:20000",
           "backend": "gloo"}
diagnosis:
  description: Multi-node mode, V(nodes_broken) - the failure catalogue's signature of the rank logs (signature,
    summary, likely_cause, fix, evidence_lines), or null when none matched.
  returned: in multi-node mode, when the run happened
  type: dict
nccl_log:
  description: Every captured line of the rank logs per phase.
  returned: when O(return_nccl_log=true)
  type: dict
commands:
  description: The command lines that ran.
  returned: always
  type: list
  elements: list
would_run:
  description: Check mode only; the phase A command line (phase B, C(--p2p-disable --skip-copy), only runs when
    phase A is not clean).
  returned: in check mode
  type: list
  elements: list
skipped_gpu_run:
  description: True in check mode.
  returned: always
  type: bool
python_interpreter:
  description: The Python that ran (or would run) the worker.
  returned: always
  type: str
  sample: /opt/sglang/venv/bin/python
"""

import inspect
import os
import sys

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.sglang import logs as sglang_logs
from ansible_collections.llmops.inference.plugins.module_utils.gpu.scripts import p2p_worker
from ansible_collections.llmops.inference.plugins.module_utils.gpu.p2p_verdict import (
    BACKENDS,
    FAULTS,
    outer_timeout,
    rank_log_lines,
    run_nodes,
    run_preflight,
    worker_args,
)

KILL_AFTER_S = 15
WORKER_NAME = 'p2p_worker.py'


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            gpus=dict(type='list', elements='int', default=[]),
            python_interpreter=dict(type='path'),
            sizes_mib=dict(type='list', elements='int', default=[1, 64, 512]),
            allreduce_mib=dict(type='int', default=256),
            nccl_timeout=dict(type='int', default=60),
            copy_timeout=dict(type='int', default=300),
            startup_timeout=dict(type='int', default=120),
            try_p2p_disable=dict(type='bool', default=True),
            fail_on_broken=dict(type='bool', default=True),
            environment=dict(type='dict', default={}),
            return_nccl_log=dict(type='bool', default=False),
            fault_injection=dict(type='str', choices=list(FAULTS), default='none'),
            simulation=dict(type='bool', default=False),
            nnodes=dict(type='int', default=1),
            node_rank=dict(type='int'),
            dist_init_addr=dict(type='str'),
            backend=dict(type='str', choices=list(BACKENDS), default='nccl'),
        ),
        supports_check_mode=True,
    )


def worker_source():
    """Text of p2p_worker.py, also when AnsiballZ imported it from its zip (the loader still has the source)."""
    loader = getattr(p2p_worker, '__loader__', None)
    source = None
    if loader is not None and hasattr(loader, 'get_source'):
        source = loader.get_source(p2p_worker.__name__)
    return source or inspect.getsource(p2p_worker)


def option_problems(params):
    problems = []
    gpus = params['gpus']
    nodes = (params.get('nnodes') or 1) > 1
    if nodes:
        if params.get('node_rank') is None or not 0 <= params['node_rank'] < params['nnodes']:
            problems.append('multi-node mode (nnodes %d) needs node_rank 0..%d, got %s'
                            % (params['nnodes'], params['nnodes'] - 1, params.get('node_rank')))
        addr = params.get('dist_init_addr') or ''
        host, dummy, port = addr.rpartition(':')
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            problems.append('multi-node mode needs dist_init_addr HOST:PORT (the head\'s rendezvous), got %r' % addr)
        if params.get('fault_injection', 'none') != 'none':
            problems.append('fault_injection is a test hook of the local check, not of multi-node mode')
    elif params.get('backend') == 'gloo':
        problems.append('backend gloo is for the multi-node mode (nnodes above 1)')
    elif (params.get('nnodes') or 1) < 1:
        problems.append('nnodes must be at least 1, got %s' % params['nnodes'])
    if len(gpus) == 1 and not nodes:
        problems.append('gpus selects one GPU (%s); a P2P/NCCL check needs at least 2' % gpus[0])
    if any(g < 0 for g in gpus):
        problems.append('gpus must be non-negative CUDA indices, got %s' % gpus)
    if len(set(gpus)) != len(gpus):
        problems.append('gpus lists a GPU twice: %s' % gpus)
    if not params['sizes_mib'] or any(s <= 0 for s in params['sizes_mib']):
        problems.append('sizes_mib needs at least one positive size, got %s' % params['sizes_mib'])
    for name in ('allreduce_mib', 'nccl_timeout', 'copy_timeout', 'startup_timeout'):
        if params[name] <= 0:
            problems.append('%s must be positive, got %s' % (name, params[name]))
    return problems


def slim_phase(phase):
    """Phase summary without the bulky parse intermediates."""
    out = dict((k, v) for k, v in phase.items() if k != 'log')
    log = phase.get('log')
    if log:
        out['nccl'] = dict((k, log[k]) for k in ('nccl_version', 'cuda_driver_version', 'env_set', 'edges',
                                                 'init_complete', 'init_timings_s', 'warnings', 'p2p_problems'))
        out['nccl']['init_timings_s'] = dict((str(k), v) for k, v in log['init_timings_s'].items())
    return out


def nccl_lines(raw):
    lines = {}
    for name, doc in raw.items():
        ranks = ((doc or {}).get('nccl') or {}).get('ranks') or []
        lines[name] = [line for rank in ranks for line in rank.get('log') or []]
    return lines


def main():
    module = build_module()
    params = module.params
    python = params['python_interpreter'] or sys.executable
    result = {'changed': False, 'verdict': None, 'nccl_p2p_disable': False, 'skipped_gpu_run': False, 'commands': [],
              'python_interpreter': python}

    problems = option_problems(params)
    if problems:
        module.fail_json(msg='gpu_p2p_check: ' + '; '.join(problems), **result)
    if not os.path.isfile(python) or not os.access(python, os.X_OK):
        module.fail_json(msg='gpu_p2p_check: python_interpreter %s is not an executable file' % python, **result)
    timeout_bin = module.get_bin_path('timeout', required=True)
    env = dict((str(k), str(v)) for k, v in params['environment'].items())
    simulate = p2p_worker.SIMULATE_ENV
    stray = [where for where, source in (('the task environment', env), ('the module environment', os.environ))
             if source.get(simulate)]
    if stray and not params['simulation']:
        module.fail_json(msg='gpu_p2p_check: %s is set in %s: it makes the worker simulate GPUs on the CPU, a test '
                             'hook that would fake the verdict, and is refused outside tests. Unset it; a test sets '
                             'simulation: true instead.' % (simulate, ' and '.join(stray)), **result)
    if params['simulation']:
        env[simulate] = 'cpu'
        result['simulated'] = True
        module.warn('simulation: true - the worker ran on CPU tensors; this verdict is not a real one')
    options = dict(params)
    worker_path = os.path.join(module.tmpdir, WORKER_NAME)

    def argv_for(p2p_disable, skip_copy):
        return ([timeout_bin, '--kill-after=%d' % KILL_AFTER_S, str(outer_timeout(options, skip_copy)), python,
                 worker_path] + worker_args(options, p2p_disable, skip_copy))

    if module.check_mode:
        result.update(skipped_gpu_run=True, would_run=[argv_for(False, False)],
                      msg='check mode: the GPU run was skipped (set check_mode: false on the task to run it)')
        module.exit_json(**result)

    with open(worker_path, 'w') as handle:
        handle.write(worker_source())

    def run_phase(p2p_disable, skip_copy):
        argv = argv_for(p2p_disable, skip_copy)
        result['commands'].append(argv)
        return module.run_command(argv, environ_update=env, expand_user_and_vars=False)

    nodes = params['nnodes'] > 1
    outcome = run_nodes(run_phase, options) if nodes else run_preflight(run_phase, options)
    raw = outcome.pop('raw')
    if nodes and outcome.get('verdict') == 'nodes_broken':
        diagnosis = sglang_logs.classify(rank_log_lines(raw.get('nodes')))
        if diagnosis:
            diagnosis.pop('line_index', None)
            outcome['reason'] += ' [%s: %s. Fix: %s]' % (diagnosis['signature'], diagnosis['summary'], diagnosis['fix'])
        outcome['diagnosis'] = diagnosis
    elif nodes:
        outcome['diagnosis'] = None
    if params['return_nccl_log']:
        outcome['nccl_log'] = nccl_lines(raw)
    outcome['phases'] = dict((name, slim_phase(phase)) for name, phase in outcome['phases'].items())
    fatal = outcome.pop('fatal', None)
    result.update(outcome)
    if fatal:
        module.fail_json(msg='gpu_p2p_check could not run the GPU check: %s' % fatal, **result)
    if result['verdict'] == 'nccl_broken' and params['fail_on_broken']:
        module.fail_json(msg='gpu_p2p_check: NCCL is broken on these GPUs: %s' % result['reason'], **result)
    if result['verdict'] == 'nodes_broken' and params['fail_on_broken']:
        module.fail_json(msg='gpu_p2p_check: the all-reduce across the nodes failed: %s' % result['reason'], **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
