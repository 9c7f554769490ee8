# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter llmops.inference.plan_memory_html: make plan's plan.html (memory per GPU) from a resolved deployment."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
name: plan_memory_html
short_description: The memory of every GPU of an SGLang server as a self-contained HTML page (stacked bars)
description:
  - Takes an SGLang server's resolved C(llmops_deployment) and returns C(plan.html) as C(make plan) writes it under
    C(build/plan/<host>/) - the verdict headline, one stacked bar per GPU (start-up, weights, mamba state,
    speculative verify states, KV cache, draft KV, other reserved, then the headroom as SGLang's activation reserve
    and the rest for CUDA graphs, NCCL and free; values in GiB, the bar's top the GPU's memory), a legend and the
    table of the parts.
  - Inline SVG only, no script and no external asset; the same deployment gives the same bytes.
  - Every figure is one the plan published (C(llmops_deployment.plan)); nothing is planned again
    (plugins/plugin_utils/views/plan_pictures.py).
options:
  _input:
    description: The server's C(llmops_deployment); a refused one (or one without a plan) is an error.
    type: dict
    required: true
  host:
    description: The host name for the picture's titles (default C(llmops_deployment.host)).
    type: str
'''

EXAMPLES = r'''
- name: Write plan.html beside plan.md
  llmops.inference.plan_files:
    dest: "{{ playbook_dir }}/build/plan/{{ inventory_hostname }}"
    files:
      plan.html: "{{ llmops_deployment | llmops.inference.plan_memory_html }}"
  when: llmops_deployment.refusal is none
'''

RETURN = r'''
_value:
  description: The HTML page.
  type: str
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.inference.plugins.plugin_utils.views import plan_pictures


def plan_memory_html(deployment, host=None):
    if not isinstance(deployment, dict):
        raise AnsibleFilterError('plan_memory_html: the input is an llmops_deployment (a dict), not %s'
                                 % type(deployment).__name__)
    try:
        return plan_pictures.memory_html(host or deployment.get('host') or '?', deployment)
    except plan_pictures.PictureError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {'plan_memory_html': plan_memory_html}
