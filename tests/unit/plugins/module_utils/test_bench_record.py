# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The deployment record's benchmarks section (plugins/module_utils/bench/record.py): the entry of one benchmark from
its summary.json, appending with replace-same-benchmark and keep-last-N, reading back, and the points a calibration
reads."""

from __future__ import absolute_import, division, print_function

import json

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.bench import record as rec
from ansible_collections.llmops.inference.plugins.module_utils.bench import report as br


def run_record(variant, concurrency, out_tps, spec, kind='concurrency', rate='inf', isl=1024):
    load = concurrency or 3  # distinct latencies per run
    metrics = {'max_concurrency': concurrency, 'request_rate': rate, 'output_throughput': out_tps, 'median_ttft_ms': 40.0 + load,
               'p99_ttft_ms': 90.0 + load, 'median_tpot_ms': 5.0 + load, 'p99_tpot_ms': 9.0 + load, 'completed': 8}
    if isl is not None:
        metrics.update(random_input_len=isl, random_output_len=256)
    return {'metrics': metrics, 'server': {'speculative_algorithm': spec},
            'llmops': {'run_id': '%s-%s%s' % (variant, kind[0], rate if kind == 'rate' else concurrency), 'accept_length': 2.5 if spec else None,
                       'accept_length_source': 'metrics' if spec else 'none',
                       'labels': {'variant': variant, 'kind': kind, 'num_prompts': 8}}}


META = {'host': 'ct1', 'timestamp': '20261201T000000Z', 'instance': 'main', 'sglang_version': '9.9.9', 'model': 'qwen',
        'model_profile': 'qwen3.5-122b-a10b', 'gpu_profile': 'h200', 'tp_size': 2, 'client_module': 'sglang.benchmark.serving',
        'client_version': '9.9.9', 'backend': 'sglang-oai', 'dataset_name': 'random-ids', 'input_len': 1024, 'output_len': 256,
        'scenarios': [{'id': 'r2', 'kind': 'rate', 'concurrency': None, 'request_rate': 2.0, 'input_len': 512, 'output_len': 128}],
        'variants': [{'name': 'no-mtp', 'mtp': False, 'overrides': {'llmops_speculative_num_draft_tokens': 0}},
                     {'name': 'mtp', 'mtp': True, 'overrides': {}}]}
RUNS = [run_record('no-mtp', 1, 100.0, None), run_record('no-mtp', 16, 900.0, None), run_record('mtp', 1, 140.0, 'NEXTN'),
        run_record('mtp', 16, 850.0, 'NEXTN'), run_record('mtp', None, 300.0, 'NEXTN', kind='rate', rate=2.0, isl=None)]


def summary(meta=None):
    """summary.json as sglang_bench_report writes it (through the report's own build)."""
    return json.loads(json.dumps(br.build(dict(meta or META), RUNS, [{'metric': 'output_throughput', 'concurrency': 16, 'min': 880}])['summary']))


def test_the_entry_holds_every_measured_point_and_the_verdict():
    item = rec.entry(summary(), '/ctl/build/bench/ct1/20261201T000000Z')
    assert (item['id'], item['host'], item['instance'], item['sglang_version'], item['gpu_profile'], item['tp_size']) == (
        '20261201T000000Z', 'ct1', 'main', '9.9.9', 'h200', 2)
    assert item['results_dir'] == '/ctl/build/bench/ct1/20261201T000000Z' and item['sweep_error'] is None
    assert [(v['name'], v['mtp']) for v in item['variants']] == [('no-mtp', False), ('mtp', True)]
    by_id = dict((r['run_id'], r) for r in item['runs'])
    assert sorted(by_id) == sorted(r['llmops']['run_id'] for r in RUNS)
    for source in RUNS:
        point, m = by_id[source['llmops']['run_id']], source['metrics']
        assert point['variant'] == source['llmops']['labels']['variant'] and point['kind'] == source['llmops']['labels']['kind']
        assert point['mtp'] is bool(source['server']['speculative_algorithm'])
        assert (point['output_tok_s'], point['ttft_p50_ms'], point['ttft_p99_ms'], point['tpot_p50_ms'], point['tpot_p99_ms']) == (
            m['output_throughput'], m['median_ttft_ms'], m['p99_ttft_ms'], m['median_tpot_ms'], m['p99_tpot_ms'])
        assert point['accept_length'] == source['llmops']['accept_length']
    # ISL/OSL: the client's own figure, else the run's scenario (the rate run r2: 512/128), else the benchmark's.
    assert (by_id['mtp-c1']['input_len'], by_id['mtp-c1']['output_len']) == (1024, 256)
    assert (by_id['mtp-r2.0']['input_len'], by_id['mtp-r2.0']['output_len'], by_id['mtp-r2.0']['request_rate']) == (512, 128, 2.0)
    (verdict,) = item['verdicts']
    # mtp vs no-mtp: +40 % at c=1, -5.6 % at c=16 -> keep for <= 1.
    assert (verdict['spec'], verdict['base'], verdict['keep_up_to'], verdict['metric']) == ('mtp', 'no-mtp', 1, 'output_throughput')
    assert [x['change_pct'] for x in verdict['levels']] == [round(100.0 * 40 / 100, 1), round(100.0 * -50 / 900, 1)]
    assert verdict['line'].endswith('-> keep for <= 1 concurrent (changes within 3 % count as even)')
    assert item['gates'] == {'total': 2, 'failed': ['output tok/s >= 880.00: measured 850.00 tok/s (variant mtp, concurrency 16)']}
    assert rec.entry(summary(), sweep_error='run 3 timed out')['sweep_error'] == 'run 3 timed out'


def test_append_keeps_the_last_n_and_replaces_the_same_benchmark():
    doc, _error = rec.parse('')
    assert doc == {'schema': 1, 'benchmarks': []}
    ids = ['2026120%dT000000Z' % day for day in range(1, 6)]
    for number, stamp in enumerate(ids):
        doc, what = rec.append(doc, rec.entry(summary(dict(META, timestamp=stamp))), keep=3)
        assert what['replaced'] is False
        assert what['dropped'] == ([ids[number - 3]] if number >= 3 else [])
    assert [e['id'] for e in doc['benchmarks']] == ids[-3:]
    # The same benchmark reported again (same host, instance and id) replaces its entry where it is.
    again = rec.entry(summary(dict(META, timestamp=ids[3])), sweep_error='stopped')
    doc2, what = rec.append(doc, again, keep=3)
    assert what == {'replaced': True, 'dropped': []}
    assert [e['id'] for e in doc2['benchmarks']] == ids[-3:] and doc2['benchmarks'][1]['sweep_error'] == 'stopped'
    # Another instance of the same host with the same id is another benchmark.
    doc3, what = rec.append(doc, rec.entry(summary(dict(META, timestamp=ids[4], instance='second'))), keep=10)
    assert what['replaced'] is False and len(doc3['benchmarks']) == 4
    # The input document is not changed in place.
    assert [e['id'] for e in doc['benchmarks']] == ids[-3:] and doc['benchmarks'][1]['sweep_error'] is None
    with pytest.raises(ValueError, match='keep must be an integer >= 1'):
        rec.append(doc, again, keep=0)


def test_the_file_reads_back_and_an_unchanged_record_is_byte_identical():
    doc, _what = rec.append(None, rec.entry(summary()))
    text = rec.dumps(doc)
    back, error = rec.parse(text, 'benchmarks.json')
    assert error is None and back == doc
    again, _what = rec.append(back, rec.entry(summary()))
    assert rec.dumps(again) == text


@pytest.mark.parametrize('text, message', [
    ('{not json', 'benchmarks.json is not JSON'),
    ('[]', 'is not a benchmarks record'),
    ('{"schema": 1, "benchmarks": {}}', 'is not a benchmarks record'),
    ('{"schema": 1, "benchmarks": [1]}', 'is not a benchmarks record'),
    ('{"schema": 2, "benchmarks": []}', 'has schema 2; this collection writes schema 1'),
])
def test_a_file_that_is_not_a_record_is_refused(text, message):
    doc, error = rec.parse(text, 'benchmarks.json')
    assert doc is None and message in error


def test_measured_points_for_a_calibration():
    doc, _what = rec.append(None, rec.entry(summary()))
    doc, _what = rec.append(doc, rec.entry(summary(dict(META, timestamp='20261202T000000Z', tp_size=4))))
    points = rec.measured_points(doc)
    assert len(points) == 2 * len(RUNS)
    assert [p['benchmark']['tp_size'] for p in points] == [2] * len(RUNS) + [4] * len(RUNS)
    mtp = rec.measured_points(doc, 'mtp')
    assert len(mtp) == 2 * 3 and set(p['variant'] for p in mtp) == {'mtp'}
    assert sorted(p['output_tok_s'] for p in mtp) == sorted([140.0, 850.0, 300.0] * 2)
