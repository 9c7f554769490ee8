# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_bench_report on a results directory as the role leaves it: the files it writes, the gates it returns."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from module_harness import AnsibleExitJson, AnsibleFailJson, run

from ansible_collections.llmops.inference.plugins.modules import sglang_bench_report


def record(variant, concurrency, out_tps):
    return {'metrics': {'max_concurrency': concurrency, 'request_rate': 'inf', 'output_throughput': out_tps,
                        'request_throughput': 1.0, 'median_ttft_ms': 50.0, 'p99_ttft_ms': 90.0, 'median_itl_ms': 5.0,
                        'p99_itl_ms': 9.0, 'median_tpot_ms': 5.0, 'completed': 8},
            'server': {}, 'llmops': {'run_id': '%s-c%d' % (variant, concurrency), 'accept_length': None,
                                     'accept_length_source': 'none',
                                     'labels': {'variant': variant, 'kind': 'concurrency', 'num_prompts': 8}}}


def results(tmp_path, title=None):
    # What report.yml writes: "title": null when the play sets none.
    meta = {'host': 'ct1', 'timestamp': '20261201T000000Z', 'model': 'qwen3.5-122b', 'title': title,
            'variants': [{'name': 'default', 'vars': {}}], 'roofline': None, 'notes': []}
    (tmp_path / 'meta.json').write_text(json.dumps(meta))
    (tmp_path / 'runs.jsonl').write_text('\n'.join(json.dumps(record('default', c, 100.0 * c)) for c in (1, 4)) + '\n')
    return str(tmp_path)


def test_writes_the_three_files_and_returns_failed_gates_with_numbers(tmp_path):
    kind, res = run(sglang_bench_report.main, dict(results_dir=results(tmp_path), thresholds=[
        {'metric': 'output_throughput', 'concurrency': 4, 'min': 1000}, {'metric': 'p99_ttft_ms', 'max': 100}]))
    assert kind is AnsibleExitJson and res['changed']
    assert res['gate_failures'] == ['output tok/s >= 1,000: measured 400.00 tok/s (variant default, concurrency 4)']
    assert len(res['gates']) == 3 and res['charts'] == ['throughput', 'ttft', 'itl']
    md = (tmp_path / 'report.md').read_text()
    assert md.startswith('# SGLang benchmark: qwen3.5-122b on ct1 (20261201T000000Z)\n')
    assert (tmp_path / 'report.html').read_text().count('<svg') == 3
    assert json.loads((tmp_path / 'summary.json').read_text())['rows'][1]['output_throughput'] == 400.0
    assert res['table'][0].startswith('| variant | load | out tok/s |')


def test_title_and_baseline(tmp_path):
    folder = results(tmp_path, title='Nightly')
    base = tmp_path / 'base.json'
    base.write_text(json.dumps({'rows': [dict(variant='default', kind='concurrency', concurrency=1, request_rate=None,
                                              output_throughput=200.0, p99_ttft_ms=90.0)]}))
    kind, res = run(sglang_bench_report.main, dict(results_dir=folder, baseline_file=str(base)))
    assert kind is AnsibleExitJson
    assert (tmp_path / 'report.md').read_text().startswith('# Nightly\n')
    assert [g for g in res['gate_failures'] if 'vs baseline 200.0' in g and '-50.0 %' in g]


def test_refusals(tmp_path):
    kind, res = run(sglang_bench_report.main, dict(results_dir=str(tmp_path)))
    assert kind is AnsibleFailJson and 'meta.json does not exist' in res['msg']
    folder = results(tmp_path)
    kind, res = run(sglang_bench_report.main, dict(results_dir=folder, baseline_metrics=['speed']))
    assert kind is AnsibleFailJson and 'unknown baseline_metrics speed' in res['msg']
    (tmp_path / 'bad.json').write_text('[]')
    kind, res = run(sglang_bench_report.main, dict(results_dir=folder, baseline_file=str(tmp_path / 'bad.json')))
    assert kind is AnsibleFailJson and 'has no "rows"' in res['msg']
