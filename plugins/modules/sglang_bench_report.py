#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sglang_bench_report
short_description: Build report.md and a self-contained report.html from benchmark runs, and evaluate the gates
version_added: 0.1.0
description:
  - Reads the per-run records (C(runs.jsonl)) that M(llmops.inference.sglang_bench_run) appended, the run's
    C(meta.json) and, when present, the smoke-test results (C(smoke.json)) from a results directory - normally the copy
    fetched to the controller under C(build/bench/<host>/<timestamp>/).
  - Writes C(report.md) (a table per variant and load - output tok/s, request/s, TTFT p50/p99, ITL p50/p99, TPOT,
    accept length, % of the planner's decode roofline - an A-vs-B table, the gates, the smoke results),
    C(report.html) (the same with inline SVG charts - throughput vs concurrency, TTFT and ITL percentiles, A vs B -
    and no scripts or external assets) and C(summary.json) (rows and gates; usable as O(baseline_file) later).
  - With C(server_metrics.json) in the directory (the Prometheus answers the sglang_benchmark role fetched for the
    sweep's window), adds the server-side view - per series (running and queued requests, KV usage, accept length,
    ...) the mean and max inside each run's window next to the client-side table, and a chart of each series over
    the sweep with the runs shaded.
  - Evaluates O(thresholds) and the O(baseline_file) comparison and returns the failures with their numbers; it does
    not fail on them itself, so the caller can write everything first and then fail the play.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: none
    details: Writes the report files.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
options:
  results_dir:
    description: Directory holding C(runs.jsonl) and C(meta.json) (and optionally C(smoke.json)); the reports go there too.
    type: path
    required: true
  thresholds:
    description:
      - Gates, each C({metric, min} or {metric, max}) with optional C(concurrency), C(variant) and C(request_rate) to
        narrow it (without them it applies to every run). Metrics - C(output_throughput), C(request_throughput),
        C(total_throughput), C(accept_length), C(decode_tok_s_per_stream), C(roofline_pct), C(median_ttft_ms),
        C(p99_ttft_ms), C(mean_ttft_ms), C(median_itl_ms), C(p99_itl_ms), C(median_tpot_ms), C(mean_tpot_ms),
        C(p99_tpot_ms), C(median_e2e_latency_ms), C(p99_e2e_latency_ms).
      - A gate that matches no run fails.
    type: list
    elements: dict
    default: []
  baseline_file:
    description: A C(summary.json) of an earlier run; runs with the same variant and load are compared.
    type: path
  baseline_max_regression_pct:
    description: Allowed regression against the baseline, in percent (throughput lower or latency higher).
    type: float
    default: 10.0
  baseline_metrics:
    description: Metrics compared against the baseline.
    type: list
    elements: str
    default: [output_throughput, p99_ttft_ms]
  title:
    description: Report title. Defaults to one built from the host, model and time.
    type: str
seealso:
  - module: llmops.inference.sglang_bench_run
"""

EXAMPLES = r"""
- name: Build the report on the controller
  llmops.inference.sglang_bench_report:
    results_dir: build/bench/sglang-ct/20261130T120000Z
    thresholds:
      - {metric: output_throughput, concurrency: 1, min: 150}
      - {metric: output_throughput, concurrency: 16, min: 800}
      - {metric: p99_ttft_ms, max: 2000}
    baseline_file: build/bench/sglang-ct/20261120T090000Z/summary.json
  delegate_to: localhost
  register: report

- name: Fail the play with the numbers
  ansible.builtin.assert:
    that: report.gate_failures | length == 0
    fail_msg: "{{ report.gate_failures }}"
"""

RETURN = r"""
rows:
  description: One row per run (variant, kind, concurrency, request_rate and the metrics of the report table).
  returned: success
  type: list
  elements: dict
gates:
  description: Every gate with C(ok), C(message) (the numbers), C(value) and C(limit) or C(baseline).
  returned: success
  type: list
  elements: dict
gate_failures:
  description: Messages of the failed gates.
  returned: success
  type: list
  elements: str
  sample: ['output tok/s >= 800.00: measured 612.40 tok/s (variant mtp, concurrency 16)']
table:
  description: The Markdown results table, line by line (for printing).
  returned: success
  type: list
  elements: str
report_md:
  description: Path of report.md.
  returned: success
  type: str
report_html:
  description: Path of report.html.
  returned: success
  type: str
summary_json:
  description: Path of summary.json.
  returned: success
  type: str
charts:
  description: Ids of the charts in report.html.
  returned: success
  type: list
  elements: str
  sample: [throughput, ttft, itl, ab-no-mtp]
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.llmops.inference.plugins.module_utils.bench.report import METRICS, build
from ansible_collections.llmops.inference.plugins.module_utils.bench.server_view import sections
from ansible_collections.llmops.inference.plugins.module_utils.common.json_files import read_json


def load_json(module, path, required=True):
    value, error = read_json(path, required)
    if error:
        module.fail_json(msg=error)
    return value


def load_records(module, path):
    records = []
    if not os.path.exists(path):
        module.fail_json(msg='%s does not exist: no benchmark run finished' % path)
    with open(path) as handle:
        for number, line in enumerate(handle, 1):
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except ValueError as exc:
                module.fail_json(msg='%s line %d is not JSON: %s' % (path, number, to_native(exc)))
    return records


def write(module, path, text):
    tmp = '%s.tmp.%d' % (path, os.getpid())
    try:
        with open(tmp, 'w') as handle:
            handle.write(text)
        module.atomic_move(tmp, path)
    except (IOError, OSError) as exc:
        module.fail_json(msg='cannot write %s: %s' % (path, to_native(exc)))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            results_dir=dict(type='path', required=True),
            thresholds=dict(type='list', elements='dict', default=[]),
            baseline_file=dict(type='path'),
            baseline_max_regression_pct=dict(type='float', default=10.0),
            baseline_metrics=dict(type='list', elements='str', default=['output_throughput', 'p99_ttft_ms']),
            title=dict(type='str'),
        ),
        supports_check_mode=False,
    )
    p = module.params
    unknown = [m for m in p['baseline_metrics'] if m not in METRICS]
    if unknown:
        module.fail_json(msg='unknown baseline_metrics %s (known: %s)' % (', '.join(unknown), ', '.join(sorted(METRICS))))
    folder = p['results_dir']
    meta = load_json(module, os.path.join(folder, 'meta.json'))
    records = load_records(module, os.path.join(folder, 'runs.jsonl'))
    smoke = load_json(module, os.path.join(folder, 'smoke.json'), required=False)
    server = load_json(module, os.path.join(folder, 'server_metrics.json'), required=False)
    baseline = None
    if p['baseline_file']:
        data = load_json(module, p['baseline_file'])
        baseline = data.get('rows') if isinstance(data, dict) else None
        if baseline is None:
            module.fail_json(msg='%s has no "rows": pass the summary.json of an earlier benchmark' % p['baseline_file'])
    if p['title']:
        meta['title'] = p['title']
    # meta.json carries "title": null when none was given.
    if not meta.get('title'):
        meta['title'] = 'SGLang benchmark: %s on %s (%s)' % (meta.get('model'), meta.get('host'), meta.get('timestamp'))
    out = build(meta, records, p['thresholds'], baseline, p['baseline_max_regression_pct'], p['baseline_metrics'],
                (smoke or {}).get('results'), sections(server, records) if server else None)
    paths = dict(report_md=os.path.join(folder, 'report.md'), report_html=os.path.join(folder, 'report.html'),
                 summary_json=os.path.join(folder, 'summary.json'))
    write(module, paths['report_md'], out['markdown'])
    write(module, paths['report_html'], out['html'])
    write(module, paths['summary_json'], json.dumps(out['summary'], indent=2, sort_keys=True) + '\n')
    table = [line for line in out['markdown'].split('## Results', 1)[1].splitlines() if line.startswith('|')]
    module.exit_json(changed=True, rows=out['rows'], gates=out['gates'], charts=out['charts'], table=table,
                     gate_failures=[g['message'] for g in out['gates'] if not g['ok']], **paths)


if __name__ == '__main__':
    main()
