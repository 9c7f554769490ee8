#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sglang_bench_wait
short_description: Wait for an async sglang_bench_run job, printing its progress on the controller
version_added: 0.1.0
description:
  - Start M(llmops.inference.sglang_bench_run) with C(async) and C(poll=0), then use this action. It polls the job
    with C(async_status), reads the end of the client's log on the host and prints one line per O(interval) - the
    O(label) (e.g. C(run 3/8 mtp concurrency 16)), requests done out of the total from the client's progress bar,
    and the elapsed time - and returns the job's own result once it finishes.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.async_wait
options:
  jid:
    description: The C(ansible_job_id) registered from the async M(llmops.inference.sglang_bench_run) task.
    type: str
    required: true
  log_file:
    description: The client's log, C(<output_dir>/<run_id>.log) of M(llmops.inference.sglang_bench_run). Without it only the elapsed time is printed.
    type: path
  label:
    description: Text in front of every progress line; V(benchmark) when not set.
    type: str
notes:
  - Each progress line costs one C(async_status) and one C(tail -c 4096) on the host.
seealso:
  - module: llmops.inference.sglang_bench_run
  - module: ansible.builtin.async_status
"""

EXAMPLES = r"""
- name: Start run 3 of 8 in the background
  llmops.inference.sglang_bench_run:
    python: "{{ llmops_deployment.sglang.python }}"
    base_url: http://127.0.0.1:30000
    model: qwen3.5-122b-a10b
    tokenizer: /shared/models/Qwen3.5-122B-A10B
    input_len: 1024
    output_len: 1024
    num_prompts: 128
    max_concurrency: 16
    output_dir: /var/tmp/llmops-bench/run/raw/mtp
    run_id: mtp-c16
  async: 7200
  poll: 0
  register: job

- name: Wait for it, printing progress every 15 s
  llmops.inference.sglang_bench_wait:
    jid: "{{ job.ansible_job_id }}"
    log_file: /var/tmp/llmops-bench/run/raw/mtp/mtp-c16.log
    label: run 3/8 mtp concurrency 16
  register: run
"""

RETURN = r"""
wait_seconds:
  description: How long this action waited.
  returned: always
  type: float
  sample: 95.2
"""
