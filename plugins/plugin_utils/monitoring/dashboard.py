# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Grafana dashboard of the SGLang servers, and its structural check. Pure, stdlib only.

PRIVATE to the collection. Every query reads the pinned release's own metric names (``names``: meaning -> name from
``llmops_deployment.metrics.names``), never a recorded series, so the dashboard works on any Prometheus that scrapes
the servers. ``check`` is what the role and the tests run: the JSON a Grafana import needs (uid, title, schema
version, a datasource variable, panels with unique ids, grid positions that do not overlap, targets with unique
refIds) and the metric names of every query.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmops.inference.plugins.plugin_utils.monitoring.promql import unknown_names

SCHEMA_VERSION = 39
DATASOURCE = {'type': 'prometheus', 'uid': '${datasource}'}
SEL = '{job="%s",llmops_host=~"$host"}'
BY = 'llmops_host'
WIDTH = 12
HEIGHT = 8


def _quantiles(name, sel, quantiles=(0.5, 0.9, 0.99)):
    return [('histogram_quantile(%s, sum by (le, %s) (rate(%s_bucket%s[$__rate_interval])))' % (q, BY, name, sel),
             'p%d {{%s}}' % (round(q * 100), BY)) for q in quantiles]


def panels_of(names, job):
    """[(title, unit, description, [(expr, legend)], stacked)] in display order."""
    sel = SEL % job
    n = names
    return [
        ('Generation throughput', 'tps', 'Generated and prompt tokens per second (counters), and the scheduler\'s own '
         'decode throughput gauge.', [
             ('sum by (%s) (rate(%s%s[$__rate_interval]))' % (BY, n['generation_tokens'], sel), 'generated {{%s}}' % BY),
             ('sum by (%s) (rate(%s%s[$__rate_interval]))' % (BY, n['prompt_tokens'], sel), 'prompt {{%s}}' % BY),
             ('sum by (%s) (%s%s)' % (BY, n['generation_throughput'], sel), 'scheduler gauge {{%s}}' % BY)], False),
        ('Running and queued requests', 'short', 'Requests in the running batch and waiting in the queue; the running '
         'batch is capped at --max-running-requests (the plan\'s value).', [
             ('sum by (%s) (%s%s)' % (BY, n['running_requests'], sel), 'running {{%s}}' % BY),
             ('sum by (%s) (%s%s)' % (BY, n['queued_requests'], sel), 'queued {{%s}}' % BY)], False),
        ('KV cache usage', 'percentunit', 'token_usage is the pool that runs out first (full attention, SWA or the '
         'mamba state pool); full attention and mamba shown on their own.', [
             ('max by (%s) (%s%s)' % (BY, n['token_usage'], sel), 'bottleneck {{%s}}' % BY),
             ('max by (%s) (%s%s)' % (BY, n['kv_usage'], sel), 'full attention {{%s}}' % BY),
             ('max by (%s) (%s%s)' % (BY, n['mamba_usage'], sel), 'mamba state {{%s}}' % BY)], False),
        ('Time to first token', 's', 'Quantiles from SGLang\'s TTFT histogram (server side: queueing + prefill).',
         _quantiles(n['ttft_seconds'], sel), False),
        ('Inter-token latency', 's', 'Quantiles from SGLang\'s inter-token latency histogram.',
         _quantiles(n['itl_seconds'], sel), False),
        ('End-to-end request latency', 's', 'Quantiles from SGLang\'s E2E request latency histogram.',
         _quantiles(n['e2e_seconds'], sel), False),
        ('Speculative accept length', 'short', 'Tokens per verify forward: generated tokens over verify calls '
         '(counters), and the scheduler\'s per-batch gauge. Near 1 means MTP no longer pays.', [
             ('sum by (%s) (rate(%s%s[$__rate_interval])) / sum by (%s) (rate(%s%s[$__rate_interval]))'
              % (BY, n['generation_tokens'], sel, BY, n['verify_calls'], sel), 'tokens/verify {{%s}}' % BY),
             ('avg by (%s) (%s%s)' % (BY, n['accept_length'], sel), 'scheduler gauge {{%s}}' % BY)], False),
        ('GPU memory per rank (SGLang)', 'decgbytes', 'Weights, KV cache and CUDA graphs per GPU as SGLang measured them '
         'at start-up (rank 0 stands for every GPU of a tensor-parallel group unless '
         '--enable-metrics-for-all-schedulers).', [
             ('sum by (%s, tp_rank) (%s%s)' % (BY, n['weight_memory_gb'], sel), 'weights {{%s}} TP{{tp_rank}}' % BY),
             ('sum by (%s, tp_rank) (%s%s)' % (BY, n['kv_cache_memory_gb'], sel), 'KV cache {{%s}} TP{{tp_rank}}' % BY),
             ('sum by (%s, tp_rank) (%s%s)' % (BY, n['graph_memory_gb'], sel),
              'CUDA graphs {{%s}} TP{{tp_rank}}' % BY)], True),
        ('HTTP responses and retractions', 'reqps', 'Responses per second by status code, and requests retracted '
         '(KV exhausted mid-decode).', [
             ('sum by (%s, status_code) (rate(%s%s[$__rate_interval]))' % (BY, n['http_responses'], sel),
              '{{status_code}} {{%s}}' % BY),
             ('sum by (%s) (rate(%s%s[$__rate_interval]))' % (BY, n['retracted_requests'], sel),
              'retracted {{%s}}' % BY)], False),
    ]


