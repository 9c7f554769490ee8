# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The benchmark report's server-side view: what Prometheus recorded while the sweep ran (running and queued
requests, KV usage, accept length, ... - whatever series the role asked for), per run and over time. Pure, stdlib.

Input (``server_metrics.json`` of the results directory, written by the sglang_benchmark role): the Prometheus URL,
the sweep's window, and per series its key, title, unit, PromQL and the raw answer of ``/api/v1/query_range`` (or the
error). The runs' windows come from their records (``llmops.started`` + ``wall_s``, the serving host's clock).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import math
import time

from ansible_collections.llmops.inference.plugins.module_utils.bench.report import PALETTE, esc, num
from ansible_collections.llmops.inference.plugins.module_utils.bench.report import chart_frame, nice_max


def samples(response):
    """[(t, value)] of the first series of a query_range answer, and a note (several series, an error, none)."""
    if not isinstance(response, dict):
        return [], 'no answer from Prometheus'
    if response.get('status') != 'success':
        return [], 'Prometheus: %s' % (response.get('error') or response.get('status') or 'no status')
    result = (response.get('data') or {}).get('result') or []
    if not result:
        return [], 'no samples (the query matched no series)'
    out = []
    for point in result[0].get('values') or []:
        try:
            value = float(point[1])
        except (TypeError, ValueError, IndexError):
            continue
        if not math.isnan(value):  # NaN (a 0/0 ratio) is no sample
            out.append((float(point[0]), value))
    note = 'the query returned %d series; the first is shown (aggregate it with sum/max)' % len(result) if len(result) > 1 else ''
    return out, note


def run_windows(records):
    """[(run id, start, end)] in epoch seconds, in run order."""
    out = []
    for rec in records:
        ll = rec.get('llmops') or {}
        try:
            start = float(calendar.timegm(time.strptime(ll.get('started') or '', '%Y-%m-%dT%H:%M:%SZ')))
        except ValueError:
            continue
        out.append((ll.get('run_id') or '?', start, start + float(ll.get('wall_s') or 0)))
    return out


def stats(points, start, end, step=15.0):
    """(mean, max, n) of the samples of a run: from its start to two query steps after its end, so the first
    evaluation after its last request (the state it left) is counted; a run's last requests end moments before its
    client exits."""
    inside = [v for t, v in points if start <= t <= end + 2 * float(step or 15)]
    if not inside:
        return None, None, 0
    return sum(inside) / len(inside), max(inside), len(inside)


def view(data, records):
    """The rows of the section: [{key, title, unit, query, note, runs: {run id: (mean, max, n)}, points}]."""
    if not isinstance(data, dict):
        return None
    windows = run_windows(records)
    rows = []
    for series in data.get('series') or []:
        points, note = samples(series.get('response'))
        if series.get('error'):
            note = series['error']
        runs = dict((run_id, stats(points, start, end, data.get('step'))) for run_id, start, end in windows)
        rows.append(dict(key=series.get('key'), title=series.get('title') or series.get('key'), unit=series.get('unit') or '',
                         query=series.get('query'), note=note, runs=runs, points=points))
    return dict(url=data.get('prometheus_url'), start=data.get('start'), end=data.get('end'), step=data.get('step'),
                windows=windows, rows=rows)


def _value(value, unit):
    if value is None:
        return 'n/a'
    if unit == 'ratio':
        return '%s %%' % num(value * 100, 1)
    return num(value, 2)


def cell(run, unit):
    mean, peak, n = run
    if not n:
        return 'no samples'
    return '%s / %s' % (_value(mean, unit), _value(peak, unit))


def markdown(v):
    if not v:
        return []
    runs = [w[0] for w in v['windows']]
    lines = ['', '## Server-side view (Prometheus)', '',
             'What the server reported while each run was measured, from `%s` (mean / max of the evaluations from '
             'the run\'s start to two query steps after its end; ratios in %%). The client-side numbers above are the '
             'same runs.' % v['url'], '',
             '| series | ' + ' | '.join(runs) + ' | query |', '|---|' + '---:|' * len(runs) + '---|']
    for row in v['rows']:
        query = '`%s`' % (row['query'] or '').replace('|', '\\|')
        cells = ' | '.join(cell(row['runs'].get(r, (None, None, 0)), row['unit']) for r in runs)
        lines.append('| %s | %s | %s%s |' % (row['title'], cells, query, ' (%s)' % row['note'] if row['note'] else ''))
    return lines


