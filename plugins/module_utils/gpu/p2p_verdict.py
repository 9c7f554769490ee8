# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure logic of llmops.inference.gpu_p2p_check: NCCL_DEBUG=INFO parsing, phase summaries, the verdict.

Stdlib only and free of Ansible imports, so tests/gpu/run_p2p_check.py can use it on a GPU machine with nothing
but python3 + torch. The GPU work itself is in p2p_worker.py; this file never touches a GPU.

Verdicts:
  p2p_ok                 P2P copies bit-exact on every ordered pair and NCCL init + all-reduce correct in time, with
                         P2P allowed.
  use_nccl_p2p_disable   the P2P-allowed phase corrupted, failed or hung, and NCCL with NCCL_P2P_DISABLE=1 was correct.
  nccl_broken            both phases failed (or the second was not allowed to run).

Multi-node mode (one run on every node of a TP group at once, p2p_worker --nnodes):
  nodes_ok               this node's ranks joined the rendezvous at --dist-init-addr and one all-reduce over every
                         node's ranks summed exactly, in time.
  nodes_broken           anything else (the reason names the stage: rendezvous, communicator init, all-reduce).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

VERDICTS = ('p2p_ok', 'use_nccl_p2p_disable', 'nccl_broken')
NODE_VERDICTS = ('nodes_ok', 'nodes_broken')
BACKENDS = ('nccl', 'gloo')
FAULTS = ('none', 'corrupt_copy', 'corrupt_allreduce', 'hang_nccl')
MAX_EVIDENCE = 60

# "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM"            (NCCL 2.28.9, P2P allowed, captured)
# "Channel 00 : 0[0] -> 1[1] via SHM/direct/direct"      (NCCL 2.28.9, NCCL_P2P_DISABLE=1, captured)
# "Channel 00/0 : 0[3000] -> 1[4000] via P2P/IPC/read"   (older NCCL prints the bus id in brackets)
# "Channel 00/0 : 1[1] -> 0[0] [receive] via NET/Socket/0"
TRANSPORT_RE = re.compile(r'Channel (\d+)(?:/\d+)? : (\d+)\[([^\]]*)\] -> (\d+)\[([^\]]*)\] '
                          r'(?:\[(send|receive)\] )?via (.+?)\s*$')
NCCL_VERSION_RE = re.compile(r'NCCL version (\S+)')
CUDA_DRIVER_RE = re.compile(r'cudaDriverVersion (\d+)')
ENV_SET_RE = re.compile(r'(NCCL_\w+) set by environment to (\S+?)\.?\s*$')
INIT_TIMINGS_RE = re.compile(r'Init timings - \w+: rank (\d+) nranks (\d+) total ([\d.]+)')
P2P_PROBLEM_RE = re.compile(r'Could not enable P2P|P2P is disabled|peer access|failed to extend /dev/shm|'
                            r'Cuda failure|unhandled cuda error', re.IGNORECASE)
ERROR_RE = re.compile(r'Traceback|Error\b|Error:|Watchdog caught|timed out|Timed out|Timeout|Aborted|'
                      r'Segmentation fault|terminate called')
STAGE_WORDS = {
    None: 'before starting',
    'start': 'starting (import torch, CUDA context)',
    'init_start': 'NCCL communicator init',
    'init_done': 'after NCCL init',
    'fault_hang': 'the injected hang (test hook)',
    'allreduce_start': 'the all-reduce',
    'allreduce_done': 'the sum check',
    'bench_done': 'teardown',
    'done': 'exit',
}


def _nccl_payload(line):
    """Text after 'NCCL INFO ' / 'NCCL WARN ', or None for a non-NCCL line."""
    for mark in (' NCCL INFO ', ' NCCL WARN '):
        pos = line.find(mark)
        if pos >= 0:
            return line[pos + len(mark):]
    return None


