# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter llmops.inference.deployment_summary: the summary lines make plan prints, for the deploy's last play."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
name: deployment_summary
short_description: The few summary lines per host that make plan prints, from resolved deployments
description:
  - Takes a dict of host name to its resolved C(llmops_deployment) and returns the summary lines of every host, in
    the order of O(hosts), the first refused host's refusal in full at the top.
  - The same function (plugins/plugin_utils/views/deployment_summary.py) writes the console summary of C(make plan), so the
    deploy ends with the lines the plan began with.
options:
  _input:
    description: Host name to its C(llmops_deployment) (hosts without one are reported as not resolved).
    type: dict
    required: true
  hosts:
    description: The hosts to summarise, in this order.
    type: list
    elements: str
    required: true
  failed:
    description: Hosts that failed during the run (their line says so instead of the plan they did not reach).
    type: list
    elements: str
    default: []
'''

EXAMPLES = r'''
- name: Summarise the deployment
  ansible.builtin.debug:
    msg: "{{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars, 'llmops_deployment')))
             | llmops.inference.deployment_summary(ansible_play_hosts_all) }}"
  run_once: true
'''

RETURN = r'''
_value:
  description: The summary lines.
  type: list
  elements: str
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.inference.plugins.plugin_utils.views import deployment_summary as summary_lib


def deployment_summary(deployments, hosts, failed=None):
    if not isinstance(deployments, dict):
        raise AnsibleFilterError('deployment_summary: the input is a dict of host -> llmops_deployment, not %s'
                                 % type(deployments).__name__)
    lines, first = [], None
    for host in hosts:
        deployment = deployments.get(host)
        if isinstance(deployment, dict) and deployment.get('refusal'):
            first = host
            lines += ['REFUSED: the deploy refused %s' % host, deployment['refusal'].strip(), '']
            break
    for host in hosts:
        if host in (failed or ()) and host != first:
            lines.append('%s  FAILED during the run (its error is above)' % host)
            continue
        lines += summary_lib.host_lines(host, deployments.get(host), shown_refusal=(host == first))
    return lines


class FilterModule(object):
    def filters(self):
        return {'deployment_summary': deployment_summary}
