#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: tp_group_check
short_description: Check the nodes of a multi-node TP group against each other before any of them changes
version_added: 0.2.0
description:
  - An action that runs on the controller only. For a node of a TP group (C(llmops_deployment.tp_group)) it reads
    every node's registered result from hostvars and refuses, naming the node (and, for the probe, the pair of nodes
    and the port), what would make the group fail to start or start wrongly.
  - "O(stage=facts), after M(llmops.inference.tp_node_info) on every node: the NVIDIA kernel module of every node is
    the head's; the SGLang, torch and NCCL each node will run are the head's (with O(install) the pin's pip lock for
    each node's Python X.Y, read on the controller, else what each virtualenv has, which must be the pin); each node
    serves the head's model revision (after the preflight resolved branches to commits); has its share of GPUs
    (tp_size / nnodes), its interface (up) and its address on it; nothing but the group's own
    service listens on the head's rendezvous ports. Returns the plan of the TCP probe in RV(probe_plan)."
  - "O(stage=probe), after M(llmops.inference.tp_port_probe) on every node: every node reached every other node's
    ports (the head's rendezvous block, each node's ephemeral-range port where NCCL and gloo listen)."
  - "O(stage=model), after the hf_model role on every node: every node verified the head's repository,
    commit, number of files and bytes (C(hf_model_result)) before any of them starts."
  - "O(stage=nodes), after M(llmops.inference.gpu_p2p_check) in multi-node mode on every node: every node's verdict
    is V(nodes_ok); a broken node is named with its reason and the failure catalogue's fix."
  - A node that did not report (unreachable, failed earlier, left out by C(--limit)) is refused as well - the group
    starts as one.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
options:
  stage:
    description: Which results to check.
    type: str
    choices: [facts, probe, model, nodes]
    default: facts
  facts_var:
    description: Name of the variable each node registered M(llmops.inference.tp_node_info)'s result in.
    type: str
    default: tp_node
  probe_var:
    description: Name of the variable each node registered M(llmops.inference.tp_port_probe)'s (async_status) result in.
    type: str
    default: tp_probe
  model_var:
    description: Name of the variable holding each node's verified model (the hf_model role's result fact).
    type: str
    default: hf_model_result
  nodes_var:
    description: Name of the variable holding each node's multi-node M(llmops.inference.gpu_p2p_check) result.
    type: str
    default: tp_nccl
  install:
    description:
      - Whether the deploy installs the pin's lock into each node's virtualenv (the sglang_server role's
        sglang_server_install). V(false) compares the virtualenvs as they are.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Read every node
  llmops.inference.tp_node_info:
    venv: "{{ llmops_deployment.sglang.venv }}"
    interfaces: "{{ llmops_deployment.tp_group.ifname.split(',') }}"
    ports: "{{ llmops_deployment.tp_group.port_block }}"
  register: tp_node

- name: Compare the nodes (versions, GPUs, interfaces, ports)
  llmops.inference.tp_group_check:
    stage: facts
  register: tp_facts
"""

RETURN = r"""
problems:
  description: Every refusal - node, rank, check, message, fix.
  returned: always
  type: list
  elements: dict
  sample: [{node: gpu-node-b, rank: 1, check: driver, message: "NVIDIA kernel module 570.86.15, the head gpu-node-a
            has 580.95.05 ...", fix: "install driver 580.95.05 on gpu-node-b ..."}]
probe_plan:
  description: O(stage=facts) - per node C(address), C(listen), C(connect), C(expect) for M(llmops.inference.tp_port_probe).
  returned: when the facts agree
  type: dict
lock_nccl:
  description: O(stage=facts) with O(install) - per Python X.Y the NCCL package of the pin's lock.
  returned: stage facts
  type: dict
  sample: {"3.11": "nvidia-nccl-cu13 2.30.7"}
msg:
  description: The numbered refusals, or a one-line summary.
  returned: always
  type: str
"""
