# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Measure per GPU the free memory SGLang would see before loading weights (hardware profile startup_overhead_gib).

Needs only python3 with a CUDA build of torch, and nvidia-smi; no Ansible, no SGLang. Run from anywhere:

    python3 tests/gpu/measure_startup_memory.py --out /tmp/startup-mem               # all visible GPUs
    python3 tests/gpu/measure_startup_memory.py --gpus 0,1,2,3 --world-sizes 1,2,4 --tp 4

What it measures, each step in fresh processes (the parent never imports torch, so it holds no CUDA context):

1. ``nvidia-smi --query-gpu=...memory.total,memory.used,memory.free`` before anything, and the driver version.
2. After the CUDA context only: one process per GPU, ``torch.cuda.set_device`` + ``torch.cuda.mem_get_info()``.
3. After a torch.distributed NCCL init at world size 1, 2, 4 ... (``--world-sizes``): one process per GPU, started
   with the rendezvous variables (MASTER_ADDR/PORT, RANK, WORLD_SIZE, LOCAL_RANK; no torchrun), eager
   ``init_process_group('nccl', device_id=...)`` and one small all-reduce so NCCL really builds its communicator,
   then ``torch.cuda.empty_cache()`` + ``mem_get_info()`` on every rank, the way SGLang's get_available_gpu_memory
   reads "avail mem" (the minimum over the ranks when TP > 1).

While the processes of a step still hold their contexts, nvidia-smi is queried again (memory.used, compute apps).
The planner figure is ``startup_overhead_gib = memory.total (nvidia-smi, MiB / 1024) - free after the NCCL init at
the TP size (GiB)``, per world size; plugins/module_utils/planner/vram_plan.py uses ``memory.total/1024 - startup_overhead_gib``
as the free memory before load when no calibration is given.