def parse_nccl_log(lines):
    """Digest NCCL_DEBUG=INFO output (any mix of ranks) into versions, transports, timings, warnings."""
    info = {
        'nccl_version': None,
        'cuda_driver_version': None,
        'env_set': {},
        'transports': [],
        'transport_families': [],
        'edges': [],
        'init_complete': 0,
        'init_timings_s': {},
        'warnings': [],
        'p2p_problems': [],
        'errors': [],
        'evidence': {'env': [], 'transport': [], 'timing': []},
    }
    seen_edges = {}
    for raw in lines:
        line = raw.rstrip('\n')
        payload = _nccl_payload(line)
        if payload is None:
            if ERROR_RE.search(line) and 'UserWarning' not in line:
                info['errors'].append(line.strip())
            continue
        if ' NCCL WARN ' in line:
            info['warnings'].append(line)
        match = NCCL_VERSION_RE.search(payload)
        if match and info['nccl_version'] is None:
            info['nccl_version'] = match.group(1)
        match = CUDA_DRIVER_RE.search(payload)
        if match and info['cuda_driver_version'] is None:
            info['cuda_driver_version'] = int(match.group(1))
        match = ENV_SET_RE.search(payload)
        if match:
            if match.group(1) not in info['env_set']:
                info['evidence']['env'].append(line)
            info['env_set'][match.group(1)] = match.group(2)
        match = TRANSPORT_RE.search(payload)
        if match:
            src, dst, transport = int(match.group(2)), int(match.group(4)), match.group(7)
            key = (src, dst, transport)
            if key not in seen_edges:
                seen_edges[key] = 0
                info['evidence']['transport'].append(line)
            seen_edges[key] += 1
        if 'Init COMPLETE' in payload:
            info['init_complete'] += 1
        match = INIT_TIMINGS_RE.search(payload)
        if match:
            info['init_timings_s'][int(match.group(1))] = float(match.group(3))
            info['evidence']['timing'].append(line)
        if P2P_PROBLEM_RE.search(payload):
            info['p2p_problems'].append(line)
    info['edges'] = [{'src_rank': k[0], 'dst_rank': k[1], 'transport': k[2], 'channels': n}
                     for k, n in sorted(seen_edges.items())]
    info['transports'] = sorted(set(k[2] for k in seen_edges))
    info['transport_families'] = sorted(set(t.split('/')[0] for t in info['transports']))
    return info


def parse_worker_stdout(stdout):
    """The worker prints one JSON document (the last '{' line wins, should anything else be printed)."""
    for line in reversed((stdout or '').splitlines()):
        line = line.strip()
        if line.startswith('{'):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def _pair_label(test):
    return 'GPU %s->%s %d MiB %s' % (test['src'], test['dst'], test['size_mib'], test['method'])


def _copy_problems(copy, copy_timeout):
    problems = []
    for test in copy.get('tests') or []:
        if test.get('ok'):
            continue
        text = ('%s: CORRUPT in %d of %d copies (src checksum %s, dst %s)'
                % (_pair_label(test), test.get('bad_reps', 0), test.get('reps', 0), test.get('src_checksum'),
                   ','.join(c for c in test.get('dst_checksums', []) if c != test.get('src_checksum'))))
        if test.get('mismatched_elements') is not None:
            text += '; %d int32 element(s) differ' % test['mismatched_elements']
            if test.get('first_mismatch_index') is not None:
                text += ', first at index %d (expected %s, got %s)' % (
                    test['first_mismatch_index'], test.get('expected'), test.get('got'))
        if test.get('fault_injected'):
            text += ' [fault injected by the test hook]'
        problems.append(text)
    if copy.get('timed_out'):
        flight = copy.get('in_flight')
        where = (' while copying %s' % _pair_label(flight)) if flight else ''
        problems.append('the copy test did not finish within %ss%s; the child was %s'
                        % (copy_timeout, where, copy.get('ended')))
    if copy.get('error'):
        problems.append(copy['error'])
    elif copy.get('rc') not in (0, None) and not copy.get('timed_out'):
        problems.append('the copy child exited with rc=%s: %s' % (copy.get('rc'), ' | '.join(copy.get('log_tail', [])[-3:])))
    return problems


