#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sglang_bench_record
short_description: Add a benchmark's measured points and speculative-decoding verdicts to the deployment record
version_added: 0.1.0
description:
  - Reads C(summary.json) of a benchmark (written by M(llmops.inference.sglang_bench_report)) and adds one entry to
    the C(benchmarks) section of the deployment record, normally C(<llmops_record_dir>/<host>/<instance>/benchmarks.json)
    on the controller - per run the variant, MTP on or off, concurrency or request rate, input and output length,
    output tok/s, TTFT and TPOT p50/p99 and accept length; the speculative-decoding verdicts; the gate failures.
  - The entry of the same host, instance and benchmark id (its results directory name) is replaced, so reporting a
    benchmark again does not add it twice; only the last O(keep) entries stay. The file is written to a temporary
    name, fsynced and renamed over the record.
  - A record that is not JSON, not a benchmarks record, or of another schema fails the task; it is never overwritten.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Says whether the record would change and writes nothing.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
options:
  results_dir:
    description: The benchmark's results directory, holding C(summary.json).
    type: path
    required: true
  record_file:
    description: The record's C(benchmarks.json); its directory is created when missing.
    type: path
    required: true
  keep:
    description: How many benchmark entries the record keeps (the newest).
    type: int
    default: 20
  sweep_error:
    description: Why the sweep stopped early, if it did; kept in the entry so a reader can leave partial sweeps out.
    type: str
seealso:
  - module: llmops.inference.sglang_bench_report
"""

EXAMPLES = r"""
- name: Keep the benchmark in the deployment record
  llmops.inference.sglang_bench_record:
    results_dir: build/bench/sglang-ct/20261130T120000Z
    record_file: "{{ llmops_deployment.record.instance_dir }}/benchmarks.json"
    keep: 20
  delegate_to: localhost
"""

RETURN = r"""
record_file:
  description: Path of the record.
  returned: success
  type: str
id:
  description: The benchmark's id in the record (its results directory name).
  returned: success
  type: str
  sample: 20261130T120000Z
replaced:
  description: Whether an entry of the same benchmark was replaced.
  returned: success
  type: bool
kept:
  description: Number of benchmark entries in the record afterwards.
  returned: success
  type: int
dropped:
  description: Ids of the oldest entries that no longer fit O(keep).
  returned: success
  type: list
  elements: str
verdicts:
  description: The speculative-decoding verdict lines of this benchmark (empty without an MTP on/off pair).
  returned: success
  type: list
  elements: str
  sample: ['MTP: output tok/s +38.0 % at c=1 (110.0 -> 151.8), ... -> keep for <= 16 concurrent (...)']
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.llmops.inference.plugins.module_utils.bench import record
from ansible_collections.llmops.inference.plugins.module_utils.common.atomic_files import write_file_atomic
from ansible_collections.llmops.inference.plugins.module_utils.common.json_files import read_json


def read_text(module, path):
    if not os.path.exists(path):
        return ''
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        module.fail_json(msg='cannot read the record %s: %s' % (path, to_native(exc)))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            results_dir=dict(type='path', required=True),
            record_file=dict(type='path', required=True),
            keep=dict(type='int', default=record.DEFAULT_KEEP),
            sweep_error=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p['keep'] < 1:
        module.fail_json(msg='keep must be >= 1, got %d' % p['keep'])
    summary, error = read_json(os.path.join(p['results_dir'], 'summary.json'), missing_hint=': build the report first')
    if error or not isinstance(summary, dict):
        module.fail_json(msg=error or '%s/summary.json is not a report summary' % p['results_dir'])
    new = record.entry(summary, p['results_dir'], p['sweep_error'])
    if not new.get('id'):
        module.fail_json(msg='%s/summary.json names no benchmark (meta.timestamp)' % p['results_dir'])
    before = read_text(module, p['record_file'])
    doc, error = record.parse(before, p['record_file'])
    if error:
        module.fail_json(msg=error)
    doc, what = record.append(doc, new, p['keep'])
    after = record.dumps(doc)
    changed = after != before
    if changed and not module.check_mode:
        try:
            folder = os.path.dirname(p['record_file'])
            if folder and not os.path.isdir(folder):
                os.makedirs(folder)
            write_file_atomic(p['record_file'], after, 0o644)
        except (IOError, OSError) as exc:
            module.fail_json(msg='cannot write the record %s: %s' % (p['record_file'], to_native(exc)))
    result = dict(changed=changed, record_file=p['record_file'], id=new['id'], replaced=what['replaced'],
                  kept=len(doc['benchmarks']), dropped=what['dropped'], verdicts=[v['line'] for v in new['verdicts']])
    if module._diff:
        result['diff'] = dict(before=before, after=after, before_header=p['record_file'], after_header=p['record_file'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