Every process started here gets NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1
(NVLink multicast off, forced) and, unless already set, the variables SGLang's _set_envs_and_config sets
(NCCL_CUMEM_ENABLE=0, CUDA_DEVICE_MAX_CONNECTIONS=8, CUDA_MODULE_LOADING=AUTO), and NCCL_DEBUG=INFO with
NCCL_DEBUG_SUBSYS=INIT,ENV unless set (NCCL's "Init COMPLETE" line lands in the JSON). Each step has a hard deadline; a late
process is stopped with SIGTERM, then SIGKILL. Only reads GPU state: never changes clocks, persistence or compute
mode, never resets anything. Writes startup_memory.json (every figure in MiB and GiB, versions, the table) and
startup_memory.md to --out and prints the table. Exit status 0 when every step ran, 1 when one failed or timed out.
"""
import argparse
import csv
import datetime
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SCHEMA_VERSION = 1
MIB = 1 << 20
GIB = 1 << 30
RESULT_MARK = 'STARTUP_MEM_RESULT '
SMI_FIELDS = ('index', 'name', 'pci.bus_id', 'uuid', 'driver_version', 'memory.total', 'memory.used', 'memory.free')
SMI_INT_FIELDS = ('index', 'memory.total', 'memory.used', 'memory.free', 'memory.reserved', 'used_memory', 'pid')
APP_FIELDS = ('pid', 'gpu_bus_id', 'used_memory')
# Forced in every child: NVLink multicast can put shared GPUs out of service and is not what is measured here.
FORCED_ENV = {
    'NCCL_NVLS_ENABLE': '0',
    'TORCH_SYMM_MEM_DISABLE_MULTICAST': '1',
    'NVSHMEM_DISABLE_NVLS': '1',
}
# What SGLang's engine sets before it starts its schedulers (entrypoints/engine.py _set_envs_and_config), unless set.
SGLANG_ENV_DEFAULTS = {
    'NCCL_CUMEM_ENABLE': '0',
    'CUDA_DEVICE_MAX_CONNECTIONS': '8',
    'CUDA_MODULE_LOADING': 'AUTO',
    'OMP_NUM_THREADS': '1',
}
# NCCL's own account of the communicator it built (version, Init COMPLETE, timings) lands in each rank's log tail.
NCCL_LOG_DEFAULTS = {'NCCL_DEBUG': 'INFO', 'NCCL_DEBUG_SUBSYS': 'INIT,ENV'}
REPORTED_ENV = tuple(sorted(set(FORCED_ENV) | set(SGLANG_ENV_DEFAULTS) | set(NCCL_LOG_DEFAULTS) | {
    'CUDA_VISIBLE_DEVICES', 'NCCL_P2P_DISABLE', 'NCCL_P2P_LEVEL', 'NCCL_SHM_DISABLE', 'NCCL_BUFFSIZE',
    'NCCL_MIN_NCHANNELS', 'NCCL_MAX_NCHANNELS', 'PYTORCH_CUDA_ALLOC_CONF', 'NCCL_ALGO', 'NCCL_PROTO'}))
STOP_GRACE_S = 5.0
POLL_S = 0.2
LOG_TAIL = 40
NOISE = re.compile(r'NCCL INFO (Channel \d+/\d+ :|Trees \[)')  # one line per channel: 64 of them say nothing here

_CHILDREN = []


# --------------------------------------------------------------------------------------------------------------
# pure parts (no GPU, no torch): parsing, arithmetic, report
# --------------------------------------------------------------------------------------------------------------

def _smi_value(field, text):
    text = text.strip()
    if text in ('', '[N/A]', 'N/A', '[Not Supported]', '[Unknown Error]'):
        return None
    if field in SMI_INT_FIELDS:
        number = text.split()[0]  # '143771 MiB' when queried without nounits
        try:
            return int(number)
        except ValueError:
            return None
    return text


def parse_smi_csv(text, fields):
    """Rows of ``nvidia-smi --query-...=FIELDS --format=csv[,noheader][,nounits]`` as dicts keyed by FIELDS."""
    rows = []
    for cells in csv.reader(text.splitlines(), skipinitialspace=True):
        if not cells or not ''.join(cells).strip():
            continue
        if len(cells) != len(fields):
            raise ValueError('nvidia-smi line has %d fields, %d asked for: %r' % (len(cells), len(fields), cells))
        if cells[0].strip().split(' ')[0] == fields[0]:
            continue  # the header of --format=csv
        rows.append(dict((field, _smi_value(field, cell)) for field, cell in zip(fields, cells)))
    return rows


def mib(value_bytes):
    return round(value_bytes / float(MIB), 1)


def gib(value_bytes):
    return round(value_bytes / float(GIB), 3)


def overhead_gib(total_mib, free_bytes):
    """startup_overhead_gib as the planner uses it: memory.total (nvidia-smi, MiB) / 1024 - free (bytes) in GiB."""
    return round(total_mib / 1024.0 - free_bytes / float(GIB), 3)


def profile_value(overhead):
    """The figure to write into a hardware profile: rounded up to 0.01 GiB, so the estimate never promises more."""
    return math.ceil(round(overhead * 100, 6)) / 100.0


def default_world_sizes(count):
    """1, 2, 4 ... up to count, and count itself when it is no power of two."""
    sizes, size = [], 1
    while size <= count:
        sizes.append(size)
        size *= 2
    if count >= 1 and count not in sizes:
        sizes.append(count)
    return sizes


def _fig(value_bytes, total_mib=None):
    out = {'bytes': value_bytes, 'mib': mib(value_bytes), 'gib': gib(value_bytes)}
    if total_mib is not None:
        out['overhead_gib'] = overhead_gib(total_mib, value_bytes)
    return out


def summarize(smi_before, contexts, worlds, tp_size=None):
    """Per-GPU and per-world-size figures, and what the planner needs, from the raw step results.

    smi_before: parse_smi_csv rows; contexts: {gpu: context child result}; worlds: {world size: [rank results]}.
    A child result has 'free_bytes' / 'total_bytes' (torch.cuda.mem_get_info) after the step, or 'error'.
    """
    totals = dict((row['index'], row['memory.total']) for row in smi_before)
    gpus = []
    for row in smi_before:
        entry = {'gpu': row['index'], 'name': row['name'], 'pci_bus_id': row['pci.bus_id'],
                 'smi_total_mib': row['memory.total'], 'smi_used_mib': row['memory.used'],
                 'smi_free_mib': row['memory.free'],
                 'smi_total_gib': round(row['memory.total'] / 1024.0, 3) if row['memory.total'] is not None else None}
        ctx = contexts.get(row['index'])
        if ctx and ctx.get('free_bytes') is not None:
            entry['torch_total'] = _fig(ctx['total_bytes'])
            entry['after_context'] = _fig(ctx['free_bytes'], row['memory.total'])
            entry['context_cost_mib'] = round(row['memory.free'] - ctx['free_bytes'] / float(MIB), 1) \
                if row['memory.free'] is not None else None
        elif ctx:
            entry['error'] = ctx.get('error') or 'no result'
        gpus.append(entry)
    per_world = {}
    for world in sorted(worlds):
        ranks = []
        for res in worlds[world]:
            item = {'rank': res.get('rank'), 'gpu': res.get('gpu')}
            total = totals.get(res.get('gpu'))
            if res.get('free_bytes') is None:
                item['error'] = res.get('error') or 'no result'
            else:
                item['after_nccl'] = _fig(res['free_bytes'], total)
                if res.get('free_context_bytes') is not None:
                    item['after_context_same_process'] = _fig(res['free_context_bytes'], total)
                    item['nccl_cost_mib'] = round((res['free_context_bytes'] - res['free_bytes']) / float(MIB), 1)
                for key in ('init_s', 'allreduce_s', 'sum_ok', 'torch_reserved_bytes'):
                    if key in res:
                        item[key] = res[key]
            ranks.append(item)
        good = [r for r in ranks if 'after_nccl' in r]
        entry = {'world_size': world, 'ranks': ranks, 'ok': bool(ranks) and len(good) == len(ranks)
                 and all(r.get('sum_ok', True) for r in good)}
        if entry['ok']:  # a world size with a failed rank gives no figure: its survivors are not what SGLang sees
            low = min(good, key=lambda r: r['after_nccl']['bytes'])
            entry['min_free_after_nccl'] = dict(low['after_nccl'], gpu=low['gpu'])
            entry['startup_overhead_gib'] = max(r['after_nccl']['overhead_gib'] for r in good)
            entry['profile_startup_overhead_gib'] = profile_value(entry['startup_overhead_gib'])
            costs = [r['nccl_cost_mib'] for r in good if 'nccl_cost_mib' in r]
            entry['max_nccl_cost_mib'] = max(costs) if costs else None
        per_world[str(world)] = entry
    planner = {'startup_overhead_gib': dict((k, v.get('startup_overhead_gib')) for k, v in per_world.items()),
               'profile_startup_overhead_gib': dict((k, v.get('profile_startup_overhead_gib'))
                                                    for k, v in per_world.items()),
               'free_memory_before_load_gib': dict((k, v['min_free_after_nccl']['gib']) for k, v in per_world.items()
                                                   if 'min_free_after_nccl' in v),
               'tp_size': tp_size}
    if tp_size is not None:
        at_tp = per_world.get(str(tp_size), {})
        planner['startup_overhead_gib_at_tp'] = at_tp.get('startup_overhead_gib')
        planner['profile_startup_overhead_gib_at_tp'] = at_tp.get('profile_startup_overhead_gib')
        if not at_tp:
            planner['note'] = 'world size %s (the TP size) was not measured' % tp_size
    return {'gpus': gpus, 'worlds': per_world, 'planner': planner}


def _cell(value, fmt='{:,.1f}'):
    return '-' if value is None else fmt.format(value)


def markdown_table(summary, versions=None):
    """The per-figure table and the planner table, as markdown."""
    lines = []
    if versions:
        lines += ['- ' + ', '.join('%s `%s`' % (key, versions[key]) for key in sorted(versions)
                                   if versions[key] is not None), '']
    lines += ['| figure | world size | rank | GPU | free MiB | free GiB | memory.total - free GiB | cost MiB |',
              '|---|---|---|---|---|---|---|---|']
    for entry in summary['gpus']:
        total_mib = entry['smi_total_mib']
        free = entry['smi_free_mib']
        lines.append('| nvidia-smi before (memory.total %s, memory.used %s MiB) | - | - | %s | %s | %s | %s | - |'
                     % (_cell(total_mib, '{:,}'), _cell(entry['smi_used_mib'], '{:,}'), entry['gpu'],
                        _cell(free, '{:,}'), _cell(free / 1024.0 if free is not None else None, '{:.3f}'),
                        _cell((total_mib - free) / 1024.0 if None not in (free, total_mib) else None, '{:.3f}')))
        if 'torch_total' in entry:
            lines.append('| torch mem_get_info total | - | - | %s | %s | %s | %s | - |'
                         % (entry['gpu'], _cell(entry['torch_total']['mib']),
                            _cell(entry['torch_total']['gib'], '{:.3f}'),
                            _cell(round(total_mib / 1024.0 - entry['torch_total']['gib'], 3), '{:.3f}')))
        if 'after_context' in entry:
            ctx = entry['after_context']
            lines.append('| after CUDA context | - | - | %s | %s | %s | %s | %s |'
                         % (entry['gpu'], _cell(ctx['mib']), _cell(ctx['gib'], '{:.3f}'),
                            _cell(ctx['overhead_gib'], '{:.3f}'), _cell(entry.get('context_cost_mib'))))
        elif 'error' in entry:
            lines.append('| after CUDA context: FAILED (%s) | - | - | %s | - | - | - | - |'
                         % (entry['error'].replace('|', '/')[:120], entry['gpu']))
    for key in sorted(summary['worlds'], key=int):
        world = summary['worlds'][key]
        for rank in world['ranks']:
            if 'after_nccl' not in rank:
                lines.append('| after NCCL init + all-reduce: FAILED (%s) | %s | %s | %s | - | - | - | - |'
                             % (str(rank.get('error')).replace('|', '/')[:120], key, rank['rank'], rank['gpu']))
                continue
            fig = rank['after_nccl']
            lines.append('| after NCCL init + all-reduce | %s | %s | %s | %s | %s | %s | %s |'
                         % (key, rank['rank'], rank['gpu'], _cell(fig['mib']), _cell(fig['gib'], '{:.3f}'),
                            _cell(fig['overhead_gib'], '{:.3f}'), _cell(rank.get('nccl_cost_mib'))))
    lines += ['', '"cost" is the drop in free memory from the step before (nvidia-smi memory.free before anything; '
                  'the CUDA context in the same rank process for NCCL).', '',
              '| world size (= TP) | ranks ok | min free after NCCL GiB | startup_overhead_gib | '
              'for the profile (rounded up) | max NCCL cost MiB |',
              '|---|---|---|---|---|---|']
    for key in sorted(summary['worlds'], key=int):
        world = summary['worlds'][key]
        low = world.get('min_free_after_nccl') or {}
        lines.append('| %s | %s | %s | %s | %s | %s |'
                     % (key, 'yes' if world['ok'] else 'NO', _cell(low.get('gib'), '{:.3f}'),
                        _cell(world.get('startup_overhead_gib'), '{:.3f}'),
                        _cell(world.get('profile_startup_overhead_gib'), '{:.2f}'),
                        _cell(world.get('max_nccl_cost_mib'))))
    return '\n'.join(lines) + '\n'


def build_report(meta, smi_before, contexts, worlds, tp_size=None, extra=None):
    """The JSON document: meta (date, versions, env, argv), the raw steps, the summary and the markdown table."""
    summary = summarize(smi_before, contexts, worlds, tp_size)
    report = {'schema': SCHEMA_VERSION, 'meta': meta, 'smi_before': smi_before,
              'raw': {'contexts': dict((str(k), v) for k, v in contexts.items()),
                      'worlds': dict((str(k), v) for k, v in worlds.items())},
              'summary': summary}
    report.update(extra or {})
    report['table_md'] = markdown_table(summary, meta.get('versions'))
    return report


# --------------------------------------------------------------------------------------------------------------
# parent (stdlib only): nvidia-smi, spawning, deadlines
# --------------------------------------------------------------------------------------------------------------

def run_smi(argv, timeout=60):
    if not shutil.which(argv[0]):
        return {'argv': argv, 'rc': None, 'stdout': '', 'stderr': '%s not found' % argv[0]}
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        return {'argv': argv, 'rc': proc.returncode, 'stdout': proc.stdout, 'stderr': proc.stderr}
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {'argv': argv, 'rc': None, 'stdout': '', 'stderr': str(exc)}


def smi_gpus():
    raw = run_smi(['nvidia-smi', '--query-gpu=' + ','.join(SMI_FIELDS), '--format=csv,noheader,nounits'])
    rows = parse_smi_csv(raw['stdout'], SMI_FIELDS) if raw['rc'] == 0 else []
    return rows, raw


def smi_reserved():
    """{index: memory.reserved MiB} (what the driver keeps: memory.total - torch's total), {} where unsupported."""
    raw = run_smi(['nvidia-smi', '--query-gpu=index,memory.reserved', '--format=csv,noheader,nounits'])
    try:
        rows = parse_smi_csv(raw['stdout'], ('index', 'memory.reserved')) if raw['rc'] == 0 else []
    except ValueError:
        rows = []
    return dict((row['index'], row['memory.reserved']) for row in rows), raw


def smi_apps():
    raw = run_smi(['nvidia-smi', '--query-compute-apps=' + ','.join(APP_FIELDS), '--format=csv,noheader,nounits'])
    try:
        rows = parse_smi_csv(raw['stdout'], APP_FIELDS) if raw['rc'] == 0 else []
    except ValueError:
        rows = []
    return rows, raw


def child_env(base=None):
    env = dict(os.environ if base is None else base)
    for key, value in list(SGLANG_ENV_DEFAULTS.items()) + list(NCCL_LOG_DEFAULTS.items()):
        env.setdefault(key, value)
    env.update(FORCED_ENV)
    env['PYTHONUNBUFFERED'] = '1'
    return env


def free_port():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]
    finally:
        sock.close()


def _spawn(argv, env, log_path):
    with open(log_path, 'wb') as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                close_fds=True)
    _CHILDREN.append(proc)
    return proc