def _rank_problems(rank, nccl_timeout, cpu=False):
    label = 'rank %d (%s)' % (rank['rank'], 'CPU, gloo' if cpu else 'GPU %d' % rank['gpu'])
    stage = STAGE_WORDS.get(rank.get('last_stage'), rank.get('last_stage'))
    result = rank.get('result') or {}
    problems = []
    if rank.get('timed_out'):
        problems.append('%s did not finish within the %ss NCCL limit: stuck in %s; it was %s'
                        % (label, nccl_timeout, stage, rank.get('ended')))
    elif rank.get('stopped') in ('peer_failed', 'peer_timed_out'):
        problems.append('%s was stopped in %s after a peer rank failed; it was %s' % (label, stage, rank.get('ended')))
    elif rank.get('rc') != 0:
        problems.append('%s exited with rc=%s in %s' % (label, rank.get('rc'), stage))
    if result.get('error'):
        problems.append('%s: %s' % (label, result['error']))
    if result and result.get('sum_ok') is False:
        text = ('%s: all-reduce result wrong in %d of %d elements'
                % (label, result.get('mismatched_elements', 0), result.get('elements', 0)))
        if result.get('first_mismatch_index') is not None:
            text += ', first at index %d (expected %s, got %s)' % (
                result['first_mismatch_index'], result.get('expected'), result.get('got'))
        if result.get('fault_injected'):
            text += ' [fault injected by the test hook]'
        problems.append(text)
    if result and result.get('sum_ok') and nccl_timeout:
        took = (result.get('init_s') or 0) + (result.get('allreduce_s') or 0)
        if took > nccl_timeout:
            problems.append('%s: NCCL init + all-reduce took %.1fs, over the %ss limit' % (label, took, nccl_timeout))
    if not problems and not result.get('sum_ok'):
        problems.append('%s reported no result (rc=%s, last stage %s)' % (label, rank.get('rc'), stage))
    return problems


def summarize_phase(doc, rc=0, label=None):
    """Turn one worker run (parsed JSON or None) into {'ok', 'problems', 'evidence', 'pairs', 'transports', ...}."""
    phase = label or (doc or {}).get('phase') or 'unknown'
    summary = {'phase': phase, 'ran': True, 'ok': False, 'copy_ok': None, 'nccl_ok': False, 'problems': [],
               'evidence': [], 'pairs': [], 'transports': [], 'transport_families': [], 'init_s': None,
               'nccl_init_total_s': None, 'allreduce_s': None, 'algbw_gbps': None, 'busbw_gbps': None,
               'nccl_version': None, 'p2p_disable_env': None, 'fatal': None, 'rc': rc}
    if doc is None:
        if rc in (124, 137):
            summary['problems'].append('the worker was killed by the outer timeout (rc=%s) and printed no result' % rc)
        else:
            summary['problems'].append('the worker printed no result (rc=%s)' % rc)
        return summary
    options = doc.get('options') or {}
    copy_timeout = options.get('copy_timeout')
    nccl_timeout = options.get('nccl_timeout')
    if doc.get('fatal'):
        summary['fatal'] = doc['fatal']
        summary['problems'].append(doc['fatal'])
        return summary
    if doc.get('terminated_by_signal'):
        summary['problems'].append('the worker was stopped by signal %s (outer timeout) before it finished'
                                   % doc['terminated_by_signal'])
    copy = doc.get('copy') or {}
    problems = []
    if copy.get('ran'):
        copy_problems = _copy_problems(copy, copy_timeout)
        summary['copy_ok'] = not copy_problems
        problems.extend(copy_problems)
    for test in copy.get('tests') or []:
        summary['pairs'].append(dict((k, test.get(k)) for k in (
            'src', 'dst', 'size_mib', 'method', 'peer_access', 'ok', 'gbps', 'reps', 'bad_reps', 'src_checksum',
            'dst_checksums', 'mismatched_elements', 'first_mismatch_index', 'fault_injected')))
    nccl = doc.get('nccl')
    lines = []
    if nccl is None:
        problems.append('the NCCL step did not run')
    else:
        rank_problems = []
        for rank in nccl.get('ranks') or []:
            rank_problems.extend(_rank_problems(rank, nccl_timeout, nccl.get('backend') == 'gloo'))
            lines.extend(rank.get('log') or [])
        summary['nccl_ok'] = not rank_problems and bool(nccl.get('ranks'))
        problems.extend(rank_problems)
        results = [r.get('result') or {} for r in nccl.get('ranks') or []]
        inits = [r['init_s'] for r in results if r.get('init_s') is not None]
        reduces = [r['allreduce_s'] for r in results if r.get('allreduce_s') is not None]
        summary['init_s'] = max(inits) if inits else None
        summary['allreduce_s'] = max(reduces) if reduces else None
        algbw = [r['algbw_gbps'] for r in results if r.get('algbw_gbps') is not None]
        busbw = [r['busbw_gbps'] for r in results if r.get('busbw_gbps') is not None]
        summary['algbw_gbps'] = min(algbw) if algbw else None
        summary['busbw_gbps'] = min(busbw) if busbw else None
    log = parse_nccl_log(lines)
    summary['log'] = log
    summary['transports'] = log['transports']
    summary['transport_families'] = log['transport_families']
    summary['nccl_version'] = log['nccl_version'] or (doc.get('probe') or {}).get('nccl_version')
    summary['p2p_disable_env'] = log['env_set'].get('NCCL_P2P_DISABLE')
    if log['init_timings_s']:
        summary['nccl_init_total_s'] = max(log['init_timings_s'].values())
    if summary['nccl_ok'] and log['init_complete'] == 0 and not doc.get('simulated') and \
            (nccl or {}).get('backend') != 'gloo':
        problems.append('no rank logged NCCL "Init COMPLETE" although the all-reduce returned')
        summary['nccl_ok'] = False
    summary['problems'].extend(problems)
    summary['ok'] = not summary['problems'] and summary['copy_ok'] is not False and summary['nccl_ok']
    summary['evidence'] = _phase_evidence(phase, summary, log)
    return summary


