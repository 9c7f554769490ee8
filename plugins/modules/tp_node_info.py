#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: tp_node_info
short_description: What a node of a multi-node TP group has that the other nodes must agree with
version_added: 0.2.0
description:
  - Reads, without changing anything, what llmops.inference.tp_group_check compares across the nodes of a TP group
    before any of them changes - the loaded NVIDIA kernel module's version, the SGLang, torch and NCCL versions of
    the virtualenv (from its C(*.dist-info) directories, without importing anything), the Python X.Y the virtualenv
    is made from, the inter-node interface and its addresses, the ephemeral port range, the TCP ports something
    listens on among O(ports), and the number of GPUs C(nvidia-smi) lists.
  - Also picks O(probe_ports) free ports in the node's ephemeral range, where NCCL's and gloo's own sockets listen,
    for llmops.inference.tp_port_probe.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
options:
  venv:
    description: The SGLang virtualenv (llmops_deployment.sglang.venv); a missing one is reported, not an error.
    type: path
    required: true
  python:
    description: The interpreter the virtualenv is made from (the sglang_server role's sglang_server_python).
    type: str
    default: python3
  interfaces:
    description: The inter-node interface names (llmops_nccl_socket_ifname, comma-separated names split).
    type: list
    elements: str
    default: []
  ports:
    description: TCP ports to report as listening or free (the rendezvous port block on the head).
    type: list
    elements: int
    default: []
  probe_ports:
    description: How many free ports of the ephemeral range to pick for the TCP probe.
    type: int
    default: 1
  unit:
    description: The group's systemd unit on this node; its state is reported (a running group holds its own ports).
    type: str
notes:
  - Linux only (C(/proc), C(/sys), iproute2's C(ip -j)).
"""

EXAMPLES = r"""
- name: Read what this node of the TP group has
  llmops.inference.tp_node_info:
    venv: "{{ llmops_deployment.sglang.venv }}"
    interfaces: "{{ llmops_deployment.tp_group.ifname.split(',') }}"
    ports: "{{ llmops_deployment.tp_group.port_block }}"
    unit: "{{ llmops_deployment.unit }}"
  register: node
"""

RETURN = r"""
driver:
  description: The loaded NVIDIA kernel module's version (/sys/module/nvidia/version), null without one.
  returned: always
  type: str
  sample: 580.159.04
python:
  description: X.Y of O(python), null when it does not run.
  returned: always
  type: str
  sample: "3.11"
venv:
  description: C(exists), and C(sglang), C(torch), C(nccl) (C(nvidia-nccl-cu13 2.30.7)) as installed, null each when absent.
  returned: always
  type: dict
interfaces:
  description: Per name in O(interfaces) - C(exists), C(up), C(addresses).
  returned: always
  type: dict
ephemeral_range:
  description: "[low, high] of net.ipv4.ip_local_port_range."
  returned: always
  type: list
  elements: int
listening:
  description: The ports of O(ports) something listens on.
  returned: always
  type: list
  elements: int
probe_ports:
  description: Free ports of the ephemeral range for the TCP probe.
  returned: always
  type: list
  elements: int
gpu_count:
  description: GPUs C(nvidia-smi) lists, null without nvidia-smi.
  returned: always
  type: int
unit_active:
  description: Whether O(unit) is active, null when not asked.
  returned: always
  type: bool
"""

import glob
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.host import node_facts as tp_node_facts


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            venv=dict(type='path', required=True),
            python=dict(type='str', default='python3'),
            interfaces=dict(type='list', elements='str', default=[]),
            ports=dict(type='list', elements='int', default=[]),
            probe_ports=dict(type='int', default=1),
            unit=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    env = dict(LC_ALL='C')
    result = dict(changed=False, driver=(_read('/sys/module/nvidia/version') or '').strip() or None)

    python = module.get_bin_path(p['python']) if '/' not in p['python'] else p['python']
    result['python'] = None
    if python:
        rc, out, dummy = module.run_command([python, '-c', "import sys; print('%d.%d' % sys.version_info[:2])"],
                                            environ_update=env)
        result['python'] = out.strip() if rc == 0 else None

    sites = glob.glob(os.path.join(p['venv'], 'lib', 'python*', 'site-packages'))
    names = []
    for site in sites:
        try:
            names += os.listdir(site)
        except OSError:
            continue
    result['venv'] = dict(tp_node_facts.venv_versions(names), exists=bool(sites), path=p['venv'])

    ip = module.get_bin_path('ip')
    found = {}
    if ip:
        rc, out, err = module.run_command([ip, '-j', 'addr', 'show'], environ_update=env)
        if rc != 0:
            module.fail_json(msg='ip -j addr show failed (rc=%d): %s' % (rc, err.strip()), **result)
        found = tp_node_facts.interfaces(out)
    result['interfaces'] = dict((name, dict(found.get(name) or {}, exists=name in found))
                                for name in p['interfaces'])

    low_high = tp_node_facts.port_range(_read('/proc/sys/net/ipv4/ip_local_port_range'))
    result['ephemeral_range'] = list(low_high) if low_high else None
    listening = tp_node_facts.listening_ports(_read('/proc/net/tcp'), _read('/proc/net/tcp6'))
    result['listening'] = [port for port in p['ports'] if port in listening]
    result['probe_ports'] = (tp_node_facts.free_ports(listening, low_high[0], low_high[1], p['probe_ports'],
                                                      start=os.getpid()) if low_high else [])

    result['gpu_count'] = None
    smi = module.get_bin_path('nvidia-smi')
    if smi:
        rc, out, dummy = module.run_command([smi, '--query-gpu=index', '--format=csv,noheader'], environ_update=env)
        if rc == 0:
            result['gpu_count'] = len([line for line in out.splitlines() if line.strip()])

    result['unit_active'] = None
    systemctl = module.get_bin_path('systemctl')
    if p['unit'] and systemctl:
        rc, out, dummy = module.run_command([systemctl, 'is-active', p['unit']], environ_update=env)
        result['unit_active'] = out.strip() == 'active'
    module.exit_json(**result)


if __name__ == '__main__':
    main()