def _stop(proc, grace=STOP_GRACE_S):
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
            how = 'unkillable'  # stuck in the driver (D state): reported, never "fixed" by a reset
    return how


def _on_signal(signum, frame):  # pylint: disable=unused-argument
    for proc in _CHILDREN:
        if proc.poll() is None:
            proc.kill()
    sys.stderr.write('measure_startup_memory: stopped by signal %d\n' % signum)
    os._exit(124)  # pylint: disable=protected-access


def _read_log(path):
    try:
        with open(path, 'rb') as handle:
            return handle.read().decode('utf-8', 'replace').splitlines()
    except OSError:
        return []


def _result_of(lines):
    for line in reversed(lines):
        pos = line.find(RESULT_MARK)
        if pos >= 0:
            try:
                return json.loads(line[pos + len(RESULT_MARK):])
            except ValueError:
                return None
    return None


def run_step(name, specs, env, deadline_s, hold_s, workdir, log):
    """Start one child per spec (argv, gpu, rank); wait for all results under one deadline; query nvidia-smi while
    they hold their contexts; release them. Returns (results, step record)."""
    release = os.path.join(workdir, name + '.release')
    started = time.monotonic()
    children = []
    for spec in specs:
        log_path = os.path.join(workdir, '%s.rank%d.log' % (name, spec['rank']))
        argv = spec['argv'] + ['--release-file', release, '--hold-timeout', str(hold_s)]
        if shutil.which('timeout'):  # a second, outer limit (coreutils), should this parent itself be killed
            argv = ['timeout', '--kill-after=10', str(int(deadline_s + hold_s + 30))] + argv
        children.append(dict(spec, proc=_spawn(argv, spec.get('env', env), log_path), log_path=log_path))
    timed_out = False
    while True:
        waiting = [c for c in children if c['proc'].poll() is None and _result_of(_read_log(c['log_path'])) is None]
        if not waiting:
            break
        if time.monotonic() - started > deadline_s:
            timed_out = True
            break
        time.sleep(POLL_S)
    held_gpus, raw_gpus = smi_gpus()
    held_apps, raw_apps = smi_apps()
    with open(release, 'w') as handle:
        handle.write('release\n')
    end_by = time.monotonic() + (2.0 if timed_out else 30.0)  # late ones are stopped below
    while any(c['proc'].poll() is None for c in children) and time.monotonic() < end_by:
        time.sleep(POLL_S)
    results, record = [], {'name': name, 'timed_out': timed_out, 'deadline_s': deadline_s, 'children': []}
    for child in children:
        ended = _stop(child['proc'])
        lines = _read_log(child['log_path'])
        result = _result_of(lines) or {'rank': child['rank'], 'gpu': child['gpu'],
                                       'error': 'no result (%s, rc=%s)%s' % (
                                           'deadline %ss' % deadline_s if timed_out else 'exited',
                                           child['proc'].returncode, ': ' + ' | '.join(lines[-3:]) if lines else '')}
        result['rc'] = child['proc'].returncode
        result['ended'] = ended
        result['log_tail'] = [line for line in lines if RESULT_MARK not in line and not NOISE.search(line)][-LOG_TAIL:]
        results.append(result)
        record['children'].append({'rank': child['rank'], 'gpu': child['gpu'], 'rc': child['proc'].returncode,
                                   'ended': ended})
    record['elapsed_s'] = round(time.monotonic() - started, 2)
    record['smi_held'] = held_gpus
    record['smi_held_apps'] = held_apps
    record['smi_held_raw'] = [raw_gpus['stdout'], raw_apps['stdout']]
    states = ', '.join('gpu%s=%s' % (r.get('gpu'), 'FAILED' if r.get('free_bytes') is None else 'ok') for r in results)
    log('  %s: %s in %.1fs%s' % (name, states, record['elapsed_s'], ' (deadline hit)' if timed_out else ''))
    return results, record


