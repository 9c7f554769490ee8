# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU peer-to-peer copy and NCCL all-reduce worker of llmops.inference.gpu_p2p_check.

This file runs ON THE SERVING HOST under the Python that has torch (the SGLang venv). The module ships it as
module_utils so AnsiballZ carries it, writes its source into the module's temp dir and executes it with
O(python_interpreter). It is runnable by hand as well, with nothing but python3 + torch::

    python3 plugins/module_utils/gpu/scripts/p2p_worker.py --gpus 0,1 --sizes-mib 1,64,512

Top-level imports are stdlib only (ansible-test sanity imports every module_utils file); torch is imported inside
the child roles only. One invocation checks one phase (P2P allowed, or --p2p-disable) and prints one JSON document;
p2p_verdict.run_preflight decides whether a second phase is needed and what the verdict is.

Multi-node mode (--nnodes N --node-rank R --dist-init-addr HOST:PORT, run on every node of a TP group at the same
time): no copy test; the local GPUs are global ranks R*k .. R*k+k-1 of one all-reduce over all N*k ranks,
rendezvousing at tcp://HOST:PORT (torch's TCPStore, served by global rank 0 on the head) exactly as SGLang's
--dist-init-addr does, with the environment the server gets (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME, ...).
--backend gloo runs the same all-reduce on CPU tensors (one rank per node unless --gpus lists more): the CPU groups
SGLang creates over GLOO_SOCKET_IFNAME, and a rendezvous proof on hosts without GPUs. p2p_verdict.run_nodes decides.

Process layout, so that every GPU step can be killed on a hang and leaves no CUDA context behind:

    phase parent (no torch, no CUDA)
      +- copy child: probe + per-pair device-to-device copies, streamed as JSON lines to an events file
      +- rank children (one per GPU): torch.distributed NCCL init + all-reduce, NCCL_DEBUG=INFO to a log file

The parent polls children against deadlines and stops a late one with SIGTERM, then SIGKILL. Children stay in the
parent's process group, so an outer ``timeout`` (coreutils signals the whole group) reaches them as well. Nothing
here touches clocks, persistence mode, compute mode or resets; the driver frees a killed child's context.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SCHEMA_VERSION = 1
RESULT_MARK = 'P2PCHECK_RESULT '
FAULTS = ('none', 'corrupt_copy', 'corrupt_allreduce', 'hang_nccl')

# NVLink SHARP / multicast is only used on NVSwitch systems; a program that uses it wrongly can take shared GPUs out
# of service, and the question asked here (is plain P2P correct?) does not need it. The caller may override.
SAFE_ENV_DEFAULTS = {
    'NCCL_NVLS_ENABLE': '0',
    'TORCH_SYMM_MEM_DISABLE_MULTICAST': '1',
    'NVSHMEM_DISABLE_NVLS': '1',
    'OMP_NUM_THREADS': '1',
}
REPORTED_ENV = ('CUDA_VISIBLE_DEVICES', 'NCCL_P2P_DISABLE', 'NCCL_P2P_LEVEL', 'NCCL_SHM_DISABLE', 'NCCL_NVLS_ENABLE',
                'NCCL_SOCKET_IFNAME', 'NCCL_DEBUG_SUBSYS', 'NCCL_CUMEM_ENABLE', 'P2PCHECK_SIMULATE')
# Test hook: P2PCHECK_SIMULATE=cpu runs every step on CPU tensors with the gloo backend (2 fake GPUs), so the
# orchestration, timeouts and fault injection can be exercised without a GPU. Never use it for a real verdict.
SIMULATE_ENV = 'P2PCHECK_SIMULATE'
CHECKSUM_CHUNK = 8 * 1024 * 1024  # int64 elements per checksum chunk (64 MiB) bounds the temporary memory
MASK64 = (1 << 64) - 1
MAX_LOG_LINES = 3000
STOP_GRACE_S = 5.0
PEER_FAIL_GRACE_S = 10.0
POLL_S = 0.2

_CHILDREN = []
_PARTIAL = {}


def _simulated():
    return os.environ.get(SIMULATE_ENV, '') == 'cpu'


def _now():
    return time.monotonic()


def _write_out(text):
    sys.stdout.write(text)
    sys.stdout.flush()