def _phase_evidence(phase, summary, log):
    tag = '[%s] ' % phase
    out = [tag + p for p in summary['problems']]
    out += [tag + line for line in log['evidence']['env'] if 'NCCL_P2P' in line or 'NCCL_SHM' in line]
    out += [tag + line for line in log['evidence']['transport'][:8]]
    out += [tag + line for line in log['evidence']['timing'][:8]]
    out += [tag + line for line in log['warnings'][:20]]
    out += [tag + line for line in log['p2p_problems'][:10] if line not in log['warnings']]
    out += [tag + line for line in log['errors'][-10:]]
    return out


def _transport_text(summary):
    return ', '.join(summary['transports']) if summary['transports'] else 'no transport line logged'


def _timing_text(summary):
    parts = []
    if summary.get('init_s') is not None:
        parts.append('init %.2fs' % summary['init_s'])
    if summary.get('allreduce_s') is not None:
        parts.append('first all-reduce %.2fs' % summary['allreduce_s'])
    if summary.get('busbw_gbps') is not None:
        parts.append('busbw %.1f GB/s' % summary['busbw_gbps'])
    return ', '.join(parts)


def _problems_text(problems, limit=3):
    text = '; '.join(problems[:limit])
    if len(problems) > limit:
        text += '; and %d more problem(s) (see evidence)' % (len(problems) - limit)
    return text


