#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) llmops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: deployment_info
short_description: Resolve a host's deployment once on the controller - validation, VRAM plan, SGLang command line
version_added: 0.2.0
description:
  - An action that runs on the controller only and contacts no host. It reads every variable of the host that
    carries a prefix of this collection (as Ansible's precedence merged them), the profiles (C(sglang.yml),
    C(sglang_releases.yml), C(models/), C(hardware/)) and, for a container, the variables of its Proxmox host, and
    resolves the deployment once - the precedence of docs/deployment_resolver.md, every check, the VRAM plan and the SGLang
    command line and environment - into the documented C(llmops_deployment) object.
  - Refuses, listing every problem with the variable, the value, the rule and the fix, an unknown or misspelt
    variable of the collection (naming the nearest known one), a value of the wrong type or range, a profile key
    that is not in the profile schema, a parser or dtype the pinned SGLang release does not offer, a model path under
    a forbidden path (after normalising it), a container placed on GPUs that go to vfio-pci, a configuration SGLang
    would refuse to start or that does not fit in GPU memory, and more (tests/fixtures/bad_inputs.yml).
  - The role M(llmops.inference.deployment) wraps it and publishes the result as the fact C(llmops_deployment);
    use the role rather than this action directly.
author:
  - llmops.inference maintainers (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
options:
  overrides:
    description:
      - C(llmops_*) name to value, applied on top of the host's variables (rank 2 of the precedence).
    type: dict
    default: {}
  p2p_verdict:
    description:
      - Verdict of M(llmops.inference.gpu_p2p_check) measured on the host; decides C(NCCL_P2P_DISABLE) unless
        C(llmops_nccl_p2p_disable) forces it. V(nccl_broken) is refused.
    type: str
    choices: ['', p2p_ok, use_nccl_p2p_disable, nccl_broken]
    default: ''
  model_commit:
    description:
      - The 40-hex commit the Hub resolved the model's branch or tag to in this run; with the revision lock of
        C(llmops_model_lock_file) it decides the commit served and the model directory (C(<name>@<12 hex>)).
    type: str
    default: ''
  require_secrets:
    description:
      - Refuse a server without an API key (C(llmops_api_key) or C(SGLANG_API_KEY) of the controller's environment)
        unless C(llmops_allow_no_api_key). V(false) reports it as a warning instead.
    type: bool
    default: true
notes:
  - Profile files are read once per run and cached by path, modification time and size.
  - With C(llmops_parser_python) set, SGLang's own argument parser parses the rendered command line (and every
    variant's) in a subprocess on the controller.
seealso:
  - module: llmops.inference.vram_plan_info
  - module: llmops.inference.sglang_server_args
"""

EXAMPLES = r"""
- name: Resolve the deployment (what the deployment role does)
  llmops.inference.deployment_info:
  register: resolved

- name: Show the command line that would run
  ansible.builtin.debug:
    msg: "{{ resolved.deployment.exec_start }}"
"""

RETURN = r"""
deployment:
  description:
    - The resolved deployment (schema 1, docs/deployment_resolver.md); C(kind) is V(sglang_server) or V(proxmox_host). Never
      carries a secret. On a refusal, what could be resolved (or null).
  returned: always
  type: dict
  sample: {schema: 1, kind: sglang_server, host: sglang-ct, instance: qwen3.5-122b-a10b,
           unit: sglang-qwen3.5-122b-a10b.service, argv: [--model-path, /shared/models/Qwen3.5-122B-A10B]}
problems:
  description: Every refusal, each with the variable, the rule, the fix and its kind.
  returned: always
  type: list
  elements: dict
  sample: [{variable: llmops_http_port, rule: "must be between 1 and 65535", fix: "set llmops_http_port ...",
            kind: input}]
msg:
  description: The numbered refusals, or a one-line summary of what will be deployed.
  returned: always
  type: str
  sample: "sglang-ct: Qwen/Qwen3.5-122B-A10B@main -> /shared/models/Qwen3.5-122B-A10B, ... plan: FITS (tight)"
"""
