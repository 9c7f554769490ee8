#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: hf_snapshot_wait
short_description: Wait for an async hf_snapshot job, printing its progress on the controller
version_added: 0.1.0
description:
  - Ansible modules cannot stream output. Start M(llmops.inference.hf_snapshot) with C(async) and C(poll=0), then
    use this action. It polls the job with C(async_status) and reads the job's O(progress_file) on the target,
    printing one line per O(interval) (bytes done/total, percent, MB/s over the last 30 s, ETA, files), and returns
    the job's own result (changed, failed, message and every return value of M(llmops.inference.hf_snapshot)) once it
    finishes.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.async_wait
options:
  jid:
    description:
      - The C(ansible_job_id) registered from the async M(llmops.inference.hf_snapshot) task.
    type: str
    required: true
  progress_file:
    description:
      - The O(llmops.inference.hf_snapshot#module:progress_file) the job writes.
      - Without it only the elapsed time is printed.
    type: path
notes:
  - Each poll runs C(async_status) and C(slurp) on the target (two small module runs).
seealso:
  - module: llmops.inference.hf_snapshot
  - module: ansible.builtin.async_status
"""

EXAMPLES = r"""
- name: Start the download in the background
  llmops.inference.hf_snapshot:
    repo_id: Qwen/Qwen3.5-122B-A10B
    revision: 0123456789abcdef0123456789abcdef01234567
    dest: /srv/models/Qwen/Qwen3.5-122B-A10B
    progress_file: /srv/models/Qwen/.Qwen3.5-122B-A10B.hf_model/progress.json
  vars:
    ansible_python_interpreter: /opt/llmops/hf-venv/bin/python
  async: 14400
  poll: 0
  register: job

- name: Wait for it, printing progress every 15 s
  llmops.inference.hf_snapshot_wait:
    jid: "{{ job.ansible_job_id }}"
    progress_file: /srv/models/Qwen/.Qwen3.5-122B-A10B.hf_model/progress.json
  register: model

- name: Show where the model is
  ansible.builtin.debug:
    msg: "{{ model.path }} at {{ model.revision }}"
"""

RETURN = r"""
wait_seconds:
  description: How long this action waited.
  returned: always
  type: float
  sample: 312.4
"""
