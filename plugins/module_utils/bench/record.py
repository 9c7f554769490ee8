# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``benchmarks`` section of the deployment record: the measured points of the last benchmarks of an instance.

It lives in ``<llmops_deployment.record.instance_dir>/benchmarks.json`` (``<llmops_record_dir>/<host>/<instance>/``),
beside ``deployed.json``, which the server role rewrites at every healthy start (a variant's start included), so the
benchmarks survive deploys. Document: ``{"schema": 1, "benchmarks": [entry, ...]}``, oldest first, at most ``keep``
entries; an entry is :func:`entry` of one benchmark's summary.json (docs/sglang_benchmark.md, "The deployment
record's benchmarks section"). Pure: the module sglang_bench_record reads and writes the file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

SCHEMA = 1
FILE_NAME = 'benchmarks.json'
DEFAULT_KEEP = 20

# run field -> the report row's key (plugins/module_utils/bench/report.py build_rows).
RUN_FIELDS = (
    ('run_id', 'run_id'), ('variant', 'variant'), ('mtp', 'mtp'), ('kind', 'kind'), ('concurrency', 'concurrency'),
    ('request_rate', 'request_rate'), ('num_prompts', 'num_prompts'), ('completed', 'completed'),
    ('output_tok_s', 'output_throughput'), ('ttft_p50_ms', 'median_ttft_ms'), ('ttft_p99_ms', 'p99_ttft_ms'),
    ('tpot_p50_ms', 'median_tpot_ms'), ('tpot_p99_ms', 'p99_tpot_ms'), ('accept_length', 'accept_length'),
    ('accept_length_source', 'accept_length_source'),
)
VERDICT_FIELDS = ('spec', 'base', 'metric', 'noise_pct', 'line', 'keep_up_to', 'levels')


def _scenario_lengths(meta, row):
    """(input_len, output_len) the run asked for: its scenario's, else the benchmark's."""
    for s in meta.get('scenarios') or []:
        if (s.get('kind'), s.get('concurrency'), s.get('request_rate')) == (row.get('kind'), row.get('concurrency'), row.get('request_rate')):
            return s.get('input_len'), s.get('output_len')
    return meta.get('input_len'), meta.get('output_len')


def run_point(meta, row):
    """One measured point: the run's variant, load, ISL/OSL, output tok/s, TTFT and TPOT p50/p99, accept length."""
    point = dict((name, row.get(key)) for name, key in RUN_FIELDS)
    isl, osl = _scenario_lengths(meta, row)
    point['input_len'] = row.get('input_len') if row.get('input_len') is not None else isl
    point['output_len'] = row.get('output_len') if row.get('output_len') is not None else osl
    return point


def entry(summary, results_dir=None, sweep_error=None):
    """The record entry of one benchmark from its summary.json (meta, rows, gates, verdicts)."""
    meta = summary.get('meta') or {}
    gates = summary.get('gates') or []
    return dict(
        id=meta.get('timestamp'), host=meta.get('host'), instance=meta.get('instance'),
        sglang_version=meta.get('sglang_version'), model=meta.get('model'), model_profile=meta.get('model_profile'),
        gpu_profile=meta.get('gpu_profile'), tp_size=meta.get('tp_size'),
        client=dict(module=meta.get('client_module'), version=meta.get('client_version'), backend=meta.get('backend'),
                    dataset=meta.get('dataset_name')),
        results_dir=results_dir,
        variants=[dict(name=v.get('name'), mtp=v.get('mtp'), overrides=v.get('overrides') or {}) for v in meta.get('variants') or []],
        runs=[run_point(meta, row) for row in summary.get('rows') or []],
        verdicts=[dict((k, v.get(k)) for k in VERDICT_FIELDS) for v in summary.get('verdicts') or []],
        gates=dict(total=len(gates), failed=[g.get('message') for g in gates if not g.get('ok')]),
        sweep_error=sweep_error or None,
    )


def parse(text, where='the record'):
    """(document, error) from the file's text; '' or None is an empty record."""
    if not (text or '').strip():
        return dict(schema=SCHEMA, benchmarks=[]), None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return None, '%s is not JSON (%s): move it away to start a new record' % (where, exc)
    if not isinstance(doc, dict) or not isinstance(doc.get('benchmarks'), list) or not all(isinstance(e, dict) for e in doc['benchmarks']):
        return None, '%s is not a benchmarks record ({"schema": %d, "benchmarks": [...]}): move it away to start a new one' % (where, SCHEMA)
    if doc.get('schema') != SCHEMA:
        return None, '%s has schema %r; this collection writes schema %d: move it away or use the collection that wrote it' % (
            where, doc.get('schema'), SCHEMA)
    return doc, None


def _key(item):
    return (item.get('host'), item.get('instance'), item.get('id'))


def append(doc, new, keep=DEFAULT_KEEP):
    """(document, what happened): ``new`` replaces the entry of the same host, instance and id in place (the same
    benchmark reported again), else it is appended; then only the last ``keep`` entries stay. what happened:
    dict(replaced=bool, dropped=[ids of the entries that fell out])."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ValueError('keep must be an integer >= 1, got %r' % (keep,))
    items = [dict(e) for e in (doc or {}).get('benchmarks') or []]
    places = [i for i, e in enumerate(items) if _key(e) == _key(new)]
    if places:
        items[places[0]] = new
    else:
        items.append(new)
    dropped = items[:-keep] if len(items) > keep else []
    return dict(schema=SCHEMA, benchmarks=items[-keep:]), dict(replaced=bool(places), dropped=[e.get('id') for e in dropped])


def dumps(doc):
    """The file's text (stable: sorted keys, so an unchanged record is byte-identical)."""
    return json.dumps(doc, indent=2, sort_keys=True) + '\n'


def measured_points(doc, variant=None):
    """Every run of every recorded benchmark, each with its benchmark's id, host, instance, SGLang release, GPU
    profile and TP size: what a calibration reads. ``variant`` narrows it to one variant's runs."""
    out = []
    for item in (doc or {}).get('benchmarks') or []:
        context = dict((k, item.get(k)) for k in ('id', 'host', 'instance', 'sglang_version', 'gpu_profile', 'tp_size', 'model_profile'))
        for run in item.get('runs') or []:
            if variant is None or run.get('variant') == variant:
                out.append(dict(run, benchmark=context))
    return out
