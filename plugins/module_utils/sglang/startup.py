# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Plan vs. actual: what SGLang logged at start-up against the VRAM plan the deployment was resolved with.

PRIVATE to the collection. Pure, stdlib only. ``parse(lines)`` reads the start-up lines of the catalogue
(sglang_log_catalogue.STARTUP_LINES: free memory before and after the weights, the mamba and KV pools, the CUDA
graphs, the scheduler's max_total_num_tokens line); ``compare(plan, logged, context)`` puts them next to the plan
(llmops_deployment.plan) and decides a verdict per value with the thresholds below, and ``markdown(record)`` is the
table of the deployment record (docs/sglang_server.md, "The start-up record").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmops.inference.plugins.module_utils.sglang import log_catalogue as catalogue

SCHEMA = 1
# Drift thresholds (docs/sglang_server.md): a count (mamba slots, running requests, context length) may not differ
# at all, the KV token count by at most 2 %. Memory figures are not judged on their own (SGLang prints GB with two
# decimals and the plan's overheads are estimates); beyond MEMORY_TOLERANCE_GIB they are marked "differs" and name
# the planner input behind them in every warning.
KV_TOKENS_PCT = 2.0
MEMORY_TOLERANCE_GIB = 0.1

_LINES = dict((name, catalogue.compile_text(entry)) for name, entry in catalogue.STARTUP_LINES)
_RANK = re.compile(r'^\[[^\]]*\bTP(\d+)\b[^\]]*\]')

# (key, label, unit, plan key, rule). rule: count (any difference warns), tokens (beyond KV_TOKENS_PCT warns),
# memory (beyond MEMORY_TOLERANCE_GIB "differs", no warning of its own), logged (no planned value).
ROWS = (
    ('free_before_load_gib', 'free memory before load (GiB per GPU)', 'GiB', 'free_before_load_gib', 'memory'),
    ('weights_gib', 'weights per GPU (GiB, target + draft)', 'GiB', 'weights_gib_per_gpu', 'memory'),
    ('free_after_load_gib', 'free memory after the weights (GiB)', 'GiB', 'free_after_load_gib', 'memory'),
    ('mamba_cache_slots', 'mamba state slots', '', 'mamba_cache_slots', 'count'),
    ('kv_cache_tokens', 'KV cache tokens (#tokens)', '', 'kv_cache_tokens', 'tokens'),
    ('max_total_num_tokens', 'max_total_num_tokens', '', 'kv_cache_tokens', 'tokens'),
    ('max_running_requests', 'max running requests', '', 'max_running_requests', 'count'),
    ('context_length', 'context length', '', 'context_length', 'count'),
    ('free_after_pools_gib', 'free after the pools (GiB)', 'GiB', 'free_after_pools_gib', 'memory'),
    ('cuda_graph_gib', 'CUDA graph memory (GiB)', 'GiB', None, 'logged'),
    ('free_after_graphs_gib', 'free after CUDA graphs (GiB)', 'GiB', None, 'logged'),
)


def _rank(line):
    match = _RANK.match(line)
    return int(match.group(1)) if match else None


def _num(value):
    """A logged number as int or float; other fields (a dtype, a class name) stay text."""
    if value is None or not re.match(r'^-?\d+(?:\.\d+)?$', value):
        return value
    return float(value) if '.' in value else int(value)


def parse(lines):
    """The start-up figures in SGLang's lines (one start). Per-GPU memory is the lowest over the TP ranks (SGLang
    sizes every rank by the smallest), counts are TP rank 0's (or the first seen).

    Returns dict: free_before_load_gib, weights_gib, free_after_load_gib, mamba_cache_slots, mamba_state_gib,
    mamba_spec_state_gib, kv_cache_tokens, kv_cache_gib, draft_kv_cache_tokens, free_after_pools_gib, cuda_graph_gib,
    max_total_num_tokens, max_running_requests, context_length, chunked_prefill_size, free_after_graphs_gib,
    memory_baseline_gib, mamba_cap (dict or None), lines (the matched lines, in order). Absent figures are None.
    """
    per_rank = {}
    out = dict(mamba_cap=None, lines=[])
    for line in lines:
        for name, pattern in _LINES.items():
            match = pattern.search(line)
            if not match:
                continue
            if name != 'mamba_spec_states':
                out['lines'].append(line)
            groups = dict((k, _num(v)) for k, v in match.groupdict().items() if v is not None)
            rank = _rank(line)
            seen = per_rank.setdefault(rank, dict(begin=None, after=None, weights=[], pool_end=None, graphs=[],
                                                  mamba=None, spec=None, kv=[], baseline=None))
            if name == 'load_weight_begin' and seen['begin'] is None:
                seen['begin'] = groups['avail']
            elif name == 'load_weight_end':
                seen['after'] = groups['avail']
                seen['weights'].append(groups['usage'])
            elif name == 'memory_pool_end':
                seen['pool_end'] = groups['avail']
            elif name == 'cuda_graph_end':
                seen['graphs'].append(groups['usage'])
            elif name == 'mamba_cache' and seen['mamba'] is None:
                seen['mamba'] = groups
            elif name == 'mamba_spec_states' and seen['spec'] is None:
                seen['spec'] = groups
            elif name == 'kv_cache':
                seen['kv'].append(groups)
            elif name == 'memory_baseline' and seen['baseline'] is None:
                seen['baseline'] = groups['usage']
            elif name == 'mamba_cap':
                out['mamba_cap'] = dict(running=groups['running'], slots=groups['slots'], ratio=groups['ratio'])
            elif name == 'scheduler':
                out.update(max_total_num_tokens=groups['tokens'], max_running_requests=groups['running'],
                           context_length=groups['context'], chunked_prefill_size=groups['chunk'],
                           free_after_graphs_gib=groups['avail'])
    first = per_rank.get(0) or (per_rank[sorted(per_rank, key=lambda r: (r is None, r))[0]] if per_rank else {})

    def lowest(key):
        values = [r[key] for r in per_rank.values() if r[key] is not None]
        return min(values) if values else None

    kv = (first.get('kv') or [])
    mamba = first.get('mamba')
    spec = first.get('spec')
    out.update(
        free_before_load_gib=lowest('begin'), free_after_load_gib=lowest('after'),
        weights_gib=round(sum(first['weights']), 2) if first.get('weights') else None,
        mamba_cache_slots=mamba['slots'] if mamba else None,
        mamba_state_gib=round(mamba['conv'] + mamba['ssm'], 2) if mamba else None,
        mamba_spec_state_gib=round(spec['ssm'] + spec['conv'], 2) if spec else None,
        kv_cache_tokens=kv[0]['tokens'] if kv else None,
        kv_cache_gib=round(kv[0].get('kv', 0) + kv[0].get('k', 0) + kv[0].get('v', 0), 2) if kv else None,
        draft_kv_cache_tokens=kv[1]['tokens'] if len(kv) > 1 else None,
        free_after_pools_gib=lowest('pool_end'),
        cuda_graph_gib=round(sum(first['graphs']), 2) if first.get('graphs') else None,
        memory_baseline_gib=first.get('baseline'))
    for key in ('max_total_num_tokens', 'max_running_requests', 'context_length', 'chunked_prefill_size',
                'free_after_graphs_gib'):
        out.setdefault(key, None)
    return out


def _judge(rule, planned, logged):
    """(drift, drift_pct, verdict) of one row."""
    if logged is None:
        return None, None, 'not logged'
    if planned is None:
        return None, None, 'logged only' if rule == 'logged' else 'not planned'
    drift = round(logged - planned, 3)
    pct = round(100.0 * drift / planned, 2) if planned else None
    if rule == 'count':
        return drift, pct, 'ok' if drift == 0 else 'drift'
    if rule == 'tokens':
        return drift, pct, 'ok' if abs(drift) <= planned * KV_TOKENS_PCT / 100.0 else 'drift'
    return drift, pct, 'ok' if abs(drift) <= MEMORY_TOLERANCE_GIB else 'differs'


def _inputs_to_check(rows, plan, context):
    """The planner inputs behind the differences, most likely first (named in every drift warning)."""
    by_key = dict((row['key'], row) for row in rows)
    hints = []
    before = by_key['free_before_load_gib']
    if before['verdict'] == 'differs':
        if plan.get('free_memory_source') == 'profile estimate':
            overhead = plan['gpu_memory_mib'] / 1024.0 - before['planned']
            hints.append("the hardware profile's startup_overhead_gib (%s: %.2f GiB planned, %.2f GiB logged: "
                         'memory.total %d MiB minus the %.2f GiB SGLang had free before loading); the next plan for '
                         'this host uses the measured free memory' % (
                             context.get('gpu_profile') or '?', overhead, plan['gpu_memory_mib'] / 1024.0 -
                             before['logged'], plan['gpu_memory_mib'], before['logged']))
        else:
            hints.append('the free memory before load the plan was given (%s, %.2f GiB; SGLang had %.2f GiB): '
                         'llmops_plan_free_memory_before_load_gib or the measured value of an earlier start'
                         % (plan.get('free_memory_source'), before['planned'], before['logged']))
    weights = by_key['weights_gib']
    if weights['verdict'] == 'differs':
        hints.append("the model profile's weights (weights_bytes / its config: %.2f GiB per GPU planned, %.2f GiB "
                     'loaded); calibrate with llmops_plan_free_memory_after_load_gib' % (
                         weights['planned'], weights['logged']))
    if not hints:
        hints.append("the planner's rules for this release (profiles/sglang_releases.yml planner family %s; "
                     'docs/dev/sglang-memory.md) and the model profile\'s architecture facts (%s)'
                     % (plan.get('sglang_rules') or '?', context.get('model_profile') or '?'))
    return hints


def compare(plan, logged, context=None):
    """The plan-vs-logged record of one start.

    ``plan``: llmops_deployment.plan (the VRAM plan the unit was rendered from). ``logged``: ``parse()``.
    ``context``: what the record names (host, instance, gpu_profile, model_profile, tp_size, sglang_version, start).
    Returns dict(schema, context, rows [{key, label, unit, planned, logged, drift, drift_pct, rule, verdict}],
    verdict (ok | drift | incomplete), warnings, inputs_to_check, measured (the free memory before load of this GPU
    kind and TP size, or None), logged (the parsed figures)).
    """
    context = dict(context or {})
    rows = []
    for key, label, unit, plan_key, rule in ROWS:
        planned = plan.get(plan_key) if plan_key else None
        value = logged.get(key)
        drift, pct, verdict = _judge(rule, planned, value)
        rows.append(dict(key=key, label=label, unit=unit, planned=planned, logged=value, drift=drift, drift_pct=pct,
                         rule=rule, verdict=verdict))
    drifting = [row for row in rows if row['verdict'] == 'drift']
    hints = _inputs_to_check(rows, plan, context) if drifting else []
    warnings = []
    for row in drifting:
        if row['rule'] == 'tokens':
            rule = 'beyond the %.0f %% threshold' % KV_TOKENS_PCT
        else:
            rule = 'a count must match exactly'
        warnings.append('%s: %s planned, %s logged by SGLang (%+g%s, %s). Check: %s.' % (
            row['label'], _fmt(row['planned']), _fmt(row['logged']), row['drift'],
            ', %+.2f %%' % row['drift_pct'] if row['drift_pct'] is not None else '', rule, '; '.join(hints)))
    judged = [row for row in rows if row['rule'] in ('count', 'tokens') and row['planned'] is not None]
    if drifting:
        verdict = 'drift'
    elif judged and all(row['verdict'] == 'ok' for row in judged):
        verdict = 'ok'
    else:
        verdict = 'incomplete'
    measured = None
    if logged.get('free_before_load_gib') is not None and context.get('gpu_profile'):
        measured = dict(schema=SCHEMA, host=context.get('host'), gpu_profile=context['gpu_profile'],
                        tp_size=context.get('tp_size'), sglang_version=context.get('sglang_version'),
                        free_memory_before_load_gib=logged['free_before_load_gib'],
                        planned_gib=plan.get('free_before_load_gib'),
                        planned_source=plan.get('free_memory_source'), instance=context.get('instance'),
                        start=context.get('start'))
    figures = dict((k, v) for k, v in logged.items() if k != 'lines')
    return dict(schema=SCHEMA, context=context, rows=rows, verdict=verdict, warnings=warnings, inputs_to_check=hints,
                measured=measured, logged=figures, lines=list(logged.get('lines') or []))


def _fmt(value):
    if value is None:
        return '-'
    if isinstance(value, float):
        return '%.2f' % value
    return '{:,}'.format(value)


def markdown(record):
    """The record as Markdown: a heading line and the table value | planned | logged | drift | verdict."""
    ctx = record.get('context') or {}
    facts = (ctx.get('sglang_version') or '?', ctx.get('gpu_profile') or '?', ctx.get('tp_size') or '?',
             ctx.get('model_profile') or '?', record['verdict'], KV_TOKENS_PCT, MEMORY_TOLERANCE_GIB)
    lines = ['## %s on %s: plan vs. logged at start-up' % (ctx.get('instance') or '?', ctx.get('host') or '?'), '',
             'SGLang %s, %s x%s, model profile %s; verdict **%s** (thresholds: counts exact, KV tokens %.0f %%, '
             'memory %.2f GiB informational).' % facts, '',
             '| value | planned | logged | drift | verdict |', '|---|---:|---:|---:|---|']
    for row in record['rows']:
        drift = '-' if row['drift'] is None else '%+g' % row['drift']
        if row['drift_pct'] is not None and row['drift'] and row['rule'] in ('count', 'tokens'):
            drift += ' (%+.2f %%)' % row['drift_pct']
        lines.append('| %s | %s | %s | %s | %s |' % (row['label'], _fmt(row['planned']), _fmt(row['logged']), drift,
                                                     row['verdict']))
    if record['warnings']:
        lines += [''] + ['- %s' % w for w in record['warnings']]
    return '\n'.join(lines) + '\n'


def measurement_file(record_dir, gpu_profile, tp_size):
    """Where the controller keeps a host's measured start-up memory of one GPU kind and TP size."""
    return '%s/startup_memory/%s-tp%d.json' % (record_dir.rstrip('/'), gpu_profile, int(tp_size))


def usable_measurement(data, gpu_profile, tp_size, sglang_version):
    """(free GiB, why) of a measurement file's content for this plan, or (None, why not)."""
    if not isinstance(data, dict) or data.get('schema') != SCHEMA:
        return None, 'not a start-up memory record of schema %d' % SCHEMA
    value = data.get('free_memory_before_load_gib')
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        return None, 'no free_memory_before_load_gib in it'
    for key, want in (('gpu_profile', gpu_profile), ('tp_size', tp_size), ('sglang_version', sglang_version)):
        if str(data.get(key)) != str(want):
            return None, 'measured with %s %s, this plan has %s' % (key, data.get(key), want)
    return float(value), 'measured'