def read_driver_version(path='/sys/module/nvidia/version'):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


def parent(args):
    out = args.out
    os.makedirs(out, exist_ok=True)
    lines = []

    def log(text):
        lines.append(text)
        sys.stdout.write(text + '\n')
        sys.stdout.flush()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    started = time.monotonic()
    smi_before, raw_before = smi_gpus()
    if not smi_before:
        log('nvidia-smi gave no GPUs: rc=%s %s' % (raw_before['rc'], raw_before['stderr'].strip()))
        return 1
    by_index = dict((row['index'], row) for row in smi_before)
    gpus = [int(g) for g in args.gpus.split(',') if g.strip()] if args.gpus else sorted(by_index)
    unknown = [g for g in gpus if g not in by_index]
    if unknown:
        log('unknown GPU index %s (nvidia-smi lists %s)' % (unknown, sorted(by_index)))
        return 1
    smi_before = [by_index[g] for g in gpus]
    reserved, raw_reserved = smi_reserved()
    worlds = [int(w) for w in args.world_sizes.split(',') if w.strip()] if args.world_sizes \
        else default_world_sizes(len(gpus))
    skipped = [w for w in worlds if w > len(gpus) or w < 1]
    worlds = [w for w in worlds if w not in skipped]
    tp_size = args.tp if args.tp else max(worlds or [1])
    env = child_env()
    meta = {
        'date_utc': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ'),
        'argv': sys.argv, 'python': args.python, 'kernel': os.uname().release, 'host': os.uname().nodename,
        'gpus': gpus, 'world_sizes': worlds, 'world_sizes_skipped': skipped, 'tp_size': tp_size,
        'env': dict((k, env.get(k)) for k in REPORTED_ENV if env.get(k) is not None),
        'versions': {'driver': smi_before[0]['driver_version'], 'driver_module': read_driver_version()},
        'allreduce_mib': args.allreduce_mib,
    }
    log('# startup memory: GPUs %s, world sizes %s%s' % (gpus, worlds,
                                                         ' (skipped %s: not enough GPUs)' % skipped if skipped else ''))
    workdir = tempfile.mkdtemp(prefix='startup-mem-')
    me = os.path.abspath(__file__)
    steps = []
    ok = True
    contexts, world_results = {}, {}
    try:
        specs = [{'rank': i, 'gpu': g, 'argv': [args.python, me, '--role', 'context', '--gpu', str(g)]}
                 for i, g in enumerate(gpus)]
        results, record = run_step('context', specs, env, args.startup_timeout, args.hold_timeout, workdir, log)
        steps.append(record)
        contexts = dict((r.get('gpu'), r) for r in results)
        ok = ok and all(r.get('free_bytes') is not None for r in results)
        first = next((r for r in results if r.get('versions')), None)
        if first:
            meta['versions'].update(first['versions'])
        for world in worlds:
            port = free_port()
            specs = []
            for rank, gpu in enumerate(gpus[:world]):
                rank_env = dict(env, MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port), RANK=str(rank),
                                WORLD_SIZE=str(world), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world))
                specs.append({'rank': rank, 'gpu': gpu, 'env': rank_env,
                              'argv': [args.python, me, '--role', 'rank', '--gpu', str(gpu),
                                       '--nccl-timeout', str(args.nccl_timeout),
                                       '--allreduce-mib', str(args.allreduce_mib)]})
            results, record = run_step('world%d' % world, specs, env, args.startup_timeout + args.nccl_timeout,
                                       args.hold_timeout, workdir, log)
            steps.append(record)
            world_results[world] = results
            ok = ok and all(r.get('free_bytes') is not None and r.get('sum_ok') for r in results)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    smi_after, raw_after = smi_gpus()
    report = build_report(meta, smi_before, contexts, world_results, tp_size,
                          extra={'steps': steps, 'smi_after': [r for r in smi_after if r['index'] in gpus],
                                 'smi_reserved_mib': dict((str(k), v) for k, v in reserved.items()),
                                 'smi_raw': {'before': raw_before, 'reserved': raw_reserved, 'after': raw_after},
                                 'log': lines, 'wall_s': round(time.monotonic() - started, 1), 'all_ok': ok})
    with open(os.path.join(out, args.json_name), 'w') as handle:
        json.dump(report, handle, indent=1, sort_keys=True)
    with open(os.path.join(out, os.path.splitext(args.json_name)[0] + '.md'), 'w') as handle:
        handle.write('# Start-up memory, %s\n\n' % meta['date_utc'] + report['table_md'])
    log('')
    log(report['table_md'])
    log('ALL STEPS RAN' if ok else 'NOT ALL STEPS RAN')
    return 0 if ok else 1


