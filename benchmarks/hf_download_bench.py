#!/usr/bin/env python
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark of the hf_model download path, side by side with the huggingface_hub CLI, in one run.

On one local olah mirror (tests/hub) serving one generated safetensors repo:
  download: llmops.inference.hf_snapshot (run by `ansible -m`, so the real module) vs `hf download --local-dir`,
            alternating, each into a fresh directory, same max workers;
  verify:   the module's parallel hashing (file_hashing.hash_files, one thread per file, all cores) vs one thread
            hashing file after file (what `hf cache verify` does) vs `hf cache verify --local-dir` itself,
            against cores x the single-core hashlib sha256 rate of this machine.
Prints a table and the machine; --json FILE also writes the figures. Never contacts anything but 127.0.0.1
(building the client virtualenv the first time uses pip's configured index).

Usage: benchmarks/hf_download_bench.py [--shards 4] [--shard-mb 64] [--rounds 2] [--max-workers 8] [--json FILE]
       benchmarks/hf_download_bench.py --verify-only [--shards 32] [--shard-mb 256]   (hashing only: standard library,
       no mirror, no client; for machines without network or many cores)
"""
from __future__ import absolute_import, division, print_function

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load_file_hashing():
    """plugins/module_utils/common/file_hashing.py by path (standard library only), so a bare copy of the tree works too."""
    import importlib.util
    spec = importlib.util.spec_from_file_location('file_hashing', os.path.join(ROOT, 'plugins', 'module_utils', 'common', 'file_hashing.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


file_hashing = _load_file_hashing()

MB = 1000 * 1000
REPO = 'llmops-bench/model'


def log(msg):
    sys.stderr.write('[bench %s] %s\n' % (time.strftime('%H:%M:%S'), msg))
    sys.stderr.flush()


def pins():
    text = open(os.path.join(ROOT, 'roles', 'hf_model', 'defaults', 'main.yml')).read()
    return re.findall(r'^  - (\S+==\S+)$', text.split('hf_model_pip_packages:', 1)[1], re.M)


def ensure_venv(path):
    """The role's pinned client in a virtualenv of its own (reused while the pins are unchanged)."""
    stamp = os.path.join(path, '.pins')
    want = '\n'.join(pins())
    if os.path.exists(stamp) and open(stamp).read() == want:
        return path
    log('creating %s with %s' % (path, ' '.join(pins()[:2])))
    shutil.rmtree(path, ignore_errors=True)
    subprocess.run(['python3', '-m', 'venv', path], check=True)
    subprocess.run([os.path.join(path, 'bin', 'python'), '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check']
                   + pins(), check=True)
    with open(stamp, 'w') as handle:
        handle.write(want)
    return path


def machine():
    cpu = 'unknown'
    try:
        for line in open('/proc/cpuinfo'):
            if line.startswith('model name'):
                cpu = line.split(':', 1)[1].strip()
                break
        flags = open('/proc/cpuinfo').read()
    except OSError:
        flags = ''
    mem = 0
    try:
        for line in open('/proc/meminfo'):
            if line.startswith('MemTotal'):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    return {
        'cpu': cpu, 'cores': file_hashing.usable_cpus(), 'sha_ni': ' sha_ni' in flags, 'memory_gb': round(mem / 1e9, 1),
        'kernel': platform.release(), 'python': platform.python_version(), 'load_avg_1m': os.getloadavg()[0],
    }


def single_core_sha256_rate(total=256 * 1024 * 1024, chunk=4 * 1024 * 1024):
    """hashlib sha256 bytes/s on one core, from memory (no I/O): the per-core ceiling."""
    buf = os.urandom(chunk)
    best = 0.0
    for _attempt in range(3):
        h = hashlib.sha256()
        t0 = time.perf_counter()
        for _chunk in range(total // chunk):
            h.update(buf)
        best = max(best, total / (time.perf_counter() - t0))
    return best


def all_core_sha256_rate(cores, per_thread=256 * 1024 * 1024, chunk=4 * 1024 * 1024):
    """hashlib sha256 bytes/s with one thread per core, from memory (no I/O): what the CPUs deliver together.

    On VMs and turbo-clocked CPUs this is well below cores x the single-core rate; the gap is the machine's, not
    the hashing code's.
    """
    from concurrent.futures import ThreadPoolExecutor
    buf = os.urandom(chunk)

    def one(_index):
        h = hashlib.sha256()
        for _chunk in range(per_thread // chunk):
            h.update(buf)

    best = 0.0
    for _attempt in range(2):
        t0 = time.perf_counter()
        with ThreadPoolExecutor(cores) as pool:
            list(pool.map(one, range(cores)))
        best = max(best, cores * per_thread / (time.perf_counter() - t0))
    return best


def run_module(venv, endpoint, revision, dest, workers, collections):
    """hf_snapshot through `ansible -m` (the real module, AnsiballZ and all); returns (wall s, result)."""
    args = {'repo_id': REPO, 'revision': revision, 'dest': dest, 'endpoint': endpoint, 'max_workers': workers,
            'forbidden_paths': [], 'free_space_margin_mb': 1}
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_DEPRECATION_WARNINGS='False')
    ansible = os.path.join(ROOT, '.venv', 'bin', 'ansible')
    if not os.path.exists(ansible):
        ansible = 'ansible'
    t0 = time.perf_counter()
    # -o: one line "localhost | CHANGED => {json}" (ansible-core only, no callback collection needed).
    out = subprocess.run([ansible, 'localhost', '-i', 'localhost,', '-c', 'local', '-o', '-m', 'llmops.inference.hf_snapshot',
                          '-a', json.dumps(args), '-e', 'ansible_python_interpreter=%s/bin/python' % venv],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, cwd=ROOT,
                         check=False)
    wall = time.perf_counter() - t0
    try:
        result = json.loads(out.stdout.split(' => ', 1)[1])
    except (ValueError, IndexError):
        raise SystemExit('module run failed:\n%s\n%s' % (out.stdout[-3000:], out.stderr[-3000:]))
    if result.get('failed'):
        raise SystemExit('module failed: %s' % result.get('msg'))
    return wall, result


def hf_env(endpoint):
    return dict(os.environ, HF_ENDPOINT=endpoint, HF_HUB_DISABLE_TELEMETRY='1', HF_HUB_DISABLE_UPDATE_CHECK='1',
                HF_HUB_DISABLE_PROGRESS_BARS='1', HF_HUB_DISABLE_EXPERIMENTAL_WARNING='1')


def run_hf_download(venv, endpoint, revision, dest, workers):
    t0 = time.perf_counter()
    subprocess.run([os.path.join(venv, 'bin', 'hf'), 'download', REPO, '--revision', revision, '--local-dir', dest,
                    '--max-workers', str(workers)], env=hf_env(endpoint), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - t0


def run_hf_cache_verify(venv, endpoint, revision, dest):
    t0 = time.perf_counter()
    out = subprocess.run([os.path.join(venv, 'bin', 'hf'), 'cache', 'verify', REPO, '--revision', revision,
                          '--local-dir', dest, '--fail-on-missing-files'], env=hf_env(endpoint),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if out.returncode != 0:
        raise SystemExit('hf cache verify failed: %s' % out.stdout[-2000:])
    return time.perf_counter() - t0


def verify_only(args):
    """Hashing figures only, on generated files (page cache warm): parallel vs sequential vs the per-core ceiling."""
    work = args.work or tempfile.mkdtemp(prefix='hf_bench.', dir='/var/tmp')
    try:
        log('writing %d x %d MiB files' % (args.shards, args.shard_mb))
        block = os.urandom(4 * 1024 * 1024)
        files = []
        for i in range(args.shards):
            path = os.path.join(work, 'model-%05d.safetensors' % (i + 1))
            with open(path, 'wb') as handle:
                for _block in range(args.shard_mb // 4):
                    handle.write(block)
            files.append((path, path, 'sha256'))
        cores = file_hashing.usable_cpus()
        single = single_core_sha256_rate()
        together = all_core_sha256_rate(cores)
        file_hashing.hash_files(files, cores)  # warm the page cache
        _r, _e, par_s, nbytes = file_hashing.hash_files(files, cores)
        t0 = time.perf_counter()
        for _key, path, kind in files:
            file_hashing.hash_file(path, kind)
        seq_s = time.perf_counter() - t0
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    info = machine()
    print('machine: %(cpu)s, %(cores)d cores usable (sha_ni=%(sha_ni)s), %(memory_gb)s GB RAM, Linux %(kernel)s, '
          'Python %(python)s, load %(load_avg_1m).1f' % info)
    print('%d files, %.1f MB, page cache warm' % (len(files), nbytes / MB))
    print('')
    print('| what | seconds | MB/s |')
    print('|---|---:|---:|')
    print('| parallel sha256, %d threads (file_hashing.hash_files) | %.2f | %.1f |' % (cores, par_s, nbytes / par_s / MB))
    print('| sequential sha256, 1 thread (hf cache verify style) | %.2f | %.1f |' % (seq_s, nbytes / seq_s / MB))
    print('')
    print('single-core hashlib sha256: %.1f MB/s; %d cores x that = %.1f MB/s; parallel reaches %.2f x that (target 0.8)'
          % (single / MB, cores, cores * single / MB, (nbytes / par_s) / (cores * single)))
    print('%d threads hashing memory together (no I/O): %.1f MB/s; parallel file hashing reaches %.2f x that'
          % (cores, together / MB, (nbytes / par_s) / together))
    if args.json:
        with open(args.json, 'w') as handle:
            json.dump({'machine': info, 'files': len(files), 'bytes': nbytes, 'parallel_s': par_s, 'sequential_s': seq_s,
                       'single_core_sha256_mb_s': single / MB, 'all_core_sha256_mb_s': together / MB,
                       'parallel_vs_ceiling': (nbytes / par_s) / (cores * single)}, handle, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--shards', type=int, default=4)
    p.add_argument('--shard-mb', type=int, default=64, help='MiB per shard (olah holds a whole file in RAM)')
    p.add_argument('--rounds', type=int, default=2, help='downloads per tool (alternating), median reported')
    p.add_argument('--max-workers', type=int, default=8)
    p.add_argument('--work', help='scratch directory (default: a new one under /var/tmp, removed at the end)')
    p.add_argument('--venv', default=os.path.join(os.environ.get('XDG_CACHE_HOME', os.path.expanduser('~/.cache')),
                                                  'llmops-inference', 'hf-bench-venv'))
    p.add_argument('--json', help='also write the figures to this file')
    p.add_argument('--verify-only', action='store_true', help='only the hashing figures, on generated local files')
    args = p.parse_args()
    if args.verify_only:
        verify_only(args)
        return

    venv = ensure_venv(args.venv)
    work = args.work or tempfile.mkdtemp(prefix='hf_bench.', dir='/var/tmp')
    hub = os.path.join(work, 'hub')
    olah = os.path.join(ROOT, 'tests', 'hub', 'olah.sh')
    try:
        log('generating %d x %d MiB shards' % (args.shards, args.shard_mb))
        manifest = json.loads(subprocess.run(
            [sys.executable, os.path.join(ROOT, 'tests', 'hub', 'make_model_repo.py'), '--mirrors', os.path.join(hub, 'mirrors'),
             '--repos-path', os.path.join(hub, 'repos'), '--repo', REPO, '--shards', str(args.shards),
             '--shard-mb', str(args.shard_mb), '--commits', '1'], check=True, stdout=subprocess.PIPE).stdout)
        revision = manifest['commits'][0]['sha']
        total = sum(f['size'] for f in manifest['commits'][0]['files'].values())
        endpoint = subprocess.run([olah, 'start', hub, REPO], check=True, stdout=subprocess.PIPE,
                                  universal_newlines=True).stdout.strip()
        log('warm-up download (olah reads and hashes every file on first use)')
        run_hf_download(venv, endpoint, revision, os.path.join(work, 'warmup'), args.max_workers)
        shutil.rmtree(os.path.join(work, 'warmup'))

        module_walls, module_dl, hf_walls = [], [], []
        keep = None
        for i in range(args.rounds):
            dest = os.path.join(work, 'module-%d' % i, 'model')
            wall, result = run_module(venv, endpoint, revision, dest, args.max_workers, os.path.join(ROOT, '.collections'))
            assert result['downloaded_bytes'] == total, result
            module_walls.append(wall)
            module_dl.append(result['download_seconds'])
            log('round %d: module %.2f s wall (download phase %.2f s, verify %.2f s)'
                % (i + 1, wall, result['download_seconds'], result['verify_seconds']))
            dest_hf = os.path.join(work, 'hf-%d' % i)
            hf_walls.append(run_hf_download(venv, endpoint, revision, dest_hf, args.max_workers))
            log('round %d: hf download %.2f s wall' % (i + 1, hf_walls[-1]))
            shutil.rmtree(dest_hf)
            if keep:
                shutil.rmtree(os.path.dirname(keep))
            keep = dest

        files = [(path, os.path.join(keep, path), 'sha256' if entry['lfs'] else 'git_sha1')
                 for path, entry in manifest['commits'][0]['files'].items()]
        cores = file_hashing.usable_cpus()
        single = single_core_sha256_rate()
        together = all_core_sha256_rate(cores)
        # Same files, page cache warm for all three (they were just written and hashed).
        _r, _e, par_s, par_bytes = file_hashing.hash_files(files, cores)
        _r, _e, par_s, par_bytes = file_hashing.hash_files(files, cores)
        t0 = time.perf_counter()
        for _key, path, kind in files:
            file_hashing.hash_file(path, kind)
        seq_s = time.perf_counter() - t0
        verify_wall = run_hf_cache_verify(venv, endpoint, revision, keep)
    finally:
        subprocess.run([olah, 'stop', hub], check=False)
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)

    med = statistics.median
    rows = [
        ('download', 'hf_snapshot module, download phase', med(module_dl), total),
        ('download', 'hf_snapshot module, whole run via ansible -m (plan+download+verify+swap)', med(module_walls), total),
        ('download', 'hf download --local-dir (CLI wall)', med(hf_walls), total),
        ('verify', 'parallel sha256, %d threads (file_hashing.hash_files)' % cores, par_s, par_bytes),
        ('verify', 'sequential sha256, 1 thread (hf cache verify style)', seq_s, par_bytes),
        ('verify', '`hf cache verify --local-dir` (CLI wall, incl. Hub listing)', verify_wall, par_bytes),
    ]
    info = machine()
    figures = {
        'machine': info, 'files': len(files), 'bytes': total, 'max_workers': args.max_workers, 'rounds': args.rounds,
        'single_core_sha256_mb_s': single / MB, 'target_verify_mb_s': 0.8 * cores * single / MB,
        'all_core_sha256_mb_s': together / MB,
        'rows': [{'phase': r[0], 'what': r[1], 'seconds': r[2], 'mb_s': r[3] / r[2] / MB} for r in rows],
        'module_vs_hf_download': med(hf_walls) / med(module_dl),
        'parallel_vs_ceiling': (par_bytes / par_s) / (cores * single),
    }
    print('machine: %(cpu)s, %(cores)d cores usable (sha_ni=%(sha_ni)s), %(memory_gb)s GB RAM, Linux %(kernel)s, '
          'Python %(python)s, load %(load_avg_1m).1f' % info)
    print('repo: %d files, %.1f MB (%d x %d MiB shards) on olah 0.5.4 at 127.0.0.1; max workers %d; median of %d rounds'
          % (len(files), total / MB, args.shards, args.shard_mb, args.max_workers, args.rounds))
    print('')
    print('| phase | what | seconds | MB/s |')
    print('|---|---|---:|---:|')
    for row in figures['rows']:
        print('| %s | %s | %.2f | %.1f |' % (row['phase'], row['what'], row['seconds'], row['mb_s']))
    print('')
    print('single-core hashlib sha256: %.1f MB/s; %d cores x that = %.1f MB/s; target 0.8x = %.1f MB/s'
          % (single / MB, cores, cores * single / MB, figures['target_verify_mb_s']))
    print('%d threads hashing memory together (no I/O): %.1f MB/s' % (cores, together / MB))
    ratios = (figures['parallel_vs_ceiling'], (par_bytes / par_s) / together, figures['module_vs_hf_download'])
    print('parallel verification reaches %.2f x the cores x single-core figure and %.2f x the all-core figure; module'
          ' download phase is %.2f x as fast as hf download' % ratios)
    if args.json:
        with open(args.json, 'w') as handle:
            json.dump(figures, handle, indent=1)


if __name__ == '__main__':
    main()
