# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real-GPU run of the gpu_p2p_check preflight, without Ansible: normal mode plus the fault-injection modes.

Needs only python3 with torch (CUDA build) and 2+ GPUs. Run from the repository root:

    python3 tests/gpu/run_p2p_check.py --out /tmp/p2p-out            # all modes, all visible GPUs
    python3 tests/gpu/run_p2p_check.py --gpus 0,1 --modes none         # just the real check

It drives plugins/module_utils/gpu/scripts/p2p_worker.py exactly as the module does (coreutils `timeout --kill-after` around
each phase, phase B with NCCL_P2P_DISABLE=1 only when phase A is not clean) and judges with p2p_verdict.py.
Writes to --out: summary.md, p2p_<mode>.json (verdict + raw worker output incl. NCCL_DEBUG=INFO lines),
gpu_state.txt (read-only nvidia-smi queries before/after: the GPUs must be left as found).
Exit status: 0 when the normal mode ran and every fault mode was caught (verdict other than p2p_ok), else 1.
Only reads GPU state; never changes clocks, persistence or compute mode, never resets anything.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UTILS = os.path.join(ROOT, 'plugins', 'module_utils', 'gpu')
sys.path.insert(0, UTILS)

import p2p_verdict  # noqa: E402  pylint: disable=wrong-import-position,import-error

WORKER = os.path.join(UTILS, 'scripts', 'p2p_worker.py')
SMI_QUERIES = [
    ['nvidia-smi', '--query-gpu=index,name,pci.bus_id,driver_version,persistence_mode,compute_mode,'
                   'clocks.sm,clocks.mem,memory.used,memory.total', '--format=csv'],
    ['nvidia-smi', '--query-compute-apps=pid,process_name,used_memory', '--format=csv'],
]


def smi(argv):
    if not shutil.which(argv[0]):
        return '$ %s\n(not found)\n' % ' '.join(argv)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    return '$ %s\n%s%s' % (' '.join(argv), proc.stdout, proc.stderr)


def make_runner(python, options, log):
    def run_phase(p2p_disable, skip_copy):
        limit = p2p_verdict.outer_timeout(options, skip_copy)
        argv = ['timeout', '--kill-after=15', str(limit), python, WORKER] + \
            p2p_verdict.worker_args(options, p2p_disable, skip_copy)
        log('  $ %s' % ' '.join(argv))
        start = time.monotonic()
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        log('    rc=%s in %.1fs' % (proc.returncode, time.monotonic() - start))
        return proc.returncode, proc.stdout, proc.stderr
    return run_phase


def strip_for_summary(result):
    keep = dict(result)
    keep.pop('raw', None)
    keep['phases'] = dict((k, dict((kk, vv) for kk, vv in v.items() if kk != 'log')) for k, v in result['phases'].items())
    return keep


def write_summary(out, summary, lines):
    with open(os.path.join(out, 'summary.md'), 'w') as handle:
        handle.write('\n'.join(summary) + '\n\n## log\n```\n' + '\n'.join(lines) + '\n```\n')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', default=os.environ.get('OUT') or 'p2p-out')
    parser.add_argument('--gpus', default='')
    parser.add_argument('--modes', default='none,corrupt_copy,corrupt_allreduce,hang_nccl')
    parser.add_argument('--sizes-mib', default='1,64,512')
    parser.add_argument('--allreduce-mib', type=int, default=256)
    parser.add_argument('--nccl-timeout', type=int, default=60)
    parser.add_argument('--hang-nccl-timeout', type=int, default=30, help='NCCL limit in the hang_nccl mode')
    parser.add_argument('--copy-timeout', type=int, default=300)
    parser.add_argument('--startup-timeout', type=int, default=120)
    parser.add_argument('--python', default=sys.executable)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    lines = []

    def log(text):
        lines.append(text)
        sys.stdout.write(text + '\n')
        sys.stdout.flush()

    state = ['## before'] + [smi(q) for q in SMI_QUERIES]
    state += [smi(['nvidia-smi', 'topo', '-m']), smi(['nvidia-smi', 'topo', '-p2p', 'r'])]
    driver = None
    if os.path.exists('/sys/module/nvidia/version'):
        with open('/sys/module/nvidia/version') as handle:
            driver = handle.read().strip()
    summary = ['# gpu_p2p_check on real GPUs', '',
               '- python: `%s`' % args.python,
               '- kernel: `%s`' % os.uname().release,
               '- driver (/sys/module/nvidia/version): `%s`' % driver,
               '']
    all_good = True
    for mode in [m for m in args.modes.split(',') if m]:
        options = {'gpus': [int(g) for g in args.gpus.split(',') if g != ''],
                   'sizes_mib': [int(s) for s in args.sizes_mib.split(',')],
                   'allreduce_mib': args.allreduce_mib,
                   'copy_timeout': args.copy_timeout,
                   'nccl_timeout': args.hang_nccl_timeout if mode == 'hang_nccl' else args.nccl_timeout,
                   'startup_timeout': args.startup_timeout,
                   'fault_injection': mode, 'try_p2p_disable': True}
        log('== mode %s' % mode)
        start = time.monotonic()
        result = p2p_verdict.run_preflight(make_runner(args.python, options, log), options)
        result['mode'] = mode
        result['wall_s'] = round(time.monotonic() - start, 1)
        with open(os.path.join(args.out, 'p2p_%s.json' % mode), 'w') as handle:
            json.dump(result, handle, indent=1, sort_keys=True, default=str)
        if result.get('fatal'):
            log('  FATAL: %s' % result['fatal'])
            summary += ['## mode `%s`: setup error' % mode, '', result['fatal'], '']
            all_good = False
            break
        log('  verdict=%s wall=%.1fs' % (result['verdict'], result['wall_s']))
        log('  reason: %s' % result['reason'])
        expected_ok = mode == 'none'
        caught = (result['verdict'] == 'p2p_ok') == expected_ok
        all_good = all_good and caught
        summary += ['## mode `%s`: verdict `%s` (%s, %.1fs wall)'
                    % (mode, result['verdict'], 'as expected' if caught else 'UNEXPECTED', result['wall_s']), '',
                    result['reason'], '',
                    '- versions: %s' % json.dumps(result['versions'], sort_keys=True),
                    '- transports: %s' % json.dumps(result['transports'], sort_keys=True),
                    '- init_s: %s' % json.dumps(result['init_s'], sort_keys=True),
                    '- allreduce: %s' % json.dumps(result['allreduce'], sort_keys=True), '',
                    p2p_verdict.pairs_markdown(result['pairs']), '', 'evidence:', '```']
        summary += result['evidence'][:30] + ['```', '']
        write_summary(args.out, summary, lines)  # after every mode: a run cut short still leaves its results
    state += ['## after'] + [smi(q) for q in SMI_QUERIES]
    with open(os.path.join(args.out, 'gpu_state.txt'), 'w') as handle:
        handle.write('\n'.join(state))
    log('ALL GOOD' if all_good else 'NOT ALL GOOD')
    write_summary(args.out, summary, lines)
    return 0 if all_good else 1


if __name__ == '__main__':
    sys.exit(main())