def decide(phase_a, phase_b=None):
    """Verdict from the P2P-allowed summary and the optional NCCL_P2P_DISABLE=1 summary."""
    notes = []
    if phase_a['ok']:
        verdict = 'p2p_ok'
        pairs = sorted(set((p['src'], p['dst']) for p in phase_a['pairs']))
        sizes = sorted(set(p['size_mib'] for p in phase_a['pairs']))
        reason = ('with P2P allowed, copies were bit-exact on all %d ordered GPU pairs (%s MiB) and NCCL initialised and '
                  'all-reduced correctly over %s (%s)'
                  % (len(pairs), '/'.join(str(s) for s in sizes), _transport_text(phase_a), _timing_text(phase_a)))
        if phase_a['transports'] and 'P2P' not in phase_a['transport_families']:
            notes.append('NCCL used no P2P transport although P2P was allowed')
        if phase_a.get('p2p_disable_env') not in (None, '0'):
            notes.append('NCCL_P2P_DISABLE=%s reached NCCL anyway (nccl.conf?), so NCCL P2P was not exercised'
                         % phase_a['p2p_disable_env'])
        no_peer = sorted(set('%s->%s' % (p['src'], p['dst']) for p in phase_a['pairs'] if p.get('peer_access') is False))
        if no_peer:
            notes.append('CUDA peer access is not available for %s: those copies went through host memory'
                         % ', '.join(no_peer))
    elif phase_b is None:
        verdict = 'nccl_broken'
        reason = ('with P2P allowed: %s; the NCCL_P2P_DISABLE=1 phase was not run'
                  % _problems_text(phase_a['problems']))
    elif phase_b['ok']:
        verdict = 'use_nccl_p2p_disable'
        reason = ('with P2P allowed: %s. With NCCL_P2P_DISABLE=1, NCCL initialised and all-reduced correctly over %s (%s): '
                  'run the server with NCCL_P2P_DISABLE=1 and without custom all-reduce (it uses CUDA IPC P2P regardless)'
                  % (_problems_text(phase_a['problems']), _transport_text(phase_b), _timing_text(phase_b)))
    else:
        verdict = 'nccl_broken'
        reason = ('with P2P allowed: %s. With NCCL_P2P_DISABLE=1: %s'
                  % (_problems_text(phase_a['problems']), _problems_text(phase_b['problems'])))
    if notes:
        reason += ' (note: %s)' % '; '.join(notes)
    evidence = list(phase_a['evidence'])
    if phase_b is not None:
        evidence += phase_b['evidence']
    if len(evidence) > MAX_EVIDENCE:
        evidence = evidence[:MAX_EVIDENCE - 1] + ['[... %d more evidence lines ...]' % (len(evidence) - MAX_EVIDENCE + 1)]
    return {
        'verdict': verdict,
        'reason': reason,
        'notes': notes,
        'nccl_p2p_disable': verdict == 'use_nccl_p2p_disable',
        'recommended_env': {'NCCL_P2P_DISABLE': '1'} if verdict == 'use_nccl_p2p_disable' else {},
        'recommended_sglang_args': ['--disable-custom-all-reduce'] if verdict == 'use_nccl_p2p_disable' else [],
        'evidence': evidence,
    }


def worker_args(options, p2p_disable, skip_copy=False):
    """CLI arguments of p2p_worker.py for one phase (no interpreter, no path)."""
    args = ['--sizes-mib', ','.join(str(int(s)) for s in options.get('sizes_mib') or [1, 64, 512]),
            '--allreduce-mib', str(int(options.get('allreduce_mib', 256))),
            '--copy-timeout', str(int(options.get('copy_timeout', 300))),
            '--nccl-timeout', str(int(options.get('nccl_timeout', 60))),
            '--startup-timeout', str(int(options.get('startup_timeout', 120))),
            '--fault', options.get('fault_injection') or 'none']
    if options.get('gpus'):
        args += ['--gpus', ','.join(str(int(g)) for g in options['gpus'])]
    if p2p_disable:
        args.append('--p2p-disable')
    if skip_copy:
        args.append('--skip-copy')
    if int(options.get('nnodes') or 1) > 1:
        args += ['--nnodes', str(int(options['nnodes'])), '--node-rank', str(int(options['node_rank'])),
                 '--dist-init-addr', str(options['dist_init_addr']), '--backend', options.get('backend') or 'nccl']
    return args


def outer_timeout(options, skip_copy=False):
    """Hard wall-clock limit for one worker run: every inner deadline plus the kill graces (SIGTERM->SIGKILL)."""
    total = int(options.get('startup_timeout', 120)) * 2 + int(options.get('nccl_timeout', 60)) + 30
    if not skip_copy:
        total += int(options.get('copy_timeout', 300))
    return total