def dashboard(names, job='sglang', title='SGLang servers (llmops.inference)', uid='llmops-sglang'):
    """The dashboard as data (Grafana's JSON model)."""
    panels = []
    for index, (name, unit, description, queries, stacked) in enumerate(panels_of(names, job)):
        targets = [dict(refId=chr(ord('A') + i), datasource=DATASOURCE, expr=expr, legendFormat=legend)
                   for i, (expr, legend) in enumerate(queries)]
        custom = dict(drawStyle='line', lineWidth=1, fillOpacity=10, showPoints='never')
        if stacked:
            custom.update(drawStyle='bars', fillOpacity=80, stacking=dict(mode='normal', group='A'))
        panels.append(dict(
            id=index + 1, type='timeseries', title=name, description=description, datasource=DATASOURCE,
            gridPos=dict(x=(index % 2) * WIDTH, y=(index // 2) * HEIGHT, w=WIDTH, h=HEIGHT),
            fieldConfig=dict(defaults=dict(unit=unit, custom=custom), overrides=[]),
            options=dict(legend=dict(displayMode='list', placement='bottom', showLegend=True),
                         tooltip=dict(mode='multi', sort='none')),
            targets=targets))
    templating = [
        dict(name='datasource', label='Prometheus', type='datasource', query='prometheus', current={}, hide=0),
        dict(name='host', label='Server', type='query', datasource=DATASOURCE, refresh=2, includeAll=True, multi=True,
             query=dict(query='label_values(%s{job="%s"}, llmops_host)' % (names['running_requests'], job),
                        refId='host'),
             definition='label_values(%s{job="%s"}, llmops_host)' % (names['running_requests'], job),
             current=dict(selected=True, text=['All'], value=['$__all']), hide=0, sort=1),
    ]
    return dict(uid=uid, title=title, tags=['llmops', 'sglang'], timezone='browser', editable=True,
                schemaVersion=SCHEMA_VERSION, version=1, refresh='30s', time={'from': 'now-6h', 'to': 'now'},
                templating=dict(list=templating), annotations=dict(list=[]), panels=panels)


def queries(dash):
    """Every PromQL expression of a dashboard: panel targets and query variables."""
    out = []
    for panel in dash.get('panels') or []:
        for target in panel.get('targets') or []:
            out.append(('panel %s %s' % (panel.get('id'), target.get('refId')), target.get('expr') or ''))
    for var in (dash.get('templating') or {}).get('list') or []:
        if var.get('type') == 'query':
            query = var.get('query')
            query = query.get('query') if isinstance(query, dict) else query or ''
            # Grafana's label_values(<selector>, <label>): the label is not a metric.
            match = re.match(r'^\s*label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$', query)
            out.append(('variable %s' % var.get('name'), match.group(1) if match else query))
    return out


def check(dash, known, histograms=()):
    """Problems of a dashboard (empty: importable, and every query names a known metric)."""
    problems = []
    for key in ('uid', 'title', 'schemaVersion', 'panels', 'templating'):
        if key not in dash:
            problems.append('no %s' % key)
    if len(str(dash.get('uid') or '')) > 40:
        problems.append('uid longer than 40 characters')
    variables = [v.get('name') for v in (dash.get('templating') or {}).get('list') or []]
    if 'datasource' not in variables:
        problems.append('no datasource variable')
    ids, cells = set(), set()
    for panel in dash.get('panels') or []:
        where = 'panel %s' % panel.get('id')
        if not isinstance(panel.get('id'), int) or panel['id'] in ids:
            problems.append('%s: missing or duplicate id' % where)
        ids.add(panel.get('id'))
        for key in ('type', 'title', 'datasource', 'targets'):
            if not panel.get(key):
                problems.append('%s: no %s' % (where, key))
        grid = panel.get('gridPos') or {}
        if not all(isinstance(grid.get(k), int) for k in 'xywh') or grid.get('x', 0) + grid.get('w', 0) > 24:
            problems.append('%s: gridPos %s is not on the 24-column grid' % (where, grid))
        else:
            mine = set((x, y) for x in range(grid['x'], grid['x'] + grid['w'])
                       for y in range(grid['y'], grid['y'] + grid['h']))
            if mine & cells:
                problems.append('%s: overlaps another panel' % where)
            cells |= mine
        refs = [t.get('refId') for t in panel.get('targets') or []]
        if len(refs) != len(set(refs)) or not all(refs):
            problems.append('%s: refIds missing or repeated %s' % (where, refs))
    for where, expr in queries(dash):
        if not expr.strip():
            problems.append('%s: empty query' % where)
            continue
        unknown = unknown_names(expr, known, histograms)
        if unknown:
            problems.append('%s: %s not a metric of the release (%s)' % (where, ', '.join(unknown), expr))
    return problems