def parse_int_list(text):
    """'0,1, 2' -> [0, 1, 2]; '' -> []."""
    return [int(part) for part in str(text).replace(' ', '').split(',') if part != '']


def read_driver_version(path='/sys/module/nvidia/version'):
    """Loaded kernel module version, or None (no driver, or inside a sandbox that hides /sys/module)."""
    try:
        with open(path) as handle:
            return handle.read().strip() or None
    except (IOError, OSError):
        return None


def build_parser():
    parser = argparse.ArgumentParser(description='GPU P2P copy + NCCL all-reduce check (one phase).')
    parser.add_argument('--role', choices=('phase', 'copy', 'rank'), default='phase', help=argparse.SUPPRESS)
    parser.add_argument('--gpus', default='', help='comma-separated CUDA device indices (default: all visible)')
    parser.add_argument('--sizes-mib', default='1,64,512', help='copy sizes in MiB (default 1,64,512)')
    parser.add_argument('--allreduce-mib', type=int, default=256, help='all-reduce tensor size in MiB')
    parser.add_argument('--copy-timeout', type=float, default=300.0, help='seconds for all copy tests')
    parser.add_argument('--nccl-timeout', type=float, default=60.0, help='seconds for NCCL init + all-reduce')
    parser.add_argument('--startup-timeout', type=float, default=120.0,
                        help='seconds for a child to import torch and create its CUDA context')
    parser.add_argument('--p2p-disable', action='store_true', help='run with NCCL_P2P_DISABLE=1 (phase B)')
    parser.add_argument('--skip-copy', action='store_true', help='probe only, no per-pair copy test')
    parser.add_argument('--fault', choices=FAULTS, default='none',
                        help='TEST ONLY: inject a fault into the P2P-allowed phase')
    parser.add_argument('--seed', type=int, default=20260601)
    parser.add_argument('--nnodes', type=int, default=1, help='nodes of the multi-node all-reduce (default 1: local)')
    parser.add_argument('--node-rank', type=int, default=0, help="this node's rank in the multi-node all-reduce")
    parser.add_argument('--dist-init-addr', default='', help='HOST:PORT of the rendezvous (multi-node mode)')
    parser.add_argument('--backend', choices=('nccl', 'gloo'), default='nccl',
                        help='gloo: the multi-node all-reduce on CPU tensors (no GPU)')
    # child-only arguments
    parser.add_argument('--events', help=argparse.SUPPRESS)
    parser.add_argument('--stage-file', help=argparse.SUPPRESS)
    parser.add_argument('--store', help=argparse.SUPPRESS)
    parser.add_argument('--rank', type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument('--world', type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument('--gpu', type=int, default=0, help=argparse.SUPPRESS)
    return parser


# --------------------------------------------------------------------------------------------------------------
# phase parent (stdlib only)
# --------------------------------------------------------------------------------------------------------------

def _child_env(args):
    env = dict(os.environ)
    for key, value in SAFE_ENV_DEFAULTS.items():
        env.setdefault(key, value)
    env['NCCL_DEBUG'] = 'INFO'  # the verdict reads the INFO lines (transport, init timings)
    env['PYTHONUNBUFFERED'] = '1'
    if args.p2p_disable:
        env['NCCL_P2P_DISABLE'] = '1'
    elif args.nnodes <= 1:
        env.pop('NCCL_P2P_DISABLE', None)  # phase A must really allow P2P
    # Multi-node mode keeps the server's own NCCL_P2P_DISABLE (the local check's verdict, as rendered).
    return env


def _spawn(argv, env, log_path):
    log = open(log_path, 'wb')
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                close_fds=True)
    finally:
        log.close()
    _CHILDREN.append(proc)
    return proc


def _stop(proc, grace=STOP_GRACE_S):
    """Stop a child: SIGTERM, then SIGKILL. Returns how it ended."""
    if proc.poll() is not None:
        return 'exited'
    how = 'terminated'
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        how = 'killed'
        proc.kill()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            how = 'unkillable'  # stuck in the kernel driver (D state): reported, never "fixed" by a reset
    return how


def _on_signal(signum, frame):  # pylint: disable=unused-argument
    """Outer timeout or Ctrl-C: stop the children, report what was done so far, exit 124."""
    for proc in _CHILDREN:
        if proc.poll() is None:
            proc.kill()
    partial = dict(_PARTIAL)
    partial['terminated_by_signal'] = signum
    _write_out(json.dumps(partial, sort_keys=True) + '\n')
    os._exit(124)  # pylint: disable=protected-access


def _read_lines(path):
    try:
        with open(path, 'rb') as handle:
            data = handle.read()
    except (IOError, OSError):
        return []
    return data.decode('utf-8', 'replace').splitlines()


def _read_events(path):
    events = []
    for line in _read_lines(path):
        try:
            events.append(json.loads(line))
        except ValueError:
            pass  # a line cut short by a kill
    return events


def _read_stages(path):
    stages = {}
    for line in _read_lines(path):
        parts = line.split()
        if len(parts) == 2:
            try:
                stages[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return stages


def _cap(lines, limit=MAX_LOG_LINES):
    if len(lines) <= limit:
        return lines
    head = limit * 3 // 4
    return lines[:head] + ['[... %d lines left out ...]' % (len(lines) - limit)] + lines[-(limit - head):]


def _self_argv(args, role):
    argv = [sys.executable, os.path.abspath(__file__), '--role', role, '--gpus', args.gpus,
            '--sizes-mib', args.sizes_mib, '--allreduce-mib', str(args.allreduce_mib),
            '--nccl-timeout', str(args.nccl_timeout), '--fault', args.fault, '--seed', str(args.seed)]
    if args.p2p_disable:
        argv.append('--p2p-disable')
    if args.skip_copy:
        argv.append('--skip-copy')
    if args.nnodes > 1:
        argv += ['--nnodes', str(args.nnodes), '--node-rank', str(args.node_rank), '--dist-init-addr',
                 args.dist_init_addr, '--backend', args.backend]
    return argv


def _on_cpu(args):
    """Ranks on CPU tensors with gloo: the test simulation, or the multi-node gloo mode."""
    return _simulated() or args.backend == 'gloo'


def run_copy_step(args, workdir):
    """Probe + per-pair copy test in one child (one torch import)."""
    events_path = os.path.join(workdir, 'copy.events')
    log_path = os.path.join(workdir, 'copy.log')
    argv = _self_argv(args, 'copy') + ['--events', events_path]
    started = _now()
    proc = _spawn(argv, _child_env(args), log_path)
    timed_out = False
    while proc.poll() is None:
        events = _read_events(events_path)
        probe_at = next((ev.get('t') for ev in events if ev.get('kind') == 'probe'), None)
        deadline = started + args.startup_timeout if probe_at is None else probe_at + args.copy_timeout
        if _now() > deadline:
            timed_out = True
            break
        time.sleep(POLL_S)
    ended = _stop(proc) if timed_out else 'exited'
    events = _read_events(events_path)
    log = _read_lines(log_path)
    step = {
        'ran': not args.skip_copy,
        'rc': proc.returncode,
        'timed_out': timed_out,
        'ended': ended,
        'elapsed_s': round(_now() - started, 3),
        'tests': [ev for ev in events if ev.get('kind') == 'copy'],
        'log_tail': log[-40:],
    }
    probe = next((ev for ev in events if ev.get('kind') == 'probe'), None)
    fatal = next((ev.get('error') for ev in events if ev.get('kind') == 'fatal'), None)
    errors = [ev.get('error') for ev in events if ev.get('kind') == 'error']
    if errors:
        step['error'] = errors[0]
    done = set((ev['src'], ev['dst'], ev['size_mib'], ev['method']) for ev in step['tests'])
    in_flight = [ev for ev in events if ev.get('kind') == 'start'
                 and (ev['src'], ev['dst'], ev['size_mib'], ev['method']) not in done]
    if in_flight:
        step['in_flight'] = in_flight[-1]
    if probe is None and fatal is None:
        if timed_out:
            fatal = ('the probe child (import torch, CUDA init) did not finish within %ss; log tail: %s'
                     % (args.startup_timeout, ' | '.join(log[-5:])))
        else:
            fatal = ('the probe child exited with rc=%s before reporting; log tail: %s'
                     % (proc.returncode, ' | '.join(log[-8:])))
    return probe, fatal, step


def run_nccl_step(args, gpus, workdir):
    """One rank per GPU: NCCL init + all-reduce + exact sum check, under per-rank deadlines. In multi-node mode the
    local GPUs are global ranks node_rank*k .. node_rank*k+k-1 of nnodes*k."""
    world = len(gpus) * max(1, args.nnodes)
    offset = len(gpus) * args.node_rank if args.nnodes > 1 else 0
    store = os.path.join(workdir, 'nccl.store')
    env = _child_env(args)
    started = _now()
    ranks = []
    for local, gpu in enumerate(gpus):
        rank = offset + local
        stage_path = os.path.join(workdir, 'rank%d.stages' % rank)
        log_path = os.path.join(workdir, 'rank%d.log' % rank)
        argv = _self_argv(args, 'rank') + ['--rank', str(rank), '--world', str(world), '--gpu', str(gpu),
                                           '--store', store, '--stage-file', stage_path]
        ranks.append({'rank': rank, 'gpu': gpu, 'proc': _spawn(argv, env, log_path), 'stage_path': stage_path,
                      'log_path': log_path, 'timed_out': False, 'ended': 'exited'})
    peer_fail_deadline = None
    while True:
        running = [r for r in ranks if r['proc'].poll() is None]
        if not running:
            break
        now = _now()
        if peer_fail_deadline is None and any(r['proc'].returncode not in (None, 0) for r in ranks):
            # a dead peer means the others can only hang in the collective
            peer_fail_deadline = now + PEER_FAIL_GRACE_S
        late = []
        for item in running:
            stages = _read_stages(item['stage_path'])
            if 'init_start' in stages:
                deadline = stages['init_start'] + args.nccl_timeout + PEER_FAIL_GRACE_S
            else:
                deadline = started + args.startup_timeout
            if now > deadline:
                late.append(item)
        if late or (peer_fail_deadline is not None and now > peer_fail_deadline):
            for item in running:
                item['timed_out'] = item in late
                item['stopped'] = 'deadline' if item in late else ('peer_failed' if not late else 'peer_timed_out')
                item['ended'] = _stop(item['proc'])
            break
        time.sleep(POLL_S)
    out = []
    for item in ranks:
        log = _read_lines(item['log_path'])
        stages = _read_stages(item['stage_path'])
        result = None
        for line in log:
            pos = line.find(RESULT_MARK)
            if pos >= 0:
                try:
                    result = json.loads(line[pos + len(RESULT_MARK):])
                except ValueError:
                    pass
        order = sorted(stages.items(), key=lambda kv: kv[1])
        out.append({
            'rank': item['rank'],
            'gpu': item['gpu'],
            'rc': item['proc'].returncode,
            'timed_out': item['timed_out'],
            'stopped': item.get('stopped'),
            'ended': item['ended'],
            'last_stage': order[-1][0] if order else None,
            'stages': dict((name, round(at - started, 3)) for name, at in order),
            'result': result,
            'log': _cap([line for line in log if RESULT_MARK not in line]),
        })
    return {
        'world': world,
        'gpus': gpus,
        'nnodes': args.nnodes,
        'node_rank': args.node_rank,
        'dist_init_addr': args.dist_init_addr or None,
        'backend': 'gloo' if _on_cpu(args) else 'nccl',
        'p2p_disable': bool(args.p2p_disable),
        'nccl_timeout_s': args.nccl_timeout,
        'elapsed_s': round(_now() - started, 3),
        'ranks': out,
    }


def run_phase(args):
    """Run one phase; returns (result dict, exit code). Exit 2 = setup problem (no torch/CUDA, bad GPU list)."""
    started = _now()
    result = _PARTIAL
    result.update({
        'schema': SCHEMA_VERSION,
        'phase': 'no_p2p' if args.p2p_disable else 'p2p',
        'p2p_disable': bool(args.p2p_disable),
        'fault_injection': args.fault,
        'simulated': _simulated(),
        'python': sys.executable,
        'driver_version': read_driver_version(),
        'env': dict((key, os.environ.get(key)) for key in REPORTED_ENV if os.environ.get(key) is not None),
        'options': {'gpus': args.gpus, 'sizes_mib': args.sizes_mib, 'allreduce_mib': args.allreduce_mib,
                    'copy_timeout': args.copy_timeout, 'nccl_timeout': args.nccl_timeout,
                    'startup_timeout': args.startup_timeout},
    })
    workdir = tempfile.mkdtemp(prefix='p2pcheck-')
    try:
        if args.nnodes > 1 and args.backend == 'gloo':
            # No GPU is touched: the ranks are CPU processes (one per --gpus entry, at least one).
            gpus = parse_int_list(args.gpus) or [0]
            result['probe'] = {'gpus': gpus, 'devices': [], 'peer_access': {}, 'backend': 'gloo'}
            result['copy'] = {'ran': False}
            result['nccl'] = run_nccl_step(args, gpus, workdir)
            return result, 0
        probe, fatal, copy_step = run_copy_step(args, workdir)
        result['probe'] = probe
        result['copy'] = copy_step
        if fatal:
            result['fatal'] = fatal
            return result, 2
        result['nccl'] = run_nccl_step(args, probe['gpus'], workdir)
        return result, 0
    finally:
        result['elapsed_s'] = round(_now() - started, 3)
        shutil.rmtree(workdir, ignore_errors=True)


# --------------------------------------------------------------------------------------------------------------
# children (import torch)
# --------------------------------------------------------------------------------------------------------------

class _Events:
    def __init__(self, path):
        self.handle = open(path, 'a')

    def emit(self, event):
        event['t'] = _now()
        self.handle.write(json.dumps(event, sort_keys=True) + '\n')
        self.handle.flush()


def _import_torch():
    import torch  # pylint: disable=import-error,import-outside-toplevel
    import torch.distributed  # pylint: disable=import-error,import-outside-toplevel,unused-import
    return torch


def _sync(torch, *devices):
    for dev in devices:
        if dev.type == 'cuda':
            torch.cuda.synchronize(dev)


def checksum(torch, tensor):
    """Position-dependent checksum of a contiguous tensor, computed on the tensor's own device.

    Two int64 sums (plain and weighted by an odd LCG of the position), both modulo 2**64: integer wrap-around is
    exact and order-independent, so it is bit-identical on every device. Any single flipped byte changes the plain
    sum; misplaced or duplicated blocks change the weighted one.
    """
    flat = tensor.reshape(-1).view(torch.int64)
    total = 0
    weighted = 0
    for start in range(0, flat.numel(), CHECKSUM_CHUNK):
        seg = flat[start:start + CHECKSUM_CHUNK]
        pos = torch.arange(start, start + seg.numel(), device=seg.device, dtype=torch.int64)
        weights = pos * 6364136223846793005 + 1442695040888963407
        total = (total + int(seg.sum().item())) & MASK64
        weighted = (weighted + int((seg * weights).sum().item())) & MASK64
        del pos, weights
    return '%016x%016x' % (total, weighted)


def _locate_mismatch(torch, x_src, got, dst):
    """Element-wise comparison against a host-staged copy (no P2P involved) of the source."""
    ref = x_src.to('cpu').to(dst).reshape(-1)
    flat = got.reshape(-1)
    bad = flat != ref
    count = int(bad.sum().item())
    info = {'mismatched_elements': count, 'element_bytes': 4}
    if count:
        first = int(bad.nonzero()[0].item())
        info.update({'first_mismatch_index': first,
                     'expected': '0x%08x' % (int(ref[first].item()) & 0xffffffff),
                     'got': '0x%08x' % (int(flat[first].item()) & 0xffffffff)})
    return info


def _copy_test(torch, x, src_sum, src_dev, dst_dev, method, reps, inject):
    """Copy x to dst_dev `reps` times (dst poisoned before each) and checksum every result on dst.

    Returns (times, checksums, first bad result or None).
    """
    n = x.numel()
    if method == 'memcpy':
        # contiguous same-dtype: cudaMemcpyAsync, a peer copy on the copy engines when peer access is on
        storage = torch.empty(n, dtype=x.dtype, device=dst_dev)
        target = storage
        source = x
    else:
        # strided destination: PyTorch runs a copy kernel on the source GPU that stores straight into peer memory
        # (SM path, like NCCL's P2P transport); without peer access it stages through contiguous temporaries
        cols = 256
        storage = torch.empty((cols, n // cols), dtype=x.dtype, device=dst_dev)
        target = storage.t()
        source = x.view(n // cols, cols)
    times = []
    sums = []
    first_bad = None
    for _rep in range(reps):
        storage.fill_(-1431655766)  # 0xAAAAAAAA: a dropped write cannot pass as the previous copy's data
        _sync(torch, src_dev, dst_dev)
        start = time.perf_counter()
        target.copy_(source, non_blocking=True)
        _sync(torch, src_dev, dst_dev)
        times.append(time.perf_counter() - start)
        if inject:
            flat = storage.view(-1).view(torch.uint8)
            flat[flat.numel() // 2 + 7:flat.numel() // 2 + 8].bitwise_xor_(0x5A)
        got = target.contiguous() if method == 'kernel' else target
        sums.append(checksum(torch, got))
        if first_bad is None and sums[-1] != src_sum:
            first_bad = got.clone()
    del storage, target, source
    return times, sums, first_bad


def _copy_child(args):
    events = _Events(args.events)
    try:
        torch = _import_torch()
    except Exception as exc:  # pylint: disable=broad-except
        events.emit({'kind': 'fatal', 'error': 'torch is not importable by %s: %s: %s'
                                               % (sys.executable, type(exc).__name__, exc)})
        return 2
    sim = _simulated()
    probe = {'kind': 'probe', 'python': sys.executable, 'torch_version': torch.__version__,
             'torch_cuda': getattr(torch.version, 'cuda', None), 'simulated': sim}
    count, error = _probe_runtime(torch, sim, probe)
    if error:
        events.emit({'kind': 'fatal', 'error': error})
        return 2
    requested = parse_int_list(args.gpus)
    gpus = requested or list(range(count))
    problems = _selection_problems(gpus, count, args.nnodes)
    if problems:
        events.emit({'kind': 'fatal', 'error': '; '.join(problems)})
        return 2
    devices = [_device_info(torch, g, sim) for g in gpus]
    peer = {}
    for s in gpus:
        for d in gpus:
            if s != d:
                peer['%d->%d' % (s, d)] = True if sim else bool(torch.cuda.can_device_access_peer(s, d))
    probe.update({'device_count': count, 'gpus': gpus, 'devices': devices, 'peer_access': peer})
    events.emit(probe)
    if args.skip_copy:
        return 0
    return _copy_tests(args, events, torch, sim, gpus, peer)


def _probe_runtime(torch, sim, probe):
    """(visible CUDA device count, None) with probe's nccl_version set, or (None, why torch cannot run the check)."""
    if sim:
        probe['nccl_version'] = None
        return 2, None
    if not torch.cuda.is_available():
        return None, ('CUDA is not available to torch %s (built for CUDA %s) under %s: torch.cuda.is_available() is '
                      'False' % (torch.__version__, probe['torch_cuda'], sys.executable))
    if not torch.distributed.is_available() or not torch.distributed.is_nccl_available():
        return None, 'torch %s under %s has no NCCL backend' % (torch.__version__, sys.executable)
    count = torch.cuda.device_count()
    version = torch.cuda.nccl.version()
    probe['nccl_version'] = '.'.join(str(v) for v in version) if isinstance(version, tuple) else str(version)
    return count, None


def _selection_problems(gpus, count, nnodes):
    """What is wrong with the selected GPU indices (empty list: nothing)."""
    problems = []
    if len(set(gpus)) != len(gpus):
        problems.append('duplicate GPU indices in %s' % gpus)
    missing = [g for g in gpus if g < 0 or g >= count]
    if missing:
        problems.append('GPU indices %s do not exist: %d CUDA device(s) visible (CUDA_VISIBLE_DEVICES=%s)'
                        % (missing, count, os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')))
    if len(gpus) < (1 if nnodes > 1 else 2) and not problems:
        problems.append('a P2P/NCCL check needs at least 2 GPUs; selected %s of %d visible' % (gpus, count))
    return problems


def _device_info(torch, g, sim):
    """The probe's description of GPU ``g``: name, memory, capability, PCI address and UUID where torch has them."""
    if sim:
        return {'index': g, 'name': 'simulated-cpu-%d' % g}
    props = torch.cuda.get_device_properties(g)
    info = {'index': g, 'name': props.name, 'total_memory_mib': props.total_memory // (1024 * 1024),
            'capability': '%d.%d' % (props.major, props.minor)}
    for attr in ('pci_domain_id', 'pci_bus_id', 'pci_device_id'):
        if hasattr(props, attr):
            info[attr] = getattr(props, attr)
    if all(attr in info for attr in ('pci_domain_id', 'pci_bus_id', 'pci_device_id')):
        # the sysfs spelling, to join with gpu_info / nvidia-smi (function 0: a GPU is function 0)
        info['pci_address'] = '%04x:%02x:%02x.0' % (info['pci_domain_id'], info['pci_bus_id'], info['pci_device_id'])
    if hasattr(props, 'uuid'):
        info['uuid'] = str(props.uuid)
    return info


def _copy_tests(args, events, torch, sim, gpus, peer):
    """Every size, source, destination and copy method in turn, one event each; 0, or _copy_fail's code."""
    sizes = parse_int_list(args.sizes_mib)
    inject_pair = (gpus[0], gpus[1]) if args.fault == 'corrupt_copy' and not args.p2p_disable else None
    for size_index, size_mib in enumerate(sizes):
        nbytes = size_mib * 1024 * 1024
        reps = 5 if size_mib <= 64 else 3
        for src in gpus:
            src_dev = torch.device('cpu') if sim else torch.device('cuda', src)
            try:
                gen = torch.Generator(device=src_dev)
                gen.manual_seed(args.seed + 1000 * size_index + src)
                x = torch.randint(-2 ** 31, 2 ** 31 - 1, (nbytes // 4,), dtype=torch.int32, device=src_dev,
                                  generator=gen)
                src_sum = checksum(torch, x)
            except RuntimeError as exc:
                return _copy_fail(events, torch, exc, src, size_mib)
            for dst in gpus:
                if dst == src:
                    continue
                dst_dev = torch.device('cpu') if sim else torch.device('cuda', dst)
                for method in ('memcpy', 'kernel'):
                    events.emit({'kind': 'start', 'src': src, 'dst': dst, 'size_mib': size_mib, 'method': method})
                    inject = inject_pair == (src, dst)
                    try:
                        events.emit(_copy_event(torch, x, src_sum, (src, src_dev), (dst, dst_dev), size_mib, method,
                                                reps, inject, peer))
                    except RuntimeError as exc:
                        return _copy_fail(events, torch, exc, src, size_mib, dst, method)
            del x
    return 0


def _copy_event(torch, x, src_sum, source, destination, size_mib, method, reps, inject, peer):
    """Run one copy test of x from source to destination ((index, device) each) and describe it as an event."""
    src, src_dev = source
    dst, dst_dev = destination
    nbytes = size_mib * 1024 * 1024
    times, sums, first_bad = _copy_test(torch, x, src_sum, src_dev, dst_dev, method, reps, inject)
    bad = [i for i, s in enumerate(sums) if s != src_sum]
    test = {'kind': 'copy', 'src': src, 'dst': dst, 'size_mib': size_mib, 'method': method,
            'peer_access': peer['%d->%d' % (src, dst)], 'reps': reps,
            'ok': not bad, 'src_checksum': src_sum, 'dst_checksums': sorted(set(sums)),
            'bad_reps': len(bad), 'fault_injected': inject,
            'times_s': [round(t, 6) for t in times]}
    mid = sorted(times)[len(times) // 2]
    test['gbps'] = round(nbytes / mid / 1e9, 2) if mid > 0 else None
    if first_bad is not None:
        test.update(_locate_mismatch(torch, x, first_bad, dst_dev))
        del first_bad
    return test


def _copy_fail(events, torch, exc, src, size_mib, dst=None, method=None):
    text = '%s: %s' % (type(exc).__name__, str(exc).splitlines()[0] if str(exc) else '')
    where = 'GPU %s' % src if dst is None else '%s->%s %s' % (src, dst, method)
    if 'out of memory' in text.lower():
        events.emit({'kind': 'fatal', 'error': 'not enough free GPU memory for the %d MiB copy test (%s): %s; is a '
                                               'server already running on these GPUs?' % (size_mib, where, text)})
        return 2
    events.emit({'kind': 'error', 'error': 'copy test %d MiB %s failed: %s' % (size_mib, where, text)})
    return 3


class _Stages:
    def __init__(self, path):
        self.handle = open(path, 'a')

    def __call__(self, name):
        self.handle.write('%s %.6f\n' % (name, _now()))
        self.handle.flush()


def _rank_child(args):
    stage = _Stages(args.stage_file)
    stage('start')
    result = {'rank': args.rank, 'gpu': args.gpu, 'world': args.world}
    try:
        torch = _import_torch()
    except Exception as exc:  # pylint: disable=broad-except
        result['error'] = 'torch is not importable: %s: %s' % (type(exc).__name__, exc)
        _write_out(RESULT_MARK + json.dumps(result, sort_keys=True) + '\n')
        return 2
    import datetime  # pylint: disable=import-outside-toplevel
    dist = torch.distributed
    sim = _on_cpu(args)
    phase_a = not args.p2p_disable
    if sim:
        device = torch.device('cpu')
    else:
        torch.cuda.set_device(args.gpu)
        device = torch.device('cuda', args.gpu)
    # Multi-node: the rendezvous SGLang's --dist-init-addr uses (a TCPStore on global rank 0); local: a file store.
    init = 'tcp://' + args.dist_init_addr if args.nnodes > 1 else 'file://' + args.store
    kwargs = {'backend': 'gloo' if sim else 'nccl', 'init_method': init, 'rank': args.rank,
              'world_size': args.world, 'timeout': datetime.timedelta(seconds=max(5.0, args.nccl_timeout))}
    if not sim:
        kwargs['device_id'] = device  # eager communicator creation: init time is measured, an init hang shows here
    stage('init_start')
    start = time.perf_counter()
    dist.init_process_group(**kwargs)
    result['init_s'] = round(time.perf_counter() - start, 3)
    stage('init_done')
    if args.fault == 'hang_nccl' and phase_a and args.rank == args.world - 1:
        stage('fault_hang')  # the peers are left blocked inside a real all-reduce on the GPU
        while True:
            time.sleep(3600)
    n = args.allreduce_mib * 1024 * 1024 // 4
    # small integers in float32 add up exactly; the position pattern catches misplaced chunks
    base = (torch.arange(n, dtype=torch.int32, device=device) % 1021).to(torch.float32)
    tensor = base + float(args.rank + 1)
    stage('allreduce_start')
    start = time.perf_counter()
    dist.all_reduce(tensor)
    _sync(torch, device)
    result['allreduce_s'] = round(time.perf_counter() - start, 3)
    stage('allreduce_done')
    if args.fault == 'corrupt_allreduce' and phase_a and args.rank == 0:
        tensor[n // 2] += 1.0
        result['fault_injected'] = True
    expected = base * float(args.world) + float(args.world * (args.world + 1) // 2)
    bad = tensor != expected
    count = int(bad.sum().item())
    result.update({'elements': n, 'mismatched_elements': count, 'sum_ok': count == 0})
    if count:
        first = int(bad.nonzero()[0].item())
        result.update({'first_mismatch_index': first, 'expected': float(expected[first].item()),
                       'got': float(tensor[first].item())})
    del base, tensor, expected, bad
    # bandwidth of the same size, on a zero buffer (values stay 0)
    buf = torch.zeros(n, dtype=torch.float32, device=device)
    dist.all_reduce(buf)
    _sync(torch, device)
    iters = 5
    start = time.perf_counter()
    for _iteration in range(iters):
        dist.all_reduce(buf)
    _sync(torch, device)
    elapsed = time.perf_counter() - start
    algbw = n * 4 * iters / elapsed / 1e9 if elapsed > 0 else 0.0
    result.update({'algbw_gbps': round(algbw, 2),
                   'busbw_gbps': round(algbw * 2 * (args.world - 1) / args.world, 2)})
    stage('bench_done')
    _write_out(RESULT_MARK + json.dumps(result, sort_keys=True) + '\n')
    dist.destroy_process_group()
    stage('done')
    return 0


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.role == 'copy':
        return _copy_child(args)
    if args.role == 'rank':
        return _rank_child(args)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    result, code = run_phase(args)
    _write_out(json.dumps(result, sort_keys=True) + '\n')
    return code


if __name__ == '__main__':
    raise SystemExit(main())
