# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""make compare end to end (tests/tools/compare_console.py) and benchmarks/compare_accuracy.py."""

import importlib.util
import json
import os
import time
import xml.etree.ElementTree as ET

import yaml

import compare_console as console
from collection_paths import ROOT

from ansible_collections.llmops.inference.plugins.plugin_utils.deployment import spec as deployment_spec


def run_console(tmp_path, *extra):
    out = tmp_path / 'compare'
    start = time.monotonic()
    # No deployment record of this machine's own runs (build/deploy) unless the test gives one.
    records = [] if '--record-dir' in extra else ['--record-dir', str(tmp_path / 'no-records')]
    status = console.main(['--out', str(out)] + records + list(extra))
    return status, out, time.monotonic() - start


def test_no_arguments_compares_the_example_inventorys_server(tmp_path, capsys):
    status, out, elapsed = run_console(tmp_path)
    printed = capsys.readouterr().out
    assert status == 0
    assert elapsed < 60, 'make compare must answer in under a minute'
    assert 'make compare: qwen3.5-122b-a10b on 4 x rtx-pro-6000-blackwell-server' in printed
    assert 'make compare took' in printed
    md = (out / 'compare.md').read_text()
    table = [line for line in md.splitlines() if line.startswith('| 1 |')]
    assert table and 'TP4' in table[0]
    # Every estimate says its basis, and a calibrated one shows a band, not one number.
    assert 'calibrated' in table[0] and ' (' in table[0].split('|')[7]


def test_the_svg_is_well_formed_and_self_contained(tmp_path):
    dummy, out, dummy2 = run_console(tmp_path)
    text = (out / 'pareto.svg').read_text()
    root = ET.fromstring(text)
    assert root.tag == '{http://www.w3.org/2000/svg}svg'
    assert '<script' not in text and 'href' not in text
    assert root.findall('.//{http://www.w3.org/2000/svg}polyline')


def test_the_snippet_uses_real_llmops_variables_and_the_top_layouts_gpus(tmp_path):
    dummy, out, dummy2 = run_console(tmp_path, '--gpus', '8', '--model', 'qwen3.5-122b-a10b',
                                     '--gpu', 'rtx-pro-6000-blackwell-server', '--rate', '4')
    data = yaml.safe_load((out / 'snippet.yml').read_text())
    servers = data['all']['children']['sglang_servers']
    names = set(servers['vars'])
    for host in servers['hosts'].values():
        names |= set(host)
    assert names <= set(deployment_spec.BY_NAME), names - set(deployment_spec.BY_NAME)
    tp = servers['vars']['llmops_tp_size']
    indices = [i for host in servers['hosts'].values() for i in host['llmops_gpu_indices']]
    assert all(len(host['llmops_gpu_indices']) == tp for host in servers['hosts'].values())
    assert len(indices) == len(set(indices)) <= 8
    if len(servers['hosts']) > 1:
        assert set(data['all']['children']['sglang_gateways']['vars']) <= set(deployment_spec.BY_NAME)


def test_make_passes_empty_variables_as_not_given():
    assert console._drop_empty(['--model', '', '--gpus', '4', '--isl=']) == ['--gpus', '4']


