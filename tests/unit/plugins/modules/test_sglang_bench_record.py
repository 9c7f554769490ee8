# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_bench_record on a results directory the report module wrote: the record's benchmarks section appended,
replaced, trimmed to keep, written atomically, and nothing written in check mode."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from module_harness import AnsibleExitJson, AnsibleFailJson, run

from ansible_collections.llmops.inference.plugins.modules import sglang_bench_record, sglang_bench_report


def run_line(variant, concurrency, out_tps, spec):
    return {'metrics': {'max_concurrency': concurrency, 'request_rate': 'inf', 'output_throughput': out_tps,
                        'median_ttft_ms': 50.0, 'p99_ttft_ms': 90.0, 'median_tpot_ms': 5.0, 'p99_tpot_ms': 7.0, 'completed': 8},
            'server': {'speculative_algorithm': spec},
            'llmops': {'run_id': '%s-c%d' % (variant, concurrency), 'accept_length': 2.0 if spec else None,
                       'accept_length_source': 'metrics' if spec else 'none',
                       'labels': {'variant': variant, 'kind': 'concurrency', 'num_prompts': 8}}}


def results(folder, stamp):
    """A results directory as the role leaves it, with the report module run over it."""
    folder.mkdir()
    meta = {'host': 'ct1', 'timestamp': stamp, 'instance': 'main', 'model': 'qwen', 'title': None, 'input_len': 64, 'output_len': 32,
            'variants': [{'name': 'mtp', 'mtp': True, 'vars': {}}, {'name': 'no-mtp', 'mtp': False, 'vars': {'x': 0}}], 'notes': []}
    (folder / 'meta.json').write_text(json.dumps(meta))
    runs = [run_line('mtp', 1, 130.0, 'NEXTN'), run_line('mtp', 8, 600.0, 'NEXTN'),
            run_line('no-mtp', 1, 100.0, None), run_line('no-mtp', 8, 650.0, None)]
    (folder / 'runs.jsonl').write_text('\n'.join(json.dumps(r) for r in runs) + '\n')
    kind, _res = run(sglang_bench_report.main, dict(results_dir=str(folder)))
    assert kind is AnsibleExitJson
    return str(folder)


def test_appends_replaces_and_keeps_the_newest(tmp_path):
    target = tmp_path / 'record' / 'ct1' / 'main' / 'benchmarks.json'
    first = results(tmp_path / 'a', '20261201T000000Z')
    kind, res = run(sglang_bench_record.main, dict(results_dir=first, record_file=str(target), keep=2))
    assert kind is AnsibleExitJson and res['changed'] and res['kept'] == 1 and res['replaced'] is False
    # 130 vs 100 at c=1 (+30 %), 600 vs 650 at c=8 (-7.7 %).
    assert res['verdicts'] == ['MTP: output tok/s +30.0 % at c=1 (100.0 -> 130.0), -7.7 % at c=8 (650.0 -> 600.0) '
                               '-> keep for <= 1 concurrent (changes within 3 % count as even)']
    doc = json.loads(target.read_text())
    assert doc['schema'] == 1 and [e['id'] for e in doc['benchmarks']] == ['20261201T000000Z']
    assert sorted((r['variant'], r['concurrency'], r['output_tok_s'], r['input_len']) for r in doc['benchmarks'][0]['runs']) == [
        ('mtp', 1, 130.0, 64), ('mtp', 8, 600.0, 64), ('no-mtp', 1, 100.0, 64), ('no-mtp', 8, 650.0, 64)]
    assert oct(os.stat(str(target)).st_mode & 0o777) == '0o644'
    # The same benchmark again: unchanged, byte for byte.
    before = target.read_text()
    kind, res = run(sglang_bench_record.main, dict(results_dir=first, record_file=str(target), keep=2))
    assert not res['changed'] and res['replaced'] is True and target.read_text() == before
    for name, stamp in (('b', '20261202T000000Z'), ('c', '20261203T000000Z')):
        kind, res = run(sglang_bench_record.main, dict(results_dir=results(tmp_path / name, stamp), record_file=str(target), keep=2))
    assert res['dropped'] == ['20261201T000000Z'] and res['kept'] == 2
    assert [e['id'] for e in json.loads(target.read_text())['benchmarks']] == ['20261202T000000Z', '20261203T000000Z']
    assert [p for p in os.listdir(str(target.parent)) if p != 'benchmarks.json'] == []  # no temporary file left


def test_check_mode_writes_nothing_and_says_what_would_change(tmp_path):
    target = tmp_path / 'main' / 'benchmarks.json'
    folder = results(tmp_path / 'a', '20261201T000000Z')
    kind, res = run(sglang_bench_record.main, dict(results_dir=folder, record_file=str(target)), check_mode=True, diff=True)
    assert kind is AnsibleExitJson and res['changed'] and res['kept'] == 1
    assert not target.parent.exists()
    assert res['diff']['before'] == '' and json.loads(res['diff']['after'])['benchmarks'][0]['id'] == '20261201T000000Z'
    run(sglang_bench_record.main, dict(results_dir=folder, record_file=str(target)))
    kind, res = run(sglang_bench_record.main, dict(results_dir=folder, record_file=str(target)), check_mode=True)
    assert not res['changed']


def test_refusals(tmp_path):
    target = tmp_path / 'benchmarks.json'
    kind, res = run(sglang_bench_record.main, dict(results_dir=str(tmp_path), record_file=str(target)))
    assert kind is AnsibleFailJson and 'summary.json does not exist: build the report first' in res['msg']
    folder = results(tmp_path / 'a', '20261201T000000Z')
    target.write_text('{"schema": 7, "benchmarks": []}')
    kind, res = run(sglang_bench_record.main, dict(results_dir=folder, record_file=str(target)))
    assert kind is AnsibleFailJson and 'has schema 7' in res['msg']
    assert target.read_text() == '{"schema": 7, "benchmarks": []}'  # never overwritten
    kind, res = run(sglang_bench_record.main, dict(results_dir=folder, record_file=str(tmp_path / 'x.json'), keep=0))
    assert kind is AnsibleFailJson and 'keep must be >= 1' in res['msg']
