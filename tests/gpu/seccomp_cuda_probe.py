# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Does CUDA + NCCL (+ a Triton JIT kernel) work under the sglang_server unit's seccomp allow-list?

The unit sets NoNewPrivileges=yes and SystemCallFilter=@system-service (SystemCallErrorNumber=EPERM). This probe
applies the same allow-list with libseccomp (ctypes; the list is `systemd-analyze syscall-filter @system-service`
expanded, one name per line, in SYSCALLS_FILE) and then runs a two-rank torch.distributed NCCL all-reduce, a CUDA
IPC hand-over between processes and a torch.compile'd (Triton) kernel on the GPUs. No systemd needed. With one GPU
the two-rank checks are skipped (and say so).

It also starts a CUDA process the way SGLang's NUMA binding does (utils/numa_utils.py: the scheduler is exec'd
through "numactl --cpunodebind=N --membind=N"), under the same filter: the CUDA context, a kernel and pinned host
memory must work there, and the process must really be bound (numactl --show inside it: policy bind). Skipped when
numactl is not installed.

  python tests/gpu/seccomp_cuda_probe.py SYSCALLS_FILE [--no-filter] [--numa-node N]   (N: default 0)
Prints one line per check and "N passed, N failed".
"""
import ctypes
import os
import subprocess
import sys

WORKER = r'''
import os, sys, time, torch, torch.distributed as dist
rank = int(sys.argv[1]); world = int(sys.argv[2])
torch.cuda.set_device(rank)
dist.init_process_group('nccl', init_method='tcp://127.0.0.1:29561', rank=rank, world_size=world)
x = torch.full((64 * 1024 * 1024,), float(rank + 1), device='cuda')
dist.all_reduce(x)
torch.cuda.synchronize()
ok = bool((x == sum(range(1, world + 1))).all())
if rank == 0:
    f = torch.compile(lambda a: (a * 2 + 1).sin())
    y = f(torch.ones(1024, device='cuda'))
    ok = ok and abs(float(y[0]) - float(torch.tensor(3.0).sin())) < 1e-5
print('RANK %d allreduce+compile %s' % (rank, 'OK' if ok else 'WRONG'), flush=True)
dist.destroy_process_group()
'''

IPC = r'''
import torch, torch.multiprocessing as mp
def child(q, r):
    t = q.get(); r.put(float(t.sum()))
if __name__ == '__main__':
    ctx = mp.get_context('spawn'); q, r = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=child, args=(q, r)); p.start()
    t = torch.ones(1000, device='cuda:0'); q.put(t)
    print('IPC %s' % ('OK' if r.get(timeout=120) == 1000.0 else 'WRONG'), flush=True); p.join()
'''

NUMA = r'''
import subprocess, torch
x = torch.ones(1 << 20, device='cuda')
pinned = torch.ones(1 << 20).pin_memory()
y = (x * 2).sum().item() + pinned.cuda(non_blocking=True).sum().item()
show = subprocess.run(['numactl', '--show'], capture_output=True, text=True, check=False).stdout
print('NUMA cuda %s' % ('OK' if y == 3 * (1 << 20) else 'WRONG'), flush=True)
print(show, flush=True)
'''


def gpu_count():
    try:
        out = subprocess.run(['nvidia-smi', '-L'], capture_output=True, text=True, timeout=60, check=False).stdout
    except OSError:
        return 0
    return sum(1 for line in out.splitlines() if line.startswith('GPU '))


def apply_filter(path):
    lib = ctypes.CDLL('libseccomp.so.2', use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(0x00050000 | 1)  # SCMP_ACT_ERRNO(EPERM), like SystemCallErrorNumber=EPERM
    added = 0
    with open(path) as stream:
        for name in stream.read().split():
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr < 0:
                continue
            if lib.seccomp_rule_add(ctx, 0x7fff0000, nr, 0) == 0:  # SCMP_ACT_ALLOW
                added += 1
    if lib.seccomp_load(ctx) != 0:
        raise SystemExit('seccomp_load failed')
    return added


def main():
    args = sys.argv[1:]
    node = args[args.index('--numa-node') + 1] if '--numa-node' in args else '0'
    if '--no-filter' not in args:
        # NoNewPrivileges=yes; libseccomp also sets it by default (SCMP_FLTATR_CTL_NNP).
        print('filter: %d syscalls allowed (everything else EPERM)' % apply_filter(args[0]), flush=True)
    env = dict(os.environ, NCCL_NVLS_ENABLE='0', NCCL_DEBUG='INFO', NCCL_DEBUG_SUBSYS='INIT,P2P,SHM')
    passed = failed = 0
    gpus = gpu_count()
    for label, extra in (('nccl default transport', {}), ('nccl NCCL_P2P_DISABLE=1', {'NCCL_P2P_DISABLE': '1'})):
        if gpus < 2:
            print('SKIP %s (%d GPU: the check needs two)' % (label, gpus), flush=True)
            continue
        procs = [subprocess.Popen([sys.executable, '-c', WORKER, str(r), '2'], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, env=dict(env, **extra), text=True) for r in range(2)]
        outs = [p.communicate(timeout=240)[0] for p in procs]
        ok = all(p.returncode == 0 for p in procs) and all('allreduce+compile OK' in o for o in outs)
        via = sorted(set(line.split(' via ')[1].strip() for o in outs for line in o.splitlines() if ' via ' in line))
        print('%s %s (transport %s)' % ('PASS' if ok else 'FAIL', label, ', '.join(via) or '?'), flush=True)
        if not ok:
            print('\n'.join(o[-3000:] for o in outs))
        passed, failed = passed + ok, failed + (not ok)
    if subprocess.run(['sh', '-c', 'command -v numactl'], capture_output=True, check=False).returncode != 0:
        print('SKIP cuda under numactl (numactl is not installed)', flush=True)
    else:
        proc = subprocess.run(['numactl', '--cpunodebind=' + node, '--membind=' + node, sys.executable, '-c', NUMA],
                              capture_output=True, text=True, timeout=240, env=env, check=False)
        ok = (proc.returncode == 0 and 'NUMA cuda OK' in proc.stdout and 'policy: bind' in proc.stdout
              and ('membind: %s' % node) in proc.stdout)
        binding = [line.strip() for line in proc.stdout.splitlines() if line.startswith(('policy', 'cpubind', 'membind'))]
        print('%s cuda under numactl --cpunodebind=%s --membind=%s (as SGLang starts a scheduler)%s'
              % ('PASS' if ok else 'FAIL', node, node, ': ' + ' / '.join(binding) if ok else ''), flush=True)
        if not ok:
            print(proc.stdout[-2000:], proc.stderr[-3000:])
        passed, failed = passed + ok, failed + (not ok)
    # spawn needs an importable __main__: run the IPC check from a file.
    script = os.path.join(os.environ.get('TMPDIR', '/tmp'), 'seccomp_cuda_probe_ipc.py')
    with open(script, 'w') as stream:
        stream.write(IPC)
    proc = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=240, env=env, check=False)
    ok = proc.returncode == 0 and 'IPC OK' in proc.stdout
    print('%s cuda ipc between processes' % ('PASS' if ok else 'FAIL'), flush=True)
    if not ok:
        print(proc.stdout[-2000:], proc.stderr[-3000:])
    passed, failed = passed + ok, failed + (not ok)
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    raise SystemExit(main())
