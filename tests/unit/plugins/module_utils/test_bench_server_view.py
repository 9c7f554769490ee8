# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The benchmark report's server-side view (module_utils/bench/server_view.py): Prometheus answers per run window."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.inference.plugins.module_utils.bench import report as bench_report
from ansible_collections.llmops.inference.plugins.module_utils.bench import server_view as sv

T0 = 1764633600  # 2025-12-02T00:00:00Z


def record(run_id, offset, wall, concurrency):
    return dict(metrics=dict(completed=8, output_throughput=10.0, max_concurrency=concurrency),
                llmops=dict(run_id=run_id, labels=dict(variant='mtp', kind='concurrency'), wall_s=wall,
                            started='2025-12-02T00:00:%02dZ' % offset, accept_length=None, accept_length_source='none'))


def answer(points, series=1):
    return dict(status='success', data=dict(resultType='matrix', result=[
        dict(metric={}, values=[[T0 + t, str(v)] for t, v in points])] * series))


RECORDS = [record('mtp-c1', 2, 4.0, 1), record('mtp-c4', 10, 4.0, 4)]
DATA = dict(prometheus_url='http://127.0.0.1:9090', start=T0, end=T0 + 20, step=1, series=[
    dict(key='running', title='Running requests', unit='requests', query='sum(x{a="b"})',
         response=answer([(0, 0), (3, 1), (5, 1), (11, 4), (12, 3), (14, 4), (16, 0)])),
    dict(key='kv', title='KV usage', unit='ratio', query='max(y)', response=answer([(3, 0.25), (11, 0.5), (13, 'NaN')])),
    dict(key='accept', title='Accept length', unit='tokens', query='avg(z)',
         response=dict(status='success', data=dict(resultType='matrix', result=[]))),
    dict(key='bad', title='Broken', unit='', query='sum(', response=dict(status='error', error='parse error')),
    dict(key='two', title='Two series', unit='', query='w', response=answer([(3, 2)], series=2)),
])


def test_stats_per_run_window():
    v = sv.view(DATA, RECORDS)
    assert v['windows'] == [('mtp-c1', T0 + 2, T0 + 6.0), ('mtp-c4', T0 + 10, T0 + 14.0)]
    running = v['rows'][0]
    assert running['runs']['mtp-c1'] == (1.0, 1.0, 2)
    assert running['runs']['mtp-c4'] == (11 / 4.0, 4.0, 4)  # to 16 s: two 1 s steps past its end
    kv = v['rows'][1]
    assert kv['runs']['mtp-c4'] == (0.5, 0.5, 1)  # the NaN sample (a 0/0 ratio) is no sample
    assert v['rows'][2]['note'] == 'no samples (the query matched no series)'
    assert v['rows'][3]['note'] == 'Prometheus: parse error'
    assert 'returned 2 series' in v['rows'][4]['note']


def test_the_window_reaches_two_steps_past_the_run():
    running = dict(DATA['series'][0])
    # Run [6, 6.5] with a 5 s step: up to 16.5 - the samples at 11 (4), 12 (3), 14 (4) and 16 (0).
    v = sv.view(dict(DATA, step=5, series=[running]), [record('short', 6, 0.5, 1)])
    assert v['rows'][0]['runs']['short'] == (11 / 4.0, 4.0, 4)
    # With a 1 s step up to 8.5: nothing was evaluated then.
    v = sv.view(dict(DATA, step=1, series=[running]), [record('short', 6, 0.5, 1)])
    assert v['rows'][0]['runs']['short'] == (None, None, 0)


def test_sections_in_the_report():
    server = sv.sections(DATA, RECORDS)
    md = '\n'.join(server['markdown'])
    assert '## Server-side view (Prometheus)' in md and 'http://127.0.0.1:9090' in md
    assert '| Running requests | 1.00 / 1.00 | 2.75 / 4.00 | `sum(x{a="b"})` |' in md
    assert '| KV usage | 25.0 % / 25.0 % | 50.0 % / 50.0 % | `max(y)` |' in md
    assert '| Accept length | no samples | no samples | `avg(z)` (no samples (the query matched no series)) |' in md
    out = bench_report.build(dict(title='t', variants=[]), RECORDS, server=server)
    assert '## Server-side view (Prometheus)' in out['markdown']
    assert out['html'].count('id="server-') == 5 and '<script' not in out['html']
    assert out['summary']['server']['series'][0]['runs']['mtp-c4'] == dict(mean=11 / 4.0, max=4.0, samples=4)
    # Without Prometheus the report is what it was.
    plain = bench_report.build(dict(title='t', variants=[]), RECORDS)
    assert 'Server-side view' not in plain['markdown'] and plain['summary']['server'] is None