# --------------------------------------------------------------------------------------------------------------
# children (torch)
# --------------------------------------------------------------------------------------------------------------

def _emit(result):
    sys.stdout.write(RESULT_MARK + json.dumps(result, sort_keys=True) + '\n')
    sys.stdout.flush()


def _hold(args):
    """Keep the context alive until the parent has queried nvidia-smi (bounded)."""
    end = time.monotonic() + args.hold_timeout
    while args.release_file and not os.path.exists(args.release_file) and time.monotonic() < end:
        time.sleep(0.1)


def _cuda_driver_api_version():
    try:
        import ctypes  # pylint: disable=import-outside-toplevel
        lib = ctypes.CDLL('libcuda.so.1')
        value = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(value)) == 0:
            return value.value
    except OSError:
        pass
    return None


def _versions(torch):
    nccl = None
    try:
        nccl = '.'.join(str(part) for part in torch.cuda.nccl.version())
    except Exception:  # pylint: disable=broad-except
        pass
    return {'torch': torch.__version__, 'torch_cuda': torch.version.cuda, 'nccl': nccl,
            'cuda_driver_api': _cuda_driver_api_version(), 'python_version': sys.version.split()[0]}


def _context_child(args):
    result = {'rank': 0, 'gpu': args.gpu}
    try:
        import torch  # pylint: disable=import-outside-toplevel,import-error
        torch.cuda.set_device(args.gpu)
        free, total = torch.cuda.mem_get_info(args.gpu)
        props = torch.cuda.get_device_properties(args.gpu)
        result.update({'free_bytes': free, 'total_bytes': total, 'device_name': props.name,
                       'capability': '%d.%d' % (props.major, props.minor), 'sm_count': props.multi_processor_count,
                       'versions': _versions(torch)})
    except Exception as exc:  # pylint: disable=broad-except
        result['error'] = '%s: %s' % (type(exc).__name__, exc)
        _emit(result)
        return 2
    _emit(result)
    _hold(args)
    return 0