def run_preflight(run_phase, options):
    """Phase A (P2P allowed, copy test + NCCL); phase B (NCCL_P2P_DISABLE=1, NCCL only) when A is not clean.

    run_phase(p2p_disable, skip_copy) -> (rc, stdout, stderr) runs the worker once (module: run_command under
    coreutils timeout; GPU test script: subprocess). Returns the module's result dict; 'fatal' is set when phase A
    could not even start (no torch, no CUDA, bad GPU list) - that is a setup error, not a verdict.
    """
    rc, stdout, stderr = run_phase(False, False)
    doc_a = parse_worker_stdout(stdout)
    phase_a = summarize_phase(doc_a, rc, 'p2p')
    if doc_a is None and stderr:
        phase_a['problems'].append('worker stderr: %s' % ' | '.join(stderr.strip().splitlines()[-5:]))
        phase_a['evidence'].append('[p2p] worker stderr: %s' % ' | '.join(stderr.strip().splitlines()[-5:]))
    result = {'phases': {'p2p': phase_a}, 'raw': {'p2p': doc_a}}
    if phase_a['fatal']:
        result['fatal'] = phase_a['fatal']
        return result
    phase_b = None
    if not phase_a['ok'] and options.get('try_p2p_disable', True):
        rc, stdout, stderr = run_phase(True, True)
        doc_b = parse_worker_stdout(stdout)
        phase_b = summarize_phase(doc_b, rc, 'no_p2p')
        if doc_b is None and stderr:
            phase_b['problems'].append('worker stderr: %s' % ' | '.join(stderr.strip().splitlines()[-5:]))
        result['phases']['no_p2p'] = phase_b
        result['raw']['no_p2p'] = doc_b
    result.update(decide(phase_a, phase_b))
    probe = (doc_a or {}).get('probe') or {}
    result['gpus'] = probe.get('devices') or []
    result['peer_access'] = probe.get('peer_access') or {}
    result['versions'] = {'torch': probe.get('torch_version'), 'torch_cuda': probe.get('torch_cuda'),
                          'nccl': phase_a.get('nccl_version') or probe.get('nccl_version'),
                          'driver': (doc_a or {}).get('driver_version'),
                          'cuda_driver_api': phase_a['log']['cuda_driver_version'] if 'log' in phase_a else None}
    result['pairs'] = phase_a['pairs']
    result['transports'] = dict((name, ph['transports']) for name, ph in result['phases'].items())
    result['init_s'] = dict((name, ph['init_s']) for name, ph in result['phases'].items())
    result['allreduce'] = dict((name, {'ok': ph['nccl_ok'], 'seconds': ph['allreduce_s'], 'algbw_gbps': ph['algbw_gbps'],
                                       'busbw_gbps': ph['busbw_gbps'], 'nccl_init_total_s': ph['nccl_init_total_s']})
                               for name, ph in result['phases'].items())
    return result


def pairs_markdown(pairs):
    """Markdown table of per-pair copy results: one row per ordered pair and method, one column per size."""
    sizes = sorted(set(p['size_mib'] for p in pairs))
    rows = {}
    for p in pairs:
        key = (p['src'], p['dst'], p['method'])
        cell = '%s GB/s' % p['gbps'] if p.get('ok') else 'CORRUPT (%s/%s)' % (p.get('bad_reps'), p.get('reps'))
        rows.setdefault(key, {})[p['size_mib']] = cell
    head = '| pair | method | peer access | ' + ' | '.join('%d MiB' % s for s in sizes) + ' |'
    sep = '|' + '---|' * (3 + len(sizes))
    out = [head, sep]
    peer = dict(((p['src'], p['dst']), p.get('peer_access')) for p in pairs)
    for key in sorted(rows):
        cells = ' | '.join(rows[key].get(s, '-') for s in sizes)
        out.append('| %s->%s | %s | %s | %s |' % (key[0], key[1], key[2], 'yes' if peer.get(key[:2]) else 'no', cells))
    return '\n'.join(out)


