#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: tp_port_probe
short_description: A real TCP probe between the nodes of a multi-node TP group, bounded in time
version_added: 0.2.0
description:
  - "Run on every node of the group at the same time (C(async) and C(poll: 0), then C(async_status)). Each node
    listens on O(listen) on its inter-node O(address) and connects to every O(connect) target of the other nodes,
    retrying while a peer has not bound yet, until each of its connections worked and each listener accepted the
    nodes in O(expect), or O(timeout) seconds pass. A connection says which node it comes from, so the result proves
    which node reached which port."
  - The head listens on the rendezvous port block (C(--dist-init-addr)'s port, plus SGLang's ZMQ ports with DP
    attention), every node on a free port of its ephemeral range (where NCCL's bootstrap and socket transport and
    gloo bind); llmops.inference.tp_group_check plans the ports and names every pair that failed.
  - Opens sockets for at most O(timeout) seconds and changes nothing else; it runs in check mode too.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
options:
  host:
    description: This node's inventory name (sent to the peers, and expected by them).
    type: str
    required: true
  address:
    description: This node's inter-node address (llmops_node_address); the listeners bind to it.
    type: str
    required: true
  listen:
    description: Ports to listen on.
    type: list
    elements: int
    default: []
  connect:
    description: Targets on the other nodes, each C({host, address, port}).
    type: list
    elements: dict
    default: []
  expect:
    description: Per listened port, the inventory names of the nodes that must connect to it.
    type: dict
    default: {}
  timeout:
    description: Seconds the probe may take in all.
    type: int
    default: 20
"""

EXAMPLES = r"""
- name: Probe the rendezvous and NCCL ports between the nodes (every node at once)
  llmops.inference.tp_port_probe:
    host: "{{ inventory_hostname }}"
    address: "{{ llmops_deployment.tp_group.ranks[llmops_deployment.tp_group.node_rank].address }}"
    listen: "{{ plan.listen }}"
    connect: "{{ plan.connect }}"
    expect: "{{ plan.expect }}"
    timeout: 20
  async: 60
  poll: 0
  register: probe_job
"""

RETURN = r"""
ok:
  description: Every connection worked and every listener got the nodes it expected.
  returned: always
  type: bool
listen:
  description: Per port - bound, error, expected, arrived and missing nodes.
  returned: always
  type: list
  elements: dict
connect:
  description: Per target - host, address, port, ok, error (the last one), attempts, seconds.
  returned: always
  type: list
  elements: dict
seconds:
  description: How long the probe took.
  returned: always
  type: float
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.host.tcp_probe import probe


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type='str', required=True),
            address=dict(type='str', required=True),
            listen=dict(type='list', elements='int', default=[]),
            connect=dict(type='list', elements='dict', default=[]),
            expect=dict(type='dict', default={}),
            timeout=dict(type='int', default=20),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p['timeout'] < 1:
        module.fail_json(msg='timeout must be at least 1 second, got %d' % p['timeout'])
    for index, target in enumerate(p['connect']):
        if not target.get('host') or not target.get('address') or not str(target.get('port', '')).isdigit():
            module.fail_json(msg='connect[%d] needs host, address and port, got %r' % (index, target))
    result = probe(p['host'], p['address'], p['listen'], p['connect'], p['expect'], p['timeout'])
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