def _rank_child(args):
    rank, world = int(os.environ['RANK']), int(os.environ['WORLD_SIZE'])
    result = {'rank': rank, 'gpu': args.gpu, 'world': world}
    dist = None
    try:
        import torch  # pylint: disable=import-outside-toplevel,import-error
        dist = torch.distributed
        torch.cuda.set_device(args.gpu)
        device = torch.device('cuda', args.gpu)
        result['free_context_bytes'] = torch.cuda.mem_get_info(args.gpu)[0]
        start = time.perf_counter()
        dist.init_process_group('nccl', init_method='env://', rank=rank, world_size=world, device_id=device,
                                timeout=datetime.timedelta(seconds=max(5, args.nccl_timeout)))
        result['init_s'] = round(time.perf_counter() - start, 3)
        tensor = torch.full((args.allreduce_mib * MIB // 4,), float(rank + 1), dtype=torch.float32, device=device)
        start = time.perf_counter()
        dist.all_reduce(tensor)
        torch.cuda.synchronize(device)
        result['allreduce_s'] = round(time.perf_counter() - start, 3)
        result['sum_ok'] = bool(torch.all(tensor == float(world * (world + 1) // 2)).item())
        del tensor
        torch.cuda.empty_cache()  # as SGLang's get_available_gpu_memory(empty_cache=True)
        result['free_bytes'], result['total_bytes'] = torch.cuda.mem_get_info(args.gpu)
        result['torch_reserved_bytes'] = torch.cuda.memory_reserved(device)
    except Exception as exc:  # pylint: disable=broad-except
        result['error'] = '%s: %s' % (type(exc).__name__, exc)
        _emit(result)
        return 2
    _emit(result)
    _hold(args)
    if dist is not None:
        dist.destroy_process_group()
    return 0


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', default=os.environ.get('OUT') or 'startup-memory-out')
    parser.add_argument('--json-name', default='startup_memory.json')
    parser.add_argument('--gpus', default='', help='comma-separated nvidia-smi indexes (default: all)')
    parser.add_argument('--world-sizes', default='', help='default: 1, 2, 4 ... up to the number of GPUs')
    parser.add_argument('--tp', type=int, default=0, help='TP size for the planner figure (default: largest world)')
    parser.add_argument('--allreduce-mib', type=int, default=1)
    parser.add_argument('--startup-timeout', type=int, default=120, help='s for import torch + CUDA context')
    parser.add_argument('--nccl-timeout', type=int, default=120, help='s for NCCL init + all-reduce, on top')
    parser.add_argument('--hold-timeout', type=int, default=30, help='s a child keeps its context for nvidia-smi')
    parser.add_argument('--python', default=sys.executable, help='the python with torch, for the children')
    parser.add_argument('--role', choices=('parent', 'context', 'rank'), default='parent', help=argparse.SUPPRESS)
    parser.add_argument('--gpu', type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument('--release-file', default='', help=argparse.SUPPRESS)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.role == 'context':
        return _context_child(args)
    if args.role == 'rank':
        return _rank_child(args)
    return parent(args)


if __name__ == '__main__':
    sys.exit(main())