def _stage_text(phase_doc):
    """Where the ranks of this node stopped, in words (the furthest stage reached by any of them)."""
    ranks = ((phase_doc or {}).get('nccl') or {}).get('ranks') or []
    stages = [r.get('last_stage') for r in ranks]
    order = [None, 'start', 'init_start', 'init_done', 'allreduce_start', 'allreduce_done', 'bench_done', 'done']
    furthest = max(stages, key=lambda st: order.index(st) if st in order else 0) if stages else None
    if furthest == 'init_start':
        return 'the rendezvous at --dist-init-addr and the communicator init (the other nodes never joined, or '\
               'could not be reached)'
    return STAGE_WORDS.get(furthest, furthest)


def run_nodes(run_phase, options):
    """The multi-node all-reduce on this node (every node runs it at the same time): one worker run, one verdict.

    run_phase(p2p_disable, skip_copy) -> (rc, stdout, stderr). Returns the module's result dict with verdict
    nodes_ok / nodes_broken; 'fatal' when this node could not even start its ranks (no torch, no CUDA).
    """
    rc, stdout, stderr = run_phase(False, True)
    doc = parse_worker_stdout(stdout)
    phase = summarize_phase(doc, rc, 'nodes')
    if doc is None and stderr:
        phase['problems'].append('worker stderr: %s' % ' | '.join(stderr.strip().splitlines()[-5:]))
    result = {'phases': {'nodes': phase}, 'raw': {'nodes': doc}}
    if phase['fatal']:
        result['fatal'] = phase['fatal']
        return result
    nccl = (doc or {}).get('nccl') or {}
    backend = nccl.get('backend') or options.get('backend') or 'nccl'
    world = nccl.get('world')
    mine = [r.get('rank') for r in nccl.get('ranks') or []]
    where = 'tcp://%s' % options.get('dist_init_addr')
    if phase['ok']:
        verdict = 'nodes_ok'
        reason = ('node %s: global rank%s %s of %s joined the rendezvous at %s and one %s all-reduce of %s MiB over '
                  'all %s nodes summed exactly (%s%s)' % (
                      options.get('node_rank'), 's' if len(mine) > 1 else '', _ranks_text(mine), world, where, backend,
                      options.get('allreduce_mib', 256), options.get('nnodes'), _timing_text(phase),
                      ', over %s' % _transport_text(phase) if backend == 'nccl' else ''))
    else:
        verdict = 'nodes_broken'
        reason = ('node %s: the %s all-reduce over %s nodes (global ranks %s of %s, rendezvous %s) failed in %s: %s' % (
            options.get('node_rank'), backend, options.get('nnodes'), _ranks_text(mine), world, where,
            _stage_text(doc), _problems_text(phase['problems'])))
    result.update({
        'verdict': verdict, 'reason': reason, 'notes': [], 'nccl_p2p_disable': False, 'recommended_env': {},
        'recommended_sglang_args': [], 'evidence': phase['evidence'][:MAX_EVIDENCE],
        'nodes': {'nnodes': options.get('nnodes'), 'node_rank': options.get('node_rank'), 'world': world,
                  'ranks': mine, 'dist_init_addr': options.get('dist_init_addr'), 'backend': backend},
        'transports': {'nodes': phase['transports']}, 'init_s': {'nodes': phase['init_s']},
        'allreduce': {'nodes': {'ok': phase['nccl_ok'], 'seconds': phase['allreduce_s'],
                                'algbw_gbps': phase['algbw_gbps'], 'busbw_gbps': phase['busbw_gbps'],
                                'nccl_init_total_s': phase['nccl_init_total_s']}},
        'versions': {'nccl': phase.get('nccl_version'), 'driver': (doc or {}).get('driver_version')},
        'pairs': [], 'gpus': ((doc or {}).get('probe') or {}).get('devices') or [],
    })
    return result


def _ranks_text(ranks):
    ranks = sorted(r for r in ranks if r is not None)
    if not ranks:
        return '?'
    return '%d-%d' % (ranks[0], ranks[-1]) if len(ranks) > 1 else str(ranks[0])


def rank_log_lines(raw):
    """Every line the ranks of a worker run printed (for the failure classifier)."""
    ranks = (((raw or {}).get('nccl') or {}).get('ranks')) or []
    return [line for rank in ranks for line in rank.get('log') or []]