def time_chart(row, windows, t0, t1, width=560, height=220):
    """Inline SVG of one series over the sweep, each run's window shaded and named."""
    left, right, top, bottom = 64, 16, 36, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    span = max(t1 - t0, 1.0)
    values = [v for _t, v in row['points']]
    scale = 100.0 if row['unit'] == 'ratio' else 1.0
    y_max = nice_max(max(values) * scale * 1.05 if values and max(values) > 0 else 1.0)

    def x_at(t):
        return left + plot_w * (min(max(t, t0), t1) - t0) / span

    def y_at(v):
        return top + plot_h - plot_h * v * scale / y_max

    title = '%s%s' % (row['title'], ' (%)' if row['unit'] == 'ratio' else '')
    out = chart_frame(title, width, height, left)
    for i, (run_id, start, end) in enumerate(windows):
        out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" opacity="0.12"><title>%s</title></rect>'
                   % (x_at(start), top, max(x_at(end) - x_at(start), 1), plot_h, PALETTE[i % len(PALETTE)], esc(run_id)))
        out.append('<text x="%.1f" y="%d" font-size="10" fill="#555">%s</text>' % (x_at(start) + 2, top + 11, esc(run_id)))
    for k in range(5):
        v = y_max * k / 4
        y = top + plot_h - plot_h * k / 4
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e3e3e3"/>' % (left, y, left + plot_w, y))
        out.append('<text x="%d" y="%.1f" font-size="11" text-anchor="end" fill="#555">%s</text>' % (left - 6, y + 4, esc(num(v, 1))))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>' % (left, top + plot_h, left + plot_w, top + plot_h))
    out.append('<text x="%d" y="%d" font-size="11" fill="#555">0 s</text>' % (left, top + plot_h + 16))
    out.append('<text x="%d" y="%d" font-size="11" text-anchor="end" fill="#555">%s s</text>'
               % (left + plot_w, top + plot_h + 16, num(span, 0)))
    points = [(x_at(t), y_at(v)) for t, v in row['points'] if t0 <= t <= t1]
    if len(points) > 1:
        out.append('<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="%s"/>'
                   % ' '.join('%.1f,%.1f' % p for p in points))
    for x, y in points:
        out.append('<circle cx="%.1f" cy="%.1f" r="2.5" fill="#1f77b4"/>' % (x, y))
    if not points:
        out.append('<text x="%d" y="%d" font-size="12" fill="#a66400">%s</text>'
                   % (left + 10, top + plot_h // 2, esc(row['note'] or 'no samples in the sweep')))
    out.append('</svg>')
    return '\n'.join(out)


def html(v):
    if not v:
        return []
    runs = [w[0] for w in v['windows']]
    t0 = min([w[1] for w in v['windows']] + [float(v['start'] or 0) or float('inf')])
    t1 = max([w[2] for w in v['windows']] + [float(v['end'] or 0)])
    if t0 == float('inf'):
        t0 = t1
    out = ['<h2>Server-side view (Prometheus)</h2>',
           '<p class="note">What the server reported while each run was measured, from <code>%s</code>: mean / max of '
           'the evaluations from the run\'s start to two query steps after its end (ratios in %%), and each series over '
           'the sweep with the runs shaded.</p>'
           % esc(v['url']), '<div class="charts">']
    for row in v['rows']:
        out.append('<figure id="server-%s" style="margin:0">%s</figure>' % (esc(row['key']), time_chart(row, v['windows'], t0, t1)))
    out.append('</div><table><thead><tr><th>series</th>%s<th>query</th></tr></thead><tbody>'
               % ''.join('<th>%s</th>' % esc(r) for r in runs))
    for row in v['rows']:
        out.append('<tr><td>%s</td>%s<td><code>%s</code>%s</td></tr>' % (
            esc(row['title']), ''.join('<td class="n">%s</td>' % esc(cell(row['runs'].get(r, (None, None, 0)), row['unit']))
                                       for r in runs),
            esc(row['query']), (' (%s)' % esc(row['note'])) if row['note'] else ''))
    out.append('</tbody></table>')
    return out


def sections(data, records):
    """What bench_report.build takes as ``server``: markdown lines, html lines and the summary, or None."""
    v = view(data, records)
    if v is None:
        return None
    return dict(markdown=markdown(v), html=html(v), summary=summary(v))


def summary(v):
    """The view for summary.json: per series and run (mean, max, samples); no raw points."""
    if not v:
        return None
    return dict(url=v['url'], series=[dict(key=r['key'], title=r['title'], unit=r['unit'], query=r['query'], note=r['note'],
                                           runs=dict((k, dict(mean=m, max=x, samples=n)) for k, (m, x, n) in r['runs'].items()))
                                      for r in v['rows']])