def test_compare_accuracy_prints_leave_one_out_and_the_goal_verdicts(capsys):
    path = os.path.join(ROOT, 'benchmarks', 'compare_accuracy.py')
    spec = importlib.util.spec_from_file_location('compare_accuracy', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main([]) == 0
    printed = capsys.readouterr().out
    assert 'TPOT goal <= 15 %' in printed and 'TTFT goal <= 25 %' in printed
    assert ('NOT MET' in printed) or (': MET' in printed)
    assert '| rtx6kpro-122b-nvfp4-2gpu-vllm@c1 | vllm (context)' in printed


def test_the_committed_sample_is_what_this_checkout_writes(tmp_path):
    """docs/samples/compare-qwen3.5-122b.{md,svg}: refresh with
    python tests/tools/compare_console.py --sample docs/samples/compare-qwen3.5-122b"""
    prefix = tmp_path / 'compare-qwen3.5-122b'
    console.main(['--out', str(tmp_path / 'out'), '--sample', str(prefix)])
    for ext in ('.md', '.svg'):
        with open(os.path.join(ROOT, 'docs', 'samples', 'compare-qwen3.5-122b' + ext), encoding='utf-8') as handle:
            committed = handle.read()
        assert (tmp_path / ('compare-qwen3.5-122b' + ext)).read_text() == committed, (
            'docs/samples/compare-qwen3.5-122b%s is stale: python tests/tools/compare_console.py --sample '
            'docs/samples/compare-qwen3.5-122b' % ext)


def test_every_published_point_is_sized_and_only_sglang_calibrates():
    data = console.load_yaml(console.MEASUREMENTS)
    assert console.check_measurements(data) == []
    points, skipped = console.published_points(console.cp.release())
    assert skipped == []
    assert points and all(p['engine'] == 'sglang' for p in points if p['calibrates'])
    assert any(not p['calibrates'] for p in points)
    bad = dict(data, setups=dict(x=dict(engine='vllm', calibrates=True, source='s', points=[dict(concurrency=1)])))
    assert len(console.check_measurements(bad)) == 2


def test_benchmark_records_become_calibrating_points(tmp_path):
    """A runs.jsonl record of the sglang_benchmark role (the shape bench/report.py build_rows reads)."""
    record = dict(metrics=dict(max_concurrency=8, random_input_len=1024, random_output_len=1024, output_throughput=555.0,
                               median_ttft_ms=300.0, median_tpot_ms=13.0),
                  llmops=dict(run_id='r1', labels=dict(variant='mtp', kind='concurrency'), accept_length=3.0),
                  server=dict(tp_size=4, speculative_algorithm='EAGLE', speculative_num_steps=3, speculative_eagle_topk=1,
                              speculative_num_draft_tokens=4, max_running_requests=21))
    path = tmp_path / 'runs.jsonl'
    path.write_text('%s\n' % json.dumps(record))
    points, skipped = console.record_points([str(path)], 'qwen3.5-122b-a10b', 'rtx-pro-6000-blackwell-server', 4,
                                            console.cp.release())
    assert skipped == []
    assert len(points) == 1
    point = points[0]
    assert point['calibrates'] and point['group'] == ('12.0', 'hybrid_gdn')
    assert (point['concurrency'], point['cap'], point['cost']['accept']) == (8, 21, 3.0)
    assert point['measured'] == dict(output_tok_s=555.0, ttft_ms=300.0, tpot_ms=13.0)


def test_records_given_to_the_console_are_shown_as_measured(tmp_path):
    record = dict(metrics=dict(max_concurrency=4, random_input_len=1024, random_output_len=1024, output_throughput=333.0,
                               median_ttft_ms=250.0, median_tpot_ms=11.0),
                  llmops=dict(accept_length=3.2),
                  server=dict(tp_size=4, speculative_algorithm='EAGLE', speculative_num_steps=3, speculative_eagle_topk=1,
                              speculative_num_draft_tokens=4))
    path = tmp_path / 'runs.jsonl'
    path.write_text('%s\n' % json.dumps(record))
    dummy, out, dummy2 = run_console(tmp_path, '--records', str(path))
    md = (out / 'compare.md').read_text()
    assert '## Measured (benchmark records: --records and the deployment record)' in md
    line = [x for x in md.splitlines() if x.startswith('| record:runs.jsonl:1@c4 |') and '| tpot_ms |' in x][0]
    assert '| 4 | EAGLE | 4 | 1024/1024 | tpot_ms | 11.0 |' in line
    # The record calibrates the seed's group: its own figure is one more in the group's band.
    assert '3 measured point(s) of its own' not in md


def test_the_deployment_records_benchmarks_calibrate_and_show_as_measured(tmp_path):
    """benchmarks.json as the sglang_benchmark role keeps it (bench/record.py entry()) under <record dir>/<host>/<instance>/:
    the seed's MTP runs calibrate; another model's runs and a request-rate run do not count."""
    from ansible_collections.llmops.inference.plugins.module_utils.bench import record as bench_record

    def run(variant, mtp, kind, concurrency, tok_s, tpot):
        return dict(run_id=variant + str(concurrency), variant=variant, mtp=mtp, kind=kind, concurrency=concurrency,
                    request_rate=None if kind == 'concurrency' else 2.0, input_len=1024, output_len=1024,
                    output_tok_s=tok_s, ttft_p50_ms=240.0, ttft_p99_ms=400.0, tpot_p50_ms=tpot, tpot_p99_ms=tpot * 1.2,
                    accept_length=3.1 if mtp else None)
    seed = dict(id='2026-12-08T00:00:00Z', host='sglang-ct', instance='qwen', model_profile='qwen3.5-122b-a10b',
                gpu_profile='rtx-pro-6000-blackwell-server', tp_size=4,
                runs=[run('mtp', True, 'concurrency', 1, 150.0, 6.5), run('mtp', True, 'concurrency', 8, 700.0, 11.0),
                      run('mtp', True, 'rate', 0, 300.0, 9.0)])
    other = dict(seed, id='2026-12-08T01:00:00Z', model_profile='qwen3-32b', runs=[run('base', False, 'concurrency', 1, 50.0, 20.0)])
    where = tmp_path / 'records' / 'sglang-ct' / 'qwen'
    where.mkdir(parents=True)
    (where / bench_record.FILE_NAME).write_text(bench_record.dumps(dict(schema=bench_record.SCHEMA, benchmarks=[seed, other])))
    files = console.deployment_record_files(str(tmp_path / 'records'))
    points, skipped = console.deployment_record_points(files, 'qwen3.5-122b-a10b', 'rtx-pro-6000-blackwell-server',
                                                       console.cp.release())
    assert sorted(p['concurrency'] for p in points) == [1, 8]
    assert all(p['calibrates'] and p['group'] == ('12.0', 'hybrid_gdn') and p['cost']['accept'] == 3.1 for p in points)
    assert [why for _id, why in skipped] == ['not a concurrency run of a known TP size']
    dummy, out, dummy2 = run_console(tmp_path, '--record-dir', str(tmp_path / 'records'))
    md = (out / 'compare.md').read_text()
    assert 'deployment records: 2 measured point(s) of qwen3.5-122b-a10b on rtx-pro-6000-blackwell-server from 1 benchmarks.json' in md
    assert '| record:sglang-ct/qwen:2026-12-08T00:00:00Z:mtp@c8 |' in md
